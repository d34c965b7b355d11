package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/scripted"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/builtin"
)

// env is a workspace and a state directory for one test.
type env struct {
	ws, state string
}

func newEnv(t *testing.T) env {
	t.Helper()
	return env{ws: t.TempDir(), state: t.TempDir()}
}

func script(t *testing.T, js string) provider.Model {
	t.Helper()
	m, err := scripted.Parse([]byte(js))
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	return m
}

func (e env) opts(model provider.Model) Options {
	// Custom tools in these tests are built inside test functions, so a
	// re-executed child could not find them: they run in-process here, and
	// confined_test.go covers confined handlers.
	return Options{Agent: Agent{Model: model, ModelName: "scripted", Workspace: e.ws, StateDir: e.state}, Confinement: Confinement{InProcessHandlers: true}, Prompt: "go"}
}

// collect runs a query to the end and returns its events and final error.
func collect(t *testing.T, ctx context.Context, o Options) ([]Event, error) {
	t.Helper()
	var evs []Event
	var last error
	for ev, err := range Query(ctx, o) {
		evs = append(evs, ev)
		if err != nil {
			last = err
		}
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != EventResult {
		t.Fatalf("stream did not end with a result event: %+v", evs)
	}
	return evs, last
}

func byType(evs []Event, typ EventType) []Event {
	var out []Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func resultText(e Event) string {
	var s string
	for _, c := range e.ToolResult.Content {
		s += c.Text
	}
	return s
}

func TestQueryWritesEditsAndReads(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [
	  {"text": "I will write the file now.", "tool_calls": [{"id": "t1", "name": "write_file", "input": {"path": "notes/a.txt", "content": "hello world\n"}}]},
	  {"tool_calls": [{"id": "t2", "name": "edit_file", "input": {"path": "notes/a.txt", "old_string": "world", "new_string": "there"}}]},
	  {"tool_calls": [{"id": "t3", "name": "grep", "input": {"pattern": "there", "output_mode": "content"}}]},
	  {"text": "All done."}
	]}`)
	o := e.opts(m)
	o.AllowedTools = []string{"write_file", "edit_file"}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	got, rerr := os.ReadFile(filepath.Join(e.ws, "notes/a.txt"))
	if rerr != nil || string(got) != "hello there\n" {
		t.Fatalf("file = %q, %v; want edited content", got, rerr)
	}
	start := evs[0]
	if start.Type != EventSessionStart || start.SessionID == "" || len(start.SessionStart.Tools) != len(builtin.All()) {
		t.Fatalf("first event = %+v, want session_start with id and the %d built-in tools", start, len(builtin.All()))
	}
	calls, results := byType(evs, EventToolCall), byType(evs, EventToolResult)
	if len(calls) != 3 || len(results) != 3 {
		t.Fatalf("calls=%d results=%d, want 3 and 3", len(calls), len(results))
	}
	for i, id := range []string{"t1", "t2", "t3"} {
		if calls[i].ToolCall.ID != id || results[i].ToolResult.ID != id || results[i].ToolResult.IsError {
			t.Errorf("call %d: call id %q result id %q is_error %v: %s", i, calls[i].ToolCall.ID, results[i].ToolResult.ID, results[i].ToolResult.IsError, resultText(results[i]))
		}
	}
	if !strings.Contains(resultText(results[2]), "notes/a.txt:1:hello there") {
		t.Errorf("grep result = %q", resultText(results[2]))
	}
	var streamed string
	for _, d := range byType(evs, EventTextDelta) {
		streamed += d.TextDelta.Text
	}
	if streamed != "I will write the file now.All done." {
		t.Errorf("streamed text = %q", streamed)
	}
	res := evs[len(evs)-1]
	if res.Result.Subtype != SubtypeSuccess || res.Result.IsError || res.Result.NumTurns != 4 || res.Result.Result != "All done." || res.Result.Usage.OutputTokens == 0 {
		t.Errorf("result = %+v", res)
	}
	for _, ev := range evs {
		if ev.SessionID != start.SessionID {
			t.Fatalf("event %s has session id %q, want %q", ev.Type, ev.SessionID, start.SessionID)
		}
	}
	// The transcript holds the whole conversation: prompt, 4 assistant
	// turns, 3 tool-result messages.
	tr, terr := ReadTranscript(filepath.Join(e.state, "sessions", start.SessionID+".jsonl"))
	if terr != nil {
		t.Fatal(terr)
	}
	if len(tr.Messages) != 8 || tr.Header.Workspace != e.ws && !strings.HasSuffix(tr.Header.Workspace, filepath.Base(e.ws)) {
		t.Fatalf("transcript: %d messages, header %+v", len(tr.Messages), tr.Header)
	}
}

func TestHeadlessDeniesMutatingToolsNotPreApproved(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [
	  {"tool_calls": [{"id": "w", "name": "write_file", "input": {"path": "x.txt", "content": "x"}},
	                  {"id": "r", "name": "list_dir", "input": {}}]},
	  {"text": "ok"}]}`)
	evs, err := collect(t, context.Background(), e.opts(m))
	if err != nil {
		t.Fatal(err)
	}
	res := byType(evs, EventToolResult)
	if !res[0].ToolResult.IsError || !strings.Contains(resultText(res[0]), "needs approval") || !strings.Contains(resultText(res[0]), `--allowed-tools "write_file(x.txt)"`) {
		t.Errorf("write_file result = %v %q, want a denial telling how to pre-approve", res[0].ToolResult.IsError, resultText(res[0]))
	}
	if res[1].ToolResult.IsError {
		t.Errorf("read-only list_dir should be allowed: %q", resultText(res[1]))
	}
	if _, err := os.Stat(filepath.Join(e.ws, "x.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("denied write happened: %v", err)
	}
}

func TestToolsNarrowAndDisallowedHide(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [
	  {"tool_calls": [{"id": "a", "name": "bash", "input": {"command": "touch hacked"}},
	                  {"id": "b", "name": "write_file", "input": {"path": "y", "content": ""}},
	                  {"id": "c", "name": "no_such_tool", "input": {}}]},
	  {"text": "ok"}]}`)
	o := e.opts(m)
	o.Tools = []string{"read_file", "write_file", "bash"}
	o.DisallowedTools = []string{"ba*"}
	o.AllowedTools = []string{"*"}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(evs[0].SessionStart.Tools, ","); got != "read_file,write_file" {
		t.Errorf("visible tools = %s", got)
	}
	res := byType(evs, EventToolResult)
	if !res[0].ToolResult.IsError || !strings.Contains(resultText(res[0]), `no tool named "bash"`) {
		t.Errorf("disallowed bash: %q", resultText(res[0]))
	}
	if res[1].ToolResult.IsError {
		t.Errorf("write_file: %q", resultText(res[1]))
	}
	if !res[2].ToolResult.IsError || !strings.Contains(resultText(res[2]), "available tools: read_file, write_file") {
		t.Errorf("unknown tool: %q", resultText(res[2]))
	}
	if _, err := os.Stat(filepath.Join(e.ws, "hacked")); err == nil {
		t.Error("disallowed bash ran")
	}
}

func TestBadOptionsFailClearly(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [{"text": "hi"}]}`)
	cases := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"no model", func(o *Options) { o.Model = nil }, "Model is required"},
		{"no prompt", func(o *Options) { o.Prompt = " " }, "Prompt is empty"},
		{"state inside workspace", func(o *Options) { o.StateDir = filepath.Join(e.ws, ".state") }, "must be outside"},
		{"unknown tool in Tools", func(o *Options) { o.Tools = []string{"nope"} }, `no such tool`},
		{"bad pattern", func(o *Options) { o.AllowedTools = []string{"ba sh"} }, "not a tool name"},
		{"bad rule", func(o *Options) { o.DisallowedTools = []string{"bash(git status"} }, "must end with ')'"},
		{"bad mode", func(o *Options) { o.PermissionMode = "yollo" }, "unknown permission mode"},
		{"bypass without opt-in", func(o *Options) { o.PermissionMode = PermissionBypass }, "needs AllowDangerouslySkipPermissions"},
		{"bad hook event", func(o *Options) {
			o.Hooks = []Hook{{Event: "BeforeEverything", Func: func(context.Context, *HookInput) (*HookOutput, error) { return nil, nil }}}
		}, "unknown event"},
		{"hook without func", func(o *Options) { o.Hooks = []Hook{{Event: HookPreToolUse}} }, "Func is nil"},
		{"bad hook matcher", func(o *Options) {
			o.Hooks = []Hook{{Event: HookPreToolUse, Matcher: "get_weather(x)", Func: func(context.Context, *HookInput) (*HookOutput, error) { return nil, nil }}}
		}, "takes no argument pattern"},
		{"missing workspace", func(o *Options) { o.Workspace = filepath.Join(e.ws, "missing") }, "no such file"},
		{"resume unknown", func(o *Options) { o.Resume = "abc" }, "no session transcript"},
		{"duplicate tool", func(o *Options) { o.CustomTools = []*tools.Tool{echoTool(t, "read_file", true)} }, "two tools are named"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := e.opts(m)
			c.mod(&o)
			evs, err := collect(t, context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if len(evs) != 1 || evs[0].Result.Subtype != SubtypeErrorDuringExecution || evs[0].Result.Error != err.Error() {
				t.Fatalf("events = %+v", evs)
			}
		})
	}
}

// echoTool returns a custom tool that echoes its "msg" field.
func echoTool(t *testing.T, name string, readOnly bool) *tools.Tool {
	type in struct {
		Msg string `json:"msg"`
	}
	return tools.Must(tools.New(name, "echo", func(_ *tools.Context, i in) (string, error) { return "echo:" + i.Msg, nil },
		&tools.Options{Annotations: &tools.Annotations{ReadOnlyHint: readOnly}, Security: &tools.Security{Network: tools.NetworkNone}}))
}

func TestBadModelOutputAndFailingHandlers(t *testing.T) {
	e := newEnv(t)
	var handled atomic.Int32
	type in struct {
		Mode string `json:"mode"`
	}
	flaky := tools.Must(tools.New("flaky", "fails in various ways", func(c *tools.Context, i in) (string, error) {
		handled.Add(1)
		switch i.Mode {
		case "error":
			return "", errors.New("database unreachable")
		case "panic":
			panic("unexpected state")
		case "hang":
			time.Sleep(2 * time.Second) // ignores its context on purpose
		}
		return "fine", nil
	}, &tools.Options{Timeout: 100 * time.Millisecond, Annotations: &tools.Annotations{ReadOnlyHint: true}}))
	m := script(t, `{"turns": [
	  {"tool_calls": [
	    {"id": "bad-json", "name": "flaky", "raw_input": "{\"mode\": \"er"},
	    {"id": "bad-field", "name": "flaky", "input": {"mode": 7}},
	    {"id": "err", "name": "flaky", "input": {"mode": "error"}},
	    {"id": "panic", "name": "flaky", "input": {"mode": "panic"}},
	    {"id": "hang", "name": "flaky", "input": {"mode": "hang"}},
	    {"id": "ok", "name": "flaky", "input": {"mode": "fine"}}]},
	  {"text": "recovered"}]}`)
	o := e.opts(m)
	o.CustomTools = []*tools.Tool{flaky}
	o.AllowedTools = []string{"flaky"}
	start := time.Now()
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("run took %v: a hung handler held up the loop", d)
	}
	want := map[string]string{
		"bad-json":  "not valid JSON",
		"bad-field": "field mode",
		"err":       "database unreachable",
		"panic":     "crashed (panic",
		"hang":      "did not finish before its deadline",
	}
	for _, r := range byType(evs, EventToolResult) {
		if w, bad := want[r.ToolResult.ID]; bad {
			if !r.ToolResult.IsError || !strings.Contains(resultText(r), w) {
				t.Errorf("%s: is_error=%v %q, want error containing %q", r.ToolResult.ID, r.ToolResult.IsError, resultText(r), w)
			}
		} else if r.ToolResult.IsError || resultText(r) != "fine" {
			t.Errorf("%s: %q", r.ToolResult.ID, resultText(r))
		}
	}
	// The handler never saw the two invalid inputs.
	if n := handled.Load(); n != 4 {
		t.Errorf("handler ran %d times, want 4", n)
	}
	// The stream-json form of the bad-JSON call and its message still encode.
	for _, c := range append(byType(evs, EventToolCall), byType(evs, EventAssistantMessage)...) {
		if _, err := json.Marshal(c); err != nil {
			t.Errorf("marshal %s: %v", c.ToolCall.ID, err)
		}
	}
	if evs[len(evs)-1].Result.Result != "recovered" {
		t.Errorf("result = %+v", evs[len(evs)-1])
	}
}

func TestProviderErrorsEndTheRunCleanly(t *testing.T) {
	for _, c := range []struct{ name, script, want string }{
		{"provider error", `{"turns": [{"tool_calls": [{"id": "a", "name": "list_dir", "input": {}}]}, {"error": "529 overloaded"}]}`, "529 overloaded"},
		{"script exhausted", `{"turns": [{"tool_calls": [{"id": "a", "name": "list_dir", "input": {}}]}]}`, "asked for turn 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			evs, err := collect(t, context.Background(), e.opts(script(t, c.script)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v", err)
			}
			res := evs[len(evs)-1]
			if res.Result.Subtype != SubtypeErrorDuringExecution || !res.Result.IsError || res.Result.NumTurns != 1 {
				t.Errorf("result = %+v", res)
			}
			tr, err := ReadTranscript(filepath.Join(e.state, "sessions", evs[0].SessionID+".jsonl"))
			if err != nil || tr.Torn || len(tr.Messages) != 3 {
				t.Fatalf("transcript after a provider error: %v %+v", err, tr)
			}
		})
	}
}

func TestMaxTurns(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [
	  {"tool_calls": [{"name": "list_dir", "input": {}}]},
	  {"tool_calls": [{"name": "list_dir", "input": {}}]},
	  {"text": "never reached"}]}`)
	o := e.opts(m)
	o.MaxTurns = 2
	evs, err := collect(t, context.Background(), o)
	if !errors.Is(err, ErrMaxTurns) {
		t.Fatalf("err = %v, want ErrMaxTurns", err)
	}
	res := evs[len(evs)-1]
	if res.Result.Subtype != SubtypeErrorMaxTurns || res.Result.NumTurns != 2 {
		t.Errorf("result = %+v", res)
	}
	// Tool ids the script left out were filled in, uniquely.
	calls := byType(evs, EventToolCall)
	if calls[0].ToolCall.ID == "" || calls[0].ToolCall.ID == calls[1].ToolCall.ID {
		t.Errorf("tool ids: %q %q", calls[0].ToolCall.ID, calls[1].ToolCall.ID)
	}
}

// barrierTool blocks until n calls are inside it at once, or fails after a
// second: it can only succeed when its calls run concurrently.
func barrierTool(t *testing.T, n int, readOnly bool, inside *atomic.Int32, maxInside *atomic.Int32) *tools.Tool {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	return tools.Must(tools.New("barrier", "waits for its siblings", func(c *tools.Context, _ struct{}) (string, error) {
		cur := inside.Add(1)
		defer inside.Add(-1)
		for {
			m := maxInside.Load()
			if cur <= m || maxInside.CompareAndSwap(m, cur) {
				break
			}
		}
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return "together", nil
		case <-time.After(300 * time.Millisecond):
			return "alone", nil
		}
	}, &tools.Options{Annotations: &tools.Annotations{ReadOnlyHint: readOnly}}))
}

func TestReadOnlyCallsRunConcurrentlyOthersInOrder(t *testing.T) {
	turns := `{"turns": [{"tool_calls": [
	  {"id": "1", "name": "barrier", "input": {}}, {"id": "2", "name": "barrier", "input": {}}, {"id": "3", "name": "barrier", "input": {}}]},
	  {"text": "done"}]}`
	for _, readOnly := range []bool{true, false} {
		e := newEnv(t)
		var inside, maxInside atomic.Int32
		o := e.opts(script(t, turns))
		o.CustomTools = []*tools.Tool{barrierTool(t, 3, readOnly, &inside, &maxInside)}
		o.AllowedTools = []string{"barrier"}
		evs, err := collect(t, context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		res := byType(evs, EventToolResult)
		for i, r := range res {
			// Run one at a time, the first two wait alone; only the last
			// finds the barrier complete.
			want := "together"
			if !readOnly && i < 2 {
				want = "alone"
			}
			if resultText(r) != want || r.ToolResult.ID != []string{"1", "2", "3"}[i] {
				t.Errorf("readOnly=%v: result %d = %s %q, want %q in call order", readOnly, i, r.ToolResult.ID, resultText(r), want)
			}
		}
		if readOnly && maxInside.Load() != 3 || !readOnly && maxInside.Load() != 1 {
			t.Errorf("readOnly=%v: %d calls ran at once", readOnly, maxInside.Load())
		}
	}
}

func TestEmitDeliversCustomEventsInOrder(t *testing.T) {
	e := newEnv(t)
	progress := tools.Must(tools.New("progress", "reports progress", func(c *tools.Context, _ struct{}) (string, error) {
		for i := range 3 {
			c.Emit("progress", map[string]int{"step": i})
		}
		return "done", nil
	}, &tools.Options{Annotations: &tools.Annotations{ReadOnlyHint: true}}))
	o := e.opts(script(t, `{"turns": [{"tool_calls": [{"id": "p", "name": "progress", "input": {}}]}, {"text": "ok"}]}`))
	o.CustomTools = []*tools.Tool{progress}
	o.AllowedTools = []string{"progress"}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, ev := range evs {
		switch ev.Type {
		case EventToolCall, EventCustom, EventToolResult:
			seq = append(seq, string(ev.Type))
		}
	}
	if got := strings.Join(seq, ","); got != "tool_call,custom,custom,custom,tool_result" {
		t.Errorf("sequence = %s", got)
	}
	c := byType(evs, EventCustom)[2]
	b, _ := json.Marshal(c)
	if c.Custom.ID != "p" || !strings.Contains(string(b), `"data":{"step":2}`) || !strings.Contains(string(b), `"name":"progress"`) {
		t.Errorf("custom event = %s", b)
	}
}

func TestCanUseTool(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [
	  {"tool_calls": [{"id": "w1", "name": "write_file", "input": {"path": "a.txt", "content": "model"}},
	                  {"id": "w2", "name": "write_file", "input": {"path": "b.txt", "content": "x"}},
	                  {"id": "w3", "name": "write_file", "input": {"path": "c.txt", "content": "x"}},
	                  {"id": "w4", "name": "write_file", "input": {"path": "d.txt", "content": "x"}}]},
	  {"text": "unreached"}]}`)
	o := e.opts(m)
	var infos []ToolUseInfo
	o.CanUseTool = func(ctx context.Context, name string, input json.RawMessage, info ToolUseInfo) (PermissionResult, error) {
		infos = append(infos, info)
		switch info.ToolUseID {
		case "w1":
			return PermissionResult{Allow: true, UpdatedInput: json.RawMessage(`{"path": "a.txt", "content": "rewritten"}`)}, nil
		case "w2":
			return PermissionResult{Message: "b.txt is off limits"}, nil
		}
		return PermissionResult{Message: "stop everything", Interrupt: true}, nil
	}
	evs, err := collect(t, context.Background(), o)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "a.txt")); string(b) != "rewritten" {
		t.Errorf("a.txt = %q, want the updated input's content", b)
	}
	res := byType(evs, EventToolResult)
	if len(res) != 3 || !strings.Contains(resultText(res[1]), "b.txt is off limits") || !strings.Contains(resultText(res[2]), "stop everything") {
		t.Fatalf("results = %+v", res)
	}
	if len(infos) != 3 || infos[0].SessionID != evs[0].SessionID {
		t.Errorf("CanUseTool saw %+v", infos)
	}
	for _, f := range []string{"b.txt", "c.txt", "d.txt"} {
		if _, err := os.Stat(filepath.Join(e.ws, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	// Every tool_use is answered in the transcript, even the one not run.
	tr, _ := ReadTranscript(filepath.Join(e.state, "sessions", evs[0].SessionID+".jsonl"))
	last := tr.Messages[len(tr.Messages)-1]
	if len(last.Content) != 4 || !strings.Contains(last.Content[3].Content[0].Text, "not run") {
		t.Errorf("last transcript message = %+v", last)
	}
}

func TestResumeContinuesTheConversation(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [
	  {"tool_calls": [{"id": "a", "name": "write_file", "input": {"path": "one.txt", "content": "1"}}]},
	  {"text": "first run done"},
	  {"text": "second run done"}]}`)
	o := e.opts(m)
	o.AllowedTools = []string{"write_file"}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	id := evs[0].SessionID
	// Simulate a crash mid-write of a later record: a torn last line.
	path := filepath.Join(e.state, "sessions", id+".jsonl")
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"type":"message","message":{"role":"us`)
	f.Close()

	o2 := e.opts(m)
	o2.Resume, o2.Prompt = id, "and now?"
	evs2, err := collect(t, context.Background(), o2)
	if err != nil {
		t.Fatal(err)
	}
	if !evs2[0].SessionStart.Resumed || evs2[0].SessionID != id || evs2[len(evs2)-1].Result.Result != "second run done" {
		t.Fatalf("resumed run: %+v ... %+v", evs2[0], evs2[len(evs2)-1])
	}
	tr, err := ReadTranscript(path)
	if err != nil {
		t.Fatalf("transcript after resume: %v", err)
	}
	// prompt, tool_use, result, text | prompt, text  — the torn line is gone
	// from the conversation (it was never a complete record).
	if n := len(tr.Messages); n != 6 || tr.Messages[4].Text() != "and now?" {
		t.Fatalf("messages = %d: %+v", n, tr.Messages)
	}
}

func TestResumeRepairsUnansweredToolCalls(t *testing.T) {
	msgs := repairMessages([]provider.Message{
		{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText, Text: "hi"}}},
		{Role: provider.RoleAssistant, Content: []provider.Block{{Type: provider.BlockToolUse, ID: "x", Name: "bash"}}},
	})
	if len(msgs) != 3 || msgs[2].Content[0].ToolUseID != "x" || !msgs[2].Content[0].IsError {
		t.Fatalf("repaired = %+v", msgs)
	}
}

func TestStoppingEarlyReleasesTheSession(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [{"text": "a b c d e f", "tool_calls": [{"id": "a", "name": "list_dir", "input": {}}]}, {"text": "x"}, {"text": "y"}]}`)
	var id string
	for ev := range Query(context.Background(), e.opts(m)) {
		id = ev.SessionID
		if ev.Type == EventTextDelta {
			break
		}
	}
	// The lock is released and the transcript is readable and resumable.
	o := e.opts(m)
	o.Resume = id
	if _, err := collect(t, context.Background(), o); err != nil {
		t.Fatalf("resume after an early stop: %v", err)
	}
}

func TestConcurrentUseOfOneSessionIsRefused(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [{"text": "hi"}, {"text": "again"}]}`)
	o := e.opts(m)
	o.SessionID = "fixed-id"
	next, stop := iterPull(Query(context.Background(), o))
	defer stop()
	if ev, _, _ := next(); ev.Type != EventSessionStart {
		t.Fatal("no session_start")
	}
	o2 := e.opts(m)
	o2.Resume = "fixed-id"
	_, err := collect(t, context.Background(), o2)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("err = %v", err)
	}
}

func TestCancellationStopsARunningTool(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	waiter := tools.Must(tools.New("wait", "waits for cancellation", func(c *tools.Context, _ struct{}) (string, error) {
		cancel()
		<-c.Context().Done()
		return "", c.Context().Err()
	}, &tools.Options{Annotations: &tools.Annotations{ReadOnlyHint: true}}))
	o := e.opts(script(t, `{"turns": [{"tool_calls": [{"name": "wait", "input": {}}]}, {"text": "x"}]}`))
	o.CustomTools = []*tools.Tool{waiter}
	o.AllowedTools = []string{"wait"}
	evs, err := collect(t, ctx, o)
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if r := evs[len(evs)-1]; r.Result.Subtype != SubtypeErrorDuringExecution {
		t.Errorf("result = %+v", r)
	}
}

func TestEventJSONShapes(t *testing.T) {
	cases := []struct {
		ev   Event
		want string
	}{
		{Event{Type: EventToolResult, SessionID: "s", ToolResult: &ToolResultEvent{ID: "t1", Name: "read_file", Content: []tools.Content{tools.TextContent("x")}}},
			`{"type":"tool_result","session_id":"s","id":"t1","name":"read_file","is_error":false,"content":[{"type":"text","text":"x"}]}`},
		{Event{Type: EventToolCall, SessionID: "s", ToolCall: &ToolCallEvent{ID: "t1", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)}},
			`{"type":"tool_call","session_id":"s","id":"t1","name":"bash","input":{"command":"ls"}}`},
		{Event{Type: EventToolCall, SessionID: "s", ToolCall: &ToolCallEvent{ID: "t2", Name: "bash", Input: json.RawMessage(`{"comm`)}},
			`{"type":"tool_call","session_id":"s","id":"t2","name":"bash","input":"{\"comm"}`},
		{Event{Type: EventSessionStart, SessionID: "s", SessionStart: &SessionStartEvent{Model: "m", Workspace: "/w"}},
			`{"type":"session_start","session_id":"s","model":"m","workspace":"/w","tools":[]}`},
		{Event{Type: EventResult, SessionID: "s", Result: &ResultEvent{Subtype: SubtypeSuccess, NumTurns: 2, Result: "ok"}},
			`{"type":"result","session_id":"s","subtype":"success","is_error":false,"num_turns":2,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"result":"ok","duration_ms":0}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.ev)
		if err != nil || string(b) != c.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", c.ev.Type, b, err, c.want)
		}
	}
}
