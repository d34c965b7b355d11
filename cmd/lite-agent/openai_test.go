package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeOpenAI is a Chat Completions server that streams the n-th scripted
// answer to the n-th request and records the requests.
type fakeOpenAI struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	auth   []string
}

func newFakeOpenAI(t *testing.T, answers ...[]string) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not JSON: %s", raw)
		}
		f.mu.Lock()
		n := len(f.bodies)
		f.bodies = append(f.bodies, body)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		if n >= len(answers) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-wrong.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, data := range answers[n] {
			fmt.Fprintf(w, "data: %s\n\n", data)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeOpenAI) requests() ([]map[string]any, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...), append([]string(nil), f.auth...)
}

// oaiChunk renders one chat.completion.chunk with the given delta.
func oaiChunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"test-model","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

const oaiUsage = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"test-model","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":9,"total_tokens":49}}`

// writeFileTurn calls write_file with arguments split over several chunks;
// doneTurn answers in text.
var (
	writeFileTurn = []string{
		oaiChunk(`{"role":"assistant","content":""}`, ""),
		oaiChunk(`{"content":"Writing."}`, ""),
		oaiChunk(`{"tool_calls":[{"index":0,"id":"call_w1","type":"function","function":{"name":"write_file","arguments":""}}]}`, ""),
		oaiChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"a.t"}}]}`, ""),
		oaiChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"xt\", \"content\": "}}]}`, ""),
		oaiChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"alpha\\n\"}"}}]}`, ""),
		oaiChunk(`{}`, "tool_calls"),
		oaiUsage,
	}
	doneTurn = []string{
		oaiChunk(`{"role":"assistant","content":""}`, ""),
		oaiChunk(`{"content":"Done "}`, ""),
		oaiChunk(`{"content":"writing."}`, ""),
		oaiChunk(`{}`, "stop"),
		oaiUsage,
	}
)

// A whole run against an OpenAI-compatible server: a tool call whose
// arguments arrive in pieces, its result sent back as a role "tool" message,
// and the final text.
func TestRunOpenAIProvider(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	api := newFakeOpenAI(t, writeFileTurn, doneTurn)
	e := newCLIEnv(t)
	code, out, errOut := e.run("", "run", "--provider", "openai", "--model", "test-model", "--base-url", api.URL+"/v1",
		"--allowed-tools", "write_file", "--output-format", "json", "write a file")
	if code != 0 {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not JSON: %q", out)
	}
	if res["subtype"] != "success" || res["result"] != "Done writing." || res["num_turns"] != 2.0 {
		t.Errorf("result = %v", res)
	}
	if u, _ := res["usage"].(map[string]any); u["input_tokens"] != 80.0 || u["output_tokens"] != 18.0 {
		t.Errorf("usage = %v, want the two turns summed", res["usage"])
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "a.txt")); string(b) != "alpha\n" {
		t.Errorf("a.txt = %q", b)
	}

	bodies, auth := api.requests()
	if len(bodies) != 2 {
		t.Fatalf("server got %d requests, want 2", len(bodies))
	}
	if auth[0] != "" {
		t.Errorf("Authorization sent without a key: %q", auth[0])
	}
	if bodies[0]["model"] != "test-model" || bodies[0]["stream"] != true {
		t.Errorf("first request: model %v, stream %v", bodies[0]["model"], bodies[0]["stream"])
	}
	var toolNames []string
	for _, tl := range bodies[0]["tools"].([]any) {
		fn := tl.(map[string]any)["function"].(map[string]any)
		toolNames = append(toolNames, fn["name"].(string))
	}
	if !strings.Contains(" "+strings.Join(toolNames, " ")+" ", " write_file ") {
		t.Errorf("tools sent = %v", toolNames)
	}
	// The second request carries the call and its result.
	msgs := bodies[1]["messages"].([]any)
	var call, result map[string]any
	for _, m := range msgs {
		m := m.(map[string]any)
		if m["role"] == "assistant" && m["tool_calls"] != nil {
			call = m["tool_calls"].([]any)[0].(map[string]any)
		}
		if m["role"] == "tool" {
			result = m
		}
	}
	if call == nil || call["id"] != "call_w1" || call["function"].(map[string]any)["arguments"] != `{"path": "a.txt", "content": "alpha\n"}` {
		t.Errorf("assistant tool call sent back = %v", call)
	}
	if result == nil || result["tool_call_id"] != "call_w1" || result["content"] == "" {
		t.Errorf("tool result message = %v", result)
	}
	if last := msgs[len(msgs)-1].(map[string]any); last["role"] != "tool" {
		t.Errorf("last message = %v, want the tool result", last)
	}
}

// Text output, the key from --api-key, and the base URL from the
// environment.
func TestRunOpenAIKeyAndEnv(t *testing.T) {
	api := newFakeOpenAI(t, doneTurn)
	t.Setenv("OPENAI_BASE_URL", api.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	e := newCLIEnv(t)
	code, out, errOut := e.run("", "run", "--provider", "openai", "--model", "test-model", "--api-key", "sk-from-flag", "hi")
	if code != 0 || out != "Done writing.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, auth := api.requests(); len(auth) != 1 || auth[0] != "Bearer sk-from-flag" {
		t.Errorf("Authorization = %q, want the --api-key value", auth)
	}
}

func TestRunOpenAIErrors(t *testing.T) {
	api := newFakeOpenAI(t) // answers every request with 401
	for _, c := range []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		wantErr string
	}{
		{"no model", nil, []string{"run", "--provider", "openai", "hi"}, 2, "--provider openai needs --model"},
		{"no key for api.openai.com", map[string]string{"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}, []string{"run", "--provider", "openai", "--model", "gpt-4.1", "hi"}, 1, "set OPENAI_API_KEY"},
		{"bad base URL", nil, []string{"run", "--provider", "openai", "--model", "m", "--base-url", "localhost:11434", "hi"}, 1, "want an absolute http(s) URL"},
		{"401", nil, []string{"run", "--provider", "openai", "--model", "m", "--base-url", api.URL + "/v1", "--api-key", "sk-wrong", "hi"}, 1,
			"401 invalid_request_error: Incorrect API key provided: sk-wrong. (code invalid_api_key)"},
		{"flags with scripted", nil, []string{"run", "--script", "x.json", "--base-url", "http://h/v1", "hi"}, 2, "do not apply to --provider scripted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			e := newCLIEnv(t)
			code, _, errOut := e.run("", c.args...)
			if code != c.code || !strings.Contains(errOut, c.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, c.code, c.wantErr)
			}
		})
	}
	if bodies, _ := api.requests(); len(bodies) != 1 {
		t.Errorf("the 401 was sent %d times, want once", len(bodies))
	}
}

// --base-url and --api-key are not OpenAI-only: with the default provider
// they reach the Anthropic client too, rather than being silently ignored.
func TestRunOpenAIFlagsWithAnthropic(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	var mu sync.Mutex
	var gotKey, gotPath string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotKey, gotPath = r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"), r.URL.Path
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
	}))
	defer api.Close()
	e := newCLIEnv(t)
	code, _, errOut := e.run("", "run", "--base-url", api.URL, "--api-key", "sk-ant-flag", "hi")
	if code != 1 || !strings.Contains(errOut, "401 authentication_error: invalid x-api-key") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if gotPath != "/v1/messages" || !strings.Contains(gotKey, "sk-ant-flag") {
		t.Errorf("request to %q with key %q", gotPath, gotKey)
	}
}
