package builtin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/tools"
)

func callTool(t *testing.T, tool *tools.Tool, ctx *tools.Context, input map[string]any) *tools.Result {
	t.Helper()
	raw, _ := json.Marshal(input)
	return tool.Call(ctx, raw)
}

// TestBackgroundTaskStartPollKill: a background command keeps running after
// bash returns; bash_output gives only new output; kill_task ends the whole
// tree (a child it started too); nothing is left afterwards.
func TestBackgroundTaskStartPollKill(t *testing.T) {
	ctx := bashTestContext(t)
	ctx.Tasks = tools.NewTasks()
	r := callTool(t, Bash(), ctx, map[string]any{"command": "sleep 300 & echo $! > child.pid; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.05; done",
		"run_in_background": true, "description": "ticker"})
	if r.IsError || !strings.Contains(r.TextOf(), "task-1") {
		t.Fatalf("start: %s", r.TextOf())
	}
	// Poll (with a deadline) until the first tick is out, then until more
	// output comes: each poll must give only what is new since the last.
	poll := func(what string, done func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := callTool(t, BashOutput(), ctx, map[string]any{"task_id": "task-1"})
			if r.IsError || !strings.Contains(r.TextOf(), "is running") {
				t.Fatalf("%s: %s", what, r.TextOf())
			}
			if done(r.TextOf()) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: nothing after 10s: %s", what, r.TextOf())
			}
			time.Sleep(10 * time.Millisecond) // a poll interval, not the assertion
		}
	}
	poll("first tick", func(s string) bool { return strings.Contains(s, "tick 1\n") })
	poll("new output", func(s string) bool {
		if strings.Contains(s, "tick 1\n") {
			t.Fatalf("a later poll gave old output again: %s", s)
		}
		return strings.Contains(s, "tick ")
	})
	b, err := os.ReadFile(filepath.Join(ctx.Workspace, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if child <= 0 || syscall.Kill(child, 0) != nil {
		t.Fatalf("the task's child %d is not running: the test proves nothing", child)
	}
	k := callTool(t, KillTask(), ctx, map[string]any{"task_id": "task-1"})
	if k.IsError || !strings.Contains(k.TextOf(), "has ended: killed") {
		t.Fatalf("kill_task: %s", k.TextOf())
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the task's child %d outlived kill_task", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if miss := callTool(t, BashOutput(), ctx, map[string]any{"task_id": "task-9"}); !miss.IsError || !strings.Contains(miss.TextOf(), "task-1") {
		t.Errorf("unknown task id: %s", miss.TextOf())
	}
}

// TestBackgroundTasksEndWithTheSession: KillAll (what the kernel calls at
// session end) stops every task; finished tasks report their exit code;
// output over the cap is dropped and reported.
func TestBackgroundTasksEndWithTheSession(t *testing.T) {
	ctx := bashTestContext(t)
	ctx.Tasks = tools.NewTasks()
	callTool(t, Bash(), ctx, map[string]any{"command": "exit 3", "run_in_background": true})
	// Past the sandbox's own output limit (1 MiB) and the task's cap, then
	// a last line while the task still runs: a dev server's newest log
	// must be readable before it ends.
	// The marker file says the writer is done: until then the test does
	// not read, or a fast reader would drain the window before it fills.
	written := filepath.Join(ctx.Workspace, "written")
	callTool(t, Bash(), ctx, map[string]any{"command": "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo LATEST-LINE; : > written; sleep 300", "run_in_background": true})
	callTool(t, Bash(), ctx, map[string]any{"command": "sleep 300", "run_in_background": true})
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := callTool(t, BashOutput(), ctx, map[string]any{"task_id": "task-1"})
		if strings.Contains(r.TextOf(), "has ended: exit code 3") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task-1: %s", r.TextOf())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, err := os.Stat(written); err != nil; _, err = os.Stat(written) {
		if time.Now().After(deadline) {
			t.Fatalf("task-2 never finished writing: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var all strings.Builder
	for {
		r := callTool(t, BashOutput(), ctx, map[string]any{"task_id": "task-2"})
		text := r.TextOf()
		all.WriteString(text)
		if strings.Contains(text, "LATEST-LINE") {
			if !strings.Contains(all.String(), "were dropped before what follows") {
				t.Errorf("3,000,000 bytes through a 512 KiB window, and no drop reported: %.300s", text)
			}
			if !strings.Contains(text, "is running") {
				t.Errorf("task-2 should still be running: %.300s", text[max(0, len(text)-300):])
			}
			if len(text) > bashMaxOutputBytes+500 {
				t.Errorf("bash_output returned %d bytes; the model gets at most %d", len(text), bashMaxOutputBytes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task-2's last line never arrived while it ran: %.200s", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if stuck := ctx.Tasks.KillAll(10 * time.Second); len(stuck) > 0 {
		t.Fatalf("tasks outlived the session: %v", stuck)
	}
	for _, task := range ctx.Tasks.List() {
		if task.Running() {
			t.Errorf("%s still running after KillAll", task.ID)
		}
	}
	if r := callTool(t, Bash(), ctx, map[string]any{"command": "true", "run_in_background": true}); !r.IsError {
		t.Errorf("a task started after the session ended: %s", r.TextOf())
	}
}
