package kernel

import (
	"context"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// twinA and twinB are two different tools of one name, both handed to
// confined.Serve in TestMain (confinedTestTools): a confined child
// could not tell which one the parent means.
var (
	twinA = tools.Must(tools.New("twin_tool", "one of two", func(*tools.Context, struct{}) (string, error) { return "a", nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))
	twinB = tools.Must(tools.New("twin_tool", "the other", func(*tools.Context, struct{}) (string, error) { return "b", nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))
)

// TestQueryRefusesToolsTheChildCannotFind: a custom tool (or an in-process
// MCP server's tool) that the confined child would not find is refused
// when the session starts — before the model is called, the tool named
// with the fix — instead of failing at its first call. With
// InProcessHandlers it runs (nothing is re-executed), which shows the
// refusal is about the child, not the tool.
func TestQueryRefusesToolsTheChildCannotFind(t *testing.T) {
	notServed := tools.Must(tools.New("not_served", "built in a test, after TestMain", func(*tools.Context, struct{}) (string, error) { return "ran", nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))
	srv := mcp.NewServer("late", "1")
	mcp.AddTool(srv, tools.Must(tools.New("lookup", "an in-process server's tool", func(*tools.Context, struct{}) (string, error) { return "ran", nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}})))
	cases := []struct {
		what string
		set  func(*Options)
		want string
	}{
		{"custom tool not handed over", func(o *Options) { o.CustomTools = []*tools.Tool{notServed} },
			"the not_served tool cannot run confined: it is not among the tools handed to confined.Serve"},
		{"in-process MCP server's tool not handed over", func(o *Options) {
			o.Toolsets = mcpToolsets(t, &mcp.Options{Servers: map[string]mcp.ServerConfig{"late": {Server: srv}}})
		},
			"the mcp__late__lookup tool cannot run confined: it is not among the tools handed to confined.Serve"},
		{"two served tools of one name", func(o *Options) { o.CustomTools = []*tools.Tool{twinA} },
			"two different tools named twin_tool were handed to confined.Serve"},
	}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			e := newEnv(t)
			o := e.opts(script(t, `{"turns": [{"text": "the model must not be called"}]}`))
			o.InProcessHandlers = false // e.opts runs handlers in-process
			tc.set(&o)
			evs, err := collect(t, context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "kernel: ") {
				t.Fatalf("Query: %v, want an error containing %q", err, tc.want)
			}
			for _, ev := range evs {
				if ev.Type == EventTextDelta || ev.Type == EventToolResult {
					t.Fatalf("the session ran before the refusal: %+v", ev)
				}
			}
			// Unconfined, the same tool set is fine: only the child
			// could not find it.
			o.InProcessHandlers = true
			if _, err := collect(t, context.Background(), o); err != nil && strings.Contains(err.Error(), "cannot run confined") {
				t.Errorf("InProcessHandlers: %v", err)
			}
		})
	}
}

// loopbackServer is an in-process MCP server whose tool declares loopback
// network, handed to confined.Serve in TestMain.
var loopbackServer = func() *mcp.Server {
	s := mcp.NewServer("lan", "1")
	mcp.AddTool(s, tools.Must(tools.New("ping", "reaches a local service", func(*tools.Context, struct{}) (string, error) { return "pong", nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkLoopback}})))
	return s
}()

// TestQueryRefusesHandlersWiderThanTheCeiling: a custom tool (or an
// in-process MCP server's tool) declaring more network than the handler
// ceiling gives is refused when the session starts, naming the tool, the
// two modes and the fix — before, its handler was narrowed to the
// ceiling's network without a word and failed at its first connection.
// Under a ceiling that gives it (HandlerCeiling, or a Sandbox wide
// enough), the same options run.
func TestQueryRefusesHandlersWiderThanTheCeiling(t *testing.T) {
	cases := []struct {
		what string
		set  func(*Options)
		want string
	}{
		{"custom tool", func(o *Options) { o.CustomTools = []*tools.Tool{probeLoopback} },
			`the probe_lo tool cannot run confined: it declares network "loopback", beyond the "none" its handler ceiling allows`},
		{"in-process MCP server's tool", func(o *Options) {
			o.Toolsets = mcpToolsets(t, &mcp.Options{Servers: map[string]mcp.ServerConfig{"lan": {Server: loopbackServer}}})
		}, `the mcp__lan__ping tool cannot run confined: it declares network "loopback", beyond the "none" its handler ceiling allows`},
		{"a ceiling narrower than the sandbox", func(o *Options) {
			o.CustomTools = []*tools.Tool{probeLoopback}
			o.Sandbox = &sandbox.Policy{Network: sandbox.NetworkPrivate}
			o.HandlerCeiling = &sandbox.Policy{Network: sandbox.NetworkNone}
		}, `beyond the "none" its handler ceiling allows`},
	}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			e := newEnv(t)
			o := e.opts(script(t, `{"turns": [{"text": "the model must not be called"}]}`))
			o.InProcessHandlers = false
			tc.set(&o)
			evs, err := collect(t, context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "HandlerCeiling") {
				t.Fatalf("Query: %v, want an error containing %q and the fix", err, tc.want)
			}
			if len(byType(evs, EventTextDelta)) > 0 {
				t.Fatal("the model was called before the refusal")
			}
			if err := CheckConfinedTools(&o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckConfinedTools (what local.New calls): %v", err)
			}
			// With a ceiling that gives what the tool declares, it starts.
			o.HandlerCeiling = &sandbox.Policy{Network: sandbox.NetworkLoopback}
			if err := CheckConfinedTools(&o); err != nil {
				t.Errorf("under a loopback ceiling: %v", err)
			}
			if _, err := collect(t, context.Background(), o); err != nil && strings.Contains(err.Error(), "cannot run confined") {
				t.Errorf("under a loopback ceiling: %v", err)
			}
		})
	}
}
