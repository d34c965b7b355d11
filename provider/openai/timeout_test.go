package openai

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

// stallAfterRole sends the headers and the first chunk (the role), then
// nothing: a server that hung while generating.
func stallAfterRole(w http.ResponseWriter, r *http.Request) {
	startSSE(w)
	writeEvents(w, r, helloTurn.events()[:1])
	<-r.Context().Done()
}

// A server that goes quiet — before the first byte, or after the first
// chunk — is cut off by the timeouts, retried with an announced retry, and
// the final error names the timeout and the flag and variable that change
// it. Without the timeouts these calls hang until testCtx's deadline.
func TestQuietServerTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stall http.HandlerFunc
		want  string
	}{
		{"no first byte", stall, "first-byte timeout; change it with --first-byte-timeout or LITE_AGENT_FIRST_BYTE_TIMEOUT"},
		{"stalls after the first chunk", stallAfterRole, "stream idle timeout; change it with --stream-idle-timeout or LITE_AGENT_STREAM_IDLE_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.stall)
			m := newTestModel(t, api.url(), Options{MaxRetries: 1,
				FirstByteTimeout: 50 * time.Millisecond, IdleTimeout: 50 * time.Millisecond})
			chunks, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
			var te *provider.TimeoutError
			if err == nil || !errors.As(err, &te) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a timeout naming %q", err, tc.want)
			}
			if r := retries(chunks); len(r) != 1 || r[0].Attempt != 2 || r[0].MaxAttempts != 2 || !errors.As(r[0].Err, &te) {
				t.Errorf("retries = %+v, want one announcing attempt 2/2 after a timeout", r)
			}
			if n := len(api.requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
	t.Run("recovers", func(t *testing.T) {
		api := newFakeAPI(t, stall, respondSSE(helloTurn.events()))
		m := newTestModel(t, api.url(), Options{FirstByteTimeout: 50 * time.Millisecond})
		_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err != nil || final == nil || final.Message.Text() != "Hello, world." {
			t.Fatalf("final %v, err %v", final, err)
		}
	})
	// A slow but live stream is not cut: each chunk restarts the idle
	// bound, and the whole stream takes longer than one bound.
	t.Run("slow stream within the idle bound", func(t *testing.T) {
		slow := func(w http.ResponseWriter, r *http.Request) {
			startSSE(w)
			rc := http.NewResponseController(w)
			for _, e := range append(helloTurn.events(), "[DONE]") {
				time.Sleep(250 * time.Millisecond)
				_, _ = w.Write([]byte("data: " + e + "\n\n"))
				_ = rc.Flush()
			}
		}
		api := newFakeAPI(t, slow)
		m := newTestModel(t, api.url(), Options{MaxRetries: 0, FirstByteTimeout: time.Second, IdleTimeout: time.Second})
		_, final, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
		if err != nil || final == nil || final.Message.Text() != "Hello, world." {
			t.Fatalf("final %v, err %v", final, err)
		}
	})
}

// A retry-after beyond MaxServerWait fails at once, naming the server's
// wait, instead of waiting in silence; one within it is announced with the
// server's wait.
func TestRetryAfterBeyondCapFails(t *testing.T) {
	api := newFakeAPI(t, respondError(429, "requests", "slow down", "rate_limit_exceeded", "Retry-After", "600"), respondSSE(helloTurn.events()))
	m := newTestModel(t, api.url(), Options{})
	_, _, err := drain(t, m.Stream(testCtx(t), simpleRequest()))
	if err == nil || !strings.Contains(err.Error(), "asks to wait 10m0s before retrying (retry-after), longer than the 1m0s") {
		t.Fatalf("err = %v", err)
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
