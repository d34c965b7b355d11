package kernel

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
)

// bigInput is a tool input over spliceMin, with characters json.Marshal
// escapes (<, &) and, when pretty, line breaks between its members.
func bigInput(pretty bool) json.RawMessage {
	content := strings.Repeat("<a & b> \"q\" line\n", spliceMin/8)
	b, _ := json.Marshal(map[string]string{"path": "f.txt", "content": content})
	if pretty {
		var out bytes.Buffer
		_ = json.Indent(&out, b, "", "  ")
		return out.Bytes()
	}
	return b
}

// A transcript record with a large input is one JSONL line that reads
// back as the same message, written from the input's own bytes.
func TestTranscriptWritesLargeInputsWhole(t *testing.T) {
	for _, pretty := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		f, err := openSessionFile(path, true, -1)
		if err != nil {
			t.Fatal(err)
		}
		input := bigInput(pretty)
		msg := provider.Message{Role: provider.RoleAssistant, Content: []provider.Block{
			{Type: provider.BlockText, Text: "writing"},
			{Type: provider.BlockToolUse, ID: "a", Name: "write_file", Input: input},
			{Type: provider.BlockToolUse, ID: "b", Name: "write_file", Input: input},
		}}
		for _, r := range []Record{{Type: "session", SessionID: "s"}, {Type: "message", Message: &msg}, {Type: "result", Subtype: "success"}} {
			if err := f.append(r); err != nil {
				t.Fatal(err)
			}
		}
		f.close()
		raw, _ := os.ReadFile(path)
		if n := bytes.Count(raw, []byte("\n")); n != 3 {
			t.Fatalf("pretty=%v: %d lines, want 3", pretty, n)
		}
		if !pretty && !bytes.Contains(raw, input) {
			t.Errorf("the input was not written as sent")
		}
		tr, err := ReadTranscript(path)
		if err != nil || tr.Torn || len(tr.Messages) != 1 {
			t.Fatalf("pretty=%v: read back %+v, %v", pretty, tr, err)
		}
		for i, b := range tr.Messages[0].Content[1:] {
			var got, want any
			_ = json.Unmarshal(b.Input, &got)
			_ = json.Unmarshal(input, &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("pretty=%v: input %d read back differs", pretty, i)
			}
		}
	}
}

// WriteJSON writes the same event MarshalJSON encodes, large inputs
// included, on one line.
func TestWriteJSONMatchesMarshalJSON(t *testing.T) {
	input := bigInput(true)
	msg := &provider.Message{Role: provider.RoleAssistant, Content: []provider.Block{{Type: provider.BlockToolUse, ID: "a", Name: "write_file", Input: input}}}
	for _, ev := range []Event{
		{Type: EventAssistantMessage, SessionID: "s", AssistantMessage: &AssistantMessageEvent{Message: msg}},
		{Type: EventToolCall, SessionID: "s", ToolCall: &ToolCallEvent{ID: "a", Name: "write_file", Input: input, EffectiveInput: bigInput(false)}},
		{Type: EventToolCall, SessionID: "s", ToolCall: &ToolCallEvent{ID: "a", Name: "write_file", Input: json.RawMessage(`{"path":` + strings.Repeat(" ", spliceMin))}},
		{Type: EventTextDelta, SessionID: "s", TextDelta: &TextDeltaEvent{Text: "hi"}},
		{Type: "unknown", SessionID: "s"},
	} {
		var w bytes.Buffer
		if err := ev.WriteJSON(&w); err != nil {
			t.Fatal(err)
		}
		line := w.Bytes()
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("%s: not one line", ev.Type)
		}
		want, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		_ = json.Unmarshal(want, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: WriteJSON and MarshalJSON differ", ev.Type)
		}
		if len(line) < spliceMin && !bytes.Equal(line, append(want, '\n')) {
			t.Errorf("%s: a small event is not byte for byte what MarshalJSON writes:\n%s\n%s", ev.Type, line, want)
		}
	}
}
