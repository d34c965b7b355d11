package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// What ordinary tools expect of a machine, inside the sandbox: a terminal,
// names-only listing of the workspace's parents. Each case also shows that
// the grant did not widen into what must stay refused.

// ptyScript opens a pseudo-terminal the way Python's pty module does
// (posix_openpt, ptsname, open the pts), runs a child on it, then tries
// TIOCSTI on the pts: pushing bytes into a terminal's input is how a
// confined process would type commands into the user's shell.
// Unconfined (as root, or with dev.tty.legacy_tiocsti=1) the same script
// prints "TIOCSTI allowed"; the sandbox must answer EPERM.
const ptyScript = `
import fcntl, os, pty, sys, termios
pid, fd = pty.fork()
if pid == 0:
    os._exit(7)
_, st = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(st))
m, s = os.openpty()
try:
    fcntl.ioctl(s, termios.TIOCSTI, b"x")
    print("TIOCSTI allowed")
except OSError as e:
    print("TIOCSTI", e.errno)
`

func TestPseudoTerminalUsableTIOCSTIStillRefused(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 (make deps): would check that a pty opens in the sandbox and TIOCSTI on it is refused")
	}
	py, _ = filepath.EvalSymlinks(py)
	sb, _ := newTestSandbox(t, func(p *Policy) {
		// python3 may live outside the system paths (pyenv).
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, filepath.Dir(filepath.Dir(py)))
		p.SystemPaths = append(DefaultSystemPaths(), PseudoTerminalPaths()...)
	})
	r := sh(t, sb, py+" -c '"+ptyScript+"'")
	if r.st.Code != 0 || !strings.Contains(r.out, "child 7") {
		t.Fatalf("pty in the sandbox: %v", r)
	}
	if !strings.Contains(r.out, "TIOCSTI 1\n") { // EPERM from seccomp
		t.Fatalf("TIOCSTI on a pts was not refused with EPERM: %v", r)
	}
	if s, err := exec.LookPath("script"); err == nil {
		if r := sh(t, sb, s+" -qc true /dev/null"); r.st.Code != 0 {
			t.Errorf("script -qc true /dev/null in the sandbox: %v", r)
		}
	}
}

// By default neither /dev/ptmx nor /dev/pts is granted: the devpts is the
// host's, and a terminal of the user's — here one the test opens, as a
// stand-in for the user's shell — could otherwise be opened and its input
// read. Shown reachable unconfined and with the explicit grant.
func TestPseudoTerminalsNotGrantedByDefault(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no /dev/ptmx here (%v): would check that the user's terminals are out of reach", err)
	}
	defer ptmx.Close()
	// unlockpt and ptsname, as posix_openpt's callers do.
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts := "/dev/pts/" + strconv.Itoa(n)
	open := "exec 3<>" + pts + " && echo opened"
	if out, err := exec.Command("bash", "-c", open).CombinedOutput(); err != nil || !strings.Contains(string(out), "opened") {
		t.Fatalf("unconfined, %s did not open, so the test proves nothing: %v %s", pts, err, out)
	}
	sb, _ := newTestSandbox(t, nil)
	if r := sh(t, sb, open); r.st.Code == 0 || strings.Contains(r.out, "opened") {
		t.Errorf("the default policy opened another terminal, %s: %v", pts, r)
	}
	if r := sh(t, sb, "exec 3<>/dev/ptmx && echo opened"); r.st.Code == 0 || strings.Contains(r.out, "opened") {
		t.Errorf("the default policy opened /dev/ptmx: %v", r)
	}
	granted, _ := newTestSandbox(t, func(p *Policy) { p.SystemPaths = append(DefaultSystemPaths(), PseudoTerminalPaths()...) })
	if r := sh(t, granted, open); r.st.Code != 0 || !strings.Contains(r.out, "opened") {
		t.Errorf("with PseudoTerminalPaths granted, %s did not open (the refusal above may be for another reason): %v", pts, r)
	}
}
