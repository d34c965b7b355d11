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
