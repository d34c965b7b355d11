package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/provider/scripted"
	"github.com/lite-agent/lite-agent/tools"
)

// benchNoop is BenchmarkToolCallTurn's tool. It is handed to
// confined.Serve in TestMain, so that the confined child finds it
// (a custom handler runs confined by default).
var benchNoop = tools.Must(tools.New("confined_noop", "does nothing", func(*tools.Context, struct {
	N int `json:"n"`
}) (string, error) {
	return "ok", nil
}, &tools.Options{Annotations: &tools.Annotations{ReadOnlyHint: true}}))

// BenchmarkToolCallTurn measures the kernel's own cost per tool-call turn:
// a scripted model (no network, no tokens) asks for a no-op tool each turn.
// What remains is the loop — streaming, gating, schema validation, the tool
// call, events, and the transcript append. Reported as ns/turn (issue
// target: under 200 µs per turn).
func BenchmarkToolCallTurn(b *testing.B) {
	const turns = 100
	var sb strings.Builder
	sb.WriteString(`{"turns": [`)
	for i := range turns {
		fmt.Fprintf(&sb, `{"text": "step %d", "tool_calls": [{"name": "confined_noop", "input": {"n": %d}}]},`, i, i)
	}
	sb.WriteString(`{"text": "done"}]}`)
	model, err := scripted.Parse([]byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	noop := benchNoop
	ws, state := b.TempDir(), b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		o := Options{Agent: Agent{Model: model, Workspace: ws, StateDir: state, CustomTools: []*tools.Tool{noop}, Tools: []string{"confined_noop"}, AllowedTools: []string{"confined_noop"}}, Prompt: "go"}
		for ev, err := range Query(context.Background(), o) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == EventResult && ev.Result.NumTurns != turns+1 {
				b.Fatalf("turns = %d", ev.Result.NumTurns)
			}
			if ev.Type == EventToolResult && ev.ToolResult.IsError {
				// A denied or failed call would measure the wrong path.
				b.Fatalf("the no-op call failed: %v", ev.ToolResult.Content)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(turns+1)), "ns/turn")
}

// BenchmarkToolCallValidation isolates input validation and dispatch of one
// typed tool call.
func BenchmarkToolCallValidation(b *testing.B) {
	type in struct {
		Path  string `json:"path"`
		Limit int    `json:"limit,omitempty"`
	}
	t := tools.Must(tools.New("t", "d", func(*tools.Context, in) (string, error) { return "ok", nil }, nil))
	input := json.RawMessage(`{"path": "a/b.go", "limit": 20}`)
	b.ReportAllocs()
	for range b.N {
		if r := t.Call(nil, input); r.IsError {
			b.Fatal(r.TextOf())
		}
	}
}

type benchNoopIn struct {
	N int `json:"n"`
}

// benchPlainTool and benchMCPServer are package-level so that a confined
// re-execution of the test binary finds them by name.
var (
	benchPlainTool = tools.Must(tools.New("bench_noop", "does nothing",
		func(*tools.Context, benchNoopIn) (string, error) { return "ok", nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsNone}}))
	benchMCPServer = func() *mcp.Server {
		s := mcp.NewServer("bench", "1.0.0")
		mcp.AddTool(s, tools.Must(tools.New("noop", "does nothing",
			func(*tools.Context, benchNoopIn) (string, error) { return "ok", nil },
			&tools.Options{Security: &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsNone}})))
		return s
	}()
)

// BenchmarkMCPToolCallTurn is issue 6's comparison: a session whose model
// calls a custom tool 20 times, the tool being a plain custom tool or the
// same tool on an in-process MCP server (mcp__bench__noop), each run the
// way the kernel runs custom tools by default (confined, in a re-executed
// child) and in-process (InProcessHandlers). Reported per call.
func BenchmarkMCPToolCallTurn(b *testing.B) {
	const calls = 20
	script := func(name string) *scripted.Model {
		var sb strings.Builder
		sb.WriteString(`{"turns": [`)
		for i := range calls {
			fmt.Fprintf(&sb, `{"tool_calls": [{"name": %q, "input": {"n": %d}}]},`, name, i)
		}
		sb.WriteString(`{"text": "done"}]}`)
		m, err := scripted.Parse([]byte(sb.String()))
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		tool      string
		mcp       bool
		inProcess bool
	}{
		{"plain-confined", "bench_noop", false, false},
		{"mcp-confined", "mcp__bench__noop", true, false},
		{"plain-in-process", "bench_noop", false, true},
		{"mcp-in-process", "mcp__bench__noop", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			model := script(tc.tool)
			ws, state := b.TempDir(), b.TempDir()
			for b.Loop() {
				o := Options{
					Agent: Agent{
						Model:        model,
						Workspace:    ws,
						StateDir:     state,
						AllowedTools: []string{tc.tool},
						Tools:        []string{tc.tool},
					},
					Confinement: Confinement{
						InProcessHandlers: tc.inProcess,
					},
					Prompt: "go",
				}
				if tc.mcp {
					o.Toolsets = mcpToolsets(b, &mcp.Options{Servers: map[string]mcp.ServerConfig{"bench": {Server: benchMCPServer}}})
				} else {
					o.CustomTools = []*tools.Tool{benchPlainTool}
				}
				for ev, err := range Query(context.Background(), o) {
					if err != nil {
						b.Fatal(err)
					}
					if ev.Type == EventToolResult && ev.ToolResult.IsError {
						b.Fatalf("%s: %v", tc.tool, ev.ToolResult.Content)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call")
		})
	}
}
