package openai

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/lite-agent/lite-agent/provider"
)

// Over a long conversation each message (and the system prompt) is
// encoded once, however many requests carry it again, and every request
// body is what the SDK itself encodes for the same parameters. Before,
// each request encoded the whole history through the SDK.
func TestHistoryEncodedOnce(t *testing.T) {
	m := newTestModel(t, "http://127.0.0.1:1/v1", Options{})
	msgs := []provider.Message{{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText, Text: "start <here> & now"}}}}
	for turn := range 30 {
		req := &provider.Request{Model: "gpt-test", System: "You are lite-agent.", Messages: msgs,
			Tools: []provider.ToolSpec{{Name: "read_file", Description: "Read.", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
		p, raws, err := m.params(req)
		if err != nil {
			t.Fatal(err)
		}
		_, body, err := requestBody(p, raws)
		if err != nil {
			t.Fatal(err)
		}
		// What the SDK encodes for the same request, built afresh.
		fresh := newTestModel(t, "http://127.0.0.1:1/v1", Options{})
		want, _, err := fresh.params(req)
		if err != nil {
			t.Fatal(err)
		}
		want.Messages = []sdk.ChatCompletionMessageParamUnion{sdk.SystemMessage(req.System)}
		for _, msg := range req.Messages {
			var ms []sdk.ChatCompletionMessageParamUnion
			if msg.Role == provider.RoleUser {
				ms, err = userMessages(msg.Content)
			} else {
				ms, err = assistantMessage(msg.Content)
			}
			if err != nil {
				t.Fatal(err)
			}
			want.Messages = append(want.Messages, ms...)
		}
		wantBody, err := want.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if json.Unmarshal(body, &a) != nil || json.Unmarshal(wantBody, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("turn %d: the body differs from the SDK's encoding:\n%s\n%s", turn, body, wantBody)
		}
		id := fmt.Sprintf("call_%d", turn)
		msgs = append(msgs,
			provider.Message{Role: provider.RoleAssistant, Content: []provider.Block{{Type: provider.BlockText, Text: "Reading."},
				{Type: provider.BlockToolUse, ID: id, Name: "read_file", Input: json.RawMessage(`{"path":"a.txt"}`)}}},
			provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockToolResult, ToolUseID: id,
				Content: []provider.Block{{Type: provider.BlockText, Text: fmt.Sprintf("line %d", turn)}}}}})
	}
	// The last request carried 59 messages and the system prompt, each
	// encoded once.
	if got, want := m.encoded.Encodes(), len(msgs)-2+1; got != want {
		t.Errorf("%d encodings over 30 requests, want %d (each message once)", got, want)
	}
}
