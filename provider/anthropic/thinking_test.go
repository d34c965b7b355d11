package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
)

// A thinking budget turns thinking on; a thinking block from an earlier
// turn goes back with its signature, unmodified and in place.
func TestThinkingRequest(t *testing.T) {
	api := newFakeAPI(t, respondSSE(turn{thinking: true, text: []string{"done"}}.events()))
	m := newTestModel(t, api.URL, Options{})
	req := &provider.Request{Model: "claude-sonnet-4-6", ThinkingBudget: 2048, Messages: []provider.Message{
		textMsg(provider.RoleUser, "go"),
		{Role: provider.RoleAssistant, Content: []provider.Block{
			{Type: provider.BlockThinking, Text: "plan", Signature: "sig-1"},
			{Type: provider.BlockRedactedThinking, Signature: "opaque"},
			{Type: provider.BlockToolUse, ID: "t1", Name: "read_file", Input: json.RawMessage(`{"path":"a"}`)},
		}},
		{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockToolResult, ToolUseID: "t1", Content: []provider.Block{{Type: provider.BlockText, Text: "A"}}}}},
	}}
	if _, _, err := drain(t, m.Stream(testCtx(t), req)); err != nil {
		t.Fatal(err)
	}
	body := canon(t, api.requests()[0].body)
	for _, want := range []string{
		`"thinking":{"budget_tokens":2048,"type":"enabled"}`,
		`{"signature":"sig-1","thinking":"plan","type":"thinking"}`,
		`{"data":"opaque","type":"redacted_thinking"}`,
		`"max_tokens":64000`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %s:\n%s", want, body)
		}
	}
	// A budget below the API's minimum is refused before sending.
	req.ThinkingBudget = 100
	if _, _, err := drain(t, m.Stream(testCtx(t), req)); err == nil || !strings.Contains(err.Error(), "1024") {
		t.Errorf("err = %v, want the minimum named", err)
	}
}

// webSearchEvents is a turn in which the API ran its web_search tool.
func webSearchEvents() []sseEvent {
	return []sseEvent{
		{"message_start", `{"type":"message_start","message":{"id":"msg_ws","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"go 1.26\"}"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","title":"Go 1.26","url":"https://go.dev/doc/go1.26","encrypted_content":"EqgfCioIARgBIiQ3","page_age":null}]}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":1}`},
		{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Go 1.26 is out."}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":2}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":30,"server_tool_use":{"web_search_requests":1}}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
}

// The server web_search tool is offered with its domain filter; its call
// and result blocks are kept and go back to the API exactly as received.
func TestWebSearchServerTool(t *testing.T) {
	api := newFakeAPI(t, respondSSE(webSearchEvents()))
	m := newTestModel(t, api.URL, Options{})
	req := simpleRequest()
	req.WebSearch = &provider.WebSearch{AllowedDomains: []string{"go.dev"}, MaxUses: 3}
	_, final, err := drain(t, m.Stream(testCtx(t), req))
	if err != nil {
		t.Fatal(err)
	}
	body := canon(t, api.requests()[0].body)
	if !strings.Contains(body, `{"allowed_domains":["go.dev"],"max_uses":3,"name":"web_search","type":"web_search_20250305"}`) {
		t.Errorf("request lacks the web_search tool:\n%s", body)
	}
	c := final.Message.Content
	if len(c) != 3 || c[0].Type != provider.BlockServerToolUse || string(c[0].Input) != `{"query": "go 1.26"}` ||
		c[1].Type != provider.BlockWebSearchResult || c[1].ToolUseID != "srvtoolu_1" || !strings.Contains(string(c[1].Raw), "EqgfCioIARgBIiQ3") {
		t.Fatalf("content = %+v", c)
	}
	if len(final.Message.ToolUses()) != 0 {
		t.Error("a server tool call was reported as a tool_use for the kernel to run")
	}
	// Sent back, the blocks are the API's own.
	req.Messages = append(req.Messages, *final.Message, textMsg(provider.RoleUser, "thanks"))
	if _, _, err := drain(t, m.Stream(testCtx(t), req)); err != nil {
		t.Fatal(err)
	}
	body = canon(t, api.requests()[1].body)
	for _, want := range []string{
		`{"id":"srvtoolu_1","input":{"query":"go 1.26"},"name":"web_search","type":"server_tool_use"}`,
		`{"content":[{"encrypted_content":"EqgfCioIARgBIiQ3","page_age":null,"title":"Go 1.26","type":"web_search_result","url":"https://go.dev/doc/go1.26"}],"tool_use_id":"srvtoolu_1","type":"web_search_tool_result"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("second request lacks %s:\n%s", want, body)
		}
	}
}

// canon re-encodes a JSON body with its keys sorted.
func canon(t *testing.T, body []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
