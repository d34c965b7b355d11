package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/lite-agent/lite-agent/provider"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// chunkOrErr is one item of a stream.
type chunkOrErr struct {
	chunk provider.Chunk
	err   error
}

// drain runs a stream to its end and returns everything it yielded.
func drain(t *testing.T, seq func(func(provider.Chunk, error) bool)) (out []chunkOrErr, final *provider.Chunk, err error) {
	t.Helper()
	for c, e := range seq {
		out = append(out, chunkOrErr{c, e})
		if e != nil {
			if err != nil {
				t.Fatalf("stream yielded a second error after %v: %v", err, e)
			}
			err = e
			continue
		}
		if err != nil {
			t.Fatalf("stream yielded %+v after an error", c)
		}
		if c.Type == provider.ChunkMessage {
			if final != nil {
				t.Fatalf("stream yielded two messages")
			}
			final = &c
		}
	}
	return out, final, err
}

func newTestModel(t *testing.T, url string, o Options) *Model {
	t.Helper()
	o.BaseURL = url
	if o.APIKey == "" {
		o.APIKey = "sk-ant-test"
	}
	if o.RetryBaseDelay == 0 {
		o.RetryBaseDelay = time.Millisecond
	}
	m, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// simpleRequest is a one-message request.
func simpleRequest() *provider.Request {
	return &provider.Request{
		Model:    "claude-test",
		Messages: []provider.Message{{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText, Text: "Weather in Paris?"}}}},
	}
}

var pngPixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

// richRequest exercises every block type the provider maps.
func richRequest() *provider.Request {
	return &provider.Request{
		Model:     "claude-test",
		System:    "You are terse.",
		MaxTokens: 1024,
		Tools: []provider.ToolSpec{{
			Name:        "get_weather",
			Description: "Get the current weather in a city.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"],"additionalProperties":false}`),
		}},
		Messages: []provider.Message{
			{Role: provider.RoleUser, Content: []provider.Block{
				{Type: provider.BlockText, Text: "What is the weather where this photo was taken?"},
				{Type: provider.BlockImage, MIMEType: "image/png", Data: pngPixel},
			}},
			{Role: provider.RoleAssistant, Content: []provider.Block{
				{Type: provider.BlockText, Text: "Let me check."},
				// The model sent garbage: it must go back as {}.
				{Type: provider.BlockToolUse, ID: "toolu_bad", Name: "get_weather", Input: json.RawMessage(`{"city": "Par`)},
			}},
			{Role: provider.RoleUser, Content: []provider.Block{
				{Type: provider.BlockToolResult, ToolUseID: "toolu_bad", IsError: true, Content: []provider.Block{
					{Type: provider.BlockText, Text: "invalid arguments: unexpected end of JSON input"},
				}},
			}},
			{Role: provider.RoleAssistant, Content: []provider.Block{
				{Type: provider.BlockToolUse, ID: "toolu_ok", Name: "get_weather", Input: json.RawMessage(`{"city": "Paris"}`)},
			}},
			{Role: provider.RoleUser, Content: []provider.Block{
				{Type: provider.BlockToolResult, ToolUseID: "toolu_ok", Content: []provider.Block{
					{Type: provider.BlockText, Text: "18°C, sunny"},
					{Type: provider.BlockImage, MIMEType: "image/png", Data: pngPixel},
				}},
			}},
		},
	}
}

func TestStreamNormal(t *testing.T) {
	api := newFakeAPI(t, respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.URL, Options{})

	chunks, final, err := drain(t, m.Stream(testCtx(t), richRequest()))
	if err != nil {
		t.Fatal(err)
	}

	// Deltas arrive one by one, in order, before the message.
	var deltas []string
	for _, c := range chunks[:len(chunks)-1] {
		if c.chunk.Type != provider.ChunkTextDelta {
			t.Fatalf("unexpected chunk before the message: %+v", c.chunk)
		}
		deltas = append(deltas, c.chunk.Text)
	}
	if want := weatherTurn.text; strings.Join(deltas, "|") != strings.Join(want, "|") {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}

	if final == nil {
		t.Fatal("no message")
	}
	msg := final.Message
	if msg.Role != provider.RoleAssistant || len(msg.Content) != 2 {
		t.Fatalf("message = %+v, want assistant text + tool_use", msg)
	}
	if got := msg.Text(); got != "Let me check the weather." {
		t.Errorf("text = %q", got)
	}
	tu := msg.Content[1]
	if tu.Type != provider.BlockToolUse || tu.ID != weatherTurn.toolID || tu.Name != "get_weather" || string(tu.Input) != `{"city": "Paris"}` {
		t.Errorf("tool_use = %+v (input %s)", tu, tu.Input)
	}
	if final.StopReason != provider.StopToolUse {
		t.Errorf("stop reason = %q", final.StopReason)
	}
	wantUsage := provider.Usage{InputTokens: 25, OutputTokens: 89, CacheCreationInputTokens: 3, CacheReadInputTokens: 7}
	if final.Usage != wantUsage {
		t.Errorf("usage = %+v, want %+v", final.Usage, wantUsage)
	}

	reqs := api.requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	h := reqs[0].header
	// SDK v2 sends an API key as a bearer token, not as x-api-key.
	if got := h.Get("Authorization"); got != "Bearer sk-ant-test" {
		t.Errorf("Authorization = %q", got)
	}
	if got := h.Get("X-Api-Key"); got != "" {
		t.Errorf("unexpected x-api-key %q", got)
	}
	if h.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	checkRequestBody(t, reqs[0].body)
}

// checkRequestBody checks the points that matter one by one, then the whole
// body against testdata/request.golden.json.
func checkRequestBody(t *testing.T, body []byte) {
	t.Helper()
	var b struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		System    []struct {
			Type, Text string
		} `json:"system"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	if b.Model != "claude-test" || b.MaxTokens != 1024 || !b.Stream {
		t.Errorf("model/max_tokens/stream = %q/%d/%v", b.Model, b.MaxTokens, b.Stream)
	}
	if len(b.System) != 1 || b.System[0].Text != "You are terse." {
		t.Errorf("system = %+v", b.System)
	}
	if len(b.Tools) != 1 || b.Tools[0].Name != "get_weather" || b.Tools[0].Description == "" {
		t.Fatalf("tools = %+v", b.Tools)
	}
	if !jsonEqual(t, b.Tools[0].InputSchema, richRequest().Tools[0].InputSchema) {
		t.Errorf("input_schema = %s", b.Tools[0].InputSchema)
	}
	if len(b.Messages) != 5 {
		t.Fatalf("got %d messages", len(b.Messages))
	}
	img := b.Messages[0].Content[1]
	src, _ := img["source"].(map[string]any)
	if img["type"] != "image" || src["type"] != "base64" || src["media_type"] != "image/png" || src["data"] != "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ" {
		t.Errorf("image block = %v", img)
	}
	bad := b.Messages[1].Content[1]
	if bad["type"] != "tool_use" || bad["id"] != "toolu_bad" {
		t.Errorf("tool_use block = %v", bad)
	}
	if in, ok := bad["input"].(map[string]any); !ok || len(in) != 0 {
		t.Errorf("invalid tool input sent as %v, want {}", bad["input"])
	}
	tr := b.Messages[2].Content[0]
	if tr["type"] != "tool_result" || tr["tool_use_id"] != "toolu_bad" || tr["is_error"] != true {
		t.Errorf("tool_result = %v", tr)
	}
	if _, ok := b.Messages[4].Content[0]["is_error"]; ok {
		t.Errorf("is_error sent for a successful result: %v", b.Messages[4].Content[0])
	}

	// The whole body, keys sorted, against the golden file.
	var v any
	_ = json.Unmarshal(body, &v)
	got, _ := json.MarshalIndent(v, "", "  ")
	got = append(got, '\n')
	golden := filepath.Join("testdata", "request.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("request body differs from %s (go test -update to accept):\n%s", golden, got)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

// The SDK retries a 529 by itself, honouring retry-after-ms; nothing was
// streamed, so no ChunkRetry is needed.
func TestStreamOverloadedResponseRetriedBySDK(t *testing.T) {
	api := newFakeAPI(t,
		respondError(529, "overloaded_error", "Overloaded", "retry-after-ms", "1"),
		respondSSE(weatherTurn.events()),
	)
	// A base delay of an hour proves the server's retry-after-ms is used.
	m := newTestModel(t, api.URL, Options{RetryBaseDelay: time.Hour})
	chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	var rs []provider.Chunk
	for _, c := range chunks {
		if c.chunk.Type == provider.ChunkRetry {
			rs = append(rs, c.chunk)
		}
	}
	// Every retry is announced, with the server's wait.
	if len(rs) != 1 || rs[0].Attempt != 2 || rs[0].MaxAttempts != 5 || rs[0].Wait != time.Millisecond {
		t.Errorf("retries = %+v, want one announcing attempt 2/5 after 1ms", rs)
	}
	if final == nil || final.Message.Text() != "Let me check the weather." {
		t.Fatalf("final = %+v", final)
	}
	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2", len(reqs))
	}
}

// Failures after the stream has started are ours to retry: a ChunkRetry, then
// the whole message again.
func TestStreamRetriedAfterBreak(t *testing.T) {
	all := weatherTurn.events()
	half := all[:5] // message_start, block start, a delta, ping, a delta
	for _, tc := range []struct {
		name    string
		first   http.HandlerFunc
		wantErr string
	}{
		{"connection cut", respondCut(half), "unexpected EOF"},
		{"clean end before message_stop", respondSSE(half), "before message_stop"},
		{"overloaded error event", respondSSE(append(half[:len(half):len(half)], errorEvent("overloaded_error", "Overloaded"))), "overloaded_error: Overloaded"},
		{"api_error event", respondSSE(append(half[:len(half):len(half)], errorEvent("api_error", "Internal server error"))), "api_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.first, respondSSE(all))
			m := newTestModel(t, api.URL, Options{})
			chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			if err != nil {
				t.Fatal(err)
			}
			var retries []provider.Chunk
			textBefore := ""
			for _, c := range chunks {
				if c.chunk.Type == provider.ChunkRetry {
					retries = append(retries, c.chunk)
				}
				if c.chunk.Type == provider.ChunkTextDelta && len(retries) == 0 {
					textBefore += c.chunk.Text
				}
			}
			if len(retries) != 1 {
				t.Fatalf("got %d ChunkRetry, want 1: %+v", len(retries), chunks)
			}
			if r := retries[0]; r.Attempt != 2 || r.Err == nil || !strings.Contains(r.Err.Error(), tc.wantErr) {
				t.Errorf("ChunkRetry = {Attempt %d, Err %v}, want attempt 2 and %q", r.Attempt, r.Err, tc.wantErr)
			}
			if textBefore != "Let me check the " {
				t.Errorf("text before the retry = %q", textBefore)
			}
			if got := visibleText(chunks); got != "Let me check the weather." {
				t.Errorf("text after the retry = %q", got)
			}
			if final == nil || final.Message.Text() != "Let me check the weather." || len(final.Message.ToolUses()) != 1 {
				t.Fatalf("final = %+v", final)
			}
			if n := len(api.requests()); n != 2 {
				t.Errorf("server got %d requests, want 2", n)
			}
		})
	}
}

// A stream restart and the SDK's retries share one budget.
func TestRetryBudgetShared(t *testing.T) {
	half := weatherTurn.events()[:4]
	t.Run("cut then 529 then success", func(t *testing.T) {
		api := newFakeAPI(t, respondCut(half), respondError(529, "overloaded_error", "Overloaded"), respondSSE(weatherTurn.events()))
		m := newTestModel(t, api.URL, Options{MaxRetries: 2})
		_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err != nil || final == nil {
			t.Fatalf("final %v, err %v", final, err)
		}
		if n := len(api.requests()); n != 3 {
			t.Errorf("server got %d requests, want 3", n)
		}
	})
	t.Run("cut then 529 with one retry", func(t *testing.T) {
		api := newFakeAPI(t, respondCut(half), respondError(529, "overloaded_error", "Overloaded"), respondSSE(weatherTurn.events()))
		m := newTestModel(t, api.URL, Options{MaxRetries: 1})
		_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err == nil || !strings.Contains(err.Error(), "after 2 attempts") || !strings.Contains(err.Error(), "529 overloaded_error: Overloaded") {
			t.Fatalf("err = %v", err)
		}
		if n := len(api.requests()); n != 2 {
			t.Errorf("server got %d requests, want 2", n)
		}
	})
	t.Run("cut every time", func(t *testing.T) {
		api := newFakeAPI(t, respondCut(half))
		m := newTestModel(t, api.URL, Options{MaxRetries: 2})
		chunks, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err == nil || !strings.Contains(err.Error(), "giving up after 3 attempts") || !strings.Contains(err.Error(), "unexpected EOF") {
			t.Fatalf("err = %v", err)
		}
		retries := 0
		for _, c := range chunks {
			if c.chunk.Type == provider.ChunkRetry {
				retries++
			}
		}
		if retries != 2 || len(api.requests()) != 3 {
			t.Errorf("%d ChunkRetry and %d requests, want 2 and 3", retries, len(api.requests()))
		}
	})
	t.Run("no retries", func(t *testing.T) {
		api := newFakeAPI(t, respondCut(half))
		m := newTestModel(t, api.URL, Options{MaxRetries: -1})
		_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err == nil || !strings.Contains(err.Error(), "giving up after 1 attempt: unexpected EOF") || len(api.requests()) != 1 {
			t.Fatalf("err = %v after %d requests", err, len(api.requests()))
		}
	})
}

// A persistent 500 without retry-after fails after MaxRetries+1 requests,
// quickly because RetryBaseDelay (not the SDK's 0.5s·2^n) sets the waits.
func TestStreamPersistent500(t *testing.T) {
	api := newFakeAPI(t, respondError(500, "api_error", "Internal server error"))
	m := newTestModel(t, api.URL, Options{MaxRetries: 4})
	start := time.Now()
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("no error")
	}
	if want := "anthropic: giving up after 5 attempts: 500 api_error: Internal server error (request-id req_err)"; err.Error() != want {
		t.Errorf("err = %q\nwant  %q", err, want)
	}
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Errorf("error does not unwrap to *anthropic.Error with status 500: %#v", err)
	}
	if n := len(api.requests()); n != 5 {
		t.Errorf("server got %d requests, want 5", n)
	}
	if elapsed > 3*time.Second {
		t.Errorf("took %v; the backoff did not follow RetryBaseDelay", elapsed)
	}
}

// Connection failures before any response are retried by the SDK on its own
// schedule (there is no response to carry our delay), within the budget.
func TestStreamConnectionRefused(t *testing.T) {
	dead := newFakeAPI(t, respondSSE(nil))
	url := dead.URL
	dead.Close()
	m := newTestModel(t, url, Options{MaxRetries: 1})
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err == nil || !strings.HasPrefix(err.Error(), "anthropic: giving up after 2 attempts: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamNonRetryableStatus(t *testing.T) {
	for _, tc := range []struct {
		status   int
		typ, msg string
	}{
		{400, "invalid_request_error", "messages: text content blocks must be non-empty"},
		{401, "authentication_error", "invalid x-api-key"},
		{403, "permission_error", "Your API key does not have permission to use the specified resource."},
		{404, "not_found_error", "model: claude-nope"},
		{413, "request_too_large", "Request exceeds the maximum allowed number of bytes."},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			api := newFakeAPI(t, respondError(tc.status, tc.typ, tc.msg), respondSSE(weatherTurn.events()))
			m := newTestModel(t, api.URL, Options{})
			chunks, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			if err == nil {
				t.Fatal("no error")
			}
			want := "anthropic: " + strconvItoa(tc.status) + " " + tc.typ + ": " + tc.msg + " (request-id req_err)"
			if err.Error() != want {
				t.Errorf("err = %q\nwant  %q", err, want)
			}
			var apiErr *sdk.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Errorf("error does not unwrap to *anthropic.Error with status %d", tc.status)
			}
			if len(chunks) != 1 {
				t.Errorf("stream yielded %d items, want only the error", len(chunks))
			}
			if n := len(api.requests()); n != 1 {
				t.Errorf("server got %d requests, want 1", n)
			}
		})
	}
}

func strconvItoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// An error event that is not transient ends the call.
func TestStreamNonRetryableErrorEvent(t *testing.T) {
	ev := append(weatherTurn.events()[:3], errorEvent("invalid_request_error", "prompt is too long"))
	api := newFakeAPI(t, respondSSE(ev), respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.URL, Options{})
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err == nil || err.Error() != "anthropic: stream error: invalid_request_error: prompt is too long (request-id req_test)" {
		t.Fatalf("err = %v", err)
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

func TestStreamMalformedEventIsFinal(t *testing.T) {
	ev := append(weatherTurn.events()[:2], sseEvent{"content_block_delta", `{"type":"content_block_delta",`})
	api := newFakeAPI(t, respondSSE(ev), respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.URL, Options{})
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err == nil || !strings.Contains(err.Error(), "malformed stream event") || len(api.requests()) != 1 {
		t.Fatalf("err = %v after %d requests", err, len(api.requests()))
	}
}

func TestStreamToolInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input []string
		want  string
	}{
		{"malformed kept raw", []string{`{"city": "Par`, `is", `, `"units": }`}, `{"city": "Paris", "units": }`},
		{"not an object kept raw", []string{`["Pa`, `ris"]`}, `["Paris"]`},
		{"empty is {}", nil, `{}`},
		{"unicode escapes untouched", []string{`{"city": "Z\u00fc`, `rich"}`}, `{"city": "Z\u00fcrich"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := turn{toolID: "toolu_x", toolName: "get_weather", input: tc.input}
			api := newFakeAPI(t, respondSSE(tr.events()))
			m := newTestModel(t, api.URL, Options{})
			_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			if err != nil {
				t.Fatal(err)
			}
			uses := final.Message.ToolUses()
			if len(uses) != 1 || string(uses[0].Input) != tc.want {
				t.Fatalf("tool uses = %+v, want input %s", uses, tc.want)
			}
			if len(final.Message.Content) != 1 {
				t.Errorf("content = %+v, want only the tool_use", final.Message.Content)
			}
		})
	}
}

// Thinking streams as thinking deltas, apart from the text, and the block
// is kept with its signature, before the text, as the API sent it.
func TestStreamKeepsThinking(t *testing.T) {
	tr := turn{thinking: true, text: []string{"Hi", "!"}, stop: "end_turn"}
	api := newFakeAPI(t, respondSSE(tr.events()))
	m := newTestModel(t, api.URL, Options{})
	chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 4 || visibleText(chunks) != "Hi!" || chunks[0].chunk.Type != provider.ChunkThinkingDelta || chunks[0].chunk.Text != "Let me think." {
		t.Errorf("chunks = %+v", chunks)
	}
	c := final.Message.Content
	if len(c) != 2 || c[0].Type != provider.BlockThinking || c[0].Text != "Let me think." || c[0].Signature != "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" ||
		final.Message.Text() != "Hi!" || final.StopReason != provider.StopEndTurn {
		t.Errorf("final = %+v", c)
	}
}

func TestNewEnvironment(t *testing.T) {
	api := newFakeAPI(t, respondSSE(weatherTurn.events()))
	other := newFakeAPI(t, respondSSE(weatherTurn.events()))

	t.Run("env honoured", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
		t.Setenv("ANTHROPIC_BASE_URL", api.URL)
		m, err := New(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := drain(t, m.Stream(testCtx(t), simpleRequest())); err != nil {
			t.Fatal(err)
		}
		reqs := api.requests()
		if len(reqs) != 1 || reqs[0].header.Get("Authorization") != "Bearer sk-ant-from-env" {
			t.Fatalf("requests = %d, want 1 with the env key", len(reqs))
		}
	})
	t.Run("options win", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
		t.Setenv("ANTHROPIC_BASE_URL", api.URL)
		m, err := New(&Options{APIKey: "sk-ant-explicit", BaseURL: other.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := drain(t, m.Stream(testCtx(t), simpleRequest())); err != nil {
			t.Fatal(err)
		}
		reqs := other.requests()
		if len(reqs) != 1 || reqs[0].header.Get("Authorization") != "Bearer sk-ant-explicit" {
			t.Fatalf("explicit options not used")
		}
		if len(api.requests()) != 1 {
			t.Errorf("the env base URL got a request")
		}
	})
	t.Run("no key", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "") // empty counts as unset, as in the SDK
		t.Setenv("ANTHROPIC_AUTH_TOKEN", "not-a-key")
		_, err := New(nil)
		if !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
			t.Fatalf("err = %v, want ErrNoAPIKey naming ANTHROPIC_API_KEY", err)
		}
	})
	t.Run("bad base URL", func(t *testing.T) {
		_, err := New(&Options{APIKey: "k", BaseURL: "localhost:8080"})
		if err == nil || !strings.Contains(err.Error(), "localhost:8080") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestNewDefaults(t *testing.T) {
	m, err := New(&Options{APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{APIKey: "k", MaxRetries: 4, RetryBaseDelay: 500 * time.Millisecond}
	if m.opts.BaseURL != "" {
		want.BaseURL = m.opts.BaseURL // from the environment of whoever runs the tests
	}
	if m.opts != want {
		t.Errorf("opts = %+v, want %+v", m.opts, want)
	}
	o := &Options{APIKey: "k"}
	_, _ = New(o)
	if *o != (Options{APIKey: "k"}) {
		t.Errorf("New modified its argument: %+v", *o)
	}
}

func TestStreamContextCancelled(t *testing.T) {
	gone := make(chan struct{})
	api := newFakeAPI(t, respondHang(weatherTurn.events()[:3], gone))
	m := newTestModel(t, api.URL, Options{})
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()

	var cancelledAt time.Time
	var err error
	for c, e := range m.Stream(ctx, simpleRequest()) {
		if e != nil {
			err = e
			break
		}
		if c.Type == provider.ChunkRetry {
			t.Errorf("retried after cancellation: %+v", c)
		}
		if c.Type == provider.ChunkTextDelta && cancelledAt.IsZero() {
			cancelledAt = time.Now()
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(cancelledAt); d > time.Second {
		t.Errorf("stream ended %v after cancel", d)
	}
	waitClosed(t, gone)
	if n := len(api.requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

// Cancelling during a backoff wait ends the stream at once too.
func TestStreamContextCancelledDuringBackoff(t *testing.T) {
	api := newFakeAPI(t, respondCut(weatherTurn.events()[:3]))
	m := newTestModel(t, api.URL, Options{RetryBaseDelay: time.Hour})
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var err error
	var at time.Time
	for c, e := range m.Stream(ctx, simpleRequest()) {
		if e != nil {
			err = e
			break
		}
		if c.Type == provider.ChunkRetry {
			at = time.Now()
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) || at.IsZero() || time.Since(at) > time.Second {
		t.Fatalf("err = %v, %v after cancel", err, time.Since(at))
	}
}

func TestStreamConsumerStopsEarly(t *testing.T) {
	gone := make(chan struct{})
	api := newFakeAPI(t, respondHang(weatherTurn.events()[:3], gone))
	m := newTestModel(t, api.URL, Options{})
	n := 0
	for c, err := range m.Stream(testCtx(t), simpleRequest()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if c.Type == provider.ChunkTextDelta {
			break
		}
	}
	if n != 1 {
		t.Errorf("got %d chunks", n)
	}
	// Breaking out must close the response: the server sees the client go.
	waitClosed(t, gone)
}

func waitClosed(t *testing.T, gone <-chan struct{}) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not see the connection close")
	}
}

func TestRequestMappingErrors(t *testing.T) {
	m := newTestModel(t, "http://127.0.0.1:1", Options{})
	for _, tc := range []struct {
		name string
		req  *provider.Request
		want string
	}{
		{"nil request", nil, "nil Request"},
		{"no model", &provider.Request{}, "Model is empty"},
		{"bad role", &provider.Request{Model: "m", Messages: []provider.Message{{Role: "system"}}}, `unknown role "system"`},
		{"bad block", &provider.Request{Model: "m", Messages: []provider.Message{{Role: "user", Content: []provider.Block{{Type: "video"}}}}}, `unsupported block type "video"`},
		{"bad schema", &provider.Request{Model: "m", Tools: []provider.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":`)}}}, "input schema is not a JSON object"},
		{"not an image", &provider.Request{Model: "m", Messages: []provider.Message{{Role: "user", Content: []provider.Block{{Type: "image", Data: []byte("hello")}}}}}, "not an image type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := drain(t, m.Stream(context.Background(), tc.req))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	m := &Model{opts: Options{RetryBaseDelay: 100 * time.Millisecond}}
	for n, base := range []time.Duration{100, 200, 400, 800} {
		base *= time.Millisecond
		for range 20 {
			if d := m.backoff(n); d < base || d >= base+base/4 {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v)", n, d, base, base+base/4)
			}
		}
	}
	if d := m.backoff(60); d < maxRetryDelay || d > maxRetryDelay+maxRetryDelay/4 {
		t.Errorf("backoff(60) = %v, want capped near %v", d, maxRetryDelay)
	}
}
