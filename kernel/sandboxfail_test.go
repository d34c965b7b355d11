package kernel

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
)

// TestSandboxStartFailureFailsTheRun: when the sandbox cannot start a
// command mid-session (here: bash is nowhere on the sandbox's PATH, so
// the session's trial, which runs /bin/sh, passes, and the bash call's
// start fails), the model still gets the call's error result, the stream
// carries a sandbox event saying why, and the run ends with an error
// wrapping ErrSandboxStart although the model declared success. Before,
// only the model was told and the run succeeded.
func TestSandboxStartFailureFailsTheRun(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [
	  {"tool_calls": [{"id": "b", "name": "bash", "input": {"command": "echo hi > f.txt"}}]},
	  {"text": "Done: f.txt is written."}]}`)
	o := e.opts(m)
	o.Sandbox = &sandbox.Policy{Env: []string{"PATH=/nonexistent"}}
	o.AllowedTools = []string{"bash"}
	evs, err := collect(t, context.Background(), o)
	if !errors.Is(err, ErrSandboxStart) || !strings.Contains(err.Error(), "executable file not found") {
		t.Fatalf("run error: %v", err)
	}
	res := byType(evs, EventToolResult)
	if len(res) != 1 || !res[0].ToolResult.IsError || !strings.Contains(resultText(res[0]), "could not start bash") {
		t.Errorf("the model's tool result: %+v", res)
	}
	sb := byType(evs, EventSandbox)
	if len(sb) != 1 || !strings.Contains(sb[0].Sandbox.Error, "executable file not found") {
		t.Errorf("sandbox events: %+v", sb)
	}
	final := byType(evs, EventResult)[0].Result
	if !final.IsError || final.Subtype != SubtypeErrorDuringExecution || !strings.Contains(final.Error, "the sandbox could not start a command") || final.Result != "Done: f.txt is written." {
		t.Errorf("result: %+v", final)
	}
	// The event comes before the call's result.
	for i, ev := range evs {
		if ev.Type == EventToolResult {
			if i == 0 || evs[i-1].Type != EventSandbox {
				t.Errorf("the sandbox event does not precede the tool result: %v", evs[max(0, i-1)].Type)
			}
			break
		}
	}
}

// TestSessionStartSaysWhatTheSandboxLacks: session_start carries the
// sandbox's level and what it runs without here (the list `sandbox
// check` prints), so a person sees it before the agent works.
func TestSessionStartSaysWhatTheSandboxLacks(t *testing.T) {
	e := newEnv(t)
	o := e.opts(script(t, `{"turns": [{"text": "ok"}]}`))
	o.Sandbox = &sandbox.Policy{Level: sandbox.LevelContainer}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	st := byType(evs, EventSessionStart)[0].SessionStart
	if st.SandboxLevel != sandbox.LevelContainer || !strings.Contains(strings.Join(st.SandboxLost, "\n"), "read-only mounts outside the read-write roots") {
		t.Errorf("session_start: level %q, lost %q", st.SandboxLevel, st.SandboxLost)
	}
}

// TestWorkspaceUnwritableInsideRefused: root can write a workspace owned
// by another user (its DAC override), its commands cannot (every
// capability is dropped inside): write_file would land what bash cannot.
// The session is refused at its start (the CLI: exit 3), saying so,
// instead of every command's write failing while the run looks fine. (A
// workspace this process cannot write either is a read-only session,
// not refused: CheckWorkspace.)
func TestWorkspaceUnwritableInsideRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the workspace must be writable to this process and not to its commands, which drop root's DAC override")
	}
	e := newEnv(t)
	if err := os.Chown(e.ws, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	os.Chmod(e.ws, 0o755)
	_, err := collect(t, context.Background(), e.opts(script(t, `{"turns": [{"text": "ok"}]}`)))
	if !errors.Is(err, sandbox.ErrWorkspaceUnwritable) || !errors.Is(err, sandbox.ErrTrialFailed) {
		t.Fatalf("run error: %v", err)
	}
	// Its own directory: writable inside too.
	os.Chown(e.ws, 0, 0)
	os.Chmod(e.ws, 0o755)
	if _, err := collect(t, context.Background(), e.opts(script(t, `{"turns": [{"text": "ok"}]}`))); err != nil {
		t.Fatalf("a writable workspace: %v", err)
	}
}
