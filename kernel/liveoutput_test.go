package kernel

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/tools"
)

// TestToolOutputIsLive: what a handler writes to ctx.Output reaches the
// stream as tool_output events while the call still runs — the handler
// waits for the consumer to have seen its first line before it writes
// the second, so a kernel that delivered output only with the result
// would hang here (bounded by the test's deadline) — and none comes after
// the result.
func TestToolOutputIsLive(t *testing.T) {
	e := newEnv(t)
	seen := make(chan struct{})
	talker := tools.Must(tools.New("talker", "writes output", func(c *tools.Context, _ struct{}) (string, error) {
		var sink strings.Builder
		w := c.Output(&sink)
		w.Write([]byte("first line\n"))
		select {
		case <-seen:
		case <-time.After(20 * time.Second):
			return "", nil // the test fails below: no event came
		}
		w.Write([]byte("second line\n"))
		return sink.String(), nil
	}, &tools.Options{Annotations: &tools.Annotations{ReadOnlyHint: true}}))
	o := e.opts(script(t, `{"turns": [{"tool_calls": [{"id": "p", "name": "talker", "input": {}}]}, {"text": "ok"}]}`))
	o.CustomTools = []*tools.Tool{talker}
	o.AllowedTools = []string{"talker"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seq []string
	var live string
	closed := false
	for ev, err := range Query(ctx, o) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case EventToolOutput:
			if ev.ToolOutput.ID != "p" || ev.ToolOutput.Name != "talker" {
				t.Errorf("tool_output of %+v", ev.ToolOutput)
			}
			live += ev.ToolOutput.Text
			if strings.Contains(live, "first line\n") && !closed {
				close(seen)
				closed = true
			}
			seq = append(seq, string(ev.Type))
		case EventToolCall, EventToolResult:
			seq = append(seq, string(ev.Type))
			if ev.Type == EventToolResult && resultText(ev) != "first line\nsecond line\n" {
				t.Errorf("result %q", resultText(ev))
			}
		}
	}
	if !closed {
		t.Fatalf("no tool_output event while the call ran: %v", seq)
	}
	if seq[0] != "tool_call" || seq[len(seq)-1] != "tool_result" {
		t.Errorf("events %v: tool_output must come between the call and its result", seq)
	}
}

// TestLiveOutputBounds: a burst larger than an event keeps its latest
// bytes, counts the rest, and never splits a character; an incomplete
// character waits for its last bytes.
func TestLiveOutputBounds(t *testing.T) {
	got := make(chan Event, 10)
	o := newLiveOutput(tools.Call{ID: "c", Name: "bash"}, func(e Event) bool { got <- e; return true })
	burst := strings.Repeat("é", liveOutputMax) // 2 bytes each
	o.write([]byte(burst + "end\xe2\x82"))      // ends with 2 of €'s 3 bytes
	ev := <-got
	text := ev.ToolOutput.Text
	if !strings.HasSuffix(text, "éend") || !json.Valid([]byte(`"`+text+`"`)) || strings.ContainsRune(text, '\uFFFD') {
		t.Errorf("event text ends %q", text[max(0, len(text)-10):])
	}
	if len(text)+int(ev.ToolOutput.Dropped)+2 != len(burst)+5 || len(text) > liveOutputMax {
		t.Errorf("kept %d + dropped %d, of %d written", len(text), ev.ToolOutput.Dropped, len(burst)+5)
	}
	o.write([]byte("\xac!"))
	if ev := <-got; ev.ToolOutput.Text != "€!" || ev.ToolOutput.Dropped != 0 {
		t.Errorf("second event %+v", ev.ToolOutput)
	}
	o.stop()
	o.write([]byte("after the result"))
	select {
	case ev := <-got:
		t.Errorf("an event after stop: %+v", ev.ToolOutput)
	default:
	}
}
