package sandbox

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestPIDNamespaceInit: where the tree is a PID namespace, the command
// runs under our init (internal/spawn/pidinit), not as the namespace's PID 1, so it
// has the signal semantics it has everywhere else — each case here gives
// the same result unconfined — while orphans still go to an init inside
// the sandbox.
func TestPIDNamespaceInit(t *testing.T) {
	// Root tracks the tree with cgroups here: a host without them gets
	// the namespace.
	sb, _ := newMaskedSandbox(t, withoutCgroupTracking, nil)
	if !sb.newPID {
		t.Skipf("the sandbox does not use a PID namespace here (%+v): nothing to check", sb.Enforcement())
	}
	if !sb.withInit {
		t.Fatalf("a PID namespace without an init: %+v", sb.Enforcement())
	}
	for _, tc := range []struct {
		script string
		code   int
		out    string
	}{
		// A signal it has no handler for ends it, from itself too.
		{`kill -TERM $$; echo alive`, 143, ""},
		{`exec python3 -c 'import os,signal; os.kill(os.getpid(), signal.SIGTERM); print("alive")'`, 143, ""},
		// SIGPIPE kills a writer to a closed pipe, as it does outside.
		{`exec python3 -c 'import os,signal; signal.signal(signal.SIGPIPE, signal.SIG_DFL); r, w = os.pipe(); os.close(r); os.write(w, b"x"); print("alive")'`, 141, ""},
		// A trap still works.
		{`trap 'echo trapped; exit 3' TERM; kill $$; echo not-reached`, 3, "trapped\n"},
		// Its parent is the init, inside the namespace.
		{`exec python3 -c 'import os; print(os.getpid() > 1, os.getppid())'`, 0, "True 1\n"},
		// Exit codes pass through.
		{`exit 7`, 7, ""},
	} {
		if strings.Contains(tc.script, "python3") && !hasPython(t) {
			continue
		}
		r := sh(t, sb, tc.script)
		if r.st.Code != tc.code || r.out != tc.out {
			t.Errorf("%q: %v, want code %d output %q", tc.script, r, tc.code, tc.out)
		}
		if !strings.Contains(tc.script, "getppid") {
			// The same script unconfined ends the same way.
			cmd := exec.Command("bash", "-c", tc.script)
			cmd.Run()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			code := ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			if code != tc.code {
				t.Errorf("%q ends with %d unconfined: the expectation is wrong", tc.script, code)
			}
		}
	}
}

func hasPython(t *testing.T) bool {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Log("python3 not installed: its cases skipped")
		return false
	}
	return true
}
