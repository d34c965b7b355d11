package anthropic

// A fake Messages API for the tests: an httptest.Server that records each
// request and answers it with a scripted responder, writing Server-Sent
// Events exactly as the API does (event: and data: lines, a blank line after
// each event, a flush after each).

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

// sseEvent is one Server-Sent Event.
type sseEvent struct{ name, data string }

// turn describes one assistant turn; events renders it as the API streams it.
type turn struct {
	thinking bool     // a thinking block first, which the provider must skip
	text     []string // text deltas of a text block (none: no text block)
	toolID   string   // a tool_use block when set
	toolName string
	input    []string // partial_json fragments of the tool input
	stop     string   // stop_reason; default tool_use if toolID else end_turn
}

// q quotes s as a JSON string.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (tr turn) events() []sseEvent {
	stop := tr.stop
	if stop == "" {
		stop = "end_turn"
		if tr.toolID != "" {
			stop = "tool_use"
		}
	}
	ev := []sseEvent{{"message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":7,"output_tokens":1}}}`}}
	idx := 0
	if tr.thinking {
		ev = append(ev,
			sseEvent{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":"","signature":""}}`, idx)},
			sseEvent{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":"Let me think."}}`, idx)},
			sseEvent{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}}`, idx)},
			sseEvent{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx)},
		)
		idx++
	}
	if len(tr.text) > 0 {
		ev = append(ev, sseEvent{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, idx)})
		for i, d := range tr.text {
			ev = append(ev, sseEvent{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, idx, q(d))})
			if i == 0 {
				ev = append(ev, sseEvent{"ping", `{"type": "ping"}`})
			}
		}
		ev = append(ev, sseEvent{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx)})
		idx++
	}
	if tr.toolID != "" {
		ev = append(ev,
			sseEvent{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}`, idx, q(tr.toolID), q(tr.toolName))},
			// The API opens every tool input with an empty fragment.
			sseEvent{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":""}}`, idx)},
		)
		for _, p := range tr.input {
			ev = append(ev, sseEvent{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, idx, q(p))})
		}
		ev = append(ev, sseEvent{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx)})
	}
	ev = append(ev,
		sseEvent{"message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":89}}`, q(stop))},
		sseEvent{"message_stop", `{"type":"message_stop"}`},
	)
	return ev
}

// weatherTurn is the standard fixture: text split over deltas, a ping, and a
// tool call whose input is split mid-token.
var weatherTurn = turn{
	text:     []string{"Let me ", "check the ", "weather."},
	toolID:   "toolu_01A09q90qw90lq917835lq9",
	toolName: "get_weather",
	input:    []string{`{"ci`, `ty": "Par`, `is"}`},
}

// errorEvent is the error event the API sends inside a stream.
func errorEvent(typ, msg string) sseEvent {
	return sseEvent{"error", fmt.Sprintf(`{"type": "error", "error": {"type": %s, "message": %s}}`, q(typ), q(msg))}
}

// startSSE writes the response headers of a stream.
func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", "req_test")
	w.WriteHeader(http.StatusOK)
}

// writeEvents writes events, flushing after each so that the client sees
// them one by one. It stops early if the client has gone.
func writeEvents(w http.ResponseWriter, r *http.Request, events []sseEvent) {
	rc := http.NewResponseController(w)
	for _, e := range events {
		if r.Context().Err() != nil {
			return
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data)
		_ = rc.Flush()
	}
}

// respondSSE streams events and ends the response normally.
func respondSSE(events []sseEvent) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		writeEvents(w, r, events)
	}
}

// respondCut streams events, then drops the TCP connection without ending
// the chunked body, as a failing proxy or server would.
func respondCut(events []sseEvent) http.HandlerFunc {
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

// respondError answers with an API error body.
func respondError(status int, typ, msg string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", "req_err")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%s,"message":%s},"request_id":"req_err"}`, q(typ), q(msg))
	}
}

// respondHang streams events, then holds the response open until the client
// goes away, and closes gone then.
func respondHang(events []sseEvent, gone chan<- struct{}) http.HandlerFunc {
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
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
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

func (f *fakeAPI) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// visibleText joins the text of the chunks that follow the last ChunkRetry, i.e.
// what a consumer that honours retries would show.
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
