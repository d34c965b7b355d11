package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
)

// OpenAI-compatible servers cache by prefix, automatically: turn N's
// request must begin with turn N-1's bytes (system, tools, the earlier
// messages), whatever map order or schema the tools have; and the cached
// tokens the server reports are cache reads.
func TestPrefixIsByteStableAcrossTurns(t *testing.T) {
	api := newFakeAPI(t, respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.url(), Options{APIKey: "k"})
	req := simpleRequest()
	req.System = "You are lite-agent."
	req.Tools = []provider.ToolSpec{
		{Name: "b_tool", Description: "B", InputSchema: json.RawMessage(`{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z"]}`)},
		{Name: "a_tool", Description: "A", InputSchema: json.RawMessage(`{"properties":{"y":{"type":"string"}},"type":"object"}`)},
	}
	for range 3 {
		_, final, err := drain(t, m.Stream(testCtx(t), req))
		if err != nil {
			t.Fatal(err)
		}
		id := final.Message.ToolUses()[0].ID
		req.Messages = append(req.Messages, *final.Message, provider.Message{Role: provider.RoleUser, Content: []provider.Block{{
			Type: provider.BlockToolResult, ToolUseID: id, Content: []provider.Block{{Type: provider.BlockText, Text: "18°C"}},
		}}})
	}
	reqs := api.requests()
	for i := 1; i < len(reqs); i++ {
		var prev, cur struct {
			Messages []json.RawMessage `json:"messages"`
			Tools    json.RawMessage   `json:"tools"`
		}
		json.Unmarshal(reqs[i-1].body, &prev)
		json.Unmarshal(reqs[i].body, &cur)
		if string(prev.Tools) != string(cur.Tools) {
			t.Errorf("request %d: tools changed:\n%s\n%s", i+1, prev.Tools, cur.Tools)
		}
		for j := range prev.Messages {
			if string(prev.Messages[j]) != string(cur.Messages[j]) {
				t.Errorf("request %d: message %d changed:\n%s\n%s", i+1, j, prev.Messages[j], cur.Messages[j])
			}
		}
		if len(cur.Messages) <= len(prev.Messages) || !strings.Contains(string(cur.Messages[0]), "You are lite-agent.") {
			t.Errorf("request %d: %d messages after %d; first %s", i+1, len(cur.Messages), len(prev.Messages), cur.Messages[0])
		}
	}
	_, final, err := drain(t, m.Stream(testCtx(t), req))
	if err != nil {
		t.Fatal(err)
	}
	if final.Usage.CacheReadInputTokens != 5 || final.Usage.InputTokens != 20 {
		t.Errorf("usage %+v, want the server's cached_tokens (5 of 25) as cache reads", final.Usage)
	}
}
