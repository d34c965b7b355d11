package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/scripted"
	"github.com/lite-agent/lite-agent/tools"
)

// BenchmarkContextPerTurn is what context management adds to one turn of
// a long, edited session: the estimate and the view sent to the model,
// over 140 messages with 60 results cleared and a summary.
func BenchmarkContextPerTurn(b *testing.B) {
	r := &run{session: &session{opts: &Options{Agent: Agent{ModelName: "claude-sonnet-4-6"}}}}
	body := strings.Repeat("x", 14_000)
	for i := range 70 {
		id := fmt.Sprintf("t%d", i)
		r.messages = append(r.messages,
			provider.Message{Role: provider.RoleAssistant, Content: []provider.Block{{Type: provider.BlockToolUse, ID: id, Name: "read_file", Input: json.RawMessage(fmt.Sprintf(`{"path":"f%d"}`, i))}}},
			provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockToolResult, ToolUseID: id, Content: []provider.Block{{Type: provider.BlockText, Text: body}}}}})
		if i < 60 {
			r.window.clear(r.messages[len(r.messages)-2].Content[0])
		}
	}
	r.window.summary, r.window.cut = "summary", 0
	r.window.last = provider.Usage{CacheReadInputTokens: 50_000}
	r.window.sentLen = len(r.messages) - 2
	b.ReportAllocs()
	for b.Loop() {
		_ = r.estimate()
		_ = r.request()
		r.window.sentLen = len(r.messages) - 2
	}
}

// BenchmarkToolCallTurnInProcess is BenchmarkToolCallTurn with the no-op
// handler in-process (InProcessHandlers) and a model name whose window the
// kernel knows, so that what is measured is the loop with its context
// bookkeeping (the estimate before each call, the default system prompt,
// project-instruction lookup at start), not the confined child a custom
// handler otherwise runs in.
func BenchmarkToolCallTurnInProcess(b *testing.B) {
	const turns = 100
	var sb strings.Builder
	sb.WriteString(`{"turns": [`)
	for i := range turns {
		fmt.Fprintf(&sb, `{"text": "step %d", "tool_calls": [{"name": "noop", "input": {"n": %d}}]},`, i, i)
	}
	sb.WriteString(`{"text": "done"}]}`)
	model, err := scripted.Parse([]byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	type in struct {
		N int `json:"n"`
	}
	noop := tools.Must(tools.New("noop", "does nothing", func(*tools.Context, in) (string, error) { return "ok", nil },
		&tools.Options{Annotations: &tools.Annotations{ReadOnlyHint: true}}))
	for _, name := range []string{"claude-sonnet-4-6", "unknown-window"} {
		b.Run(name, func(b *testing.B) { benchTurns(b, model, noop, name, turns) })
	}
}

func benchTurns(b *testing.B, model provider.Model, noop *tools.Tool, name string, turns int) {
	ws, state := b.TempDir(), b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		o := Options{
			Agent: Agent{
				Model:        model,
				ModelName:    name,
				Workspace:    ws,
				StateDir:     state,
				CustomTools:  []*tools.Tool{noop},
				Tools:        []string{"noop"},
				AllowedTools: []string{"noop"},
			},
			Confinement: Confinement{
				InProcessHandlers: true,
			},
			Prompt: "go",
		}
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
