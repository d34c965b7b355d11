package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestBashStreamsOutputLive: a foreground command's output reaches
// Context.OutputFunc while the command runs — it waits for a file the
// test writes only once it has seen the first line — and the result
// still holds the whole output.
func TestBashStreamsOutputLive(t *testing.T) {
	ctx := bashTestContext(t)
	var mu sync.Mutex
	var live strings.Builder
	ctx.OutputFunc = func(p []byte) {
		mu.Lock()
		defer mu.Unlock()
		live.Write(p)
		if strings.Contains(live.String(), "first\n") {
			// The command may go on: the output came while it ran.
			os.WriteFile(filepath.Join(ctx.Workspace, "go-on"), nil, 0o644)
		}
	}
	r, _ := bashRunTool(t, ctx, map[string]any{"command": "echo first; for i in $(seq 200); do [ -e go-on ] && break; sleep 0.05; done; [ -e go-on ] && echo second", "timeout_ms": 30000})
	if r.IsError || r.TextOf() != "first\nsecond\n" {
		t.Fatalf("result %q (error %v): the output was not streamed while the command ran", r.TextOf(), r.IsError)
	}
	mu.Lock()
	defer mu.Unlock()
	if live.String() != "first\nsecond\n" {
		t.Errorf("live output %q", live.String())
	}
}

// TestBashLiveOutputPastTheSandboxBudget: a command that prints more than
// the sandbox's output budget (1 MiB) goes on streaming live — its last
// line reaches the person while it still runs — and the result keeps the
// true tail.
func TestBashLiveOutputPastTheSandboxBudget(t *testing.T) {
	ctx := bashTestContext(t)
	var mu sync.Mutex
	var tail []byte
	var liveBytes int
	ctx.OutputFunc = func(p []byte) {
		mu.Lock()
		defer mu.Unlock()
		liveBytes += len(p)
		tail = append(tail, p...)
		if len(tail) > 4096 {
			tail = append(tail[:0], tail[len(tail)-4096:]...)
		}
		if strings.Contains(string(tail), "LIVE-END\n") {
			os.WriteFile(filepath.Join(ctx.Workspace, "go-on"), nil, 0o644)
		}
	}
	r, _ := bashRunTool(t, ctx, map[string]any{"command": "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo LIVE-END; for i in $(seq 400); do [ -e go-on ] && break; sleep 0.05; done; [ -e go-on ] && echo seen-live", "timeout_ms": 60000})
	if !strings.Contains(r.TextOf(), "seen-live") {
		t.Fatalf("the last line did not reach the live output while the command ran: %.300s", r.TextOf()[max(0, len(r.TextOf())-300):])
	}
	mu.Lock()
	defer mu.Unlock()
	if liveBytes < 3000000 {
		t.Errorf("live output carried %d bytes of 3,000,000+", liveBytes)
	}
}
