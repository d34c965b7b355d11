package sandbox

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPIDNamespaceInit pins what the package doc's limits say about the
// PID-namespace mode, where the command is PID 1 of its namespace. If an
// init process is ever put in front of the command, this test fails: then
// update the doc.
func TestPIDNamespaceInit(t *testing.T) {
	if root() {
		// Root tracks the tree with cgroups here: force the namespace.
		testForceMechanism = "pidns"
		defer func() { testForceMechanism = "" }()
	}
	sb, _ := newTestSandbox(t, nil)
	testForceMechanism = ""
	if !sb.newPID {
		t.Skipf("the sandbox does not use a PID namespace here (%+v): nothing to pin", sb.Enforcement())
	}
	for _, tc := range []struct{ script, want string }{
		// Signals without a handler, from inside, are dropped — all.
		{`kill -TERM $$; kill -INT $$; kill -KILL $$; echo alive`, "alive"},
		{`exec python3 -c 'import os,signal; os.kill(os.getpid(), signal.SIGTERM); print("alive")'`, "alive"},
		// A trap makes it work.
		{`trap 'echo trapped; exit 3' TERM; kill $$; echo not-reached`, "trapped"},
		// A single simple command is exec'd by bash: PID 1. With a second
		// command, bash stays PID 1 and the command is PID 2.
		{`exec python3 -c 'import os; print(os.getpid(), os.getppid())'`, "1 0"},
		{`python3 -c 'import os; print(os.getpid())'; exit $?`, "2"},
		// Orphans become the command's children.
		{`exec python3 -c 'import os,time
if os.fork() == 0:
    if os.fork() == 0: os._exit(0)
    time.sleep(0.1); os._exit(0)
os.wait(); time.sleep(0.3)
print("orphan", os.waitpid(-1, os.WNOHANG)[0] > 0)'`, "orphan True"},
	} {
		if strings.Contains(tc.script, "python3") && !hasPython(t) {
			continue
		}
		r := sh(t, sb, tc.script)
		if strings.TrimSpace(r.out) != tc.want {
			t.Errorf("%q: %v, want output %q", tc.script, r, tc.want)
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
