package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// ptsByPathScript opens a pty as creack/pty does (/dev/ptmx, unlock,
// TIOCGPTN, then /dev/pts/N by path), then runs tty on a pty through
// pty.spawn, which makes it the child's controlling terminal.
const ptsByPathScript = `
import fcntl, os, pty, struct
m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
fcntl.ioctl(m, 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK
n = struct.unpack("I", fcntl.ioctl(m, 0x80045430, bytes(4)))[0]  # TIOCGPTN
os.close(os.open("/dev/pts/%d" % n, os.O_RDWR | os.O_NOCTTY))
pty.spawn(["tty"])
`

// Under the default policy: ptys are part of it, with change capture too
// (the kernel's and the CLI's sandboxes), where every open for writing —
// /dev/ptmx, /dev/pts/N — is made by the supervisor for the command: it
// opens them in the sandbox's devpts instance.
func TestPseudoTerminalUsableTIOCSTIStillRefused(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 (make deps): would check that a pty opens in the sandbox and TIOCSTI on it is refused")
	}
	py, _ = filepath.EvalSymlinks(py)
	for _, capture := range []bool{false, true} {
		t.Run("capture="+strconv.FormatBool(capture), func(t *testing.T) {
			sb, _ := newTestSandbox(t, func(p *Policy) {
				// python3 may live outside the system paths (pyenv).
				p.ReadOnlyPaths = append(p.ReadOnlyPaths, filepath.Dir(filepath.Dir(py)))
				p.CaptureChanges = capture
			})
			hook := func(c *Command) {
				if capture {
					c.BeforeChange = func([]string) error { return nil }
				}
			}
			if !slices.Contains(sb.Policy().SystemPaths, "/dev/pts") {
				t.Fatalf("ptys are not in the default policy: %v", sb.Policy().SystemPaths)
			}
			r := sh(t, sb, py+" -c '"+ptyScript+"'", hook)
			if r.st.Code != 0 || !strings.Contains(r.out, "child 7") {
				t.Fatalf("pty in the sandbox: %v (notes %v)", r, sb.Enforcement().Notes)
			}
			if !strings.Contains(r.out, "TIOCSTI 1\n") { // EPERM from seccomp
				t.Fatalf("TIOCSTI on a pts was not refused with EPERM: %v", r)
			}
			// creack/pty's way: open /dev/ptmx, unlock, open /dev/pts/N by
			// path; and pty.spawn, which gives its child the pts as its
			// controlling terminal.
			r = sh(t, sb, py+" -c '"+ptsByPathScript+"'", hook)
			if r.st.Code != 0 || !strings.Contains(r.out, "/dev/pts/") {
				t.Fatalf("ptmx, ptsname and pty.spawn in the sandbox: %v", r)
			}
			// script(1) (util-linux openpty), and the pts it got is one of the
			// sandbox's own devpts: tty names it, and it is where a path leads.
			s, err := exec.LookPath("script")
			if err != nil {
				t.Skip("script(1) not installed: would check that it runs a command on a pty in the sandbox")
			}
			r = sh(t, sb, s+" -qc 'tty; stat -c %d /dev/pts' /dev/null", hook)
			if r.st.Code != 0 || !strings.Contains(r.out, "/dev/pts/") {
				t.Fatalf("script -qc tty in the sandbox: %v", r)
			}
		})
	}
}

// hostPts opens a pseudo-terminal outside any sandbox, as the user's shell
// has one, and returns its master and /dev/pts path.
func hostPts(t *testing.T) (*os.File, string) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no /dev/ptmx here (%v): would check that the user's terminals are out of reach", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	// unlockpt and ptsname, as posix_openpt's callers do.
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	return ptmx, "/dev/pts/" + strconv.Itoa(n)
}

// The attack: a process of the user's uid opens one of the user's
// terminals — here one the test opens, as a stand-in for the user's shell
// — and reads what is typed into it. Shown working unconfined (the line
// "typed" into the master is read back through the pts path). In the
// sandbox /dev/pts is a devpts instance of its own, mounted over the
// host's: the path names no host pty (whatever opens there is another
// device), and another sandbox gets an instance of its own too.
func TestHostPseudoTerminalsUnreachable(t *testing.T) {
	ptmx, pts := hostPts(t)
	var host unix.Stat_t
	if err := unix.Stat("/dev/pts", &host); err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-typed-by-the-user"
	steal := "read -r line < " + pts + " && echo got:$line"
	if _, err := ptmx.WriteString(secret + "\n"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-c", steal).CombinedOutput(); err != nil || !strings.Contains(string(out), "got:"+secret) {
		t.Fatalf("unconfined, reading %s did not get what was typed, so the test proves nothing: %v %s", pts, err, out)
	}
	if _, err := ptmx.WriteString(secret + "\n"); err != nil {
		t.Fatal(err)
	}
	devOf := func(sb *Sandbox) string {
		// The device of /dev/pts, and of the path pts if it exists there
		// (the sandbox's own pty of that number, if any).
		r := sh(t, sb, "stat -c %d /dev/pts && { stat -L -c %d "+pts+" 2>/dev/null || echo none; }")
		f := strings.Fields(r.out)
		if r.st.Code != 0 || len(f) != 2 {
			t.Fatalf("stat in the sandbox: %v", r)
		}
		if f[0] == strconv.FormatUint(host.Dev, 10) {
			t.Errorf("/dev/pts in the sandbox is the host's devpts (device %d): %v", host.Dev, r)
		}
		if f[1] == strconv.FormatUint(host.Dev, 10) {
			t.Errorf("%s in the sandbox is the host's pty: %v", pts, r)
		}
		return f[0]
	}
	sb, _ := newTestSandbox(t, nil)
	a := devOf(sb)
	// Nor can the command read the line, whatever the path opens.
	if r := sh(t, sb, "timeout 5 bash -c '"+steal+"'; true"); strings.Contains(r.out, secret) {
		t.Errorf("the sandbox read what was typed into the host's %s: %v", pts, r)
	}
	other, _ := newTestSandbox(t, nil)
	if b := devOf(other); a == b {
		t.Errorf("two sandboxes share one devpts (device %s)", a)
	}
	// With change capture, an open for writing is the supervisor's, made
	// in the command's root: the host's pty is not there either.
	capt, _ := newTestSandbox(t, func(p *Policy) { p.CaptureChanges = true })
	noop := func(c *Command) { c.BeforeChange = func([]string) error { return nil } }
	if r := sh(t, capt, "timeout 5 bash -c 'exec 3<>"+pts+" && read -r line <&3 && echo got:$line'; true", noop); strings.Contains(r.out, secret) {
		t.Errorf("a captured sandbox read what was typed into the host's %s: %v", pts, r)
	}
}

// Without the private mount namespace there is no devpts of the
// sandbox's own to cover the host's: BestEffort then grants no ptys at
// all (rather than the host's), and a note says so.
func TestPseudoTerminalsOffWithoutMountNS(t *testing.T) {
	sb, err := newOnHost(Policy{Workspace: t.TempDir(), BestEffort: true}, maskedHost(withoutMountNS))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	if !slices.ContainsFunc(sb.Enforcement().Notes, func(n string) bool { return strings.HasPrefix(n, "pseudo-terminals: off") }) {
		t.Errorf("no note says ptys are off: %v", sb.Enforcement().Notes)
	}
	_, pts := hostPts(t)
	for _, c := range []string{"exec 3<>/dev/ptmx", "exec 3<>" + pts} {
		if r := sh(t, sb, c+" && echo opened"); r.st.Code == 0 || strings.Contains(r.out, "opened") {
			t.Errorf("%s without a devpts of the sandbox's own: %v", c, r)
		}
	}
}

// A process's own /proc is readable (what runtimes and tools read of
// themselves), and nothing of another process's: a process of the user's
// started outside, with a secret in its argv and environment — both
// readable unconfined, so the test proves something — is not even
// listed. /proc/sys and /proc/sysrq-trigger open for writing nowhere
// (opened, nothing written).
func TestProcSelfFiles(t *testing.T) {
	const secret = "proc-secret-4242"
	victim := exec.Command("sh", "-c", "echo ready; read x; : "+secret)
	victim.Env = []string{"TOKEN=" + secret}
	stdin, err := victim.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := victim.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); victim.Wait() })
	// Its first line: sh has exec'd, so its /proc entries are its own.
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(victim.Process.Pid)
	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile("/proc/" + pid + "/" + f)
		if err != nil || !strings.Contains(string(b), secret) {
			t.Fatalf("unconfined, /proc/%s/%s does not show the secret, so the test proves nothing: %v %q", pid, f, err, b)
		}
	}
	sb, _ := newTestSandbox(t, nil)
	if !slices.ContainsFunc(sb.Enforcement().Notes, func(n string) bool { return strings.HasPrefix(n, "/proc: the sandbox's own") }) {
		t.Fatalf("no /proc of the sandbox's own: %v", sb.Enforcement().Notes)
	}
	for _, c := range []string{
		"cat /proc/self/status", "cat /proc/self/stat", "cat /proc/self/cmdline", "cat /proc/self/maps",
		"cat /proc/self/limits", "cat /proc/self/mountinfo", "cat /proc/self/cgroup", "ls /proc/self/fd",
		"ls /proc/self/task", "ls /proc/thread-self/", "cat /proc/mounts", "head -c1 /proc/cpuinfo /proc/meminfo /proc/stat /proc/filesystems",
	} {
		if r := sh(t, sb, c+" >/dev/null"); r.st.Code != 0 {
			t.Errorf("%s in the sandbox: %v", c, r)
		}
	}
	// The victim, by every path a command could try.
	r := sh(t, sb, "grep -rals "+secret+" /proc/pid/*/cmdline /proc/pid/*/environ; ls /proc/pid /proc/"+pid+" /proc/pid/"+pid+" 2>&1; true")
	if strings.Contains(r.out, secret) || strings.Contains(r.out, "/proc/pid/"+pid+"/") {
		t.Errorf("the sandbox sees the process outside (pid %s): %v", pid, r)
	}
	// Only the command's own tree is listed: bash, ls and grep, perhaps
	// under an init — not the machine's (dozens here).
	if r := sh(t, sb, "ls /proc/pid | grep -c '^[0-9]'"); r.st.Code != 0 {
		t.Errorf("listing /proc/pid: %v", r)
	} else if n, _ := strconv.Atoi(strings.TrimSpace(r.out)); n < 1 || n > 4 {
		t.Errorf("/proc/pid lists %d processes, not the command's 3 or 4: %v", n, r)
	}
	for _, f := range []string{"/proc/sysrq-trigger", "/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches", "/proc/pid/self/attr/current"} {
		// >> opens O_WRONLY|O_APPEND|O_CREAT: nothing is written.
		if r := sh(t, sb, "exec 3>>"+f+" && echo opened"); r.st.Code == 0 || strings.Contains(r.out, "opened") {
			t.Errorf("%s opened for writing in the sandbox: %v", f, r)
		}
	}
	if r := sh(t, sb, "ls /proc/sys /proc/net /proc/kallsyms 2>&1; true"); strings.Contains(r.out, "kernel") || strings.Contains(r.out, "tcp") {
		t.Errorf("the host's /proc/sys or /proc/net is reachable: %v", r)
	}
}
