package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider/scripted"
	"github.com/lite-agent/lite-agent/tools"
)

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
	ws, state := b.TempDir(), b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		o := Options{Prompt: "go", Model: model, Workspace: ws, StateDir: state, CustomTools: []*tools.Tool{noop}, Tools: []string{"noop"}}
		for ev, err := range Query(context.Background(), o) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == EventResult && ev.NumTurns != turns+1 {
				b.Fatalf("turns = %d", ev.NumTurns)
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
