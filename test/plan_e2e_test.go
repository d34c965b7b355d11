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
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The one-shot runner of `lite-agent sandbox run` (sandbox/fastpath_linux.c)
// runs a plan the Go path stored, without starting Go. These tests run each
// case three ways — the Go path (LITE_AGENT_SANDBOX_PLANS=off), a warm-up
// that stores the plan, and the runner — and require the runner to behave
// as the Go path does (exit code, stdout, stderr) and to confine as it does.

type planRig struct {
	t *testing.T
	// argv0 runs the CLI: the test's binary, or a wrapper such as
	// setpriv with its own arguments before the binary.
	argv0   []string
	ws      string // workspace, and the directory the CLI runs in
	outside string // a directory of the test's outside the workspace
	trace   string
	env     []string
}

func newPlanRig(t *testing.T) *planRig {
	r := &planRig{t: t, argv0: []string{binary}, ws: t.TempDir(), outside: t.TempDir()}
	r.trace = filepath.Join(t.TempDir(), "trace")
	r.env = []string{
		"PATH=" + sysPATH,
		"HOME=" + r.outside, // unreadable inside: the command gets its temp dir
		"LANG=C.UTF-8",
		"FOO_TOKEN=s3cret-token", // looks like a secret: never passed by name
		"LITE_AGENT_SANDBOX_TRACE=" + r.trace,
	}
	return r
}

type planRun struct {
	code           int
	stdout, stderr string
	trace          []string
}

func (r *planRig) run(extraEnv []string, stdin string, args ...string) planRun {
	r.t.Helper()
	os.Remove(r.trace)
	argv := append(append(append([]string{}, r.argv0...), "sandbox", "run"), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = r.ws
	cmd.Env = append(append([]string{}, r.env...), extraEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	res := planRun{stdout: out.String(), stderr: errb.String()}
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
	b, _ := os.ReadFile(r.trace)
	res.trace = strings.Split(strings.TrimSpace(string(b)), "\n")
	forgetPlans(r.t, res.trace)
	return res
}

// forgetPlans removes, when the test ends, the plans a run traced as
// stored (in this user's keyring): tests must not leave hundreds of them
// there for an hour.
func forgetPlans(t *testing.T, trace []string) {
	for _, l := range trace {
		if key, ok := strings.CutPrefix(l, "stored "); ok {
			t.Cleanup(func() {
				if id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", key, 0); err == nil {
					unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0)
				}
			})
		}
	}
}

func (p planRun) path() string {
	for _, l := range p.trace {
		if l == "fast" {
			return "fast"
		}
	}
	return "go"
}

func (p planRun) String() string {
	return fmt.Sprintf("exit %d, trace %q\nstdout: %q\nstderr: %q", p.code, p.trace, p.stdout, p.stderr)
}

// both runs args through the Go path and through the runner (after a
// warm-up with the same flags) and returns the two results.
func (r *planRig) both(stdin string, flags []string, command ...string) (goRun, fastRun planRun) {
	r.t.Helper()
	args := append(append(append([]string{}, flags...), "--"), command...)
	goRun = r.run([]string{"LITE_AGENT_SANDBOX_PLANS=off"}, stdin, args...)
	if goRun.path() != "go" {
		r.t.Fatalf("LITE_AGENT_SANDBOX_PLANS=off still ran a plan: %v", goRun)
	}
	warm := r.run(nil, "", append(append(append([]string{}, flags...), "--"), "true")...)
	stored := false
	for _, l := range warm.trace {
		if strings.HasPrefix(l, "stored ") {
			stored = true
		}
		if strings.HasPrefix(l, "not-stored: ") {
			r.t.Skipf("no one-shot plan for this machine's sandbox shape (%s): the runner is not used here; this would have compared it with the Go path", l)
		}
	}
	if warm.code != 0 || !stored {
		r.t.Fatalf("warm-up: %v", warm)
	}
	fastRun = r.run(nil, stdin, args...)
	if fastRun.path() != "fast" {
		r.t.Fatalf("the stored plan was not run: %v", fastRun)
	}
	return goRun, fastRun
}

// sameAsGo requires the runner's result to be the Go path's.
func sameAsGo(t *testing.T, goRun, fastRun planRun) {
	t.Helper()
	if goRun.code != fastRun.code || goRun.stdout != fastRun.stdout || goRun.stderr != fastRun.stderr {
		t.Errorf("the runner differs from the Go path\ngo:   %v\nfast: %v", goRun, fastRun)
	}
}

func requirePlanRunner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the one-shot runner takes the v1-cgroup shape the sandbox has as root here; as another user the Go path runs (covered by the escape suite)")
	}
}

func TestPlanRunnerBehavesLikeTheGoPath(t *testing.T) {
	requirePlanRunner(t)
	for _, c := range []struct {
		name   string
		stdin  string
		flags  []string
		script string
	}{
		{"exit code and streams", "", nil, "echo out; echo err >&2; exit 3"},
		{"killed by a signal", "", nil, "kill -9 $$"},
		{"stdin passes through", "hello from stdin\n", nil, "cat; echo done"},
		{"environment filtered", "", []string{"--env", "EXTRA=1"}, `echo "tok=${FOO_TOKEN-unset} lang=$LANG extra=$EXTRA"; case $TMPDIR in */lite-agent-sandbox-*) echo private-tmp;; esac; [ "$HOME" = "$TMPDIR" ] && echo home-is-tmp`},
		{"secret by name warned", "", []string{"--env", "FOO_TOKEN"}, `echo "tok=${FOO_TOKEN-unset}"`},
		{"output limit", "", []string{"--max-output", "10"}, "head -c 100 /dev/zero | tr '\\0' a"},
		{"timeout", "", []string{"--timeout", "1s"}, "sleep 30"},
		{"pipelines and tools", "", nil, "printf 'b\\na\\n' | sort | tr a-z A-Z; python3 -c 'print(6*7)'; git --version >/dev/null && echo git-ok"},
		{"command not found", "", nil, "no-such-command-here"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newPlanRig(t)
			goRun, fastRun := r.both(c.stdin, c.flags, "bash", "-c", c.script)
			sameAsGo(t, goRun, fastRun)
			t.Logf("%v", fastRun)
		})
	}
}

// TestPlanRunnerConfines: the attacks the runner's parts are responsible
// for (its Landlock ruleset, its seccomp programs, its connect supervisor,
// its process tree, its keyring) fail through it, and work unconfined.
func TestPlanRunnerConfines(t *testing.T) {
	requirePlanRunner(t)
	r := newPlanRig(t)
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
	tcpConns := make(chan struct{}, 10)
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			tcpConns <- struct{}{}
			c.Close()
		}
	}()
	outSock, inSock := filepath.Join(r.outside, "agent.sock"), filepath.Join(r.ws, "app.sock")
	for _, p := range []string{outSock, inSock} {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
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
	port := tcp.Addr().(*net.TCPAddr).Port
	escapeTarget := filepath.Join(r.outside, "written")
	// A file of the test's outside the workspace: its mode and times are
	// metadata Landlock does not govern; the read-only mounts refuse them.
	metaTarget := filepath.Join(r.outside, "meta")
	if err := os.WriteFile(metaTarget, []byte("m"), 0o644); err != nil {
		t.Fatal(err)
	}
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
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
# add_key("user", ...) into the user keyring, where plans live
r = libc.syscall(248, b"user", b"lite-agent-test:planned", b"x", 1, ctypes.c_int(-4))
print("KEYRING-WRITTEN" if r >= 0 else "keyring refused: errno %%d" %% ctypes.get_errno())
PY
unshare -r true 2>/dev/null && echo UNSHARED
exit 0
`, secret, escapeTarget, port, outSock, inSock, metaTarget)

	// Unconfined, every attack works: the test proves something.
	base := exec.Command("bash", "-c", script)
	base.Dir, base.Env = r.ws, r.env
	baseOut, _ := base.CombinedOutput()
	for _, want := range []string{"READ-SECRET", "WROTE-OUTSIDE", "CHMODDED-OUTSIDE", "TOUCHED-OUTSIDE", "TCP-CONNECTED", "UNIX-OUTSIDE-CONNECTED", "UNIX-INSIDE-CONNECTED", "THREAD-UNIX-INSIDE-CONNECTED", "KEYRING-WRITTEN"} {
		if !strings.Contains(string(baseOut), want) {
			t.Errorf("unconfined, %s did not happen, so the confined run would prove nothing:\n%s", want, baseOut)
		}
	}
	// The test's own key, made by the unconfined run: remove it.
	if id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", "lite-agent-test:planned", 0); err == nil {
		unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0)
	}
	os.Remove(escapeTarget)
	os.Chmod(metaTarget, 0o644)
	drain := func() int {
		n := 0
		for {
			select {
			case <-tcpConns:
				n++
			case <-time.After(50 * time.Millisecond):
				return n
			}
		}
	}
	drain()

	goRun, fastRun := r.both("", nil, "bash", "-c", script)
	for _, bad := range []string{"CHMODDED-OUTSIDE", "TOUCHED-OUTSIDE"} {
		if strings.Contains(goRun.stdout, bad) {
			t.Errorf("through the Go path, %s happened:\n%s", bad, goRun.stdout)
		}
	}
	out := fastRun.stdout + fastRun.stderr
	for _, bad := range []string{"READ-SECRET", "PRIVATE KEY", "WROTE-OUTSIDE", "CHMODDED-OUTSIDE", "TOUCHED-OUTSIDE", "TCP-CONNECTED", "UNIX-OUTSIDE-CONNECTED", "KEYRING-WRITTEN", "UNSHARED"} {
		if strings.Contains(out, bad) {
			t.Errorf("through the runner, %s happened:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "UNIX-INSIDE-CONNECTED hi") {
		t.Errorf("through the runner, a unix socket inside the workspace was not reachable:\n%s", out)
	}
	if !strings.Contains(out, "THREAD-UNIX-INSIDE-CONNECTED hi") {
		t.Errorf("through the runner, a unix socket inside the workspace was not reachable from a thread:\n%s", out)
	}
	if _, err := os.Stat(escapeTarget); err == nil {
		t.Errorf("through the runner, a file outside the workspace was written")
	}
	if n := drain(); n != 0 {
		t.Errorf("through the runner, %d TCP connections reached the loopback listener", n)
	}
	t.Logf("%v", fastRun)
}

// TestPlanRunnerEndsTheTree: a daemon that setsid'd away dies with the
// command, on a normal end and on a timeout; the process limit and the
// memory limit hold and are reported as the Go path reports them.
func TestPlanRunnerEndsTheTree(t *testing.T) {
	requirePlanRunner(t)
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
			r := newPlanRig(t)
			pidFile := filepath.Join(r.ws, "daemon.pid")
			script := fmt.Sprintf("setsid sh -c 'echo $$ > %s; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.3; %s", pidFile, c.tail)
			_, fastRun := r.both("", c.flags, "bash", "-c", script)
			if fastRun.code != c.code {
				t.Errorf("exit %d, want %d: %v", fastRun.code, c.code, fastRun)
			}
			b, err := os.ReadFile(pidFile)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 {
				t.Fatalf("the daemon did not start: %v %v", err, fastRun)
			}
			if alive(pid, "sleep") {
				unix.Kill(pid, unix.SIGKILL) // ours: the test started it
				t.Errorf("the daemon %d outlived the command", pid)
			}
		})
	}
	t.Run("limits", func(t *testing.T) {
		r := newPlanRig(t)
		goRun, fastRun := r.both("", []string{"--max-procs", "20"}, "bash", "-c", "for i in $(seq 40); do sleep 2 & done 2>/dev/null; wait; echo finished")
		for _, run := range []planRun{goRun, fastRun} {
			if !strings.Contains(run.stderr, "hit the process limit (20)") {
				t.Errorf("%s: no process-limit report: %v", run.path(), run)
			}
		}
		goRun, fastRun = r.both("", []string{"--max-memory", "64M"}, "python3", "-c", "x = bytearray(400 << 20); print('allocated')")
		for _, run := range []planRun{goRun, fastRun} {
			if strings.Contains(run.stdout, "allocated") || run.code == 0 {
				t.Errorf("%s: 400 MiB under a 64 MiB limit: %v", run.path(), run)
			}
		}
		if goRun.code != fastRun.code || goRun.stderr != fastRun.stderr {
			t.Errorf("memory limit: the runner differs from the Go path\ngo:   %v\nfast: %v", goRun, fastRun)
		}
	})
}

// alive reports whether pid is a live (not zombie) process running name,
// waiting up to a second for it to go.
func alive(pid int, name string) bool {
	for i := 0; i < 20; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || !strings.Contains(string(b), "("+name+")") || regexp.MustCompile(`\) Z `).Match(b) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// TestPlanRunnerFallsBack: a plan is used only for exactly its invocation;
// anything else, and a plan that does not parse, takes the Go path, which
// then stores a fresh plan.
func TestPlanRunnerFallsBack(t *testing.T) {
	requirePlanRunner(t)
	r := newPlanRig(t)
	r.both("", nil, "true")
	key := ""
	warm := r.run(nil, "", "--", "true") // the plan is there: this one is fast
	if warm.path() != "fast" {
		t.Fatalf("second run with the same flags: %v", warm)
	}
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"a variable the plan depends on", []string{"LANG=C"}, []string{"--", "true"}},
		{"PWD, which names the working directory", []string{"PWD=" + r.outside}, []string{"--", "true"}},
		{"another flag", nil, []string{"--max-output", "1M", "--", "true"}},
	} {
		// The rig's env has LANG=C.UTF-8; a later entry does not
		// override an earlier one for getenv, so replace it.
		env := r.env
		if len(c.env) > 0 {
			r.env = replaceEnv(r.env, c.env[0])
		}
		run := r.run(nil, "", c.args...)
		r.env = env
		if run.path() != "go" || run.code != 0 {
			t.Errorf("%s changed: %v; want the Go path", c.name, run)
		}
		for _, l := range run.trace {
			if strings.HasPrefix(l, "stored ") && c.name == "another flag" {
				key = strings.TrimPrefix(l, "stored ")
			}
		}
	}
	// Each of those stored its own plan under the key of "--": the rig's
	// environment stores it back. Then unrelated variables (hyperfine
	// varies one per run) do not matter.
	r.run(nil, "", "--", "true")
	if run := r.run([]string{"HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET=xxxx"}, "", "--", "true"); run.path() != "fast" {
		t.Errorf("an unrelated variable made the plan unusable: %v", run)
	}

	// A corrupt plan under the right key: the Go path, which replaces it.
	if key == "" {
		t.Fatal("no key traced for --max-output 1M")
	}
	for _, garbage := range [][]byte{[]byte("not a plan"), []byte("LAPLAN1\n\x05\x00\xff\xff\xff\xff")} {
		if _, err := unix.AddKey("user", key, garbage, unix.KEY_SPEC_USER_KEYRING); err != nil {
			t.Fatal(err)
		}
		run := r.run(nil, "", "--max-output", "1M", "--", "bash", "-c", "echo works")
		if run.path() != "go" || run.code != 0 || run.stdout != "works\n" {
			t.Errorf("corrupt plan %q: %v; want the Go path to run the command", garbage, run)
		}
		if run := r.run(nil, "", "--max-output", "1M", "--", "true"); run.path() != "fast" {
			t.Errorf("after a corrupt plan, the Go path did not store a fresh one: %v", run)
		}
	}
}

func replaceEnv(env []string, kv string) []string {
	name, _, _ := strings.Cut(kv, "=")
	out := []string{}
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return append(out, kv)
}

// TestPlanRunnerIsNotHeldUp: a command that blocks in a connect the runner
// makes for it (a listener whose backlog is full), or whose output nobody
// reads, cannot hold off the timeout; a reader that goes away ends the
// run as it ends the Go path (SIGPIPE), without leaving anything behind.
func TestPlanRunnerIsNotHeldUp(t *testing.T) {
	requirePlanRunner(t)
	t.Run("blocked connect", func(t *testing.T) {
		r := newPlanRig(t)
		script := `
import os, socket
if os.path.exists("full.sock"): os.remove("full.sock")  # the Go path's run made it
l = socket.socket(socket.AF_UNIX); l.bind("full.sock"); l.listen(0)
cs = []
for i in range(4):
    c = socket.socket(socket.AF_UNIX); c.connect("full.sock"); cs.append(c)
print("never: every connect went through")
`
		start := time.Now()
		_, fastRun := r.both("", []string{"--timeout", "2s"}, "python3", "-c", script)
		if d := time.Since(start); fastRun.code != 124 || d > 20*time.Second {
			t.Errorf("a connect blocked on a full backlog: exit %d after %v, want 124 at the 2 s timeout: %v", fastRun.code, d, fastRun)
		}
	})
	t.Run("reader stalls", func(t *testing.T) {
		// Our stdout is a pipe nobody reads for 6 s: the command ends
		// (its output is gone into the pipe or is pending), and the CLI
		// still ends within its grace, not when the reader wakes up.
		r := newPlanRig(t)
		for i := range 2 {
			os.Remove(r.trace)
			sh := fmt.Sprintf(`s=$(date +%%s%%N); { %s sandbox run --timeout 1s -- head -c 300000 /dev/zero; echo "cli-exit $? after $(( ($(date +%%s%%N) - s) / 1000000 )) ms" >&2; } | (sleep 6; cat >/dev/null)`, binary)
			cmd := exec.Command("bash", "-c", sh)
			cmd.Dir, cmd.Env = r.ws, r.env
			out, _ := cmd.CombinedOutput()
			if i == 0 {
				tr, _ := os.ReadFile(r.trace)
				forgetPlans(t, strings.Split(string(tr), "\n"))
				continue // stores the plan (through the same shell)
			}
			tr, _ := os.ReadFile(r.trace)
			code, ms := -1, -1
			if i := strings.Index(string(out), "cli-exit"); i >= 0 {
				fmt.Sscanf(string(out[i:]), "cli-exit %d after %d ms", &code, &ms)
			}
			// 1 s timeout + 2 s grace for the stuck forwarder.
			if !strings.HasPrefix(string(tr), "fast\n") || ms < 0 || ms > 4500 || code != 124 {
				t.Errorf("a stalled reader held the runner: trace %q, %s", tr, out)
			}
		}
	})
	t.Run("reader goes away", func(t *testing.T) {
		r := newPlanRig(t)
		tmpList := filepath.Join(r.ws, "tmpdir")
		// yes(1) writes for ever; head reads one line and leaves.
		// Plans off; then on twice: the first run (through the same
		// shell, which adds PWD to the environment) stores the plan the
		// second runs.
		for i, plans := range []string{"off", "on", "on"} {
			os.Remove(r.trace)
			sh := fmt.Sprintf(`%s sandbox run -- bash -c 'echo $TMPDIR > %s; exec yes' | head -1; echo "status ${PIPESTATUS[0]}"`,
				binary, tmpList)
			if plans == "off" {
				sh = "LITE_AGENT_SANDBOX_PLANS=off " + sh
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", sh)
			cmd.Dir, cmd.Env = r.ws, r.env
			start := time.Now()
			out, err := cmd.CombinedOutput()
			tr, _ := os.ReadFile(r.trace)
			forgetPlans(t, strings.Split(string(tr), "\n"))
			if err != nil || !strings.Contains(string(out), "status 141") || time.Since(start) > 20*time.Second {
				t.Errorf("plans %s: %v after %v, trace %q:\n%s\nwant the CLI killed by SIGPIPE (141) at once", plans, err, time.Since(start), tr, out)
			}
			if i < 2 {
				continue
			}
			if !strings.HasPrefix(string(tr), "fast\n") {
				t.Errorf("plans on: the runner did not run (trace %q)", tr)
			}
			{
				// The runner cleans up before it dies (the Go path
				// cannot: SIGPIPE ends it mid-run).
				d, _ := os.ReadFile(tmpList)
				if tmp := strings.TrimSpace(string(d)); tmp == "" {
					t.Errorf("the command did not report its TMPDIR")
				} else if _, err := os.Stat(tmp); err == nil {
					t.Errorf("the runner left %s behind", tmp)
				}
			}
		}
	})
}

// TestPlanRunnerHygiene: closed standard streams take the Go path; the
// command starts with no signal ignored, as in the Go path; a temp tree
// deeper than the runner walks is removed.
func TestPlanRunnerHygiene(t *testing.T) {
	requirePlanRunner(t)
	r := newPlanRig(t)
	r.both("", nil, "true")
	cmd := exec.Command("bash", "-c", binary+" sandbox run -- true 1>&- 2>&-")
	cmd.Dir, cmd.Env = r.ws, r.env
	os.Remove(r.trace)
	if err := cmd.Run(); err != nil {
		t.Errorf("with stdout and stderr closed: %v", err)
	}
	if tr, _ := os.ReadFile(r.trace); strings.Contains(string(tr), "fast") {
		t.Errorf("with stdout and stderr closed the runner ran (its own descriptors would be the command's): trace %q", tr)
	}

	// Started with SIGINT and SIGQUIT ignored (as under nohup or `&`).
	for _, plans := range []string{"off", "on"} {
		r.run(nil, "", "--", "true")
		os.Remove(r.trace)
		sh := fmt.Sprintf(`trap '' INT QUIT; %s sandbox run -- bash -c 'kill -INT $$; echo survived'; echo "status $?"`, binary)
		cmd := exec.Command("bash", "-c", sh)
		cmd.Dir = r.ws
		cmd.Env = append(append([]string{}, r.env...), "LITE_AGENT_SANDBOX_PLANS="+plans)
		if plans == "on" {
			cmd.Env = r.env
		}
		out, _ := cmd.CombinedOutput()
		tr, _ := os.ReadFile(r.trace)
		forgetPlans(t, strings.Split(string(tr), "\n"))
		if strings.Contains(string(out), "survived") || !strings.Contains(string(out), "status 130") {
			t.Errorf("plans %s: the command inherited an ignored SIGINT:\n%s", plans, out)
		}
	}

	deep := `cd "$TMPDIR" && for i in $(seq 300); do mkdir d && cd d || exit 1; done && echo $TMPDIR`
	_, fastRun := r.both("", nil, "bash", "-c", deep)
	tmp := strings.TrimSpace(fastRun.stdout)
	if fastRun.code != 0 || tmp == "" {
		t.Fatalf("deep tree: %v", fastRun)
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("a 300-level temp tree was left at %s", tmp)
		os.RemoveAll(tmp)
	}
}

// TestPlanRunnerRefusesATamperedPlan: a plan whose bytes do not match its
// HMAC under the user's secret — planted by something that could write the
// keyring but not read the secret — is not run.
func TestPlanRunnerRefusesATamperedPlan(t *testing.T) {
	requirePlanRunner(t)
	r := newPlanRig(t)
	r.both("", nil, "true")
	run := r.run(nil, "", "--max-output", "2M", "--", "true") // stores under a key we learn
	key := ""
	for _, l := range run.trace {
		if k, ok := strings.CutPrefix(l, "stored "); ok {
			key = k
		}
	}
	if key == "" {
		t.Fatalf("no plan stored: %v", run)
	}
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", key, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32768)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	plan := buf[:n]
	// Widen the first Landlock rule's rights (the record after the
	// magic and four u64 records), keeping the old MAC.
	plan[8+4*14+6] ^= 0xff
	if _, err := unix.AddKey("user", key, plan, unix.KEY_SPEC_USER_KEYRING); err != nil {
		t.Fatal(err)
	}
	run = r.run(nil, "", "--max-output", "2M", "--", "bash", "-c", "echo works")
	if run.path() != "go" || run.stdout != "works\n" {
		t.Errorf("a tampered plan: %v; want the Go path", run)
	}
}

// TestPlanRunnerUnprivileged: as a user without a writable cgroup (nobody
// here) the tree is a PID namespace in a user namespace under our init;
// the runner takes that shape too, and behaves as the Go path does.
func TestPlanRunnerUnprivileged(t *testing.T) {
	requirePlanRunner(t) // root, to become nobody
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed: this would have run the runner as uid 65534")
	}
	r := newPlanRig(t)
	for _, d := range []string{r.ws, filepath.Dir(r.trace)} {
		os.Chmod(filepath.Dir(d), 0o755)
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
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
	run := func(plans bool, args ...string) planRun {
		t.Helper()
		if !plans {
			return r.run([]string{"LITE_AGENT_SANDBOX_PLANS=off"}, "", args...)
		}
		return r.run(nil, "", args...)
	}
	warm := run(true, "--timeout", "1s", "--", "true")
	if !strings.Contains(strings.Join(warm.trace, "\n"), "stored ") {
		t.Skipf("no plan stored for nobody here (%v): this would have checked that the runner confines and reports as the Go path does for an unprivileged user", warm)
	}
	// The daemon's pid is the namespace's: find it by a unique argument.
	mark := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000)
	script := fmt.Sprintf("cat %s && echo READ-SECRET; setsid sleep %s & echo out; kill $$; echo not-reached", secret, mark)
	goRun := run(false, "--timeout", "1s", "--", "bash", "-c", script)
	fastRun := run(true, "--timeout", "1s", "--", "bash", "-c", script)
	if fastRun.path() != "fast" {
		t.Fatalf("the plan was not run: %v", fastRun)
	}
	sameAsGo(t, goRun, fastRun)
	if fastRun.code != 143 || strings.Contains(fastRun.stdout, "READ-SECRET") || strings.Contains(fastRun.stdout, "not-reached") {
		t.Errorf("want the secret unreadable and `kill $$` to end bash (143): %v", fastRun)
	}
	time.Sleep(200 * time.Millisecond)
	if left := processesMatching(func(cmdline, _ string) bool { return strings.Contains(cmdline, mark) }); len(left) > 0 {
		t.Errorf("the daemon outlived the command: %v", left)
	}
	goRun = run(false, "--timeout", "1s", "--", "sleep", "30")
	fastRun = run(true, "--timeout", "1s", "--", "sleep", "30")
	if fastRun.path() != "fast" || fastRun.code != 124 {
		t.Errorf("timeout: %v", fastRun)
	}
	sameAsGo(t, goRun, fastRun)
	// A command that cannot start: the init reports it, the Go path
	// takes over and says so.
	fastRun = run(true, "--timeout", "1s", "--", "./no-such-program")
	if fastRun.path() != "go" || fastRun.code != 127 {
		t.Errorf("a missing program: %v; want the Go path's 127", fastRun)
	}
}

// TestPlanRunnerRefusesAReplayedPlan: a plan signed for one invocation
// (here one that may write outside the workspace) copied under another
// invocation's key is refused: the HMAC covers the key.
func TestPlanRunnerRefusesAReplayedPlan(t *testing.T) {
	requirePlanRunner(t)
	r := newPlanRig(t)
	target := filepath.Join(r.outside, "writable")
	os.Mkdir(target, 0o755)
	keyOf := func(run planRun) string {
		for _, l := range run.trace {
			if k, ok := strings.CutPrefix(l, "stored "); ok {
				return k
			}
		}
		t.Fatalf("no plan stored: %v", run)
		return ""
	}
	wide := keyOf(r.run(nil, "", "--allow-write", target, "--", "true"))
	narrow := keyOf(r.run(nil, "", "--max-output", "3M", "--", "true"))
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", wide, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32768)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.AddKey("user", narrow, buf[:n], unix.KEY_SPEC_USER_KEYRING); err != nil {
		t.Fatal(err)
	}
	run := r.run(nil, "", "--max-output", "3M", "--", "bash", "-c", "echo x > "+target+"/f && echo WROTE")
	if run.path() != "go" || strings.Contains(run.stdout, "WROTE") {
		t.Errorf("a plan replayed under another key: %v; want the Go path, and no write", run)
	}
}

// TestPlanRunnerProcSelfRoot: --allow-write /proc/self/root does not make
// every unix socket reachable — not in the Go path, not in the runner
// (where /proc/self would name the runner itself).
func TestPlanRunnerProcSelfRoot(t *testing.T) {
	requirePlanRunner(t)
	r := newPlanRig(t)
	sock := filepath.Join(r.outside, "outside.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
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
	script := fmt.Sprintf(`import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(%q); print("CONNECTED", s.recv(2).decode())
except OSError as e:
    print("refused:", e.strerror)`, sock)
	goRun, fastRun := r.both("", []string{"--allow-write", "/proc/self/root"}, "python3", "-c", script)
	for _, run := range []planRun{goRun, fastRun} {
		if strings.Contains(run.stdout, "CONNECTED") {
			t.Errorf("%s: a socket outside the workspace was reached through /proc/self/root: %v", run.path(), run)
		}
	}
	sameAsGo(t, goRun, fastRun)
}
