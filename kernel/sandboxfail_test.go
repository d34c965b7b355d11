package kernel

import (
	"context"
	"errors"
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
