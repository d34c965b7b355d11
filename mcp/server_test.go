package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

type orderIn struct {
	OrderID string `json:"orderId" jsonschema:"the order id, such as O-1001"`
	Verbose bool   `json:"verbose,omitempty"`
}

type order struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// countCalls counts the tools/call requests a go-sdk server receives, to
// show that a call really crossed an MCP session.
func countCalls(s *sdk.Server) *atomic.Int64 {
	var n atomic.Int64
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/call" {
				n.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	return &n
}

func TestInProcessRoundTrip(t *testing.T) {
	var seen struct {
		sync.Mutex
		workspace, session, callID string
	}
	lookup := tools.Must(tools.New("lookup_order", "Look up an order by id.",
		func(ctx *tools.Context, in orderIn) (order, error) {
			seen.Lock()
			seen.workspace, seen.session, seen.callID = ctx.Workspace, ctx.SessionID, ctx.Call.ID
			seen.Unlock()
			ctx.Emit("progress", map[string]any{"looking_up": in.OrderID})
			if in.OrderID == "O-404" {
				return order{}, fmt.Errorf("order not found: %s", in.OrderID)
			}
			return order{ID: in.OrderID, Status: "shipped"}, nil
		},
		&tools.Options{
			Security:    &tools.Security{Network: tools.NetworkNone},
			Annotations: &tools.Annotations{ReadOnlyHint: true, Title: "Order lookup", OpenWorldHint: tools.Bool(false)},
			Timeout:     7 * time.Second,
		}))
	srv := NewServer("orders", "1.0.0")
	calls := countCalls(srv.SDK())
	exposed := AddTool(srv, lookup)
	t.Cleanup(func() { srv.Close() })

	if exposed.Name() != "mcp__orders__lookup_order" {
		t.Fatalf("name %q", exposed.Name())
	}
	if got := srv.Tools(); len(got) != 1 || got[0] != exposed {
		t.Fatalf("Tools() = %v", got)
	}
	if exposed.Description() != lookup.Description() || string(exposed.InputSchemaJSON()) != string(lookup.InputSchemaJSON()) {
		t.Errorf("description or schema changed: %q %s", exposed.Description(), exposed.InputSchemaJSON())
	}
	if !reflect.DeepEqual(exposed.Security(), lookup.Security()) || exposed.Security() == nil {
		t.Errorf("security %+v, want %+v", exposed.Security(), lookup.Security())
	}
	if !reflect.DeepEqual(exposed.Annotations(), lookup.Annotations()) || !exposed.ReadOnly() {
		t.Errorf("annotations %+v, want %+v", exposed.Annotations(), lookup.Annotations())
	}
	if exposed.Timeout() != 7*time.Second {
		t.Errorf("timeout %v", exposed.Timeout())
	}
	// That a Manager does not mark it as forwarding (its handler must run
	// confined like any custom tool) is TestManagerInProcessEntry's.

	var events []string
	var mu sync.Mutex
	ctx := &tools.Context{
		SessionID: "s1", Workspace: "/ws", Call: tools.Call{ID: "call-1", Name: exposed.Name()},
		EmitFunc: func(name string, data any) {
			mu.Lock()
			defer mu.Unlock()
			b, _ := json.Marshal(data)
			events = append(events, name+" "+string(b))
		},
	}
	res := exposed.Call(ctx, json.RawMessage(`{"orderId": "O-1001"}`))
	if res.IsError || res.TextOf() != `{"id":"O-1001","status":"shipped"}` {
		t.Fatalf("result %+v", res)
	}
	if got, want := res.Structured, map[string]any{"id": "O-1001", "status": "shipped"}; !reflect.DeepEqual(got, want) {
		t.Errorf("structured %#v, want %#v", got, want)
	}
	if calls.Load() != 1 {
		t.Errorf("the go-sdk server saw %d tools/call requests, want 1", calls.Load())
	}
	seen.Lock()
	if seen.workspace != "/ws" || seen.session != "s1" || seen.callID != "call-1" {
		t.Errorf("the handler saw workspace %q session %q call %q: the caller's Context did not reach it", seen.workspace, seen.session, seen.callID)
	}
	seen.Unlock()
	mu.Lock()
	if len(events) != 1 || events[0] != `progress {"looking_up":"O-1001"}` {
		t.Errorf("events %q", events)
	}
	mu.Unlock()

	// A handler error is an error result, and the loop goes on.
	res = exposed.Call(ctx, json.RawMessage(`{"orderId": "O-404"}`))
	if !res.IsError || res.TextOf() != "order not found: O-404" {
		t.Errorf("error result %+v", res)
	}
	// Bad input never reaches the server.
	res = exposed.Call(ctx, json.RawMessage(`{"orderId": 5}`))
	if !res.IsError || !strings.Contains(res.TextOf(), "orderId") {
		t.Errorf("bad input: %+v", res)
	}
	if calls.Load() != 2 {
		t.Errorf("the server saw %d calls, want 2 (invalid input must not be sent)", calls.Load())
	}
}

func TestInProcessContentBlocks(t *testing.T) {
	want := &tools.Result{
		Content: []tools.Content{
			tools.TextContent("hello"),
			tools.ImageContent(testPNG, "image/png"),
			tools.AudioContent([]byte("RIFF0000WAVE"), "audio/wav"),
			{Type: tools.ContentResourceLink, URI: "file:///a.txt", Name: "a.txt", Title: "A", Description: "the a file", MIMEType: "text/plain", Size: 42},
			tools.EmbeddedResource(tools.ResourceContents{URI: "file:///b.txt", MIMEType: "text/plain", Text: "bee"}),
			tools.EmbeddedResource(tools.ResourceContents{URI: "file:///c.bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 255}}),
		},
		IsError: true,
	}
	blocks := tools.Must(tools.New("blocks", "Returns every kind of block.",
		func(ctx *tools.Context, _ struct{}) (*tools.Result, error) { return want, nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))
	srv := NewServer("media", "")
	exposed := AddTool(srv, blocks)
	t.Cleanup(func() { srv.Close() })
	got := exposed.Call(nil, nil)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("blocks changed on the way:\n got %s\nwant %s", g, w)
	}
}

// TestInProcessWire checks what an ordinary MCP client sees when it lists
// the server: the schema, the annotations, and our Security in _meta.
func TestInProcessWire(t *testing.T) {
	tl := tools.Must(tools.New("search_docs", "Search the docs.",
		func(ctx *tools.Context, in struct {
			Query string `json:"query"`
		}) (string, error) {
			return in.Query, nil
		},
		&tools.Options{
			Security:    &tools.Security{Network: tools.NetworkLoopback, Filesystem: tools.FilesystemWorkspace},
			Annotations: &tools.Annotations{ReadOnlyHint: true, DestructiveHint: tools.Bool(false), Title: "Search"},
		}))
	srv := NewServer("kb", "2.0.0")
	AddTool(srv, tl)
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "other"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if info := cs.InitializeResult().ServerInfo; info.Name != "kb" || info.Version != "2.0.0" {
		t.Errorf("server info %+v", info)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 1 {
		t.Fatalf("list: %v %+v", err, lt)
	}
	got := lt.Tools[0]
	if got.Name != "search_docs" || got.Description != "Search the docs." {
		t.Errorf("tool %+v", got)
	}
	if a := got.Annotations; a == nil || !a.ReadOnlyHint || a.Title != "Search" || a.DestructiveHint == nil || *a.DestructiveHint {
		t.Errorf("annotations %+v", a)
	}
	raw, _ := json.Marshal(got.Meta[metaSecurityKey])
	var sec tools.Security
	if err := json.Unmarshal(raw, &sec); err != nil || sec != (tools.Security{Network: tools.NetworkLoopback, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsNone}) {
		t.Errorf("_meta security %s", raw)
	}
	schema, _ := json.Marshal(got.InputSchema)
	if !strings.Contains(string(schema), `"query"`) {
		t.Errorf("schema %s", schema)
	}
	// A foreign client gets a result, but no caller's Context.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": "refunds"}, Meta: sdk.Meta{metaCallKey: "1"}})
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "refunds" {
		t.Errorf("foreign call: %v %+v", err, res)
	}
}

func TestInProcessCancellation(t *testing.T) {
	started := make(chan struct{})
	handlerSawCancel := make(chan error, 1)
	slow := tools.Must(tools.New("slow", "Waits until cancelled.",
		func(ctx *tools.Context, _ struct{}) (string, error) {
			close(started)
			select {
			case <-ctx.Context().Done():
				handlerSawCancel <- ctx.Context().Err()
				return "", ctx.Context().Err()
			case <-time.After(20 * time.Second):
				handlerSawCancel <- nil
				return "finished", nil
			}
		},
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))
	srv := NewServer("slowsrv", "")
	exposed := AddTool(srv, slow)
	t.Cleanup(func() { srv.Close() })

	cctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	t0 := time.Now()
	res := exposed.Call(&tools.Context{Ctx: cctx}, nil)
	if !res.IsError || time.Since(t0) > 5*time.Second {
		t.Fatalf("cancelled call: %+v after %v", res, time.Since(t0))
	}
	select {
	case err := <-handlerSawCancel:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v, want Canceled (notifications/cancelled must reach it)", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the server-side handler was not cancelled")
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true}, {"my-server_2", true}, {"a", true}, {"A1-b_c", true},
		{"", false}, {"a__b", false}, {"_a", false}, {"a_", false}, {"a.b", false}, {"a b", false}, {"ä", false},
		{strings.Repeat("x", 56), true}, {strings.Repeat("x", 57), false},
	} {
		if err := CheckServerName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckServerName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		full, server, tool string
		ok                 bool
	}{
		{"mcp__orders__lookup_order", "orders", "lookup_order", true},
		{"mcp__a_b__c__d", "a_b", "c__d", true},
		{"mcp__everything__get-sum", "everything", "get-sum", true},
		{"mcp__orders", "", "", false},
		{"mcp____x", "", "", false},
		{"mcp__orders__", "", "", false},
		{"bash", "", "", false},
	} {
		s, tl, ok := ParseToolName(tc.full)
		if s != tc.server || tl != tc.tool || ok != tc.ok {
			t.Errorf("ParseToolName(%q) = %q %q %v", tc.full, s, tl, ok)
		}
		if ok && ToolName(s, tl) != tc.full {
			t.Errorf("ToolName(%q, %q) does not round-trip", s, tl)
		}
	}
}

func TestRegistrationPanics(t *testing.T) {
	mk := func(name string) *tools.Tool {
		return tools.Must(tools.New(name, "x", func(*tools.Context, struct{}) (string, error) { return "", nil }, nil))
	}
	for _, tc := range []struct {
		what string
		f    func()
		want string
	}{
		{"bad server name", func() { NewServer("a__b", "") }, "no \"__\""},
		{"duplicate tool", func() {
			s := NewServer("dup", "")
			AddTool(s, mk("t"))
			AddTool(s, mk("t"))
		}, "already has a tool named"},
		{"full name too long", func() { AddTool(NewServer(strings.Repeat("s", 40), ""), mk(strings.Repeat("t", 20))) }, "more than 64"},
		{"nil tool", func() { AddTool(NewServer("n", ""), nil) }, "nil"},
	} {
		func() {
			defer func() {
				v := recover()
				if v == nil || !strings.Contains(fmt.Sprint(v), tc.want) {
					t.Errorf("%s: panic %v, want one mentioning %q", tc.what, v, tc.want)
				}
			}()
			tc.f()
		}()
	}
}

// confinedProbe is defined at package level, like every custom tool, so
// that the confined re-execution of this test binary has it.
var (
	confinedSrv   = NewServer("confined", "1")
	confinedProbe = AddTool(confinedSrv, tools.Must(tools.New("probe", "Reports the pid it runs in and whether it can reach the network.",
		func(ctx *tools.Context, in dialArgs) (map[string]any, error) {
			out := map[string]any{"pid": os.Getpid()}
			if c, err := net.DialTimeout("tcp", in.Addr, time.Second); err != nil {
				out["dial"] = "refused"
			} else {
				c.Close()
				out["dial"] = "connected"
			}
			return out, nil
		},
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}})))
)

// TestInProcessConfined runs an in-process server's tool the way the
// kernel runs every custom tool: in a confined re-execution of the
// program, under the policy its Security allows. The MCP round trip then
// happens inside the confined child.
func TestInProcessConfined(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pol, err := confined.HandlerPolicy(sandbox.Policy{}, confinedProbe.Security())
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(pol)
	if errors.Is(err, sandbox.ErrUnsupported) {
		t.Skipf("the sandbox cannot run here (%v); this test would have checked that an in-process MCP tool's handler runs confined, without network", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	input := json.RawMessage(fmt.Sprintf(`{"addr": %q}`, ln.Addr().String()))

	// Unconfined, the same call reaches the listener: the probe works.
	direct := confinedProbe.Call(nil, input)
	if direct.IsError || !strings.Contains(direct.TextOf(), `"dial":"connected"`) {
		t.Fatalf("direct call: %+v", direct)
	}
	res := confined.Call(&tools.Context{Call: tools.Call{ID: "c1", Name: confinedProbe.Name(), Input: input}}, confinedProbe, sb, "")
	if res.IsError {
		t.Fatalf("confined call: %s", res.TextOf())
	}
	var out struct {
		PID  int    `json:"pid"`
		Dial string `json:"dial"`
	}
	if err := json.Unmarshal([]byte(res.TextOf()), &out); err != nil {
		t.Fatalf("%v: %s", err, res.TextOf())
	}
	if out.PID == os.Getpid() {
		t.Error("the handler ran in the test process, not in a confined child")
	}
	if out.Dial != "refused" {
		t.Errorf("a handler declaring network none reached the network: %+v", out)
	}
}
