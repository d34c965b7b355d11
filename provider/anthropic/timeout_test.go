package anthropic

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/provider"
)

// stall accepts the request and sends nothing until the client goes.
func stall(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// stallAfterStart sends headers and message_start, then nothing.
func stallAfterStart(w http.ResponseWriter, r *http.Request) {
	startSSE(w)
	writeEvents(w, r, weatherTurn.events()[:1])
	<-r.Context().Done()
}

// A server that goes quiet — before the first byte, or after message_start
// — is cut off by the timeouts, retried with an announced retry, and the
// final error names the timeout and how to change it. Without the timeouts
// these calls hang until testCtx's deadline.
func TestQuietServerTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stall http.HandlerFunc
		want  string
	}{
		{"no first byte", stall, "first-byte timeout; change it with --first-byte-timeout or LITE_AGENT_FIRST_BYTE_TIMEOUT"},
		{"stalls after message_start", stallAfterStart, "stream idle timeout; change it with --stream-idle-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.stall, tc.stall)
			m := newTestModel(t, api.URL, Options{MaxRetries: 1, RetryBaseDelay: time.Millisecond,
				FirstByteTimeout: 50 * time.Millisecond, IdleTimeout: 50 * time.Millisecond})
			chunks, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			var te *provider.TimeoutError
			if err == nil || !errors.As(err, &te) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "giving up after 2 attempts") {
				t.Fatalf("err = %v, want a timeout naming %q after 2 attempts", err, tc.want)
			}
			n := 0
			for _, c := range chunks {
				if c.chunk.Type == provider.ChunkRetry {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d retries announced, want 1", n)
			}
		})
	}
	t.Run("recovers", func(t *testing.T) {
		api := newFakeAPI(t, stall, respondSSE(weatherTurn.events()))
		m := newTestModel(t, api.URL, Options{RetryBaseDelay: time.Millisecond, FirstByteTimeout: 50 * time.Millisecond})
		_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err != nil || final == nil || final.Message.Text() != "Let me check the weather." {
			t.Fatalf("final %v, err %v", final, err)
		}
	})
}

// A retry-after beyond MaxServerWait fails at once, naming the server's
// wait, instead of waiting in silence.
func TestRetryAfterBeyondCapFails(t *testing.T) {
	api := newFakeAPI(t, respondError(429, "rate_limit_error", "slow down", "retry-after", "600"), respondSSE(weatherTurn.events()))
	m := newTestModel(t, api.URL, Options{})
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err == nil || !strings.Contains(err.Error(), "asks to wait 10m0s before retrying (retry-after), longer than the 1m0s") {
		t.Fatalf("err = %v", err)
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// A 200 that is an HTML page is named as such, not retried as a cut stream.
func TestNotEventStreamNamed(t *testing.T) {
	html := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<html><body>Sign in to the portal</body></html>"))
	}
	api := newFakeAPI(t, html, html)
	m := newTestModel(t, api.URL, Options{RetryBaseDelay: time.Millisecond})
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err == nil || !strings.Contains(err.Error(), "answered 200 with text/html; charset=utf-8 instead of an event stream") ||
		!strings.Contains(err.Error(), "Sign in to the portal") {
		t.Fatalf("err = %v", err)
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
