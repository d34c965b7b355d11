package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// quietAPI is an Anthropic Messages endpoint on loopback that answers every
// request with handler and counts the requests.
func quietAPI(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" {
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		n.Add(1)
		handler(w, r)
	}))
	// A stalled handler returns when its client goes; the client is the
	// lite-agent process, which has exited or been killed by then.
	t.Cleanup(srv.Close)
	return srv, &n
}

// sendsNothing accepts the request and never answers.
func sendsNothing(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// stallsAfterMessageStart sends the stream's headers and message_start,
// then nothing.
func stallsAfterMessageStart(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	http.NewResponseController(w).Flush()
	<-r.Context().Done()
}

// quietRunCommand is `lite-agent run` against the fake API, with no tools
// (nothing in these runs needs one) and a short first-byte and idle bound.
func quietRunCommand(t *testing.T, url, format string, extra ...string) *exec.Cmd {
	ws, state := t.TempDir(), t.TempDir()
	args := append([]string{"run", "--workspace", ws, "--state-dir", state, "--tools", "",
		"--provider", "anthropic", "--base-url", url, "--output-format", format}, extra...)
	cmd := exec.Command(binary, append(args, "hello")...)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=",
		"LITE_AGENT_FIRST_BYTE_TIMEOUT=", "LITE_AGENT_STREAM_IDLE_TIMEOUT=")
	return cmd
}

// A model server that goes quiet — before its first byte, or after
// message_start — no longer holds `lite-agent run` for ever: each request
// is cut off at the bound set by the flags, every retry is announced with
// its number and wait (a stream-json `retry` event; a line on stderr in
// text mode), and the run then fails with one line naming the timeout and
// how to change it, exit 1. Before the timeouts the run waited until killed.
func TestQuietModelServerFailsClearly(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		handler      http.HandlerFunc
		flag, want   string
	}{
		{"no first byte/stream-json", "stream-json", sendsNothing, "--first-byte-timeout", "first-byte timeout; change it with --first-byte-timeout or LITE_AGENT_FIRST_BYTE_TIMEOUT"},
		{"stall after message_start/stream-json", "stream-json", stallsAfterMessageStart, "--stream-idle-timeout", "stream idle timeout; change it with --stream-idle-timeout or LITE_AGENT_STREAM_IDLE_TIMEOUT"},
		{"no first byte/text", "text", sendsNothing, "--first-byte-timeout", "first-byte timeout; change it with --first-byte-timeout"},
		{"stall after message_start/text", "text", stallsAfterMessageStart, "--stream-idle-timeout", "stream idle timeout; change it with --stream-idle-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, requests := quietAPI(t, tc.handler)
			cmd := quietRunCommand(t, srv.URL, tc.format, tc.flag, "300ms")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 1 {
				t.Fatalf("run: %v, want exit 1\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
			}
			// Five requests (the default budget), four announced retries
			// whose waits (0.5 s, 1 s, 2 s, 4 s and jitter) are the time
			// the run took, with the five timeouts.
			if n := requests.Load(); n != 5 {
				t.Errorf("%d requests, want 5", n)
			}
			if took > 40*time.Second {
				t.Errorf("the run took %v", took)
			}
			last := lastLine(errb.String())
			if !strings.Contains(last, "giving up after 5 attempts") || !strings.Contains(last, tc.want) {
				t.Errorf("last line of stderr = %q, want the timeout (%q) after 5 attempts", last, tc.want)
			}
			if tc.format == "text" {
				for n := 2; n <= 5; n++ {
					if want := fmt.Sprintf("[retrying the model call %d/5 in ", n); !strings.Contains(errb.String(), want) {
						t.Errorf("stderr lacks %q:\n%s", want, errb.String())
					}
				}
				return
			}
			var retries []map[string]any
			var result map[string]any
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var ev map[string]any
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("stdout line is not JSON: %q", line)
				}
				switch ev["type"] {
				case "retry":
					retries = append(retries, ev)
				case "result":
					result = ev
				}
			}
			if len(retries) != 4 {
				t.Fatalf("%d retry events, want 4: %v", len(retries), retries)
			}
			for i, ev := range retries {
				wait, _ := ev["wait_ms"].(float64)
				if ev["attempt"] != float64(i+2) || ev["max_attempts"] != 5.0 || wait < 500 || !strings.Contains(ev["error"].(string), strings.TrimPrefix(tc.flag, "--")) {
					t.Errorf("retry event %d = %v, want attempt %d of 5 with its wait and the timeout", i, ev, i+2)
				}
			}
			if result == nil || result["is_error"] != true || !strings.Contains(result["error"].(string), tc.want) {
				t.Errorf("result = %v", result)
			}
		})
	}
}

// Ctrl-C during a retry's wait ends the run at once: the server asks for a
// 50 s wait (within the 60 s a client honours), the retry event says so,
// and SIGINT then ends the run within seconds, exit 1, naming the
// interruption. Without a cancellable wait the run would sit out the 50 s.
func TestInterruptDuringRetryWait(t *testing.T) {
	srv, requests := quietAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("retry-after", "50")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	})
	cmd := quietRunCommand(t, srv.URL, "stream-json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // the process this test started, if it is still there
	events := make(chan map[string]any)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				events <- ev
			}
		}
	}()
	var result map[string]any
	interrupted := time.Time{}
	deadline := time.After(40 * time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-events:
			if !ok {
				done = true
				break
			}
			switch ev["type"] {
			case "retry":
				if ev["wait_ms"] != 50000.0 || ev["attempt"] != 2.0 {
					t.Errorf("retry event %v, want attempt 2 after the server's 50 s", ev)
				}
				if interrupted.IsZero() {
					interrupted = time.Now()
					if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
						t.Fatal(err)
					}
				}
			case "result":
				result = ev
			}
		case <-deadline:
			t.Fatalf("the run did not end after SIGINT; stderr: %s", errb.String())
		}
	}
	err = cmd.Wait()
	if interrupted.IsZero() {
		t.Fatalf("no retry event; stderr: %s", errb.String())
	}
	if took := time.Since(interrupted); took > 10*time.Second {
		t.Errorf("the run ended %v after SIGINT, want at once", took)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want 1", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1 (the retry was never sent)", n)
	}
	if result == nil || !strings.Contains(fmt.Sprint(result["error"]), "interrupted") {
		t.Errorf("result = %v, want an interruption", result)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
