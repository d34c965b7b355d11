package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The escape tests: each attack is tried confined, where it must fail, and
// — where that is meaningful — unconfined, where it must work, so that the
// test proves the sandbox stopped it and not some other accident.

// escapeEnv is what the escape tests share: the compiled probe program,
// a secret outside the workspace, a process outside the sandbox.
type escapeEnv struct {
	bin       string // testdata/escape.c, compiled
	secretDir string
	secret    string // a file in secretDir
	victim    *exec.Cmd
	sb        *Sandbox
	ws        string
}

func newEscapeEnv(t *testing.T, mut func(*Policy)) *escapeEnv {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("cc not installed: cannot build the probe program (would check seccomp and Landlock denials)")
	}
	e := &escapeEnv{bin: probeBinary(t)}
	binDir := filepath.Dir(e.bin)
	e.secretDir = t.TempDir()
	e.secret = filepath.Join(e.secretDir, "id_rsa")
	if err := os.WriteFile(e.secret, []byte("-----BEGIN FAKE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A process outside the sandbox, same user, with a secret in its
	// environment and its cwd in the secret directory.
	e.victim = exec.Command("sleep", "60")
	e.victim.Dir = e.secretDir
	e.victim.Env = []string{"VICTIM_SECRET=hunter2"}
	if err := e.victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.victim.Process.Kill(); e.victim.Wait() })
	e.sb, e.ws = newTestSandbox(t, func(p *Policy) {
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, binDir)
		if mut != nil {
			mut(p)
		}
	})
	return e
}

// testLevel is the level this package's test sandboxes use: the default,
// or the one LITE_AGENT_TEST_LEVEL names (TestContainerLevelSuite runs
// the escape suite and more again at LevelContainer, which must stop every
// attack it does not list in Enforcement.Lost).
func testLevel() Level {
	return Level(os.Getenv("LITE_AGENT_TEST_LEVEL"))
}

var (
	probeOnce sync.Once
	probeDir  string // removed by TestMain
	probeErr  error
)

// probeBinary compiles testdata/escape.c once per test binary (the tables
// run in every network setting: a compile per sandbox was most of their
// time) into a directory of its own, readable by the unprivileged run.
func probeBinary(t *testing.T) string {
	t.Helper()
	probeOnce.Do(func() {
		if probeDir, probeErr = os.MkdirTemp("", "lite-agent-escape-"); probeErr != nil {
			return
		}
		os.Chmod(probeDir, 0o755)
		out, err := exec.Command("cc", "-O1", "-o", filepath.Join(probeDir, "escape"), "testdata/escape.c").CombinedOutput()
		if err != nil {
			probeErr = fmt.Errorf("cc: %v\n%s", err, out)
		}
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return filepath.Join(probeDir, "escape")
}

// probe runs the probe program confined and returns its output line.
func (e *escapeEnv) probe(t *testing.T, args ...string) (string, *ExitStatus) {
	t.Helper()
	var out, errb bytes.Buffer
	st, err := e.sb.Run(context.Background(), &Command{Path: e.bin, Args: append([]string{"escape"}, args...), Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatalf("probe %v: %v", args, err)
	}
	return strings.TrimSpace(out.String() + errb.String()), st
}

// free runs the probe program unconfined.
func (e *escapeEnv) free(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := exec.Command(e.bin, args...).CombinedOutput()
	return strings.TrimSpace(string(out))
}

func root() bool { return os.Geteuid() == 0 }

// The file and seccomp tables run in every network setting (forEachMode):
// each mode has a seccomp program of its own (and, but for unrestricted,
// a notification server beside it), so a row that holds under none proves
// nothing of the others. One sandbox per setting serves a whole table,
// and the unconfined half of each row, which no setting changes, runs in
// the first setting only.

func TestEscapeFiles(t *testing.T) {
	forEachMode(t, func(t *testing.T, n netSetting) {
		escapeFiles(t, newEscapeEnv(t, n.apply), n == allSettings[0])
	})
}

// escapeFiles runs the file table in e; unconfined says whether to show
// each attack working outside the sandbox too.
func escapeFiles(t *testing.T, e *escapeEnv, unconfined bool) {
	victim := strconv.Itoa(e.victim.Process.Pid)
	for _, tc := range []struct {
		name   string
		script string // confined; must fail (non-zero exit)
		free   string // the same attack unconfined, must succeed ("" = not meaningful)
		root   bool   // the unconfined half needs root
	}{
		{"read secret outside", "cat " + e.secret, "cat " + e.secret, false},
		{"read /etc/shadow", "cat /etc/shadow", "cat /etc/shadow", true},
		{"write outside", "echo x > " + e.secretDir + "/planted", "", false},
		{"write a system path", "echo x >> /etc/hosts", "", false},
		{"symlink to secret", "ln -s " + e.secret + " link && cat link", "", false},
		{"hardlink to secret", "ln " + e.secret + " hard && cat hard", "ln " + e.secret + " " + e.secretDir + "/hard2 && cat " + e.secretDir + "/hard2", false},
		{"/proc/self/root traversal", "cat /proc/self/root" + e.secret, "cat /proc/self/root" + e.secret, false},
		{"/proc/PID/cwd traversal", "cat /proc/" + victim + "/cwd/id_rsa", "cat /proc/" + victim + "/cwd/id_rsa", false},
		{"/proc/PID/environ", "cat /proc/" + victim + "/environ | grep hunter2", "cat /proc/" + victim + "/environ | grep -q hunter2", false},
		{"/proc/PID/cmdline", "cat /proc/" + victim + "/cmdline", "cat /proc/" + victim + "/cmdline", false},
		// The sandbox's own /proc keeps processes under /proc/pid.
		{"/proc/pid/PID/environ", "cat /proc/pid/" + victim + "/environ | grep hunter2", "cat /proc/" + victim + "/environ | grep -q hunter2", false},
		{"/proc/pid/PID/cmdline", "cat /proc/pid/" + victim + "/cmdline", "cat /proc/" + victim + "/cmdline", false},
		{"rename into the workspace", "mv " + e.secret + " stolen", "", false},
		{"truncate outside", "truncate -s 0 " + e.secret, "", false},
		// /dev/shm is the sandbox's own (a write there reaches nothing of
		// the host's): TestPrivateShmVarTmpRun.
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sh(t, e.sb, tc.script)
			if r.st.Code == 0 {
				t.Errorf("confined %q succeeded: %v", tc.script, r)
			}
			if tc.free == "" || !unconfined {
				return
			}
			if tc.root && !root() {
				t.Logf("unconfined half skipped: needs root")
				return
			}
			if out, err := exec.Command("bash", "-c", tc.free).CombinedOutput(); err != nil {
				t.Errorf("unconfined %q failed, so the test proves nothing: %v %s", tc.free, err, out)
			}
		})
	}
	if b, _ := os.ReadFile(e.secret); !bytes.HasPrefix(b, []byte("-----BEGIN")) {
		t.Errorf("secret was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(e.secretDir, "planted")); err == nil {
		t.Errorf("a file was planted outside the workspace")
	}
	// What the child may read of /proc: the policy's global files and its
	// own entries (TestProcSelfFiles), not another process's (above).
	// Without a /proc of the sandbox's own (LevelContainer, which says
	// so in Lost) /proc/self is not readable either.
	r := sh(t, e.sb, "head -c 10 /proc/cpuinfo >/dev/null && echo global-ok; cat /proc/self/status 2>&1 | head -1")
	want := "global-ok\nName:"
	if slicesContainsPrefix(e.sb.Enforcement().Lost, "a /proc of the sandbox's own") {
		want = "global-ok\ncat: /proc/self/status: Permission denied"
	}
	if !strings.HasPrefix(r.out, want) {
		t.Errorf("/proc policy: %v (want %q)", r, want)
	}
}

func TestEscapeSeccomp(t *testing.T) {
	forEachMode(t, func(t *testing.T, n netSetting) {
		escapeSeccomp(t, newEscapeEnv(t, n.apply), n == allSettings[0])
	})
}

// escapeSeccomp runs the seccomp table in e; unconfined as escapeFiles'.
func escapeSeccomp(t *testing.T, e *escapeEnv, unconfined bool) {
	mnt := t.TempDir()
	victim := strconv.Itoa(e.victim.Process.Pid)
	for _, tc := range []struct {
		args []string
		want string // confined
		free bool   // the unconfined run must print "ok" (as root)
	}{
		{[]string{"unshare-user"}, "EPERM", true},
		{[]string{"unshare-net"}, "EPERM", true},
		{[]string{"clone-newuser"}, "EPERM", true},
		{[]string{"clone3"}, "ENOSYS", true},
		// The spawn path joins the namespace template with setns before
		// the child program is loaded; the command must not.
		{[]string{"setns"}, "EPERM", true},
		{[]string{"mount", mnt}, "EPERM", true},
		{[]string{"chroot", "/"}, "EPERM", true},
		// Undoing the read-only mounts (spawn's mountns_linux.go). Not run
		// unconfined: they would change the test machine's mounts; the
		// "mount" row shows the mount calls work there as root.
		{[]string{"remount-rw", "/"}, "EPERM", false},
		{[]string{"mount-setattr-rw", "/"}, "EPERM", false},
		{[]string{"open-tree", "/"}, "EPERM", false},
		{[]string{"open-tree-attr", "/"}, "EPERM", false},
		{[]string{"fsopen"}, "EPERM", false},
		{[]string{"fspick", "/"}, "EPERM", false},
		{[]string{"umount", "/proc"}, "EPERM", false},
		// The spawn path's child switches into the skeleton with
		// pivot_root before its program is loaded; the command gets
		// EPERM (from seccomp, and from its dropped capabilities).
		{[]string{"pivot-root", "/"}, "EPERM", false},
		{[]string{"move-mount", "/proc"}, "EPERM", false},
		{[]string{"ptrace", victim}, "EPERM", true},
		{[]string{"kill", victim}, "EPERM", true}, // Landlock signal scoping
		{[]string{"keyctl"}, "EPERM", true},
		{[]string{"bpf"}, "EPERM", true},
		{[]string{"io_uring"}, "EPERM", true},
		{[]string{"perf"}, "EPERM", true},
		{[]string{"userfaultfd"}, "EPERM", true},
		{[]string{"packet"}, "EPERM", true},
		{[]string{"raw"}, "EPERM", true},
		{[]string{"netlink"}, "EPERM", true},
		// IP sockets exist under none (for the tree's own loopback
		// servers); what they can reach is TestOwnListenersEveryMode's
		// table, and which kinds exist TestEscapeSocketProtocols'.
		{[]string{"unix-dgram"}, "EPERM", true},
		{[]string{"personality"}, "EPERM", true},
		{[]string{"personality-query"}, "ok", true},
		{[]string{"open", "/dev/tty"}, "ENXIO", false}, // no controlling terminal
	} {
		name := strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			got, st := e.probe(t, tc.args...)
			if tc.args[0] == "kill" && got == "ESRCH" && e.sb.newPID {
				// In a PID namespace the victim has no pid at all.
				got = "EPERM"
			}
			if got != tc.want {
				t.Errorf("confined %s: %q (%+v), want %s", name, got, st, tc.want)
			}
			checkSyscallRefusal(t, e.sb, st, seccompRefusalOps[tc.args[0]], false)
			if !tc.free || !unconfined {
				return
			}
			free := e.free(t, tc.args...)
			if tc.args[0] == "mount" && free == "ok" {
				syscall.Unmount(mnt, 0)
			}
			switch {
			case free == "ok":
			case !root():
				t.Logf("unconfined %s: %s (not meaningful without root)", name, free)
			default:
				t.Errorf("unconfined %s: %s, want ok: the test proves nothing", name, free)
			}
		})
	}
	if err := e.victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the victim process was hurt: %v", err)
	}
}

// seccompRefusalOps: the escapeSeccomp rows whose call is in the seccomp
// programs' refusal set (internal/seccomp's refusal_linux.go), by the
// call a confined command's ExitStatus.Refusals names. The other rows'
// refusals are not named (ENOSYS fallbacks, socket kinds, Landlock's
// signal scoping, personality flags).
var seccompRefusalOps = map[string]string{
	"unshare-user": "unshare", "unshare-net": "unshare", "clone-newuser": "clone", "setns": "setns",
	"mount": "mount", "chroot": "chroot", "remount-rw": "mount", "mount-setattr-rw": "mount_setattr",
	"open-tree": "open_tree", "fsopen": "fsopen", "fspick": "fspick", "umount": "umount2",
	"pivot-root": "pivot_root", "move-mount": "move_mount", "ptrace": "ptrace", "keyctl": "add_key",
	"bpf": "bpf", "io_uring": "io_uring_setup", "perf": "perf_event_open", "userfaultfd": "userfaultfd",
	"open-tree-attr": "*", // named by libseccomp, or by its number
}

// checkSyscallRefusal: a refused call of the seccomp refusal set is in
// st.Refusals under one of rules, with op ("*": any), and RefusalNote
// names it, exactly where the sandbox's Enforcement says such refusals
// are named (for a command under change capture when captured); a call
// outside the set (op "") never is. So `sandbox check`, which prints
// that note, claims nothing this probe finds false.
func checkSyscallRefusal(t *testing.T, sb *Sandbox, st *ExitStatus, op string, captured bool, rules ...string) {
	t.Helper()
	if len(rules) == 0 {
		rules = []string{"syscall"}
	}
	i := slices.IndexFunc(st.Refusals, func(r Refusal) bool { return slices.Contains(rules, r.Rule) })
	notes := strings.Join(sb.Enforcement().Notes, "; ")
	named := strings.Contains(notes, "refused system calls and set-id modes: named in each command's result") ||
		captured && strings.Contains(notes, "refused system calls and set-id modes: named in the results of commands under change capture")
	switch {
	case op == "":
		if i >= 0 {
			t.Errorf("a refusal named that is not one of the refusal set: %+v", st.Refusals[i])
		}
	case !named:
		if i >= 0 {
			t.Errorf("Enforcement says refusals are not named here (%s), yet %+v is", notes, st.Refusals[i])
		}
	case i < 0:
		t.Errorf("refusal of %s not named, though Enforcement says it is: %+v", op, st.Refusals)
	case op != "*" && st.Refusals[i].Op != op:
		t.Errorf("refusal named %+v, want op %s", st.Refusals[i], op)
	default:
		if note := RefusalNote(st.Refusals, st.MoreRefusals, true); !strings.Contains(note, "[lite-agent] the sandbox refused "+st.Refusals[i].Op) {
			t.Errorf("note %q does not name %+v", note, st.Refusals[i])
		}
	}
}

// setidWays are the ways a file gets a set-id mode (or becomes a device
// node) that the probe program knows (testdata/escape.c, "setid"), with
// what a confined process must get back. plain-* are ordinary modes that
// must keep working.
var setidWays = []struct{ way, want string }{
	{"chmod-suid", "EPERM"}, {"chmod-sgid", "EPERM"}, {"fchmod", "EPERM"},
	{"fchmodat", "EPERM"}, {"fchmodat2", "EPERM"},
	{"open-creat", "EPERM"}, {"openat-creat", "EPERM"}, {"creat", "EPERM"},
	{"tmpfile", "EPERM"}, {"openat2", "ENOSYS"},
	{"mknod-suid", "EPERM"}, {"mknod-chr", "EPERM"}, {"mknodat-blk", "EPERM"},
	{"plain-chmod", "ok"}, {"plain-creat", "ok"},
}

// TestEscapeSetID: a confined command must not plant a set-id binary or a
// device node for whoever runs it next (internal/seccomp's modeCalls,
// refusal_linux.go).
// Each way works unconfined on a file the test owns (as root and, in
// TestAsUnprivilegedUser, as nobody: set-id bits on one's own file need no
// privilege), and is refused confined — with and without change capture,
// whose child program is a different one.
func TestEscapeSetID(t *testing.T) {
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprintf("capture=%v", capture), func(t *testing.T) {
			e := newEscapeEnv(t, func(p *Policy) { p.CaptureChanges = capture })
			free := t.TempDir()
			for _, tc := range setidWays {
				t.Run(tc.way, func(t *testing.T) {
					target := "f"
					if tc.way == "tmpfile" {
						target = "."
					}
					cf := filepath.Join(free, target)
					if target == "f" {
						os.WriteFile(cf, []byte("x"), 0o644)
					}
					if got := e.free(t, "setid", tc.way, cf); got != "ok" {
						if tc.way == "mknod-chr" || tc.way == "mknodat-blk" {
							if !root() {
								t.Logf("unconfined %s: %s (device nodes need CAP_MKNOD: not meaningful without root)", tc.way, got)
							} else {
								t.Errorf("unconfined %s: %s, want ok: the test proves nothing", tc.way, got)
							}
						} else {
							t.Errorf("unconfined %s: %s, want ok: the test proves nothing", tc.way, got)
						}
					}
					if target == "f" {
						os.WriteFile(filepath.Join(e.ws, "f"), []byte("x"), 0o644)
					}
					var out bytes.Buffer
					cmd := &Command{Path: e.bin, Args: []string{"escape", "setid", tc.way, target}, Stdout: &out, Stderr: &out}
					if capture {
						cmd.BeforeChange = func([]string) error { return nil }
					}
					st, err := e.sb.Run(context.Background(), cmd)
					if err != nil {
						t.Fatal(err)
					}
					if got := strings.TrimSpace(out.String()); got != tc.want {
						t.Errorf("confined %s: %q, want %s", tc.way, got, tc.want)
					}
					op := "*"
					if tc.want != "EPERM" {
						op = "" // allowed, or openat2's ENOSYS fallback
					}
					checkSyscallRefusal(t, e.sb, st, op, capture, "set-id-mode", "device-node")
					if fi, err := os.Lstat(filepath.Join(e.ws, "f")); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeDevice) != 0 {
						t.Errorf("confined %s left %v", tc.way, fi.Mode())
					}
				})
			}
			// The same through bash, as an agent would try it.
			r := sh(t, e.sb, `cp /bin/true x && chmod +x x && chmod 0755 x && ./x && echo plain-ok
chmod 4755 x && echo SUID; chmod u+s x && echo SUID2; chmod g+s x && echo SGID; install -m 4755 /bin/true y && echo INSTALL
stat -c %a x`)
			if !strings.Contains(r.out, "plain-ok\n") || strings.Contains(r.out, "SUID") || strings.Contains(r.out, "SGID") || strings.Contains(r.out, "INSTALL") || !strings.HasSuffix(r.out, "755\n") {
				t.Errorf("bash: %v", r)
			}
		})
	}
}

func TestEscapeCapabilitiesAndSession(t *testing.T) {
	e := newEscapeEnv(t, nil)
	got, _ := e.probe(t, "caps")
	for _, want := range []string{"eff=000000000 ", "prm=000000000 ", "inh=000000000 ", "ambient=0", "nnp=1"} {
		if !strings.Contains(got, want) {
			t.Errorf("caps: %q lacks %q", got, want)
		}
	}
	if root() && !strings.Contains(got, "bounding=0 ") {
		t.Errorf("root's bounding set not dropped: %q", got)
	}
	if free := e.free(t, "caps"); root() && !strings.Contains(free, "eff=1") {
		t.Logf("unconfined caps: %s", free)
	}
	// A new session: the command is its own session leader.
	r := sh(t, e.sb, `[ "$(ps -o sid= -p $$ 2>/dev/null || echo $$)" ] ; python3 -c 'import os; print(os.getsid(0) == os.getpid() or os.getsid(0) == os.getppid())'`)
	if strings.TrimSpace(r.out) != "True" {
		t.Errorf("not in a new session: %v", r)
	}
}

func TestEscapeI386Table(t *testing.T) {
	e := newEscapeEnv(t, nil)
	if free := e.free(t, "i386"); free != "ok" {
		t.Skipf("int 0x80 does not work unconfined here (%q): no IA32 emulation; would check that seccomp kills it", free)
	}
	got, st := e.probe(t, "i386")
	if st.Signal != syscall.SIGSYS || got == "ok" {
		t.Errorf("int 0x80 under the sandbox: output %q, status %+v; want killed by SIGSYS", got, st)
	}
}

// openPTY returns the slave side of a new pseudo-terminal.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no /dev/ptmx (%v): would check TIOCSTI/TIOCLINUX", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestEscapeTIOCSTI(t *testing.T) {
	e := newEscapeEnv(t, nil)
	pty := openPTY(t)
	for _, args := range [][]string{{"tiocsti"}, {"tiocsti", "high"}, {"tioclinux"}} {
		var out bytes.Buffer
		st, err := e.sb.Run(context.Background(), &Command{Path: e.bin, Args: append([]string{"escape"}, args...), Stdin: pty, Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.String()); got != "EPERM" {
			t.Errorf("confined %v on a terminal: %q %+v, want EPERM", args, got, st)
		}
	}
	// Unconfined, root may push input into any terminal: the attack.
	c := exec.Command(e.bin, "tiocsti")
	c.Stdin = pty
	out, _ := c.Output()
	if got := strings.TrimSpace(string(out)); got != "ok" {
		if root() {
			t.Errorf("unconfined TIOCSTI as root: %q, want ok (dev.tty.legacy_tiocsti=0?)", got)
		} else {
			t.Logf("unconfined TIOCSTI: %q (not meaningful without CAP_SYS_ADMIN)", got)
		}
	}
}

// unixServer listens on a unix socket path (or @abstract name) and writes
// "y" to every client.
func unixServer(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("y"))
			c.Close()
		}
	}()
}

func TestLimitsForkBomb(t *testing.T) {
	sb, _ := newTestSandbox(t, func(p *Policy) {
		p.Limits.Processes = 64
		p.Limits.WallTime = 20 * time.Second
	})
	skipIfLost(t, sb, "the process limit", "that a fork bomb stops at the process limit")
	// Fork until the kernel says no; count.
	r := sh(t, sb, `python3 -c '
import os, time
n = 0
try:
    while n < 5000:
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        n += 1
except OSError as e:
    print(n, e.errno)
'`)
	var n, errno int
	if _, err := fmt.Sscan(r.out, &n, &errno); err != nil || n >= 64 || errno != int(syscall.EAGAIN) {
		t.Errorf("fork bomb: %v; want fewer than 64 forks, then EAGAIN", r)
	}
	if sb.Enforcement().Cgroup != "" && !r.st.ProcessLimitHit {
		t.Errorf("ProcessLimitHit not reported: %+v", r.st)
	}
	if r.st.TimedOut {
		t.Errorf("the bomb's children were not killed when its main process exited: %+v", r.st)
	}
	// The classic one, stopped by the wall time.
	sb2, _ := newTestSandbox(t, func(p *Policy) {
		p.Limits.Processes = 64
		p.Limits.WallTime = time.Second
	})
	start := time.Now()
	sh(t, sb2, `b(){ b|b& }; b; sleep 10`)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("classic fork bomb took %v to end", d)
	}
}

func TestLimitsMemoryBomb(t *testing.T) {
	sb, _ := newTestSandbox(t, func(p *Policy) { p.Limits.MemoryBytes = 256 << 20 })
	r := sh(t, sb, `python3 -c 'b = bytearray(1 << 30); print("allocated", len(b))'`)
	if r.st.Code == 0 || strings.Contains(r.out, "allocated") {
		t.Fatalf("memory bomb succeeded: %v", r)
	}
	if sb.Enforcement().Cgroup != "" {
		if !r.st.MemoryExceeded {
			t.Errorf("MemoryExceeded not reported: %+v", r.st)
		}
	} else if !strings.Contains(r.err, "MemoryError") {
		t.Errorf("no memory cgroup: expected a MemoryError (RLIMIT_AS): %v", r)
	}
}

func TestLimitsFileSize(t *testing.T) {
	sb, ws := newTestSandbox(t, func(p *Policy) { p.Limits.FileBytes = 1 << 20 })
	r := sh(t, sb, `head -c 3000000 /dev/zero > big; echo "status $?"`)
	fi, err := os.Stat(filepath.Join(ws, "big"))
	if err != nil || fi.Size() > 1<<20 {
		t.Errorf("file-size bomb wrote %v bytes: %v", fi, err)
	}
	if !strings.Contains(r.out, "status 153") { // 128+SIGXFSZ
		t.Errorf("writer not stopped by SIGXFSZ: %v", r)
	}
}

// TestUnrestrictedNetworkWorks: in mode unrestricted the notification server
// still sees every connect (for unix paths) and must make TCP ones work.
func TestUnrestrictedNetworkWorks(t *testing.T) {
	e := newEscapeEnv(t, func(p *Policy) { p.Network = NetworkUnrestricted })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("y"))
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if got, _ := e.probe(t, "tcp-connect", port); got != "ok" {
		t.Errorf("network unrestricted: TCP connect to loopback: %q", got)
	}
	r := sh(t, e.sb, "exec 3<>/dev/tcp/127.0.0.1/"+port+" && head -c 1 <&3")
	if r.out != "y" {
		t.Errorf("bash /dev/tcp through the supervisor: %v", r)
	}
	if got, _ := e.probe(t, "raw"); got != "EPERM" {
		t.Errorf("network unrestricted still refuses raw sockets: %q", got)
	}
}
