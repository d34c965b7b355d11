package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

type weatherIn struct {
	City  string `json:"city" jsonschema:"the city to look up"`
	Days  int    `json:"days,omitempty" jsonschema:"how many days"`
	Units string `json:"units,omitempty"`
}

func TestNewInfersTheSchema(t *testing.T) {
	tool := Must(New("get_weather", "Get the weather", func(_ *Context, in weatherIn) (string, error) { return in.City, nil }, nil))
	var s map[string]any
	if err := json.Unmarshal(tool.InputSchemaJSON(), &s); err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	city := props["city"].(map[string]any)
	if s["type"] != "object" || city["type"] != "string" || city["description"] != "the city to look up" {
		t.Errorf("schema = %s", tool.InputSchemaJSON())
	}
	if req := s["required"].([]any); len(req) != 1 || req[0] != "city" {
		t.Errorf("required = %v", req)
	}
	if tool.Security() != nil {
		t.Error("a tool without a declaration must report nil Security")
	}
}

func TestInvalidInputNeverReachesTheHandler(t *testing.T) {
	var calls atomic.Int32
	tool := Must(New("w", "d", func(_ *Context, in weatherIn) (string, error) { calls.Add(1); return in.City, nil }, nil))
	cases := []struct{ in, want string }{
		{`{"city": 5}`, "field city"},
		{`{}`, `missing properties: ["city"]`},
		{`{"city": "a", "extra": true}`, "additional properties"},
		{`{"city": "a", "days": "three"}`, "field days"},
		{`[1,2]`, "must be a JSON object, got an array"},
		{`"city"`, "must be a JSON object, got a string"},
		{`{"city": `, "not valid JSON"},
	}
	for _, c := range cases {
		r := tool.Call(nil, json.RawMessage(c.in))
		if !r.IsError || !strings.Contains(r.TextOf(), c.want) || !strings.HasPrefix(r.TextOf(), "invalid input for w") {
			t.Errorf("%s: %v %q, want error with %q", c.in, r.IsError, r.TextOf(), c.want)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("handler ran %d times on invalid input", calls.Load())
	}
	if r := tool.Call(nil, json.RawMessage(`{"city": "Paris"}`)); r.IsError || r.TextOf() != "Paris" {
		t.Errorf("valid input: %q", r.TextOf())
	}
}

func TestExplicitSchemaAndDefaults(t *testing.T) {
	schema := &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"name":  {Type: "string"},
			"count": {Type: "integer", Default: json.RawMessage("3"), Minimum: jsonschema.Ptr(1.0)},
		},
		Required: []string{"name"},
	}
	tool := Must(New("c", "d", func(_ *Context, in struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}) (string, error) {
		return strings.Repeat(in.Name, in.Count), nil
	}, &Options{InputSchema: schema}))
	if r := tool.Call(nil, json.RawMessage(`{"name": "ab"}`)); r.TextOf() != "ababab" {
		t.Errorf("default not applied: %q", r.TextOf())
	}
	if r := tool.Call(nil, json.RawMessage(`{"name": "ab", "count": 0}`)); !r.IsError || !strings.Contains(r.TextOf(), "field count") {
		t.Errorf("minimum not enforced: %q", r.TextOf())
	}
}

func TestRegistrationErrors(t *testing.T) {
	h := func(*Context, weatherIn) (string, error) { return "", nil }
	cases := []struct {
		name, desc string
		opts       *Options
		want       string
	}{
		{"bad name!", "d", nil, "1-64 characters"},
		{"ok", "", nil, "missing description"},
		{"ok", "d", &Options{Security: &Security{}}, "security.network is required"},
		{"ok", "d", &Options{Security: &Security{Network: "internet"}}, `security.network: unknown value "internet"`},
		{"ok", "d", &Options{Security: &Security{Network: NetworkNone, Filesystem: "all"}}, "security.filesystem"},
		{"ok", "d", &Options{Security: &Security{Network: NetworkNone, SideEffects: "lots"}}, "security.sideEffects"},
		{"ok", "d", &Options{InputSchema: &jsonschema.Schema{Type: "string"}}, "must describe an object"},
	}
	for _, c := range cases {
		_, err := New(c.name, c.desc, h, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q): %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := New[int, string]("n", "d", func(*Context, int) (string, error) { return "", nil }, nil); err == nil {
		t.Error("a non-object input type must be refused")
	}
	tool := Must(New("ok", "d", h, &Options{Security: &Security{Network: NetworkLoopback}}))
	if s := tool.Security(); s.Network != NetworkLoopback || s.Filesystem != FilesystemNone || s.SideEffects != SideEffectsNone {
		t.Errorf("normalised security = %+v", s)
	}
}

func TestOutputsErrorsAndPanics(t *testing.T) {
	type in struct {
		Kind string `json:"kind"`
	}
	tool := Must(New("o", "d", func(_ *Context, i in) (any, error) {
		switch i.Kind {
		case "result":
			return &Result{Content: []Content{ImageContent([]byte{1, 2}, "image/png"), ResourceLink("file:///a", "a")}}, nil
		case "struct":
			return map[string]int{"n": 1}, nil
		case "content":
			return []Content{AudioContent([]byte{1}, "audio/wav")}, nil
		case "bad-content":
			return &Result{Content: []Content{{Type: ContentImage}}}, nil
		case "error":
			return nil, errors.New("upstream down")
		case "panic":
			panic("boom")
		}
		return "text", nil
	}, nil))
	check := func(kind string, wantErr bool, want string) {
		t.Helper()
		r := tool.Call(nil, json.RawMessage(`{"kind": "`+kind+`"}`))
		if r.IsError != wantErr || !strings.Contains(r.TextOf(), want) {
			t.Errorf("%s: is_error=%v %q, want %v %q", kind, r.IsError, r.TextOf(), wantErr, want)
		}
	}
	check("text", false, "text")
	check("result", false, "[image image/png, 2 bytes]")
	check("struct", false, `{"n":1}`)
	check("content", false, "[audio audio/wav, 1 bytes]")
	check("bad-content", true, "malformed result")
	check("error", true, "upstream down")
	check("panic", true, "crashed (panic: boom)")
}

func TestDeadlineAndCancellation(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	slow := Must(New("slow", "d", func(c *Context, _ struct{}) (string, error) {
		<-release // ignores its context on purpose
		return "late", nil
	}, &Options{Timeout: 50 * time.Millisecond}))
	start := time.Now()
	r := slow.Call(nil, nil)
	if !r.IsError || !strings.Contains(r.TextOf(), "deadline") || time.Since(start) > time.Second {
		t.Errorf("timeout: %q after %v", r.TextOf(), time.Since(start))
	}
	polite := Must(New("polite", "d", func(c *Context, _ struct{}) (string, error) {
		if _, ok := c.Context().Deadline(); !ok {
			return "", errors.New("no deadline")
		}
		<-c.Context().Done()
		return "", c.Context().Err()
	}, &Options{Timeout: time.Hour}))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if r := polite.Call(&Context{Ctx: ctx}, nil); !r.IsError || !strings.Contains(r.TextOf(), "cancel") {
		t.Errorf("cancel: %q", r.TextOf())
	}
}

type recorder struct{ paths []string }

func (r *recorder) RecordSnapshot(p string) error { r.paths = append(r.paths, p); return nil }

func TestContextServicesAreSafeWhenAbsent(t *testing.T) {
	var c *Context
	c.Emit("x", 1)
	if err := c.RecordSnapshot("a"); err != nil || c.Context() == nil {
		t.Fatal("nil Context services")
	}
	rec := &recorder{}
	var got []string
	c = &Context{Snapshots: rec, EmitFunc: func(n string, _ any) { got = append(got, n) }}
	c.Emit("progress", 1)
	_ = c.RecordSnapshot("a/b.txt")
	if len(got) != 1 || len(rec.paths) != 1 || rec.paths[0] != "a/b.txt" {
		t.Errorf("emit %v snapshots %v", got, rec.paths)
	}
}

func TestTasks(t *testing.T) {
	r := NewTasks()
	task, err := r.Start("chatty", 10, func(ctx context.Context, out *Task) error {
		out.Write([]byte("0123456789abcdef"))
		<-ctx.Done()
		return ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for {
		s, dropped := task.ReadNew()
		if s != "" {
			if s != "6789abcdef" || dropped != 6 {
				t.Errorf("output %q dropped %d", s, dropped)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no output")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s, dropped := task.ReadNew(); s != "" || dropped != 0 {
		t.Errorf("second read = %q (dropped %d), want only new output", s, dropped)
	}
	// Output past the cap pushes out the oldest unread bytes, across
	// writes: what is read is always the newest.
	for _, w := range []string{"abcd", "efgh", "ijkl"} {
		task.Write([]byte(w))
	}
	if s, dropped := task.ReadNew(); s != "cdefghijkl" || dropped != 2 {
		t.Errorf("after three writes: %q dropped %d, want the newest 10 bytes and 2 dropped", s, dropped)
	}
	if _, ok := r.Get(task.ID); !ok || !task.Running() {
		t.Fatal("task not registered or not running")
	}
	if err := r.Kill(task.ID, time.Second); err != nil || task.Running() || !errors.Is(task.Err(), context.Canceled) {
		t.Errorf("kill: %v running=%v err=%v", err, task.Running(), task.Err())
	}
	if err := r.Kill("task-99", time.Millisecond); err == nil {
		t.Error("killing an unknown task must fail")
	}
	// A task that ignores its context until the test ends: KillAll must
	// give up on it and name it (no timing decides that).
	release := make(chan struct{})
	defer close(release)
	stubborn, _ := r.Start("stubborn", 0, func(ctx context.Context, _ *Task) error {
		<-release
		return nil
	})
	if stuck := r.KillAll(20 * time.Millisecond); len(stuck) != 1 || stuck[0] != stubborn.ID {
		t.Errorf("KillAll stuck = %v", stuck)
	}
	if _, err := r.Start("late", 0, func(context.Context, *Task) error { return nil }); err == nil {
		t.Error("Start after KillAll must fail")
	}
}
