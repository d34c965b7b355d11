package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `lite-agent sandbox run` as a user runs it: the binary, a workspace that
// is also the working directory, a small environment with a secret-looking
// variable in it. These tests were the one-shot runner's (a C copy of the
// sandbox path, deleted); every property they proved of it is proved here
// of the one path there is. What only the runner had — its keyring plans,
// their HMAC, replay and fall-back rules — went with it; the keyring itself
// stays out of reach of every sandbox (the escape suite's add-key and
// keyctl rows).

type sbRig struct {
	t *testing.T
	// argv0 runs the CLI: the test's binary, or a wrapper such as
	// setpriv with its own arguments before the binary.
	argv0   []string
	ws      string // workspace, and the directory the CLI runs in
	outside string // a directory of the test's outside the workspace
	env     []string
}

func newSBRig(t *testing.T) *sbRig {
	r := &sbRig{t: t, argv0: []string{binary}, ws: t.TempDir(), outside: t.TempDir()}
	r.env = []string{
		"PATH=" + sysPATH,
		"HOME=" + r.outside, // unreadable inside: the command gets its temp dir
		"LANG=C.UTF-8",
		"FOO_TOKEN=s3cret-token", // looks like a secret: never passed by name
	}
	return r
}

type sbRun struct {
	code           int
	stdout, stderr string
}

func (p sbRun) String() string {
	return fmt.Sprintf("exit %d\nstdout: %q\nstderr: %q", p.code, p.stdout, p.stderr)
}

// run runs `sandbox run ARGS...` with stdin and returns how it ended.
func (r *sbRig) run(stdin string, args ...string) sbRun {
	r.t.Helper()
	argv := append(append(append([]string{}, r.argv0...), "sandbox", "run"), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.ws, r.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	res := sbRun{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.code = 128 + int(ws.Signal())
		}
	case err != nil:
		r.t.Fatalf("running the CLI: %v", err)
	}
	return res
}

// TestSandboxRunBehaves: exit codes, streams, stdin, the environment
// filter and the CLI's own lines are what `sandbox run -h` promises.
func TestSandboxRunBehaves(t *testing.T) {
	for _, c := range []struct {
		name   string
		stdin  string
		flags  []string
		script string
		code   int
		stdout string // exact
		stderr string // contained
	}{
		{"exit code and streams", "", nil, "echo out; echo err >&2; exit 3", 3, "out\n", "err\n"},
		{"killed by a signal", "", nil, "kill -9 $$", 137, "", ""},
		{"stdin passes through", "hello from stdin\n", nil, "cat; echo done", 0, "hello from stdin\ndone\n", ""},
		{"environment filtered", "", []string{"--env", "EXTRA=1"}, `echo "tok=${FOO_TOKEN-unset} lang=$LANG extra=$EXTRA"; case $TMPDIR in */lite-agent-sandbox-*) echo private-tmp;; esac; [ "$HOME" = "$TMPDIR" ] && echo home-is-tmp`,
			0, "tok=unset lang=C.UTF-8 extra=1\nprivate-tmp\nhome-is-tmp\n", ""},
		{"secret by name warned", "", []string{"--env", "FOO_TOKEN"}, `echo "tok=${FOO_TOKEN-unset}"`, 0, "tok=unset\n", "--env FOO_TOKEN looks like a secret"},
		{"output limit", "", []string{"--max-output", "10"}, "head -c 100 /dev/zero | tr '\\0' a", 0, "aaaaaaaaaa", "90 bytes of stdout/stderr were dropped"},
		{"timeout", "", []string{"--timeout", "1s"}, "sleep 30", 124, "", "timed out after 1s"},
		{"pipelines and tools", "", nil, "printf 'b\\na\\n' | sort | tr a-z A-Z; python3 -c 'print(6*7)'; git --version >/dev/null && echo git-ok", 0, "A\nB\n42\ngit-ok\n", ""},
		{"command not found", "", nil, "no-such-command-here", 127, "", "no-such-command-here"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newSBRig(t)
			args := append(append(append([]string{}, c.flags...), "--"), "bash", "-c", c.script)
			run := r.run(c.stdin, args...)
			if run.code != c.code || run.stdout != c.stdout || !strings.Contains(run.stderr, c.stderr) {
				t.Errorf("got %v\nwant exit %d, stdout %q, stderr containing %q", run, c.code, c.stdout, c.stderr)
			}
		})
	}
	t.Run("program not found", func(t *testing.T) {
		if run := newSBRig(t).run("", "--", "./no-such-program"); run.code != 127 {
			t.Errorf("a missing program: %v; want 127", run)
		}
	})
}

// TestSandboxRunConfines: one script of attacks on what the sandbox run
// prepares (its Landlock ruleset, its seccomp programs, its connect
// supervisor, its mount namespace): each works unconfined and fails
// through `sandbox run`, while a unix socket inside the workspace stays
// reachable, from the main thread and from another one.
func TestSandboxRunConfines(t *testing.T) {
	r := newSBRig(t)
	secret := filepath.Join(r.outside, "id_rsa")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A TCP listener on loopback and two unix sockets, one outside the
	// workspace and one inside: only the inside one may be reached.
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	// No accept loop: a loopback connect completes into the accept queue
	// before connect() returns, so after a run the queue holds every
	// connection it made.
	queued := func(wait time.Duration) int {
		n := 0
		for {
			tcp.(*net.TCPListener).SetDeadline(time.Now().Add(wait))
			c, err := tcp.Accept()
			if err != nil {
				return n
			}
			c.Close()
			n++
		}
	}
	outSock, inSock := filepath.Join(r.outside, "agent.sock"), filepath.Join(r.ws, "app.sock")
	for _, p := range []string{outSock, inSock} {
		serveHi(t, p)
	}
	port := tcp.Addr().(*net.TCPAddr).Port
	escapeTarget := filepath.Join(r.outside, "written")
	// A file of the test's outside the workspace: its mode and times are
	// metadata Landlock does not govern; the read-only mounts refuse them.
	metaTarget := filepath.Join(r.outside, "meta")
	if err := os.WriteFile(metaTarget, []byte("m"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The script ends with a line that only a completed run prints, so
	// that an attack "not seen" is not a script that stopped early.
	script := fmt.Sprintf(`
cat %[1]s && echo READ-SECRET
echo x > %[2]s && echo WROTE-OUTSIDE
chmod 0600 %[6]s && echo CHMODDED-OUTSIDE
touch -d '2001-02-03' %[6]s && echo TOUCHED-OUTSIDE
(exec 3<>/dev/tcp/127.0.0.1/%[3]d) 2>/dev/null && echo TCP-CONNECTED
python3 - <<'PY'
import socket
for name, path in (("outside", %[4]q), ("inside", %[5]q)):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path); print("UNIX-" + name.upper() + "-CONNECTED", s.recv(2).decode())
    except OSError as e:
        print("unix", name, "refused:", e.strerror)
# The same from a thread that is not the leader (as Go's dialer and libuv
# connect): the notification names the thread, not the process.
import threading
def from_thread():
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(%[5]q); print("THREAD-UNIX-INSIDE-CONNECTED", s.recv(2).decode())
    except OSError as e:
        print("unix from a thread refused:", e.strerror)
t = threading.Thread(target=from_thread); t.start(); t.join()
PY
unshare -r true 2>/dev/null && echo UNSHARED
echo SCRIPT-DONE
exit 0
`, secret, escapeTarget, port, outSock, inSock, metaTarget)

	// Unconfined, every attack works: the test proves something. (unshare
	// -r may be refused on a host without user namespaces: not required.)
	base := exec.Command("bash", "-c", script)
	base.Dir, base.Env = r.ws, r.env
	baseOut, _ := base.CombinedOutput()
	for _, want := range []string{"READ-SECRET", "WROTE-OUTSIDE", "CHMODDED-OUTSIDE", "TOUCHED-OUTSIDE", "TCP-CONNECTED", "UNIX-OUTSIDE-CONNECTED", "UNIX-INSIDE-CONNECTED", "THREAD-UNIX-INSIDE-CONNECTED", "SCRIPT-DONE"} {
		if !strings.Contains(string(baseOut), want) {
			t.Errorf("unconfined, %s did not happen, so the confined run would prove nothing:\n%s", want, baseOut)
		}
	}
	if n := queued(time.Second); n != 1 {
		t.Errorf("unconfined, %d TCP connections queued, want 1", n)
	}
	os.Remove(escapeTarget)
	os.Chmod(metaTarget, 0o644)

	run := r.run("", "--", "bash", "-c", script)
	out := run.stdout + run.stderr
	if !strings.Contains(run.stdout, "SCRIPT-DONE") {
		t.Fatalf("the confined script did not run to its end: %v", run)
	}
	for _, bad := range []string{"READ-SECRET", "PRIVATE KEY", "WROTE-OUTSIDE", "CHMODDED-OUTSIDE", "TOUCHED-OUTSIDE", "TCP-CONNECTED", "UNIX-OUTSIDE-CONNECTED", "UNSHARED"} {
		if strings.Contains(out, bad) {
			t.Errorf("through sandbox run, %s happened:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "UNIX-INSIDE-CONNECTED hi") {
		t.Errorf("through sandbox run, a unix socket inside the workspace was not reachable:\n%s", out)
	}
	if !strings.Contains(out, "THREAD-UNIX-INSIDE-CONNECTED hi") {
		t.Errorf("through sandbox run, a unix socket inside the workspace was not reachable from a thread:\n%s", out)
	}
	if _, err := os.Stat(escapeTarget); err == nil {
		t.Errorf("through sandbox run, a file outside the workspace was written")
	}
	// The confined TCP connect was refused, or it would be queued now.
	if n := queued(100 * time.Millisecond); n != 0 {
		t.Errorf("through sandbox run, %d TCP connections reached the loopback listener", n)
	}
}

// TestSandboxRunEndsTheTree: a daemon that setsid'd away dies with the
// command, on a normal end and on a timeout; the process limit and the
// memory limit hold and are reported.
func TestSandboxRunEndsTheTree(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
		tail  string
		code  int
	}{
		{"main exits", nil, "exit 0", 0},
		{"timeout", []string{"--timeout", "1s"}, "sleep 30", 124},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newSBRig(t)
			pidFile := filepath.Join(r.ws, "daemon.pid")
			// The pid file is written before the main process goes on.
			script := fmt.Sprintf("setsid sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300' </dev/null >/dev/null 2>&1 & until [ -e %s ]; do sleep 0.05; done; %s", pidFile, pidFile, pidFile, pidFile, c.tail)
			run := r.run("", append(append(append([]string{}, c.flags...), "--"), "bash", "-c", script)...)
			if run.code != c.code {
				t.Errorf("exit %d, want %d: %v", run.code, c.code, run)
			}
			b, err := os.ReadFile(pidFile)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 {
				t.Fatalf("the daemon did not start: %v %v", err, run)
			}
			if procRunning(pid) {
				t.Errorf("the daemon %d outlived the command", pid)
				syscall.Kill(pid, syscall.SIGKILL) // ours: the test started it
			}
		})
	}
	t.Run("limits", func(t *testing.T) {
		r := newSBRig(t)
		run := r.run("", "--max-procs", "20", "--", "bash", "-c", "for i in $(seq 40); do sleep 2 & done 2>/dev/null; wait; echo finished")
		if os.Geteuid() == 0 && !strings.Contains(run.stderr, "hit the process limit (20)") {
			t.Errorf("no process-limit report: %v", run)
		}
		run = r.run("", "--max-memory", "64M", "--", "python3", "-c", "x = bytearray(400 << 20); print('allocated')")
		if strings.Contains(run.stdout, "allocated") || run.code == 0 {
			t.Errorf("400 MiB under a 64 MiB limit: %v", run)
		}
	})
}

// TestSandboxRunIsNotHeldUp: a command that blocks in a connect the
// supervisor answers (a listener whose backlog is full), or whose output
// nobody reads, cannot hold off the timeout; a reader that goes away ends
// the run with SIGPIPE.
func TestSandboxRunIsNotHeldUp(t *testing.T) {
	t.Run("blocked connect", func(t *testing.T) {
		r := newSBRig(t)
		script := `
import socket
l = socket.socket(socket.AF_UNIX); l.bind("full.sock"); l.listen(0)
cs = []
for i in range(4):
    c = socket.socket(socket.AF_UNIX); c.connect("full.sock"); cs.append(c)
print("never: every connect went through")
`
		start := time.Now()
		run := r.run("", "--timeout", "2s", "--", "python3", "-c", script)
		if d := time.Since(start); run.code != 124 || d > 20*time.Second {
			t.Errorf("a connect blocked on a full backlog: exit %d after %v, want 124 at the 2 s timeout: %v", run.code, d, run)
		}
	})
	t.Run("reader stalls", func(t *testing.T) {
		// Our stdout is a pipe nobody reads for 6 s: the CLI still ends
		// within its grace after the timeout, not when the reader wakes.
		r := newSBRig(t)
		sh := fmt.Sprintf(`s=$(date +%%s%%N); { %s sandbox run --timeout 1s -- head -c 300000 /dev/zero; echo "cli-exit $? after $(( ($(date +%%s%%N) - s) / 1000000 )) ms" >&2; } | (sleep 6; cat >/dev/null)`, binary)
		cmd := exec.Command("bash", "-c", sh)
		cmd.Dir, cmd.Env = r.ws, r.env
		out, _ := cmd.CombinedOutput()
		code, ms := -1, -1
		if i := strings.Index(string(out), "cli-exit"); i >= 0 {
			fmt.Sscanf(string(out[i:]), "cli-exit %d after %d ms", &code, &ms)
		}
		// 1 s timeout + the grace for a stuck output copy.
		if ms < 0 || ms > 5500 || code != 124 {
			t.Errorf("a stalled reader held sandbox run: %s", out)
		}
	})
	t.Run("reader goes away", func(t *testing.T) {
		r := newSBRig(t)
		// yes(1) writes for ever; head reads one line and leaves.
		sh := fmt.Sprintf(`%s sandbox run -- yes | head -1; echo "status ${PIPESTATUS[0]}"`, binary)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", sh)
		cmd.Dir, cmd.Env = r.ws, r.env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "status 141") || time.Since(start) > 20*time.Second {
			t.Errorf("%v after %v:\n%s\nwant the CLI killed by SIGPIPE (141) at once", err, time.Since(start), out)
		}
	})
}

// TestSandboxRunHygiene: closed standard streams do not become the
// command's other descriptors; the command starts with no signal ignored
// even when the CLI was started with some ignored; a temp tree deeper than
// a naive walk goes is removed.
func TestSandboxRunHygiene(t *testing.T) {
	r := newSBRig(t)
	// The command lists its open descriptors above 2 (/proc/self/fd is
	// not readable inside: fstat each).
	list := `import os
def isopen(n):
    try:
        os.fstat(n); return True
    except OSError:
        return False
open("fds", "w").write("fds:" + " ".join(str(n) for n in range(0, 256) if isopen(n)))`
	cmd := exec.Command("bash", "-c", binary+" sandbox run -- python3 -c '"+list+"' 1>&- 2>&-")
	cmd.Dir, cmd.Env = r.ws, r.env
	if err := cmd.Run(); err != nil {
		t.Errorf("with stdout and stderr closed: %v", err)
	}
	// 0-2 are the command's streams (the sandbox gives it /dev/null for a
	// closed one) and 3 is Python's own open("fds"): anything above came
	// from the CLI.
	fds, _ := os.ReadFile(filepath.Join(r.ws, "fds"))
	if got := strings.Fields(strings.TrimPrefix(string(fds), "fds:")); !strings.HasPrefix(string(fds), "fds:") || len(got) > 4 || len(got) > 0 && got[len(got)-1] != "3" {
		t.Errorf("with stdout and stderr closed, the command holds descriptors %q (want 0-2 and its own file)", fds)
	}

	// Started with SIGINT and SIGQUIT ignored (as under nohup or `&`).
	sh := fmt.Sprintf(`trap '' INT QUIT; %s sandbox run -- bash -c 'kill -INT $$; echo survived'; echo "status $?"`, binary)
	cmd = exec.Command("bash", "-c", sh)
	cmd.Dir, cmd.Env = r.ws, r.env
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "survived") || !strings.Contains(string(out), "status 130") {
		t.Errorf("the command inherited an ignored SIGINT:\n%s", out)
	}

	deep := `cd "$TMPDIR" && for i in $(seq 300); do mkdir d && cd d || exit 1; done && echo $TMPDIR`
	run := r.run("", "--", "bash", "-c", deep)
	tmp := strings.TrimSpace(run.stdout)
	if run.code != 0 || tmp == "" {
		t.Fatalf("deep tree: %v", run)
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("a 300-level temp tree was left at %s", tmp)
		os.RemoveAll(tmp)
	}
}

// TestSandboxRunUnprivileged: as a user without a writable cgroup (nobody
// here) the tree is a PID namespace in a user namespace under our init:
// the secret stays unreadable, `kill $$` ends the command as in a shell,
// a setsid'd daemon dies with it, the timeout and a missing program are
// reported as for root.
func TestSandboxRunUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot become nobody; this would have checked sandbox run's confinement and reports as uid 65534")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed: this would have run sandbox run as uid 65534")
	}
	r := newSBRig(t)
	os.Chmod(filepath.Dir(r.ws), 0o755)
	if err := os.Chown(r.ws, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(r.outside, "id_rsa")
	os.WriteFile(secret, []byte("PRIVATE KEY"), 0o644) // readable by nobody, unconfined
	// A copy of the binary nobody can execute (the test's build dir may
	// not be reachable for it).
	bin := filepath.Join(r.ws, "..", "lite-agent-nobody")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	r.argv0 = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin}
	// The daemon's pid is the namespace's: find it by a unique argument.
	mark := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000)
	script := fmt.Sprintf("cat %s && echo READ-SECRET; setsid sleep %s & echo out; kill $$; echo not-reached", secret, mark)
	run := r.run("", "--timeout", "1s", "--", "bash", "-c", script)
	if run.code != 143 || strings.Contains(run.stdout, "READ-SECRET") || strings.Contains(run.stdout, "not-reached") || !strings.Contains(run.stdout, "out") {
		t.Errorf("want the secret unreadable and `kill $$` to end bash (143): %v", run)
	}
	// The tree is killed before the CLI exits; a process found now is
	// one that outlived it (waitGone gives a zombie's reaping time).
	for _, pid := range processesMatching(func(cmdline, _ string) bool { return strings.Contains(cmdline, mark) }) {
		waitGone(t, pid, "the daemon")
	}
	if run := r.run("", "--timeout", "1s", "--", "sleep", "30"); run.code != 124 || !strings.Contains(run.stderr, "timed out after 1s") {
		t.Errorf("timeout: %v", run)
	}
	if run := r.run("", "--timeout", "1s", "--", "./no-such-program"); run.code != 127 {
		t.Errorf("a missing program: %v; want 127", run)
	}
	// The namespace's init reports the command's exit status through a
	// pipe; the command must not reach that pipe (through the init's
	// /proc/pid/1/fd links) and forge "X0" after failing.
	forge := `for f in /proc/pid/1/fd/*; do printf 'X0\n' 2>/dev/null > "$f" && echo forged-through-$f; done; exit 3`
	if run := r.run("", "--timeout", "5s", "--", "bash", "-c", forge); run.code != 3 || strings.Contains(run.stdout, "forged") {
		t.Errorf("a command writing to its init's descriptors: %v; want exit 3 and no descriptor written", run)
	}
}

// TestSandboxRunProcSelfRoot: --allow-write /proc/self/root does not make
// every unix socket reachable.
func TestSandboxRunProcSelfRoot(t *testing.T) {
	r := newSBRig(t)
	sock := filepath.Join(r.outside, "outside.sock")
	serveHi(t, sock)
	script := fmt.Sprintf(`import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(%q); print("CONNECTED", s.recv(2).decode())
except OSError as e:
    print("refused:", e.strerror)`, sock)
	// Unconfined it connects: the test proves something.
	if out, _ := exec.Command("python3", "-c", script).CombinedOutput(); !strings.Contains(string(out), "CONNECTED hi") {
		t.Fatalf("unconfined, the socket was not reachable, so the confined run would prove nothing: %s", out)
	}
	run := r.run("", "--allow-write", "/proc/self/root", "--", "python3", "-c", script)
	if strings.Contains(run.stdout, "CONNECTED") || !strings.Contains(run.stdout, "refused") {
		t.Errorf("a socket outside the workspace was reached through /proc/self/root (or the script did not run): %v", run)
	}
}

// serveHi listens on the unix socket path and answers every connection
// with "hi", until the test ends.
func serveHi(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
}
