package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
)

func ExampleNew() {
	// A stand-in for the Messages API so that the example runs offline; in
	// real use, leave BaseURL empty and set ANTHROPIC_API_KEY.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\n"+
			`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":12,"output_tokens":1}}}`+"\n\n"+
			"event: content_block_start\n"+
			`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n"+
			"event: content_block_delta\n"+
			`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`+"\n\n"+
			"event: content_block_delta\n"+
			`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", world."}}`+"\n\n"+
			"event: content_block_stop\n"+
			`data: {"type":"content_block_stop","index":0}`+"\n\n"+
			"event: message_delta\n"+
			`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`+"\n\n"+
			"event: message_stop\n"+
			`data: {"type":"message_stop"}`+"\n\n")
	}))
	defer api.Close()

	m, err := anthropic.New(&anthropic.Options{APIKey: "sk-ant-example", BaseURL: api.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &provider.Request{
		Model: "claude-sonnet-4-5",
		Messages: []provider.Message{{Role: provider.RoleUser, Content: []provider.Block{
			{Type: provider.BlockText, Text: "Say hello."},
		}}},
	}
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch c.Type {
		case provider.ChunkTextDelta:
			fmt.Printf("delta %q\n", c.Text)
		case provider.ChunkRetry:
			fmt.Println("retrying: drop the text so far")
		case provider.ChunkMessage:
			fmt.Printf("message %q, stop %s, %d in / %d out tokens\n",
				c.Message.Text(), c.StopReason, c.Usage.InputTokens, c.Usage.OutputTokens)
		}
	}
	// Output:
	// delta "Hello"
	// delta ", world."
	// message "Hello, world.", stop end_turn, 12 in / 5 out tokens
}
