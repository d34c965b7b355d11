package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
)

// Every confined command runs in a child process, so these tests confine
// nothing in the test binary itself (CONVENTIONS 8): what they prove is what
// the child could and could not do.

// newTestSandbox makes a sandbox on a fresh workspace.
func newTestSandbox(t testing.TB, mut func(*Policy)) (*Sandbox, string) {
	t.Helper()
	ws := t.TempDir()
	p := Policy{Workspace: ws, Level: testLevel()}
	if mut != nil {
		mut(&p)
	}
	sb, err := New(p)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb, ws
}

type result struct {
	out, err string
	st       *ExitStatus
}

// sh runs a bash script confined.
func sh(t testing.TB, sb *Sandbox, script string, mut ...func(*Command)) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := &Command{Path: "/bin/bash", Args: []string{"bash", "-c", script}, Stdout: &out, Stderr: &errb}
	for _, m := range mut {
		m(cmd)
	}
	st, err := sb.Run(context.Background(), cmd)
	if err != nil {
		t.Fatalf("Run(%q): %v", script, err)
	}
	return result{out.String(), errb.String(), st}
}

func (r result) String() string {
	return fmt.Sprintf("code %d signal %v stdout %q stderr %q", r.st.Code, r.st.Signal, r.out, r.err)
}

func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: %s (TestAsUnprivilegedUser covers the unprivileged side)", why)
	}
}

func TestRunExitCodesAndPipelines(t *testing.T) {
	sb, ws := newTestSandbox(t, nil)
	for _, tc := range []struct {
		script string
		code   int
		out    string
	}{
		{"true", 0, ""},
		{"exit 7", 7, ""},
		{"echo hello | tr a-z A-Z | rev", 0, "OLLEH\n"},
		{"printf 'b\\na\\nc\\n' | sort | head -n 2 | wc -l", 0, "2\n"},
		{"pwd", 0, ws + "\n"},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM), ""},
		{"echo out; echo err >&2; exit 3", 3, "out\n"},
		{"x=$(echo sub); echo $x", 0, "sub\n"},
		{"cat <(echo procsub)", 0, "procsub\n"}, // /dev/fd/N through /proc/self/fd
		{"echo to-null > /dev/null && echo done", 0, "done\n"},
		{"echo to-stderr > /dev/stderr", 0, ""},
	} {
		if strings.Contains(tc.script, "kill") && sb.newPID && !sb.withInit {
			// PID 1 of a namespace ignores signals it has no handler for,
			// also from itself; only without our init is the command PID 1.
			t.Logf("%q: skipped, the command is PID 1 of its namespace (no init here)", tc.script)
			continue
		}
		r := sh(t, sb, tc.script)
		if r.st.Code != tc.code || r.out != tc.out {
			t.Errorf("%q: %v; want code %d stdout %q", tc.script, r, tc.code, tc.out)
		}
	}
}

func TestStdinPassthrough(t *testing.T) {
	sb, _ := newTestSandbox(t, nil)
	in := strings.Repeat("line\n", 10000)
	r := sh(t, sb, "wc -l", func(c *Command) { c.Stdin = strings.NewReader(in) })
	if strings.TrimSpace(r.out) != "10000" {
		t.Errorf("wc -l of stdin: %v", r)
	}
	// An *os.File is passed as is.
	stdinPath := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(stdinPath, []byte("twelve bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(stdinPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r = sh(t, sb, "cat | wc -c", func(c *Command) { c.Stdin = f })
	if strings.TrimSpace(r.out) != "12" {
		t.Errorf("cat of an *os.File stdin (12 bytes): %v", r)
	}
}

func TestStdoutAndStderrShareOneWriter(t *testing.T) {
	sb, _ := newTestSandbox(t, nil)
	var both bytes.Buffer
	st, err := sb.Run(context.Background(), &Command{Path: "/bin/bash",
		Args: []string{"bash", "-c", "echo 1; echo 2 >&2; echo 3"}, Stdout: &both, Stderr: &both})
	if err != nil || st.Code != 0 {
		t.Fatal(err, st)
	}
	if both.String() != "1\n2\n3\n" {
		t.Errorf("combined output %q, want ordered 1 2 3", both.String())
	}
}

func TestEnvFiltering(t *testing.T) {
	t.Setenv("LITE_AGENT_TEST_API_KEY", "sk-leak")
	t.Setenv("GITHUB_TOKEN", "ghp-leak")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-leak")
	t.Setenv("DB_PASSWORD", "pw-leak")
	t.Setenv("LITE_AGENT_TEST_PLAIN", "plain")
	sb, _ := newTestSandbox(t, func(p *Policy) {
		p.Env = append(DefaultEnv(), "GITHUB_TOKEN", "LITE_AGENT_TEST_PLAIN", "EXPLICIT_TOKEN=given")
	})
	r := sh(t, sb, "env", func(c *Command) { c.Env = []string{"FROM_COMMAND=1"} })
	for _, leak := range []string{"sk-leak", "ghp-leak", "aws-leak", "pw-leak"} {
		if strings.Contains(r.out, leak) {
			t.Errorf("secret %q reached the command:\n%s", leak, r.out)
		}
	}
	for _, want := range []string{"LITE_AGENT_TEST_PLAIN=plain", "EXPLICIT_TOKEN=given", "FROM_COMMAND=1", "TMPDIR=", "PATH="} {
		if !strings.Contains(r.out, want) {
			t.Errorf("missing %q in the command's environment:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "HOSTNAME=") && os.Getenv("HOSTNAME") != "" {
		t.Errorf("HOSTNAME is not on the allowlist but passed")
	}
}

func TestTmpdirPrivateAndCleaned(t *testing.T) {
	sb, _ := newTestSandbox(t, nil)
	r := sh(t, sb, `echo data > "$TMPDIR/f" && cat "$TMPDIR/f" && mkdir "$TMPDIR/d" && echo "$TMPDIR"`)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if r.st.Code != 0 || len(lines) != 2 || lines[0] != "data" {
		t.Fatalf("writing TMPDIR: %v", r)
	}
	tmp := lines[1]
	if !strings.HasPrefix(tmp, os.TempDir()) {
		t.Errorf("TMPDIR %q not under %q", tmp, os.TempDir())
	}
	if ents, err := os.ReadDir(tmp); err == nil && len(ents) > 0 {
		t.Errorf("TMPDIR %s not emptied after the command: %v", tmp, ents)
	}
	// A second command does not see the first one's files.
	r = sh(t, sb, `ls -A "$TMPDIR" | wc -l`)
	if strings.TrimSpace(r.out) != "0" {
		t.Errorf("second command sees leftovers: %v", r)
	}
	sb.Close()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("TMPDIR %s still exists after Close: %v", tmp, err)
	}
}

func TestToolchainWorksInside(t *testing.T) {
	// The caller's HOME is not readable inside: the command gets its
	// private temp dir instead (git dies on an unreadable ~/.gitconfig).
	t.Setenv("HOME", t.TempDir())
	sb, _ := newTestSandbox(t, nil)
	r := sh(t, sb, `[ "$HOME" = "$TMPDIR" ] && echo home-ok`)
	if r.out != "home-ok\n" {
		t.Errorf("HOME outside the sandbox was not replaced: %v", r)
	}
	for _, tc := range []struct{ name, script, want string }{
		{"python3", `python3 -c 'import json,sys,os,subprocess; print(json.dumps({"ok": subprocess.run(["echo","x"],capture_output=True).stdout.decode().strip()}))'`, `{"ok": "x"}`},
		{"git", `git init -q repo && cd repo && git config user.email a@b && git config user.name t && echo hi > f && git add f && git commit -qm m && git log --oneline | wc -l`, "1"},
		{"cc", `printf '#include <stdio.h>\nint main(){puts("compiled");}\n' > m.c && cc -o m m.c && ./m`, "compiled"},
	} {
		if _, err := exec.LookPath(tc.name); err != nil {
			t.Logf("skipping %s: not installed", tc.name)
			continue
		}
		r := sh(t, sb, tc.script)
		if r.st.Code != 0 || strings.TrimSpace(r.out) != tc.want {
			t.Errorf("%s: %v", tc.name, r)
		}
	}
}

func TestOutputTruncated(t *testing.T) {
	sb, _ := newTestSandbox(t, func(p *Policy) { p.Limits.OutputBytes = 1000 })
	r := sh(t, sb, "head -c 5000 /dev/zero | tr '\\0' a; echo tail >&2")
	if got := len(r.out) + len(r.err); got != 1000 {
		t.Errorf("kept %d bytes, want 1000", got)
	}
	if !r.st.OutputTruncated || r.st.DroppedBytes != 4005 {
		t.Errorf("truncation not reported: %+v", r.st)
	}
}

func TestTimeoutKillsWholeTree(t *testing.T) {
	sb, ws := newTestSandbox(t, func(p *Policy) { p.Limits.WallTime = 300 * time.Millisecond })
	skipIfLost(t, sb, "killing the whole process tree", "that a timeout kills a daemon that left the session")
	start := time.Now()
	// A daemon that leaves the session and double-forks, then the main
	// process sleeps past the deadline.
	r := sh(t, sb, `(setsid bash -c 'echo $$ > daemon.pid; exec sleep 60' &) ; sleep 60`)
	if !r.st.TimedOut {
		t.Errorf("TimedOut not set: %v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	assertGone(t, filepath.Join(ws, "daemon.pid"))
}

func TestContextCancelAndKill(t *testing.T) {
	sb, _ := newTestSandbox(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := sb.Start(ctx, &Command{Path: "/bin/sleep", Args: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, cancel)
	st, err := p.Wait()
	if err != nil || !st.TimedOut || st.Signal != syscall.SIGKILL {
		t.Errorf("after cancel: %+v, %v", st, err)
	}

	p, err = sb.Start(context.Background(), &Command{Path: "/bin/sleep", Args: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Pid() <= 0 {
		t.Errorf("Pid() = %d", p.Pid())
	}
	p.Kill()
	st, err = p.Wait()
	if err != nil || st.TimedOut || st.Signal != syscall.SIGKILL {
		t.Errorf("after Kill: %+v, %v", st, err)
	}
	if _, err := sb.Start(ctx, &Command{Path: "/bin/true"}); err == nil {
		t.Errorf("Start with a cancelled context succeeded")
	}
}

func TestDaemonDoesNotOutliveCommand(t *testing.T) {
	sb, ws := newTestSandbox(t, nil)
	skipIfLost(t, sb, "killing the whole process tree", "that a daemon which left the session does not outlive the command")
	start := time.Now()
	// The main process exits at once; a double-forked, setsid'd daemon
	// holding stdout open must be killed and Wait must return.
	var out bytes.Buffer
	st, err := sb.Run(context.Background(), &Command{Path: "/bin/bash",
		Args:   []string{"bash", "-c", `( setsid bash -c 'echo $$ > daemon.pid; while :; do sleep 1; done' & ) ; ` + waitPidFile + `; echo started`},
		Stdout: &out})
	if err != nil || st.Code != 0 {
		t.Fatal(err, st)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Wait took %v", d)
	}
	assertGone(t, filepath.Join(ws, "daemon.pid"))
}

// waitPidFile makes the main process wait until its daemon wrote its pid.
const waitPidFile = `while [ ! -s daemon.pid ]; do sleep 0.01; done`

// assertGone reads a pid the confined tree wrote and checks that the
// process no longer exists.
func assertGone(t *testing.T, pidFile string) {
	t.Helper()
	var b []byte
	for i := 0; i < 50; i++ {
		if b, _ = os.ReadFile(pidFile); len(b) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("daemon pid file %s: %q %v", pidFile, b, err)
	}
	// The pid is in the command's PID namespace when there is one: then
	// the namespace is gone with its PID 1, nothing to look up.
	if pid <= 1 {
		return
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !bytes.Contains(stat, []byte(") Z")) {
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.Contains(cmdline, []byte("sleep")) || bytes.Contains(cmdline, []byte("bash")) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("daemon %d outlived the command: %s", pid, cmdline)
		}
	}
}

func TestStartErrors(t *testing.T) {
	sb, _ := newTestSandbox(t, nil)
	if _, err := sb.Run(context.Background(), &Command{Path: "no-such-program-xyz"}); err == nil {
		t.Error("a missing program started")
	}
	// A program Landlock does not allow to run: a sandbox error (125 in
	// the CLI), naming the step.
	other := t.TempDir()
	prog := filepath.Join(other, "prog")
	os.WriteFile(prog, []byte("#!/bin/sh\necho ran\n"), 0o755)
	_, err := sb.Run(context.Background(), &Command{Path: prog})
	var se *SpawnError
	if !errors.As(err, &se) || se.Errno != syscall.EACCES || !strings.Contains(err.Error(), "executing") {
		t.Errorf("exec outside the sandbox: %v", err)
	}
	if _, err := sb.Run(context.Background(), nil); err == nil {
		t.Error("nil command started")
	}
}

func TestNewValidatesPolicy(t *testing.T) {
	for _, p := range []Policy{
		{Workspace: "relative/dir"},
		{Workspace: "/no/such/dir/xyz"},
		{Workspace: "/etc/passwd"},
		{Workspace: t.TempDir(), ReadOnlyPaths: []string{"/no/such/path/xyz"}},
		{Workspace: t.TempDir(), Network: "bogus"},
		{Workspace: t.TempDir(), Limits: Limits{Processes: -1}},
	} {
		if sb, err := New(p); err == nil {
			sb.Close()
			t.Errorf("New(%+v) succeeded", p)
		}
	}
	sb, _ := newTestSandbox(t, nil)
	q := sb.Policy()
	if q.Limits.MemoryBytes != defaultMemoryBytes || q.Limits.Processes != defaultProcesses ||
		q.Limits.FileBytes != defaultFileBytes || q.Limits.OutputBytes != defaultOutputBytes ||
		q.Network != NetworkNone || len(q.Env) == 0 || len(q.SystemPaths) == 0 {
		t.Errorf("defaults not filled: %+v", q)
	}
	for _, s := range q.SystemPaths {
		if _, err := os.Stat(s); err != nil {
			t.Errorf("default system path %s does not exist but was kept", s)
		}
	}
}

func TestNoWorkspacePolicy(t *testing.T) {
	// Custom handlers declaring no file-system access run with no
	// workspace: they work in their private temp dir.
	sb, err := New(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	r := sh(t, sb, `[ "$PWD" = "$TMPDIR" ] && echo x > f && cat f`)
	if r.out != "x\n" {
		t.Errorf("no-workspace command: %v", r)
	}
}

func TestProbeAndEnforcement(t *testing.T) {
	c := Probe()
	if c.Kernel == "" || c.LandlockABI < 1 || !c.Seccomp {
		t.Fatalf("Probe on the test machine: %+v", c)
	}
	t.Logf("Probe: %+v", c)
	sb, _ := newTestSandbox(t, nil)
	e := sb.Enforcement()
	t.Logf("Enforcement: %+v", e)
	if e.LandlockABI != c.LandlockABI || !e.Seccomp || len(e.Missing) != 0 || e.NetworkMode != "none" {
		t.Errorf("Enforcement: %+v", e)
	}
	if e.Unprivileged != (os.Geteuid() != 0) {
		t.Errorf("Unprivileged = %v", e.Unprivileged)
	}
	// The test machines have what the read-only mounts need (root, or
	// user namespaces for uid 65534).
	if !c.ReadOnlyMounts || sb.mountNS == spawn.MountNone {
		t.Errorf("read-only mounts: probe %v, sandbox mode %d", c.ReadOnlyMounts, sb.mountNS)
	}
}

func TestLoopbackFailsClosedWithoutSupervisor(t *testing.T) {
	noServer := maskedHost(func(h *hostInfo) { h.notify = errors.New("test: no notification server") })
	_, err := newOnHost(Policy{Workspace: t.TempDir(), Network: NetworkLoopback}, noServer)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "address filtering for loopback/private networks needs seccomp user notification") {
		t.Errorf("New(loopback) without supervisor: %v", err)
	}
	// none without the server: less network, not more — connect(2) and
	// IP sockets refused outright, no own listeners.
	sbNone, err := newOnHost(Policy{Workspace: t.TempDir()}, noServer)
	if err != nil {
		t.Fatal(err)
	}
	defer sbNone.Close()
	if !sbNone.spec.DenyConnect || !strings.Contains(strings.Join(sbNone.Enforcement().Notes, "\n"), "connect(2) refused outright") {
		t.Errorf("none without the server: denyConnect %v, notes %q", sbNone.spec.DenyConnect, sbNone.Enforcement().Notes)
	}
	sb, err := newOnHost(Policy{Workspace: t.TempDir(), Network: NetworkPrivate, BestEffort: true}, noServer)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	e := sb.Enforcement()
	if e.NetworkMode != "none" || len(e.Missing) == 0 {
		t.Errorf("best effort without supervisor: %+v", e)
	}
}

func TestConcurrentRuns(t *testing.T) {
	sb, _ := newTestSandbox(t, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			st, err := sb.Run(context.Background(), &Command{Path: "/bin/sh",
				Args: []string{"sh", "-c", fmt.Sprintf("echo %d; sleep 0.05", i)}, Stdout: &out})
			if err != nil || st.Code != 0 || out.String() != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Sprintf("run %d: %v %+v %q", i, err, st, out.String())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestMechanisms runs the lifetime checks under every way of tracking the
// tree this machine can be made to use (cgroup v1 slots, a v2 directory
// per command, a PID namespace, no cgroup at all): the host with the
// facts that would choose another way taken away.
func TestMechanisms(t *testing.T) {
	requireRoot(t, "choosing the tracking mechanism (cgroups, PID namespaces) is a root-only choice here")
	for _, m := range []struct {
		name string
		edit func(*hostInfo)
	}{
		{"", func(*hostInfo) {}},
		{"v2", withV2Tracking},
		{"pidns", withoutCgroupTracking},
		{"nocgroup", withoutCgroups},
	} {
		t.Run("mech="+m.name, func(t *testing.T) {
			if m.name == "v2" && !host().cgWritable["v2"] {
				t.Skip("no writable cgroup v2 here: a v2 directory per command cannot be checked")
			}
			// A host whose tree only a controller-less v2 directory finds
			// has no process limit (no pids cgroup, no PID namespace):
			// that is the one thing its best effort goes without.
			p := Policy{Workspace: t.TempDir(), Limits: Limits{WallTime: 5 * time.Second, Processes: 400}, BestEffort: m.name == "v2"}
			sb, err := newOnHost(p, maskedHost(m.edit))
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			t.Logf("%+v", sb.Enforcement())
			if miss := sb.Enforcement().Missing; len(miss) > 1 || len(miss) == 1 && !strings.HasPrefix(miss[0], "process limit") {
				t.Fatalf("missing more than the process limit: %q", miss)
			}
			want := map[string]string{"v2": "process tree: cgroup v2", "pidns": "process tree: PID namespace", "nocgroup": "process tree: PID namespace"}[m.name]
			if want != "" && !slices.ContainsFunc(sb.Enforcement().Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
				t.Fatalf("the tree is not tracked by %q: %q", want, sb.Enforcement().Notes)
			}
			ws := sb.Policy().Workspace
			r := sh(t, sb, `( setsid bash -c 'echo $$ > daemon.pid; sleep 60' & ) ; `+waitPidFile+`; echo ok`)
			if r.out != "ok\n" {
				t.Errorf("run: %v", r)
			}
			assertGone(t, filepath.Join(ws, "daemon.pid"))
			r = sh(t, sb, "cat /etc/shadow")
			if r.st.Code == 0 {
				t.Errorf("read /etc/shadow: %v", r)
			}
		})
	}
}

// TestWaitWithBlockedWriter: a Stdout writer that never returns (an
// io.Pipe nobody reads) must not make Wait hang once the command is over.
func TestWaitWithBlockedWriter(t *testing.T) {
	saved := outputGrace
	outputGrace = 100 * time.Millisecond
	t.Cleanup(func() { outputGrace = saved })
	sb, _ := newTestSandbox(t, nil)
	pr, pw := io.Pipe()
	defer pr.Close()
	done := make(chan error, 1)
	go func() {
		st, err := sb.Run(context.Background(), &Command{Path: "/bin/echo", Args: []string{"echo", "hi"}, Stdout: pw})
		if err == nil && st.Code != 0 {
			err = fmt.Errorf("exit %d", st.Code)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return: a blocked output writer hangs Wait")
	}
}
