package anthropic

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
)

// breakpoints lists where a request body carries cache_control, as paths
// like "system[0]" or "messages[2].content[0]".
func breakpoints(t *testing.T, body []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["cache_control"]; ok {
				out = append(out, path)
			}
			for k, c := range x {
				if k != "cache_control" {
					walk(strings.TrimPrefix(path+"."+k, "."), c)
				}
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		}
	}
	walk("", v)
	slices.Sort(out)
	return out
}

func textMsg(role provider.Role, s string) provider.Message {
	return provider.Message{Role: role, Content: []provider.Block{{Type: provider.BlockText, Text: s}}}
}

// The system prefix carries one breakpoint on every request (it covers the
// tools, which come first in the cache order), and the newest message the
// other, which moves forward each turn: on turn 1 the prompt, on turn N
// the newest tool_result. Never more than the API's four.
func TestCacheBreakpointsMoveForward(t *testing.T) {
	api := newFakeAPI(t, respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.URL, Options{})
	tools := []provider.ToolSpec{{Name: "read_file", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	msgs := []provider.Message{textMsg(provider.RoleUser, "Read a.txt")}
	for turn := 1; turn <= 3; turn++ {
		req := &provider.Request{Model: "claude-sonnet-4-6", System: "You are lite-agent.", Tools: tools, Messages: msgs}
		_, final, err := drain(t, m.Stream(testCtx(t), req))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, *final.Message, provider.Message{Role: provider.RoleUser, Content: []provider.Block{{
			Type: provider.BlockToolResult, ToolUseID: final.Message.ToolUses()[0].ID,
			Content: []provider.Block{{Type: provider.BlockText, Text: fmt.Sprintf("contents %d", turn)}},
		}}})
	}
	reqs := api.requests()
	for i, want := range [][]string{
		{"messages[0].content[0]", "system[0]"},
		{"messages[2].content[0]", "system[0]"},
		{"messages[4].content[0]", "system[0]"},
	} {
		got := breakpoints(t, reqs[i].body)
		if !slices.Equal(got, want) {
			t.Errorf("turn %d: breakpoints at %v, want %v", i+1, got, want)
		}
		if len(got) > maxBreakpoints {
			t.Errorf("turn %d: %d breakpoints, the API allows %d", i+1, len(got), maxBreakpoints)
		}
	}
	// The prefix before the moving breakpoint is byte-stable: turn 3's
	// system and tools are turn 1's, so the cached prefix is reused.
	var r1, r3 struct {
		System, Tools json.RawMessage
	}
	json.Unmarshal(reqs[0].body, &r1)
	json.Unmarshal(reqs[2].body, &r3)
	if string(r1.System) != string(r3.System) || string(r1.Tools) != string(r3.Tools) {
		t.Errorf("the system/tools prefix changed between turns:\n%s\n%s", r1.System, r3.System)
	}
}

// The moving breakpoint skips blocks that cannot carry one (thinking).
func TestCacheBreakpointSkipsThinking(t *testing.T) {
	api := newFakeAPI(t, respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.URL, Options{})
	req := &provider.Request{Model: "claude-test", Messages: []provider.Message{
		textMsg(provider.RoleUser, "hi"),
		{Role: provider.RoleAssistant, Content: []provider.Block{{Type: provider.BlockText, Text: "ok"}, {Type: provider.BlockThinking, Text: "hmm", Signature: "sig"}}},
	}}
	if _, _, err := drain(t, m.Stream(testCtx(t), req)); err != nil {
		t.Fatal(err)
	}
	got := breakpoints(t, api.requests()[0].body)
	if !slices.Equal(got, []string{"messages[1].content[0]"}) {
		t.Errorf("breakpoints at %v", got)
	}
}

// The cache counts of message_start, and the totals of message_delta when
// it has them, reach the final chunk.
func TestCacheUsageReported(t *testing.T) {
	ev := weatherTurn.events()
	// The API repeats the input-side counts in message_delta at the end.
	ev[len(ev)-2].data = `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":12,"cache_creation_input_tokens":1500,"cache_read_input_tokens":42000,"output_tokens":77}}`
	api := newFakeAPI(t, respondSSE(ev))
	m := newTestModel(t, api.URL, Options{})
	_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	want := provider.Usage{InputTokens: 12, OutputTokens: 77, CacheCreationInputTokens: 1500, CacheReadInputTokens: 42000}
	if final.Usage != want {
		t.Errorf("usage = %+v, want %+v", final.Usage, want)
	}
	if final.Usage.ContextTokens() != 12+1500+42000 {
		t.Errorf("ContextTokens = %d", final.Usage.ContextTokens())
	}
}

// max_tokens defaults per model family; an explicit value wins.
func TestMaxTokensByFamily(t *testing.T) {
	for _, tc := range []struct {
		model string
		opt   int
		req   int
		want  int
	}{
		{"claude-sonnet-4-6", 0, 0, 64000},
		{"claude-opus-4-6", 0, 0, 64000},
		{"claude-sonnet-4-5-20250929", 0, 0, 64000},
		{"claude-opus-4-1-20250805", 0, 0, 32000},
		{"claude-3-5-haiku-latest", 0, 0, 8192},
		{"some-local-model", 0, 0, 8192},
		{"claude-sonnet-4-6", 1000, 0, 1000},
		{"claude-sonnet-4-6", 1000, 500, 500},
	} {
		api := newFakeAPI(t, respondSSE(weatherTurn.events()))
		m := newTestModel(t, api.URL, Options{MaxTokens: tc.opt})
		req := simpleRequest()
		req.Model, req.MaxTokens = tc.model, tc.req
		if _, _, err := drain(t, m.Stream(testCtx(t), req)); err != nil {
			t.Fatal(err)
		}
		var b struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.Unmarshal(api.requests()[0].body, &b)
		if b.MaxTokens != tc.want {
			t.Errorf("%s (opt %d, req %d): max_tokens %d, want %d", tc.model, tc.opt, tc.req, b.MaxTokens, tc.want)
		}
	}
}
