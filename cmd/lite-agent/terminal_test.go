package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/kernel"
)

// syncBuf is a bytes.Buffer safe for the prompt's writes and the test's
// reads.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPromptCancels: a prompt waiting for an answer returns as soon as the
// run's context is cancelled, denying and interrupting; the read it left
// waiting answers the next prompt, and nothing is read ahead.
func TestPromptCancels(t *testing.T) {
	pr, pw := io.Pipe()
	var out syncBuf
	prompt := terminalPrompt(bufio.NewReader(pr), &out)
	input := json.RawMessage(`{"command":"rm -rf ~"}`)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan kernel.PermissionResult, 1)
	go func() {
		res, err := prompt(ctx, "bash", input, kernel.ToolUseInfo{Reason: "asks"})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	cancel() // Ctrl-C: nobody will type anything
	select {
	case res := <-done:
		if res.Allow || !res.Interrupt {
			t.Fatalf("a cancelled prompt returned %+v, want a denial that interrupts", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the prompt ignored the cancelled context")
	}

	// The next prompt gets the next line typed.
	done2 := make(chan kernel.PermissionResult, 1)
	go func() {
		res, _ := prompt(context.Background(), "bash", input, kernel.ToolUseInfo{})
		done2 <- res
	}()
	pw.Write([]byte("y\n"))
	if res := <-done2; !res.Allow {
		t.Fatalf("after an answer y: %+v", res)
	}
	pw.Close()
}

// TestShowInput: what the prompt shows of a call.
func TestShowInput(t *testing.T) {
	for _, c := range []struct {
		name, input, shown, warn string
	}{
		{"plain command", `{"command":"ls -la"}`, "$ ls -la", ""},
		{"lines stay lines", `{"command":"a\nb"}`, "$ a\n  b", ""},
		{"CR and CSI are shown", `{"command":"rm -rf ~ #\u001b[2K\rls -la"}`, `$ rm -rf ~ #\x1b[2K\rls -la`, "control or invisible"},
		{"bidi override", `{"command":"echo \u202eabc"}`, `$ echo \u202eabc`, "control or invisible"},
		{"other tools as JSON", `{"path":"a\u001b.txt"}`, `{"path":"a\u001b.txt"}`, ""},
		// The two characters \r (harmless to bash) must not look like
		// the carriage return of the case above: shown doubled, and said.
		{"a literal backslash-r is not a CR", `{"command":"ls #\\rrm -rf ~"}`, `$ ls #\\rrm -rf ~`, "shown doubled"},
		{"regular expressions read as written", `{"command":"grep -E '\\d+\\.go' \\\\"}`, `$ grep -E '\d+\.go' \\`, ""},
		{"JSON keeps its escapes, hides raw ones", "{\"content\":\"a\\nb\u202e\"}", `{"content":"a\nb\u202e"}`, "control or invisible"},
		{"long input says how much is hidden", `{"command":"` + strings.Repeat("é", 1500) + `"}`, "$ " + strings.Repeat("é", 999) + "…", "1002 more bytes"},
	} {
		name := "bash"
		if !strings.Contains(c.input, "command") {
			name = "write_file"
		}
		shown, warn := showInput(name, json.RawMessage(c.input))
		if shown != c.shown || !strings.Contains(warn, c.warn) || (c.warn == "") != (warn == "") {
			t.Errorf("%s: showInput = %q, %q; want %q, %q", c.name, shown, warn, c.shown, c.warn)
		}
	}
}
