package test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBackgroundTaskDiesWithTheSession: through the CLI, the model starts a
// background task (which starts a daemon of its own), polls it, and ends
// the session without killing it: when `lite-agent run` returns, nothing
// the task started is left.
func TestBackgroundTaskDiesWithTheSession(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [{"id": "bg", "name": "bash", "input": {"command": "setsid sleep 300 & echo $! > daemon.pid; while true; do echo alive; sleep 0.05; done", "run_in_background": true}}]},
	  {"tool_calls": [{"id": "wait", "name": "bash", "input": {"command": "sleep 0.5"}}]},
	  {"tool_calls": [{"id": "poll", "name": "bash_output", "input": {"task_id": "task-1"}}]},
	  {"text": "leaving it running"}]}`)
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "bash", "serve")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var poll string
	for _, ev := range evs {
		if ev["type"] == "tool_result" && ev["id"] == "poll" {
			poll = contentText(ev)
		}
	}
	if !strings.Contains(poll, "alive") || !strings.Contains(poll, "task-1 is running") {
		t.Fatalf("bash_output while the task ran: %q", poll)
	}
	b, err := os.ReadFile(filepath.Join(ws, "daemon.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("daemon.pid: %q", b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); !strings.HasPrefix(string(cmdline), "sleep") {
			return // the pid was reused by something else: the daemon is gone
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the background task's daemon %d outlived the session", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
