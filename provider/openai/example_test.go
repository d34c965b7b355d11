package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/openai"
)

func ExampleNew() {
	// A stand-in for a local OpenAI-compatible server (Ollama, vLLM,
	// llama-server…) so that the example runs offline. For OpenAI itself,
	// leave BaseURL empty and set OPENAI_API_KEY.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w,
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"+
				`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"qwen3:8b","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`+"\n\n"+
				`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"qwen3:8b","choices":[{"index":0,"delta":{"content":", world."},"finish_reason":null}]}`+"\n\n"+
				`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"qwen3:8b","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"+
				`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"qwen3:8b","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`+"\n\n"+
				"data: [DONE]\n\n")
	}))
	defer api.Close()

	// No key: the request carries no Authorization header.
	m, err := openai.New(&openai.Options{BaseURL: api.URL + "/v1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &provider.Request{
		Model: "qwen3:8b",
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
