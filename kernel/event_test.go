package kernel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// callID is the tool call an event is about, for the kinds that name one.
func callID(ev Event) string {
	switch {
	case ev.ToolCall != nil:
		return ev.ToolCall.ID
	case ev.Permission != nil:
		return ev.Permission.ID
	case ev.ToolResult != nil:
		return ev.ToolResult.ID
	case ev.Hook != nil:
		return ev.Hook.ID
	case ev.Custom != nil:
		return ev.Custom.ID
	}
	return ""
}

// Every kind encodes to its stream-json line and decodes back to an event
// that encodes to the same line — the kinds the golden CLI transcript
// (cmd/lite-agent/testdata/stream-json.txtar) cannot produce with the
// scripted model included: thinking, retry, custom, network, tool_output.
func TestEventJSONRoundTrip(t *testing.T) {
	tag := func(e Event) Event {
		e.SessionID, e.Agent, e.AgentID, e.ParentToolUseID = "s", "helper", "helper-1", "t9"
		return e
	}
	cases := []struct {
		ev   Event
		want string
	}{
		{Event{Type: EventThinkingDelta, SessionID: "s", ThinkingDelta: &ThinkingDeltaEvent{Thinking: "hmm <b>"}},
			`{"type":"thinking_delta","session_id":"s","thinking":"hmm \u003cb\u003e"}`},
		{Event{Type: EventRetry, SessionID: "s", Retry: &RetryEvent{Attempt: 2, MaxAttempts: 5, WaitMS: 4000, Error: "overloaded"}},
			`{"type":"retry","session_id":"s","attempt":2,"max_attempts":5,"wait_ms":4000,"error":"overloaded"}`},
		{tag(Event{Type: EventCustom, Custom: &CustomEvent{ID: "t1", Name: "progress", Data: map[string]any{"z": 1, "a": []int{2}}}}),
			`{"type":"custom","session_id":"s","agent":"helper","agent_id":"helper-1","parent_tool_use_id":"t9","id":"t1","name":"progress","data":{"a":[2],"z":1}}`},
		{Event{Type: EventCustom, SessionID: "s", Custom: &CustomEvent{Name: "nothing"}},
			`{"type":"custom","session_id":"s","name":"nothing","data":null}`},
		{Event{Type: EventNetwork, SessionID: "s", Network: &NetworkEvent{Host: "example.com", Port: 443, Decision: "allow", Rule: "--allow-domain example.com", BytesUp: 10, BytesDown: 2000}},
			`{"type":"network","session_id":"s","host":"example.com","port":443,"decision":"allow","rule":"--allow-domain example.com","bytes_up":10,"bytes_down":2000}`},
		{Event{Type: EventCheckpoint, SessionID: "s", Checkpoint: &CheckpointEvent{Error: "sealing the checkpoint failed: disk full"}},
			`{"type":"checkpoint","session_id":"s","error":"sealing the checkpoint failed: disk full"}`},
		{Event{Type: EventCheckpoint, SessionID: "s", Checkpoint: &CheckpointEvent{Checkpoint: struct {
			Number int    `json:"number"`
			Reason string `json:"reason"`
		}{3, "tool_call"}}},
			`{"type":"checkpoint","session_id":"s","checkpoint":{"number":3,"reason":"tool_call"}}`},
		{tag(Event{Type: EventAssistantMessage, AssistantMessage: &AssistantMessageEvent{
			Message: &provider.Message{Role: provider.RoleAssistant, Content: []provider.Block{{Type: provider.BlockText, Text: "hi"}}},
			Usage:   provider.Usage{InputTokens: 5, OutputTokens: 1}}}),
			`{"type":"assistant_message","session_id":"s","agent":"helper","agent_id":"helper-1","parent_tool_use_id":"t9","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]},"usage":{"input_tokens":5,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`},
		{Event{Type: EventToolCall, SessionID: "s", ToolCall: &ToolCallEvent{ID: "t1", Name: "write_file", Input: json.RawMessage(`{"path":"a"}`), EffectiveInput: json.RawMessage(`{"path":"b"}`)}},
			`{"type":"tool_call","session_id":"s","id":"t1","name":"write_file","input":{"path":"a"},"effective_input":{"path":"b"}}`},
		{Event{Type: EventToolOutput, SessionID: "s", ToolOutput: &ToolOutputEvent{ID: "t1", Name: "bash", Text: "ok\n", Dropped: 5}},
			`{"type":"tool_output","session_id":"s","id":"t1","name":"bash","text":"ok\n","dropped":5}`},
		{Event{Type: EventToolResult, SessionID: "s", ToolResult: &ToolResultEvent{ID: "t1", Name: "bash", IsError: true, Content: []tools.Content{tools.TextContent("exit 1")}}},
			`{"type":"tool_result","session_id":"s","id":"t1","name":"bash","is_error":true,"content":[{"type":"text","text":"exit 1"}]}`},
		{Event{Type: EventResult, SessionID: "s", Result: &ResultEvent{Subtype: SubtypeErrorStructuredOutput, IsError: true, NumTurns: 3,
			StopReason: provider.StopEndTurn, StructuredOutput: json.RawMessage(`{"a":1}`), DurationMS: 7, Error: "no"}},
			`{"type":"result","session_id":"s","subtype":"error_structured_output","is_error":true,"num_turns":3,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"stop_reason":"end_turn","result":"","structured_output":{"a":1},"duration_ms":7,"error":"no"}`},
		{Event{Type: EventSessionStart, SessionID: "s", SessionStart: &SessionStartEvent{Model: "m", Workspace: "/w", Tools: []string{"read_file"}, Resumed: true,
			Instructions: []InstructionFile{{Path: "/w/AGENTS.md", Bytes: 3, SHA256: "ab"}}}},
			`{"type":"session_start","session_id":"s","model":"m","workspace":"/w","tools":["read_file"],"resumed":true,"instructions":[{"path":"/w/AGENTS.md","bytes":3,"sha256":"ab"}]}`},
		{Event{Type: EventCompact, SessionID: "s", Compaction: &Compaction{Trigger: "manual", Kind: "summary", TokensBefore: 9, TokensAfter: 3, SummarizedMessages: 4, KeptMessages: 2}},
			`{"type":"compact","session_id":"s","trigger":"manual","kind":"summary","tokens_before":9,"tokens_after":3,"summarized_messages":4,"kept_messages":2}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.ev)
		if err != nil || string(b) != c.want {
			t.Errorf("%s: got  %s (%v)\nwant %s", c.ev.Type, b, err, c.want)
			continue
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("%s: %v", c.ev.Type, err)
			continue
		}
		if back.payload(false) == nil || back.Type != c.ev.Type || back.SessionID != c.ev.SessionID || back.AgentID != c.ev.AgentID {
			t.Errorf("%s: decoded %+v", c.ev.Type, back)
		}
		if again, err := json.Marshal(back); err != nil || string(again) != c.want {
			t.Errorf("%s: round trip\n got  %s (%v)\n want %s", c.ev.Type, again, err, c.want)
		}
	}
}

// A careless event — the payload pointer of its type missing — still
// encodes (with a zero payload) rather than breaking the stream; an
// unknown type keeps what every event has; a payload of another type is
// not written. Decoding sets exactly the pointer of the type.
func TestEventJSONEdges(t *testing.T) {
	b, err := json.Marshal(Event{Type: EventToolResult, SessionID: "s"})
	if want := `{"type":"tool_result","session_id":"s","id":"","name":"","is_error":false,"content":[]}`; err != nil || string(b) != want {
		t.Errorf("nil payload: %s (%v), want %s", b, err, want)
	}
	b, err = json.Marshal(Event{Type: "future_kind", SessionID: "s", TextDelta: &TextDeltaEvent{Text: "x"}})
	if want := `{"type":"future_kind","session_id":"s"}`; err != nil || string(b) != want {
		t.Errorf("unknown type: %s (%v), want %s", b, err, want)
	}
	b, _ = json.Marshal(Event{Type: EventTextDelta, SessionID: "s", TextDelta: &TextDeltaEvent{Text: "x"}, Result: &ResultEvent{Result: "stray"}})
	if strings.Contains(string(b), "stray") {
		t.Errorf("a payload of another type was written: %s", b)
	}
	var ev Event
	if err := json.Unmarshal([]byte(`{"type":"permission","session_id":"s","id":"t1","name":"bash","decision":"deny","by":"rule","mode":"default","reason":"r"}`), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Permission == nil || ev.Permission.DecidedBy != "rule" || ev.ToolCall != nil || ev.Result != nil {
		t.Errorf("decoded permission: %+v", ev)
	}
	if err := json.Unmarshal([]byte(`{"type":"retry","attempt":"two"}`), &ev); err == nil || !strings.Contains(err.Error(), "retry event") {
		t.Errorf("a malformed retry: %v", err)
	}
}

// The domain proxy's report becomes a network event field by field, so
// that wiring sandbox.Policy.OnNetwork into the stream is one line.
func TestNetworkEventFromSandbox(t *testing.T) {
	n := sandbox.NetworkEvent{Host: "registry.example.com", Port: 443, Decision: "deny", Rule: "--deny-domain *.example.com", BytesUp: 1, BytesDown: 2}
	ev := networkEvent(n)
	want := NetworkEvent{Host: n.Host, Port: n.Port, Decision: n.Decision, Rule: n.Rule, BytesUp: n.BytesUp, BytesDown: n.BytesDown}
	if ev.Type != EventNetwork || ev.Network == nil || *ev.Network != want {
		t.Errorf("networkEvent = %+v", ev)
	}
}

func TestRetryDescribe(t *testing.T) {
	for _, c := range []struct {
		e    RetryEvent
		want string
	}{
		{RetryEvent{Attempt: 2, MaxAttempts: 5, WaitMS: 4000, Error: "overloaded"}, "retrying the model call 2/5 in 4s: overloaded"},
		{RetryEvent{Attempt: 3, WaitMS: 1234, Error: "x"}, "retrying the model call 3 in 1.2s: x"},
		{RetryEvent{Attempt: 2, MaxAttempts: 5, WaitMS: 20, Error: "x"}, "retrying the model call 2/5 in 20ms: x"},
	} {
		if got := c.e.Describe(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}
