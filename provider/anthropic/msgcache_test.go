package anthropic

import (
	"encoding/json"
	"fmt"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/lite-agent/lite-agent/provider"
)

// Over a long conversation each message is encoded once, however many
// requests carry it again, and each request's body is what the SDK itself
// encodes for the same parameters. Before, every request encoded the
// whole history through the SDK's reflection, and a turn at 2,000 turns
// cost several times one at the start (BENCHMARKS.md, "Per-turn time").
func TestHistoryEncodedOnce(t *testing.T) {
	m := newTestModel(t, "http://127.0.0.1:1", Options{})
	msgs := []provider.Message{textMsg(provider.RoleUser, "start <here> & now")}
	for turn := range 30 {
		req := &provider.Request{Model: "claude-sonnet-4-6", System: "You are lite-agent.", Messages: msgs,
			Tools: []provider.ToolSpec{{Name: "read_file", Description: "Read.", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
		p, raws, err := m.params(req)
		if err != nil {
			t.Fatal(err)
		}
		_, body, err := requestBody(p, raws)
		if err != nil {
			t.Fatal(err)
		}
		want, err := uncachedParams(t, req).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(t, body, want) {
			t.Fatalf("turn %d: the body differs from the SDK's encoding:\n%s\n%s", turn, body, want)
		}
		msgs = append(msgs,
			provider.Message{Role: provider.RoleAssistant, Content: []provider.Block{{Type: provider.BlockText, Text: "Reading."},
				{Type: provider.BlockToolUse, ID: fmt.Sprintf("toolu_%d", turn), Name: "read_file", Input: json.RawMessage(`{"path":"a.txt"}`)}}},
			provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockToolResult, ToolUseID: fmt.Sprintf("toolu_%d", turn),
				Content: []provider.Block{{Type: provider.BlockText, Text: fmt.Sprintf("line %d", turn)}}}}})
	}
	// The last request carried 59 messages; all but its newest were
	// encoded for the cache, each once.
	if got, want := m.encoded.Encodes(), len(msgs)-3; got != want {
		t.Errorf("%d messages encoded for the cache over 30 requests, want %d (each once)", got, want)
	}
}

// A message changed in place between two requests is sent as it is now,
// not as it was encoded before.
func TestChangedMessageEncodedAgain(t *testing.T) {
	m := newTestModel(t, "http://127.0.0.1:1", Options{})
	msgs := []provider.Message{textMsg(provider.RoleUser, "first"), textMsg(provider.RoleAssistant, "answer"), textMsg(provider.RoleUser, "second")}
	req := &provider.Request{Model: "claude-sonnet-4-6", Messages: msgs}
	for _, text := range []string{"first", "changed in place"} {
		msgs[0].Content[0].Text = text
		p, raws, err := m.params(req)
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := requestBody(p, raws)
		var got struct {
			Messages []struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &got); err != nil || got.Messages[0].Content[0].Text != text {
			t.Fatalf("sent %s, want the first message to say %q", body, text)
		}
	}
}

// uncachedParams is req's parameters as the SDK types them, without the
// cache: what every request was encoded from before.
func uncachedParams(t *testing.T, req *provider.Request) sdk.MessageNewParams {
	t.Helper()
	fresh := newTestModel(t, "http://127.0.0.1:1", Options{})
	p, _, err := fresh.params(req)
	if err != nil {
		t.Fatal(err)
	}
	p.Messages = nil
	for i, msg := range req.Messages {
		blocks, err := contentParams(msg.Content)
		if err != nil {
			t.Fatal(err)
		}
		if i == len(req.Messages)-1 {
			markNewest(blocks)
		}
		if msg.Role == provider.RoleUser {
			p.Messages = append(p.Messages, sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}})
		} else {
			p.Messages = append(p.Messages, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}})
		}
	}
	return p
}
