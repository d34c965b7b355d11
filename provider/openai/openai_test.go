package openai

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

	sdk "github.com/openai/openai-go/v3"

	"github.com/lite-agent/lite-agent/provider"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// chunkOrErr is one item of a stream.
type chunkOrErr struct {
	chunk provider.Chunk
	err   error
}

// drain runs a stream to its end and returns everything it yielded, failing
// the test if the stream breaks its contract (anything after an error, two
// messages).
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
		if final != nil {
			t.Fatalf("stream yielded %+v after the message", c)
		}
		if c.Type == provider.ChunkMessage {
			final = &c
		}
	}
	return out, final, err
}

// newTestModel returns a Model on url with fast retries and no key unless o
// sets one.
func newTestModel(t *testing.T, url string, o Options) *Model {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	o.BaseURL = url
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
		Model:    "gpt-test",
		Messages: []provider.Message{{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText, Text: "Weather in Paris?"}}}},
	}
}

func retries(chunks []chunkOrErr) []provider.Chunk {
	var out []provider.Chunk
	for _, c := range chunks {
		if c.chunk.Type == provider.ChunkRetry {
			out = append(out, c.chunk)
		}
	}
	return out
}

func TestStreamText(t *testing.T) {
	api := newFakeAPI(t, respondSSE(helloTurn.events()))
	m := newTestModel(t, api.url(), Options{})

	chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	// Deltas arrive one by one, in order, before the message. The empty
	// content of the role chunk is not a delta.
	var deltas []string
	for _, c := range chunks[:len(chunks)-1] {
		if c.chunk.Type != provider.ChunkTextDelta {
			t.Fatalf("unexpected chunk before the message: %+v", c.chunk)
		}
		deltas = append(deltas, c.chunk.Text)
	}
	if strings.Join(deltas, "|") != "Hel|lo, |world." {
		t.Errorf("deltas = %q", deltas)
	}
	if final == nil {
		t.Fatal("no message")
	}
	msg := final.Message
	if msg.Role != provider.RoleAssistant || len(msg.Content) != 1 || msg.Text() != "Hello, world." {
		t.Errorf("message = %+v", msg)
	}
	if final.StopReason != provider.StopEndTurn {
		t.Errorf("stop reason = %q", final.StopReason)
	}
	// prompt_tokens 25 of which 5 cached: 20 uncached + 5 cache reads.
	if want := (provider.Usage{InputTokens: 20, OutputTokens: 12, CacheReadInputTokens: 5}); final.Usage != want {
		t.Errorf("usage = %+v, want %+v", final.Usage, want)
	}

	reqs := api.requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	// No key: no Authorization header at all, not an empty bearer.
	if v, ok := reqs[0].header["Authorization"]; ok {
		t.Errorf("Authorization sent without a key: %q", v)
	}
	var body struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "gpt-test" || !body.Stream || !body.StreamOptions.IncludeUsage {
		t.Errorf("model/stream/include_usage = %q/%v/%v", body.Model, body.Stream, body.StreamOptions.IncludeUsage)
	}
	if len(body.Messages) != 1 || body.Messages[0]["role"] != "user" || body.Messages[0]["content"] != "Weather in Paris?" {
		t.Errorf("messages = %v", body.Messages)
	}
}

func TestStreamAPIKeyHeader(t *testing.T) {
	api := newFakeAPI(t, respondSSE(helloTurn.events()))
	m := newTestModel(t, api.url(), Options{APIKey: "sk-test-123"})
	if _, _, err := drain(t, m.Stream(testCtx(t), simpleRequest())); err != nil {
		t.Fatal(err)
	}
	if got := api.requests()[0].header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("Authorization = %q", got)
	}
}

// A tool call whose arguments arrive over three chunks, split mid-token,
// after streamed text.
func TestStreamToolCall(t *testing.T) {
	api := newFakeAPI(t, respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.url(), Options{})
	chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	if got := visibleText(chunks); got != "Let me check the weather." {
		t.Errorf("streamed text = %q", got)
	}
	msg := final.Message
	if len(msg.Content) != 2 || msg.Content[0].Type != provider.BlockText || msg.Text() != "Let me check the weather." {
		t.Fatalf("content = %+v, want text then tool_use", msg.Content)
	}
	tu := msg.Content[1]
	if tu.Type != provider.BlockToolUse || tu.ID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" || tu.Name != "get_weather" || string(tu.Input) != `{"city": "Paris"}` {
		t.Errorf("tool_use = %+v (input %s)", tu, tu.Input)
	}
	if final.StopReason != provider.StopToolUse {
		t.Errorf("stop reason = %q", final.StopReason)
	}
}

// Two calls in one turn, sent one after the other (as OpenAI does) and with
// their fragments interleaved: each argument text goes to its own call.
func TestStreamParallelToolCalls(t *testing.T) {
	calls := []fakeCall{
		{id: "call_a", name: "get_weather", args: []string{`{"ci`, `ty": "Pa`, `ris"}`}},
		{id: "call_b", name: "get_time", args: []string{`{"tz": `, `"Europe/`, `Paris"}`}},
	}
	for _, interleave := range []bool{false, true} {
		t.Run(map[bool]string{false: "sequential", true: "interleaved"}[interleave], func(t *testing.T) {
			api := newFakeAPI(t, respondSSE(turn{calls: calls, interleave: interleave}.events()))
			m := newTestModel(t, api.url(), Options{})
			chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) != 1 {
				t.Errorf("stream yielded %d items, want only the message", len(chunks))
			}
			uses := final.Message.ToolUses()
			if len(uses) != 2 || len(final.Message.Content) != 2 {
				t.Fatalf("content = %+v", final.Message.Content)
			}
			want := [][3]string{{"call_a", "get_weather", `{"city": "Paris"}`}, {"call_b", "get_time", `{"tz": "Europe/Paris"}`}}
			for i, u := range uses {
				if got := [3]string{u.ID, u.Name, string(u.Input)}; got != want[i] {
					t.Errorf("call %d = %q, want %q", i, got, want[i])
				}
			}
			if final.StopReason != provider.StopToolUse {
				t.Errorf("stop reason = %q", final.StopReason)
			}
		})
	}
}

// Argument text is kept exactly as sent, valid JSON or not.
func TestStreamToolArguments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		finish string
		want   string
		stop   provider.StopReason
	}{
		{"malformed kept raw", []string{`{"city": "Par`, `is", `, `"units": }`}, "", `{"city": "Paris", "units": }`, provider.StopToolUse},
		{"cut by the token limit", []string{`{"city": `, `"Par`}, "length", `{"city": "Par`, provider.StopMaxTokens},
		{"not an object kept raw", []string{`["Pa`, `ris"]`}, "", `["Paris"]`, provider.StopToolUse},
		{"empty is {}", nil, "", `{}`, provider.StopToolUse},
		{"unicode escapes untouched", []string{`{"city": "Z\u00fc`, `rich"}`}, "", `{"city": "Z\u00fcrich"}`, provider.StopToolUse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := turn{calls: []fakeCall{{id: "call_x", name: "get_weather", args: tc.args}}, finish: tc.finish}
			api := newFakeAPI(t, respondSSE(tr.events()))
			m := newTestModel(t, api.url(), Options{})
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
			if final.StopReason != tc.stop {
				t.Errorf("stop reason = %q, want %q", final.StopReason, tc.stop)
			}
		})
	}
}

// Servers differ in how they send tool calls: without an index, with the
// whole name repeated in every fragment, with the whole call in one chunk.
func TestStreamToolCallVariants(t *testing.T) {
	tc := func(s string) string { return chunk(`{"tool_calls":[`+s+`]}`, "") }
	for _, c := range []struct {
		name   string
		events []string
		want   [][3]string
	}{
		{"no index", []string{
			tc(`{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}`),
			tc(`{"function":{"arguments":"th\": \"a\"}"}}`),
			tc(`{"id":"call_2","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"b\"}"}}`),
			chunk(`{}`, "tool_calls"),
		}, [][3]string{{"call_1", "read_file", `{"path": "a"}`}, {"call_2", "read_file", `{"path": "b"}`}}},
		{"name repeated", []string{
			tc(`{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":""}}`),
			tc(`{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}`),
			tc(`{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":" \"a\"}"}}`),
			chunk(`{}`, "tool_calls"),
		}, [][3]string{{"call_1", "read_file", `{"path": "a"}`}}},
		{"whole calls in one chunk, finish stop", []string{
			tc(`{"index":0,"id":"c0","type":"function","function":{"name":"a","arguments":"{}"}},{"index":1,"id":"c1","type":"function","function":{"name":"b","arguments":"{\"x\":1}"}}`),
			chunk(`{}`, "stop"),
		}, [][3]string{{"c0", "a", `{}`}, {"c1", "b", `{"x":1}`}}},
		{"no id", []string{
			tc(`{"index":0,"type":"function","function":{"name":"a","arguments":"{}"}}`),
			chunk(`{}`, "tool_calls"),
		}, [][3]string{{"", "a", `{}`}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := newFakeAPI(t, respondSSE(c.events))
			m := newTestModel(t, api.url(), Options{})
			_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			if err != nil {
				t.Fatal(err)
			}
			uses := final.Message.ToolUses()
			var got [][3]string
			for _, u := range uses {
				got = append(got, [3]string{u.ID, u.Name, string(u.Input)})
			}
			if len(got) != len(c.want) || (len(got) > 0 && !equal3(got, c.want)) {
				t.Errorf("calls = %q, want %q", got, c.want)
			}
			if final.StopReason != provider.StopToolUse {
				t.Errorf("stop reason = %q", final.StopReason)
			}
		})
	}
}

func equal3(a, b [][3]string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStreamFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		finish string
		want   provider.StopReason
	}{
		{"stop", provider.StopEndTurn},
		{"length", provider.StopMaxTokens},
		{"content_filter", provider.StopRefusal},
		{"tool_calls", provider.StopToolUse},
		{"eos", provider.StopEndTurn}, // unknown: judged by the content
	} {
		t.Run(tc.finish, func(t *testing.T) {
			api := newFakeAPI(t, respondSSE(turn{text: []string{"x"}, finish: tc.finish}.events()))
			m := newTestModel(t, api.url(), Options{})
			_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			if err != nil {
				t.Fatal(err)
			}
			if final.StopReason != tc.want {
				t.Errorf("stop reason = %q, want %q", final.StopReason, tc.want)
			}
		})
	}
	t.Run("refusal", func(t *testing.T) {
		ev := []string{
			chunk(`{"role":"assistant","content":null,"refusal":""}`, ""),
			chunk(`{"refusal":"I'm sorry, "}`, ""),
			chunk(`{"refusal":"I can't help with that."}`, ""),
			chunk(`{}`, "stop"),
		}
		api := newFakeAPI(t, respondSSE(ev))
		m := newTestModel(t, api.url(), Options{})
		chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err != nil {
			t.Fatal(err)
		}
		if visibleText(chunks) != "I'm sorry, I can't help with that." || final.Message.Text() != "I'm sorry, I can't help with that." {
			t.Errorf("text = %q / %q", visibleText(chunks), final.Message.Text())
		}
		if final.StopReason != provider.StopRefusal {
			t.Errorf("stop reason = %q", final.StopReason)
		}
		// Without the usage chunk, usage is zero rather than an error.
		if final.Usage != (provider.Usage{}) {
			t.Errorf("usage = %+v", final.Usage)
		}
	})
	t.Run("reasoning skipped", func(t *testing.T) {
		ev := []string{
			chunk(`{"role":"assistant","content":null,"reasoning_content":"Let me think."}`, ""),
			chunk(`{"content":null,"reasoning_content":" Paris."}`, ""),
			chunk(`{"content":"Paris."}`, ""),
			chunk(`{}`, "stop"),
		}
		api := newFakeAPI(t, respondSSE(ev))
		m := newTestModel(t, api.url(), Options{})
		chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) != 2 || final.Message.Text() != "Paris." {
			t.Errorf("chunks = %+v", chunks)
		}
	})
}

var pngPixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

// richRequest exercises every block type the provider maps.
func richRequest() *provider.Request {
	return &provider.Request{
		Model:     "gpt-test",
		System:    "You are terse.",
		MaxTokens: 1024,
		Tools: []provider.ToolSpec{{
			Name:        "get_weather",
			Description: "Get the current weather in a city.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"},"days":{"type":"integer","maximum":9007199254740993}},"required":["city"],"additionalProperties":false}`),
		}, {
			Name: "list_dir", // no description, no schema
		}},
		Messages: []provider.Message{
			{Role: provider.RoleUser, Content: []provider.Block{
				{Type: provider.BlockText, Text: "What is the weather where this photo was taken?"},
				{Type: provider.BlockImage, MIMEType: "image/png", Data: pngPixel},
			}},
			{Role: provider.RoleAssistant, Content: []provider.Block{
				{Type: provider.BlockText, Text: "Let me check."},
				// The model sent garbage: it must go back as {}.
				{Type: provider.BlockToolUse, ID: "call_bad", Name: "get_weather", Input: json.RawMessage(`{"city": "Par`)},
				{Type: provider.BlockToolUse, ID: "call_dir", Name: "list_dir", Input: json.RawMessage(`{}`)},
			}},
			{Role: provider.RoleUser, Content: []provider.Block{
				{Type: provider.BlockToolResult, ToolUseID: "call_bad", IsError: true, Content: []provider.Block{
					{Type: provider.BlockText, Text: "invalid arguments: unexpected end of JSON input"},
				}},
				{Type: provider.BlockToolResult, ToolUseID: "call_dir", Content: []provider.Block{
					{Type: provider.BlockText, Text: "a.txt"},
					{Type: provider.BlockText, Text: "photo.png"},
				}},
				{Type: provider.BlockText, Text: "Also, be brief."},
			}},
			{Role: provider.RoleAssistant, Content: []provider.Block{
				{Type: provider.BlockToolUse, ID: "call_ok", Name: "get_weather", Input: json.RawMessage(`{"city": "Paris"}`)},
			}},
			{Role: provider.RoleUser, Content: []provider.Block{
				{Type: provider.BlockToolResult, ToolUseID: "call_ok", Content: []provider.Block{
					{Type: provider.BlockText, Text: "18°C, sunny"},
					{Type: provider.BlockImage, MIMEType: "image/png", Data: pngPixel},
				}},
			}},
		},
	}
}

// The request body: the points that matter one by one, then the whole body
// against testdata/request.golden.json.
func TestRequestBody(t *testing.T) {
	api := newFakeAPI(t, respondSSE(helloTurn.events()))
	m := newTestModel(t, api.url(), Options{})
	if _, _, err := drain(t, m.Stream(testCtx(t), richRequest())); err != nil {
		t.Fatal(err)
	}
	body := api.requests()[0].body

	type toolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	var b struct {
		Model               string `json:"model"`
		MaxTokens           int    `json:"max_tokens"`
		MaxCompletionTokens *int   `json:"max_completion_tokens"`
		Stream              bool   `json:"stream"`
		Tools               []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description *string         `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCalls  []toolCall      `json:"tool_calls"`
			ToolCallID string          `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	if b.Model != "gpt-test" || b.MaxTokens != 1024 || b.MaxCompletionTokens != nil || !b.Stream {
		t.Errorf("model/max_tokens/max_completion_tokens/stream = %q/%d/%v/%v", b.Model, b.MaxTokens, b.MaxCompletionTokens, b.Stream)
	}
	if len(b.Tools) != 2 || b.Tools[0].Type != "function" || b.Tools[0].Function.Name != "get_weather" || *b.Tools[0].Function.Description == "" {
		t.Fatalf("tools = %+v", b.Tools)
	}
	// The schema goes through whole, numbers digit for digit.
	if !jsonEqualNumbers(b.Tools[0].Function.Parameters, richRequest().Tools[0].InputSchema) {
		t.Errorf("parameters = %s", b.Tools[0].Function.Parameters)
	}
	if b.Tools[1].Function.Description != nil || string(b.Tools[1].Function.Parameters) != `{"properties":{},"type":"object"}` {
		t.Errorf("bare tool = %+v", b.Tools[1].Function)
	}

	var roles []string
	for _, m := range b.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "system user assistant tool tool user assistant tool" {
		t.Fatalf("roles = %s", got)
	}
	msgs := b.Messages
	if string(msgs[0].Content) != `"You are terse."` {
		t.Errorf("system = %s", msgs[0].Content)
	}
	var parts []map[string]any
	if err := json.Unmarshal(msgs[1].Content, &parts); err != nil || len(parts) != 2 {
		t.Fatalf("user content = %s", msgs[1].Content)
	}
	img, _ := parts[1]["image_url"].(map[string]any)
	if parts[1]["type"] != "image_url" || img["url"] != "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ" {
		t.Errorf("image part = %v", parts[1])
	}
	a := msgs[2]
	if string(a.Content) != `"Let me check."` || len(a.ToolCalls) != 2 {
		t.Fatalf("assistant = %+v", a)
	}
	if tc := a.ToolCalls[0]; tc.ID != "call_bad" || tc.Type != "function" || tc.Function.Name != "get_weather" || tc.Function.Arguments != "{}" {
		t.Errorf("invalid arguments sent back as %+v, want {}", tc)
	}
	if msgs[3].ToolCallID != "call_bad" || string(msgs[3].Content) != `"Error: invalid arguments: unexpected end of JSON input"` {
		t.Errorf("error result = %+v", msgs[3])
	}
	if msgs[4].ToolCallID != "call_dir" || string(msgs[4].Content) != `"a.txt\nphoto.png"` {
		t.Errorf("text result = %+v", msgs[4])
	}
	if string(msgs[5].Content) != `"Also, be brief."` {
		t.Errorf("user text after results = %s", msgs[5].Content)
	}
	if msgs[6].Content != nil || len(msgs[6].ToolCalls) != 1 || msgs[6].ToolCalls[0].Function.Arguments != `{"city": "Paris"}` {
		t.Errorf("assistant with only a call = %+v (content %s)", msgs[6], msgs[6].Content)
	}
	if want := `"18°C, sunny\n[image/png image of 33 bytes omitted: tool results here can carry only text]"`; string(msgs[7].Content) != want {
		t.Errorf("result with an image = %s\nwant %s", msgs[7].Content, want)
	}

	// The whole body, indented, against the golden file.
	var got bytes.Buffer
	if err := json.Indent(&got, body, "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteByte('\n')
	golden := filepath.Join("testdata", "request.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("request body differs from %s (go test -update to accept):\n%s", golden, got.Bytes())
	}
}

// jsonEqualNumbers compares two JSON texts as values, numbers as written.
func jsonEqualNumbers(a, b []byte) bool {
	norm := func(x []byte) string {
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return "invalid"
		}
		s, _ := json.Marshal(v)
		return string(s)
	}
	return norm(a) == norm(b)
}

func TestTokenLimitField(t *testing.T) {
	for _, tc := range []struct {
		name     string
		field    string
		optLimit int
		reqLimit int
		want     string // the field expected in the body, "" for none
		value    float64
	}{
		{"no limit", "", 0, 0, "", 0},
		{"request limit, compatible server", "", 0, 300, "max_tokens", 300},
		{"options limit", "", 200, 0, "max_tokens", 200},
		{"request wins", "", 200, 300, "max_tokens", 300},
		{"max_completion_tokens forced", FieldMaxCompletionTokens, 0, 300, "max_completion_tokens", 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, respondSSE(helloTurn.events()))
			m := newTestModel(t, api.url(), Options{MaxTokens: tc.optLimit, TokenLimitField: tc.field})
			req := simpleRequest()
			req.MaxTokens = tc.reqLimit
			if _, _, err := drain(t, m.Stream(testCtx(t), req)); err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			_ = json.Unmarshal(api.requests()[0].body, &body)
			for _, f := range []string{"max_tokens", "max_completion_tokens"} {
				v, ok := body[f]
				if (f == tc.want) != ok || (ok && v != tc.value) {
					t.Errorf("%s = %v (present %v), want field %q = %v", f, v, ok, tc.want, tc.value)
				}
			}
		})
	}
}

// The SDK retries a 429 by itself; nothing was streamed, so no ChunkRetry is
// needed.
func TestStream429RetriedBySDK(t *testing.T) {
	api := newFakeAPI(t,
		respondError(429, "requests", "Rate limit reached for gpt-test in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.", "rate_limit_exceeded", "Retry-After-Ms", "1"),
		respondSSE(helloTurn.events()),
	)
	// A base delay of an hour proves the server's retry-after-ms is used.
	m := newTestModel(t, api.url(), Options{RetryBaseDelay: time.Hour})
	chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	// Every retry is announced, with the server's wait.
	if r := retries(chunks); len(r) != 1 || r[0].Attempt != 2 || r[0].Wait != time.Millisecond {
		t.Errorf("retries = %+v, want one announcing attempt 2 after 1ms", r)
	}
	if final == nil || final.Message.Text() != "Hello, world." || visibleText(chunks) != "Hello, world." {
		t.Fatalf("final = %+v", final)
	}
	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2", len(reqs))
	}
	if !bytes.Equal(reqs[0].body, reqs[1].body) {
		t.Error("the retried request has another body")
	}
}

// Failures after the stream has started are ours to retry: a ChunkRetry, then
// the whole message again.
func TestStreamRetriedAfterBreak(t *testing.T) {
	all := weatherTurn.events()
	half := all[:3] // role chunk and two text deltas
	for _, tc := range []struct {
		name    string
		first   http.HandlerFunc
		wantErr string
	}{
		{"connection cut", respondCut(half), "unexpected EOF"},
		{"clean end before finish_reason", respondEnd(half), "before finish_reason"},
		{"[DONE] before finish_reason", respondSSE(half), "before finish_reason"},
		{"server_error object", respondSSE(append(half[:3:3], `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)), "stream error server_error: The server had an error"},
		{"vLLM 500 object", respondSSE(append(half[:3:3], `{"error":{"object":"error","message":"EngineCore encountered an issue.","type":"InternalServerError","param":null,"code":500}}`)), "InternalServerError: EngineCore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.first, respondSSE(all))
			m := newTestModel(t, api.url(), Options{})
			chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			if err != nil {
				t.Fatal(err)
			}
			rs := retries(chunks)
			if len(rs) != 1 {
				t.Fatalf("got %d ChunkRetry, want 1: %+v", len(rs), chunks)
			}
			if r := rs[0]; r.Attempt != 2 || r.Err == nil || !strings.Contains(r.Err.Error(), tc.wantErr) {
				t.Errorf("ChunkRetry = {Attempt %d, Err %v}, want attempt 2 and %q", r.Attempt, r.Err, tc.wantErr)
			}
			textBefore := ""
			for _, c := range chunks {
				if c.chunk.Type == provider.ChunkRetry {
					break
				}
				textBefore += c.chunk.Text
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

// A stream cut after its finish_reason lost only the usage chunk: the answer
// is whole and is not paid for twice.
func TestStreamCutAfterFinish(t *testing.T) {
	tr := weatherTurn
	tr.noUsage = true
	api := newFakeAPI(t, respondCut(tr.events()), respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.url(), Options{})
	chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	if len(retries(chunks)) != 0 || len(api.requests()) != 1 {
		t.Errorf("retried: %d requests", len(api.requests()))
	}
	if len(final.Message.ToolUses()) != 1 || final.Usage != (provider.Usage{}) {
		t.Errorf("final = %+v", final)
	}
}

// A stream restart and the SDK's retries share one budget.
func TestRetryBudgetShared(t *testing.T) {
	half := weatherTurn.events()[:3]
	overloaded := respondError(503, "server_error", "The engine is currently overloaded, please try again later", "")
	t.Run("cut then 503 then success", func(t *testing.T) {
		api := newFakeAPI(t, respondCut(half), overloaded, respondSSE(weatherTurn.events()))
		m := newTestModel(t, api.url(), Options{MaxRetries: 2})
		chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err != nil || final == nil {
			t.Fatalf("final %v, err %v", final, err)
		}
		if n := len(api.requests()); n != 3 {
			t.Errorf("server got %d requests, want 3", n)
		}
		if rs := retries(chunks); len(rs) != 2 || rs[0].Attempt != 2 || rs[1].Attempt != 3 || rs[1].MaxAttempts != 3 {
			t.Errorf("retries = %+v, want attempts 2/3 and 3/3 announced", rs)
		}
	})
	t.Run("cut then 503 with one retry", func(t *testing.T) {
		api := newFakeAPI(t, respondCut(half), overloaded, respondSSE(weatherTurn.events()))
		m := newTestModel(t, api.url(), Options{MaxRetries: 1})
		_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err == nil || err.Error() != "openai: giving up after 2 attempts: 503 server_error: The engine is currently overloaded, please try again later (request-id req_err)" {
			t.Fatalf("err = %v", err)
		}
		if n := len(api.requests()); n != 2 {
			t.Errorf("server got %d requests, want 2", n)
		}
	})
	t.Run("cut every time", func(t *testing.T) {
		api := newFakeAPI(t, respondCut(half))
		m := newTestModel(t, api.url(), Options{MaxRetries: 2})
		chunks, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err == nil || !strings.Contains(err.Error(), "giving up after 3 attempts") || !strings.Contains(err.Error(), "unexpected EOF") {
			t.Fatalf("err = %v", err)
		}
		if rs := retries(chunks); len(rs) != 2 || len(api.requests()) != 3 {
			t.Errorf("%d ChunkRetry and %d requests, want 2 and 3", len(rs), len(api.requests()))
		}
	})
	t.Run("no retries", func(t *testing.T) {
		api := newFakeAPI(t, respondCut(half))
		m := newTestModel(t, api.url(), Options{MaxRetries: -1})
		_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err == nil || !strings.Contains(err.Error(), "giving up after 1 attempt: unexpected EOF") || len(api.requests()) != 1 {
			t.Fatalf("err = %v after %d requests", err, len(api.requests()))
		}
	})
}

// A persistent 500 without retry-after fails after MaxRetries+1 requests,
// quickly because RetryBaseDelay (not the SDK's 0.5s·2^n) sets the waits.
func TestStreamPersistent500(t *testing.T) {
	api := newFakeAPI(t, respondError(500, "server_error", "The server had an error while processing your request.", ""))
	m := newTestModel(t, api.url(), Options{MaxRetries: 4})
	start := time.Now()
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	elapsed := time.Since(start)
	if want := "openai: giving up after 5 attempts: 500 server_error: The server had an error while processing your request. (request-id req_err)"; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Errorf("error is not an *APIError with status 500: %#v", err)
	}
	var sdkErr *sdk.Error
	if !errors.As(err, &sdkErr) || sdkErr.StatusCode != 500 {
		t.Errorf("error does not unwrap to the SDK's *Error")
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
	url := dead.url()
	dead.Close()
	m := newTestModel(t, url, Options{MaxRetries: 1})
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err == nil || !strings.HasPrefix(err.Error(), "openai: giving up after 2 attempts: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v", err)
	}
}

// Error responses that are not worth retrying end the call at once, with the
// status and the server's message, whatever the shape of its body.
func TestStreamNonRetryableStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond http.HandlerFunc
		status  int
		want    string
	}{
		{"401 OpenAI", respondError(401, "invalid_request_error", "Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_api_key"), 401,
			"openai: 401 invalid_request_error: Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys. (code invalid_api_key) (request-id req_err)"},
		{"400 context length", respondError(400, "invalid_request_error", "This model's maximum context length is 128000 tokens.", "context_length_exceeded"), 400,
			"openai: 400 invalid_request_error: This model's maximum context length is 128000 tokens. (code context_length_exceeded) (request-id req_err)"},
		{"404 vLLM top-level message", respondRaw(404, "application/json", `{"object":"error","message":"The model `+"`gpt-nope`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`), 404,
			"openai: 404 NotFoundError: The model `gpt-nope` does not exist."},
		{"404 error as a string", respondRaw(404, "application/json", `{"error":"model \"qwen9\" not found, try pulling it first"}`), 404,
			`openai: 404: model "qwen9" not found, try pulling it first`},
		{"422 FastAPI detail", respondRaw(422, "application/json", `{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}`), 422,
			`openai: 422: [{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]`},
		{"403 plain text", respondRaw(403, "text/plain", "Forbidden by proxy policy\n"), 403,
			"openai: 403: Forbidden by proxy policy"},
		{"401 llama.cpp", respondRaw(401, "application/json; charset=utf-8", `{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}`), 401,
			"openai: 401 authentication_error: Invalid API Key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.respond, respondSSE(helloTurn.events()))
			m := newTestModel(t, api.url(), Options{})
			chunks, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v\nwant  %s", err, tc.want)
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Errorf("error is not an *APIError with status %d", tc.status)
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

// A 404 that says nothing is most likely a base URL without /v1.
func TestStream404Hint(t *testing.T) {
	srv := newFakeAPI(t, respondSSE(nil))
	m := newTestModel(t, srv.URL, Options{}) // no /v1: the fake answers 418 to other paths
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err == nil || !strings.Contains(err.Error(), "418") {
		t.Fatalf("err = %v", err)
	}

	api := newFakeAPI(t, respondRaw(404, "text/html", "<html><body>404 page not found</body></html>"))
	m = newTestModel(t, api.url(), Options{})
	_, _, err = drain(t, m.Stream(testCtx(t), simpleRequest()))
	want := "openai: 404 Not Found: nothing at " + api.url() + "/chat/completions; check the base URL (OpenAI-compatible servers usually serve under /v1)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
}

// An error object that is not transient ends the call.
func TestStreamNonRetryableErrorObject(t *testing.T) {
	ev := append(weatherTurn.events()[:2], `{"error":{"message":"Invalid prompt: your prompt was flagged.","type":"invalid_request_error","param":null,"code":"invalid_prompt"}}`)
	api := newFakeAPI(t, respondSSE(ev), respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.url(), Options{})
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if want := "openai: stream error invalid_request_error: Invalid prompt: your prompt was flagged. (code invalid_prompt)"; err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

// A chunk that is not valid JSON, or is JSON of the wrong shape, ends the
// call with an error that quotes or names it; it is not retried.
func TestStreamMalformedChunk(t *testing.T) {
	start := weatherTurn.events()[:2]
	for _, tc := range []struct {
		name, data, want string
	}{
		{"truncated JSON", `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"x"`, "openai: malformed stream chunk: unexpected end of JSON input"},
		{"not JSON", `{"id": nope}`, "openai: malformed stream chunk: invalid character"},
		{"not an object", `["chat.completion.chunk"]`, "openai: malformed stream chunk: json: cannot unmarshal array"},
		{"bad tool index", chunk(`{"tool_calls":[{"index":"first","id":"c","function":{"name":"a","arguments":""}}]}`, ""), `openai: malformed stream chunk: tool call index "first" is not an integer: {"id":`},
		{"huge tool index", chunk(`{"tool_calls":[{"index":99999999,"id":"c","function":{"name":"a","arguments":""}}]}`, ""), "openai: malformed stream chunk: tool call index 99999999 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, respondSSE(append(start[:2:2], tc.data)), respondSSE(weatherTurn.events()))
			m := newTestModel(t, api.url(), Options{})
			chunks, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant  %s…", err, tc.want)
			}
			if final != nil || len(retries(chunks)) != 0 || len(api.requests()) != 1 {
				t.Errorf("final %v, %d retries, %d requests", final, len(retries(chunks)), len(api.requests()))
			}
		})
	}
}

// A server that ignores "stream": true is told apart from a cut stream.
func TestStreamNotEventStream(t *testing.T) {
	api := newFakeAPI(t, respondRaw(200, "application/json", `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}`))
	m := newTestModel(t, api.url(), Options{})
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err == nil || !strings.Contains(err.Error(), "application/json instead of an event stream") || !strings.Contains(err.Error(), `"object":"chat.completion"`) {
		t.Fatalf("err = %v", err)
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

func TestNewEnvironment(t *testing.T) {
	api := newFakeAPI(t, respondSSE(helloTurn.events()))
	other := newFakeAPI(t, respondSSE(helloTurn.events()))

	t.Run("env honoured", func(t *testing.T) {
		t.Setenv("OPENAI_API_KEY", "sk-from-env")
		t.Setenv("OPENAI_BASE_URL", api.url())
		m, err := New(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := drain(t, m.Stream(testCtx(t), simpleRequest())); err != nil {
			t.Fatal(err)
		}
		reqs := api.requests()
		if len(reqs) != 1 || reqs[0].header.Get("Authorization") != "Bearer sk-from-env" {
			t.Fatalf("requests = %d, want 1 with the env key", len(reqs))
		}
	})
	t.Run("options win", func(t *testing.T) {
		t.Setenv("OPENAI_API_KEY", "sk-from-env")
		t.Setenv("OPENAI_BASE_URL", api.url())
		m, err := New(&Options{APIKey: "sk-explicit", BaseURL: other.url()})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := drain(t, m.Stream(testCtx(t), simpleRequest())); err != nil {
			t.Fatal(err)
		}
		reqs := other.requests()
		if len(reqs) != 1 || reqs[0].header.Get("Authorization") != "Bearer sk-explicit" {
			t.Fatalf("explicit options not used")
		}
		if len(api.requests()) != 1 {
			t.Errorf("the env base URL got a request")
		}
	})
	t.Run("no key for OpenAI", func(t *testing.T) {
		t.Setenv("OPENAI_API_KEY", "") // empty counts as unset
		t.Setenv("OPENAI_BASE_URL", "")
		_, err := New(nil)
		if !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
			t.Fatalf("err = %v, want ErrNoAPIKey naming OPENAI_API_KEY", err)
		}
		m, err := New(&Options{APIKey: "k"})
		if err != nil || m.opts.BaseURL != defaultBaseURL || m.opts.TokenLimitField != FieldMaxCompletionTokens {
			t.Fatalf("defaults: %+v, %v", m, err)
		}
	})
	t.Run("no key for a local server", func(t *testing.T) {
		t.Setenv("OPENAI_API_KEY", "")
		t.Setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
		m, err := New(nil)
		if err != nil || m.opts.APIKey != "" || m.opts.TokenLimitField != FieldMaxTokens {
			t.Fatalf("New = %+v, %v", m, err)
		}
	})
	t.Run("no other credential sent", func(t *testing.T) {
		// The SDK reads OPENAI_ADMIN_KEY too; it must not stand in for a
		// missing API key.
		t.Setenv("OPENAI_API_KEY", "")
		t.Setenv("OPENAI_ADMIN_KEY", "sk-admin-secret")
		local := newFakeAPI(t, respondSSE(helloTurn.events()))
		m, err := New(&Options{BaseURL: local.url()})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := drain(t, m.Stream(testCtx(t), simpleRequest())); err != nil {
			t.Fatal(err)
		}
		for k, v := range local.requests()[0].header {
			if strings.Contains(strings.Join(v, " "), "sk-admin-secret") || strings.EqualFold(k, "Authorization") {
				t.Errorf("header %s: %q sent without an API key", k, v)
			}
		}
	})
	t.Run("bad options", func(t *testing.T) {
		if _, err := New(&Options{BaseURL: "localhost:8080"}); err == nil || !strings.Contains(err.Error(), "localhost:8080") {
			t.Errorf("bad base URL: err = %v", err)
		}
		if _, err := New(&Options{BaseURL: "http://h/v1", TokenLimitField: "max_output_tokens"}); err == nil || !strings.Contains(err.Error(), "max_output_tokens") {
			t.Errorf("bad TokenLimitField: err = %v", err)
		}
	})
}

func TestNewDefaults(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	o := &Options{BaseURL: "http://127.0.0.1:8080/v1"}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{BaseURL: "http://127.0.0.1:8080/v1", MaxRetries: 4, RetryBaseDelay: 500 * time.Millisecond, TokenLimitField: FieldMaxTokens}
	if m.opts != want {
		t.Errorf("opts = %+v, want %+v", m.opts, want)
	}
	if *o != (Options{BaseURL: "http://127.0.0.1:8080/v1"}) {
		t.Errorf("New modified its argument: %+v", *o)
	}
}

func TestStreamContextCancelled(t *testing.T) {
	gone := make(chan struct{})
	api := newFakeAPI(t, respondHang(weatherTurn.events()[:3], gone))
	m := newTestModel(t, api.url(), Options{})
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
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "openai: ") {
		t.Fatalf("err = %v, want openai: … context.Canceled", err)
	}
	if d := time.Since(cancelledAt); d > time.Second {
		t.Errorf("stream ended %v after cancel", d)
	}
	waitClosed(t, gone)
	if n := len(api.requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

// A context cancelled before the call sends nothing.
func TestStreamContextCancelledBefore(t *testing.T) {
	api := newFakeAPI(t, respondSSE(helloTurn.events()))
	m := newTestModel(t, api.url(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := drain(t, m.Stream(ctx, simpleRequest()))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

// Cancelling during a backoff wait ends the stream at once too.
func TestStreamContextCancelledDuringBackoff(t *testing.T) {
	api := newFakeAPI(t, respondCut(weatherTurn.events()[:3]))
	m := newTestModel(t, api.url(), Options{RetryBaseDelay: time.Hour})
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
	m := newTestModel(t, api.url(), Options{})
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
	m := newTestModel(t, "http://127.0.0.1:1/v1", Options{})
	user := func(b ...provider.Block) []provider.Message {
		return []provider.Message{{Role: provider.RoleUser, Content: b}}
	}
	for _, tc := range []struct {
		name string
		req  *provider.Request
		want string
	}{
		{"nil request", nil, "nil Request"},
		{"no model", &provider.Request{}, "Model is empty"},
		{"bad role", &provider.Request{Model: "m", Messages: []provider.Message{{Role: "system"}}}, `messages[0]: unknown role "system"`},
		{"bad block", &provider.Request{Model: "m", Messages: user(provider.Block{Type: "video"})}, `block type "video" cannot be in a user message`},
		{"tool_use from the user", &provider.Request{Model: "m", Messages: user(provider.Block{Type: provider.BlockToolUse})}, `block type "tool_use" cannot be in a user message`},
		{"tool_result from the assistant", &provider.Request{Model: "m", Messages: []provider.Message{{Role: provider.RoleAssistant, Content: []provider.Block{{Type: provider.BlockToolResult}}}}}, `"tool_result" cannot be in an assistant message`},
		{"bad block in a result", &provider.Request{Model: "m", Messages: user(provider.Block{Type: provider.BlockToolResult, Content: []provider.Block{{Type: provider.BlockToolUse}}})}, `"tool_use" cannot be in a tool_result`},
		{"bad schema", &provider.Request{Model: "m", Tools: []provider.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":`)}}}, "tools[0]: tool \"t\": input schema is not a JSON object"},
		{"array schema", &provider.Request{Model: "m", Tools: []provider.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`[]`)}}}, "input schema is not a JSON object"},
		{"unnamed tool", &provider.Request{Model: "m", Tools: []provider.ToolSpec{{}}}, "tool has no name"},
		{"not an image", &provider.Request{Model: "m", Messages: user(provider.Block{Type: provider.BlockImage, Data: []byte("hello")})}, "not an image type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := drain(t, m.Stream(context.Background(), tc.req))
			if err == nil || !strings.HasPrefix(err.Error(), "openai: ") || !strings.Contains(err.Error(), tc.want) {
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

func TestUsageOf(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want provider.Usage
	}{
		{`{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}`, provider.Usage{InputTokens: 100, OutputTokens: 7}},
		{`{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,"prompt_tokens_details":{"cached_tokens":64}}`, provider.Usage{InputTokens: 36, OutputTokens: 7, CacheReadInputTokens: 64}},
		{`{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":64}}`, provider.Usage{InputTokens: 0, OutputTokens: 7, CacheReadInputTokens: 10}},
		{`{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":null}`, provider.Usage{InputTokens: 10, OutputTokens: 1}},
	} {
		var u sdk.CompletionUsage
		if err := json.Unmarshal([]byte(tc.raw), &u); err != nil {
			t.Fatal(err)
		}
		if got := usageOf(&u); got != tc.want {
			t.Errorf("usageOf(%s) = %+v, want %+v", tc.raw, got, tc.want)
		}
	}
}

// An event stream mislabelled as application/json is still read as one.
func TestStreamMislabelledEventStream(t *testing.T) {
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		writeEvents(w, r, append(helloTurn.events(), "[DONE]"))
	})
	m := newTestModel(t, api.url(), Options{})
	_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err != nil || final.Message.Text() != "Hello, world." {
		t.Fatalf("final %+v, err %v", final, err)
	}
}

// Chunks that are valid JSON of an odd shape — nulls, missing fields, wrong
// types — are read leniently, without a panic, as long as the stream ends
// properly.
func TestStreamOddChunks(t *testing.T) {
	ev := []string{
		`{}`,
		`{"choices":null,"usage":null}`,
		`{"choices":[{"index":0,"delta":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[null, {}]}}]}`,
		`{"choices":[{"index":0,"delta":{"content":5}}]}`,
		`{"choices":[{"index":1,"delta":{"content":"other choice"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"ok"}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":"many","completion_tokens":3}}`,
	}
	api := newFakeAPI(t, respondSSE(ev))
	m := newTestModel(t, api.url(), Options{})
	_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	// The SDK reads the number 5 as the text "5".
	if len(final.Message.Content) != 1 || final.Message.Text() != "5ok" || final.StopReason != provider.StopEndTurn {
		t.Errorf("final = %+v", final.Message)
	}
	if final.Usage.OutputTokens != 3 || final.Usage.InputTokens != 0 {
		t.Errorf("usage = %+v", final.Usage)
	}
}

// Whatever a chunk holds, reading it never panics and the message stays
// well-formed.
func FuzzAccumulator(f *testing.F) {
	for _, e := range append(weatherTurn.events(), turn{calls: []fakeCall{{id: "a", name: "x", args: []string{"{"}}, {id: "b", name: "y"}}, interleave: true}.events()...) {
		f.Add([]byte(e))
	}
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[{"id":"x"},{"id":"y","index":3}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ch sdk.ChatCompletionChunk
		if json.Unmarshal(data, &ch) != nil {
			return
		}
		var a accumulator
		for range 2 {
			if _, err := a.add(&ch); err != nil {
				return
			}
		}
		msg := a.message()
		_ = a.stopReason()
		for _, b := range msg.Content {
			if b.Type == provider.BlockToolUse && len(b.Input) == 0 {
				t.Fatalf("tool_use with empty input: %+v", b)
			}
		}
	})
}
