package scripted

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
)

func TestParseErrorsNameThePlace(t *testing.T) {
	cases := []struct{ src, want string }{
		{"{\"turns\": [\n  {\"text\": \"x\",}\n]}", "line 2, column 17"},
		{`{"turns": [{"txt": "x"}]}`, `unknown field "txt"`},
		{`{"turns": [{"text": 5}]}`, "turns.text must be string"},
		{`{"turns": [{"tool_calls": [{"input": {}}]}]}`, `tool_calls[0]: missing "name"`},
		{`{"turns": [{"tool_calls": [{"name": "a", "input": {}, "raw_input": "x"}]}]}`, "not both"},
		{`{}`, `no "turns"`},
		{`{"turns": []} {}`, "unexpected data"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want %q", c.src, err, c.want)
		}
	}
}

func history(assistantTurns int) []provider.Message {
	msgs := []provider.Message{{Role: provider.RoleUser}}
	for range assistantTurns {
		msgs = append(msgs, provider.Message{Role: provider.RoleAssistant}, provider.Message{Role: provider.RoleUser})
	}
	return msgs
}

func TestStreamPicksTheTurnByHistory(t *testing.T) {
	m, err := Parse([]byte(`{"turns": [
	  {"text": "one two three four five six", "tool_calls": [{"name": "a", "input": {"x": 1}}, {"id": "mine", "name": "b", "raw_input": "{bad"}]},
	  {"text": "second"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	var final provider.Chunk
	for c, err := range m.Stream(context.Background(), &provider.Request{Messages: history(0)}) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Type == provider.ChunkTextDelta {
			deltas = append(deltas, c.Text)
		} else {
			final = c
		}
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != "one two three four five six" {
		t.Errorf("deltas = %q", deltas)
	}
	uses := final.Message.ToolUses()
	if final.StopReason != provider.StopToolUse || len(uses) != 2 || uses[0].ID == "" || string(uses[0].Input) != `{"x": 1}` || uses[1].ID != "mine" || string(uses[1].Input) != "{bad" {
		t.Errorf("final = %+v", final)
	}
	if final.Usage.InputTokens == 0 || final.Usage.OutputTokens == 0 {
		t.Errorf("usage = %+v", final.Usage)
	}
	c, err := provider.Collect(m.Stream(context.Background(), &provider.Request{Messages: history(1)}))
	if err != nil || c.Message.Text() != "second" || c.StopReason != provider.StopEndTurn {
		t.Errorf("turn 2 = %+v, %v", c, err)
	}
	_, err = provider.Collect(m.Stream(context.Background(), &provider.Request{Messages: history(2)}))
	if !errors.Is(err, ErrScriptExhausted) || !strings.Contains(err.Error(), "has 2 turns and the session asked for turn 3") {
		t.Errorf("exhausted: %v", err)
	}
}

func TestScriptedErrorTurnAndCancellation(t *testing.T) {
	m, _ := Parse([]byte(`{"turns": [{"error": "rate limited"}]}`))
	if _, err := provider.Collect(m.Stream(context.Background(), &provider.Request{})); err == nil || !strings.Contains(err.Error(), "rate limited") {
		t.Errorf("error turn: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := provider.Collect(m.Stream(ctx, &provider.Request{})); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	_, err := Load("/nonexistent/script.json")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/script.json") {
		t.Errorf("Load = %v", err)
	}
}

func TestAgentScriptsByName(t *testing.T) {
	m, err := Parse([]byte(`{"turns": [{"text": "main"}],
	  "agents": {"researcher": {"turns": [{"text": "sub one"}, {"text": "sub two"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	pick := func(agent string, k int) (string, error) {
		c, err := provider.Collect(m.Stream(context.Background(), &provider.Request{Agent: agent, Messages: history(k)}))
		if err != nil {
			return "", err
		}
		return c.Message.Text(), nil
	}
	if got, err := pick("", 0); err != nil || got != "main" {
		t.Errorf("main agent: %q %v", got, err)
	}
	if got, err := pick("researcher", 0); err != nil || got != "sub one" {
		t.Errorf("researcher turn 1: %q %v", got, err)
	}
	if got, err := pick("researcher", 1); err != nil || got != "sub two" {
		t.Errorf("researcher turn 2: %q %v", got, err)
	}
	if _, err := pick("researcher", 2); !errors.Is(err, ErrScriptExhausted) || !strings.Contains(err.Error(), `subagent "researcher" has 2 turns`) {
		t.Errorf("researcher exhausted: %v", err)
	}
	if _, err := pick("writer", 0); !errors.Is(err, ErrScriptExhausted) || !strings.Contains(err.Error(), `no "agents" entry`) {
		t.Errorf("unscripted agent: %v", err)
	}
	if _, err := Parse([]byte(`{"turns": [], "agents": {"x": {"turns": [{"tool_calls": [{"input": {}}]}]}}}`)); err == nil || !strings.Contains(err.Error(), `agents["x"].turns[0].tool_calls[0]: missing "name"`) {
		t.Errorf("bad agent script: %v", err)
	}
}

// Parse decodes into a mirror of Script whose tool inputs share the
// script's bytes (scriptSpans): every JSON field of Script must be in the
// mirror, or Parse would drop it silently.
func TestParseMirrorsScript(t *testing.T) {
	fields := func(t reflect.Type) []string {
		var out []string
		for f := range t.Fields() {
			out = append(out, f.Tag.Get("json"))
		}
		return out
	}
	var spans scriptSpans
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[Script](), reflect.TypeFor[scriptSpans]()},
		{reflect.TypeFor[AgentScript](), reflect.TypeOf(spans.Agents).Elem()},
		{reflect.TypeFor[Turn](), reflect.TypeFor[turnsSpans]().Elem()},
		{reflect.TypeFor[ToolCall](), reflect.TypeFor[toolCallSpans]()},
	} {
		var want []string
		for _, f := range fields(pair[0]) {
			name, _, _ := strings.Cut(f, ",")
			want = append(want, name)
		}
		got := fields(pair[1])
		if strings.Join(want, " ") != strings.Join(got, " ") {
			t.Errorf("%v has fields %v, its mirror %v", pair[0], want, got)
		}
	}
	// And what it parses is what the script says.
	m, err := Parse([]byte(`{"turns": [{"text": "a", "tool_calls": [{"id": "x", "name": "n", "input": {"k": "v\n"}}], "usage": {"input_tokens": 3}}],
	  "agents": {"helper": {"turns": [{"error": "boom"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tc := m.script.Turns[0].ToolCalls[0]
	if tc.ID != "x" || tc.Name != "n" || string(tc.Input) != `{"k": "v\n"}` || m.script.Turns[0].Usage.InputTokens != 3 || m.script.Agents["helper"].Turns[0].Error != "boom" {
		t.Errorf("parsed %+v", m.script)
	}
}
