package openai

// A fake Chat Completions API for the tests: an httptest.Server that records
// each request and answers it with a scripted responder, writing
// Server-Sent Events exactly as the API does (a "data: {json}" line and a
// blank line per chunk, a flush after each, and "data: [DONE]" at the end).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCall is one tool call of a scripted turn.
type fakeCall struct {
	id, name string
	args     []string // argument fragments, one chunk each
}

// turn describes one assistant turn; events renders it as the API streams it.
type turn struct {
	text       []string // content deltas
	calls      []fakeCall
	interleave bool   // send the calls' fragments round-robin, not one call after the other
	finish     string // finish_reason; default tool_calls if calls else stop
	noUsage    bool   // leave out the usage chunk
}

// q quotes s as a JSON string.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// chunk renders one chat.completion.chunk with a single choice, as OpenAI
// sends it (usage is null on every chunk but the last when include_usage is
// set).
func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = q(finish)
	}
	return fmt.Sprintf(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}],"usage":null}`, delta, f)
}

// usageChunk is the last chunk of a stream with include_usage.
const usageChunk = `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[],"usage":{"prompt_tokens":25,"completion_tokens":12,"total_tokens":37,"prompt_tokens_details":{"cached_tokens":5,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`

func toolStart(index int, c fakeCall) string {
	return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":""}}]}`, index, q(c.id), q(c.name)), "")
}

func toolArgs(index int, frag string) string {
	return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, index, q(frag)), "")
}

func (tr turn) events() []string {
	finish := tr.finish
	if finish == "" {
		finish = "stop"
		if len(tr.calls) > 0 {
			finish = "tool_calls"
		}
	}
	ev := []string{chunk(`{"role":"assistant","content":"","refusal":null}`, "")}
	for _, d := range tr.text {
		ev = append(ev, chunk(fmt.Sprintf(`{"content":%s}`, q(d)), ""))
	}
	if tr.interleave {
		for i, c := range tr.calls {
			ev = append(ev, toolStart(i, c))
		}
		for k := 0; ; k++ {
			more := false
			for i, c := range tr.calls {
				if k < len(c.args) {
					ev = append(ev, toolArgs(i, c.args[k]))
					more = true
				}
			}
			if !more {
				break
			}
		}
	} else {
		for i, c := range tr.calls {
			ev = append(ev, toolStart(i, c))
			for _, a := range c.args {
				ev = append(ev, toolArgs(i, a))
			}
		}
	}
	ev = append(ev, chunk(`{}`, finish))
	if !tr.noUsage {
		ev = append(ev, usageChunk)
	}
	return ev
}

// weatherTurn is the standard tool fixture: text over three deltas, then a
// tool call whose arguments are split mid-token over three chunks.
var weatherTurn = turn{
	text:  []string{"Let me ", "check the ", "weather."},
	calls: []fakeCall{{id: "call_DdmO9pD3xa9XTPNJ32zg2hcA", name: "get_weather", args: []string{`{"ci`, `ty": "Par`, `is"}`}}},
}

// helloTurn is the standard text fixture.
var helloTurn = turn{text: []string{"Hel", "lo, ", "world."}}

// startSSE writes the response headers of a stream.
func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Request-Id", "req_test")
	w.WriteHeader(http.StatusOK)
}

// writeEvents writes each payload as one data: event, flushing after each
// so that the client sees them one by one. It stops early if the client has
// gone.
func writeEvents(w http.ResponseWriter, r *http.Request, events []string) {
	rc := http.NewResponseController(w)
	for _, e := range events {
		if r.Context().Err() != nil {
			return
		}
		fmt.Fprintf(w, "data: %s\n\n", e)
		_ = rc.Flush()
	}
}

// respondSSE streams events and [DONE], and ends the response normally.
func respondSSE(events []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		writeEvents(w, r, append(events[:len(events):len(events)], "[DONE]"))
	}
}

// respondEnd streams events and ends the response normally but without
// [DONE]: a server or proxy that closed the stream early but cleanly.
func respondEnd(events []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		writeEvents(w, r, events)
	}
}

// respondCut streams events, then drops the TCP connection without ending
// the chunked body, as a failing proxy or server would.
func respondCut(events []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		writeEvents(w, r, events)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		conn.Close()
	}
}

// respondRaw answers with a status, a content type and a body as given.
func respondRaw(status int, contentType, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// respondError answers with an OpenAI error body.
func respondError(status int, typ, msg, code string, header ...string) http.HandlerFunc {
	c := "null"
	if code != "" {
		c = q(code)
	}
	body := fmt.Sprintf(`{"error":{"message":%s,"type":%s,"param":null,"code":%s}}`, q(msg), q(typ), c)
	return respondRaw(status, "application/json", body, append([]string{"X-Request-Id", "req_err"}, header...)...)
}

// respondHang streams events, then holds the response open until the client
// goes away, and closes gone then.
func respondHang(events []string, gone chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		writeEvents(w, r, events)
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(10 * time.Second):
		}
	}
}

// recorded is one request the fake API received.
type recorded struct {
	header http.Header
	body   []byte
}

// fakeAPI serves the n-th request with responders[n], repeating the last.
type fakeAPI struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newFakeAPI(t *testing.T, responders ...http.HandlerFunc) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, recorded{header: r.Header.Clone(), body: body})
		f.mu.Unlock()
		responders[min(n, len(responders)-1)](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// url is the base URL a Model is given: the server's, with /v1.
func (f *fakeAPI) url() string { return f.URL + "/v1" }

func (f *fakeAPI) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// visibleText joins the text of the chunks that follow the last ChunkRetry,
// i.e. what a consumer that honours retries would show.
func visibleText(chunks []chunkOrErr) string {
	var b strings.Builder
	for _, c := range chunks {
		switch c.chunk.Type {
		case "retry":
			b.Reset()
		case "text_delta":
			b.WriteString(c.chunk.Text)
		}
	}
	return b.String()
}
