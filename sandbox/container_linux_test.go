package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// containerLevelTests run again at LevelContainer (TestContainerLevelSuite):
// the escape suite, the limits, change capture and the .git rule, tree
// kill and the network modes. Each must pass, or skip because the
// sandbox lists what it checks in Enforcement.Lost (skipIfLost). What
// the level gives up by design (read-only mounts, its own /proc, /tmp,
// ptys and root) has its own tests at LevelFull only.
var containerLevelTests = []string{
	"TestRunExitCodesAndPipelines", "TestStdinPassthrough", "TestEnvFiltering",
	"TestTmpdirPrivateAndCleaned", "TestToolchainWorksInside", "TestOutputTruncated",
	"TestTimeoutKillsWholeTree", "TestContextCancelAndKill", "TestDaemonDoesNotOutliveCommand", "TestConcurrentRuns",
	"TestEscapeFiles", "TestEscapeSeccomp", "TestEscapeSetID", "TestEscapeCapabilitiesAndSession", "TestEscapeI386Table",
	"TestConnectFromThreadInEveryMode", "TestOwnListenersEveryMode", "TestEscapeTIOCSTI",
	"TestLimitsForkBomb", "TestLimitsMemoryBomb", "TestLimitsFileSize",
	"TestEscapeRoutingSockopts", "TestEscapeSocketProtocols", "TestEscapeUnixModes",
	"TestCaptureFailsClosed", "TestCaptureHardLinks", "TestCaptureSocketBind", "TestCaptureRace",
	"TestCaptureRaceOwnTemp", "TestOwnTempBoundary",
	"TestCaptureEmulationSemantics", "TestCaptureEmulationConfined", "TestCaptureSeesEveryKindOfChangeBeforeItHappens",
	"TestGitReadOnly", "TestGitNewNamesRefused", "TestGitStillReads",
}

// TestContainerLevelSuite re-runs containerLevelTests at LevelContainer:
// as this user, and as uid 65534 when root (no cgroup, no namespace of
// any kind for that user at this level: the closest this machine comes
// to an unprivileged user in a default container).
func TestContainerLevelSuite(t *testing.T) {
	if testLevel() != "" || os.Getenv("LITE_AGENT_UNPRIVILEGED_CHILD") != "" {
		t.Skip("already a re-run")
	}
	if testing.Short() {
		t.Skip("-short: would re-run the escape suite at the container level")
	}
	t.Run("this user", func(t *testing.T) {
		out, err := rerunTests(t, containerLevelTests, []string{"LITE_AGENT_TEST_LEVEL=container"}, false)
		checkRerun(t, out, err, containerLevelTests)
	})
	t.Run("uid 65534", func(t *testing.T) {
		requireRoot(t, "switching to uid 65534 with setpriv")
		out, err := rerunTests(t, containerLevelTests, []string{"LITE_AGENT_TEST_LEVEL=container"}, true)
		checkRerun(t, out, err, containerLevelTests)
	})
}

// rerunTests runs this test binary's tests names with env added, as
// uid 65534 (setpriv, from root) when nobody, with a workspace and
// TMPDIR that user owns.
func rerunTests(t *testing.T, names, env []string, nobodyUser bool) (string, error) {
	t.Helper()
	dir, err := os.MkdirTemp("", "lite-agent-rerun-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sandbox.test")
	if err := copyFile(os.Args[0], bin, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	goBin := filepath.Join(dir, "threadconnect")
	if err := copyFile(goCaller(t), goBin, 0o755); err != nil {
		t.Fatal(err)
	}
	argv := []string{bin, "-test.run", "^(" + strings.Join(names, "|") + ")$", "-test.v", "-test.count=1"}
	if nobodyUser {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("setpriv not installed: would re-run the tests as uid 65534")
		}
		if err := os.Chown(tmp, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		argv = append([]string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, argv...)
		env = append(env, "LITE_AGENT_UNPRIVILEGED_CHILD=1")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"TMPDIR=" + tmp, "HOME=" + tmp, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", goCallerEnv + "=" + goBin}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkRerun requires every test of names to have passed in out, or to
// have skipped for a reason the host or the sandbox gives (hostSkips,
// skipIfLost); the skips are logged.
func checkRerun(t *testing.T, text string, err error, names []string) {
	t.Helper()
	if err != nil || !strings.Contains(text, "\nPASS\n") {
		t.Fatalf("the re-run failed: %v\n%s", err, text)
	}
	for _, name := range names {
		if strings.Contains(text, "--- PASS: "+name+" ") {
			continue
		}
		if strings.Contains(text, "--- SKIP: "+name+" ") {
			if why, ok := hostSkips[name]; ok && strings.Contains(text, why) || strings.Contains(text, "this sandbox lists it lost") {
				continue
			}
		}
		t.Errorf("%s did not pass in the re-run", name)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "SKIP") || strings.Contains(line, "lists it lost") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

// TestContainerLevelConfines: at LevelContainer on this host, a command
// writes the workspace (captured, and so rewindable), cannot read a
// secret beside it, cannot reach a loopback service outside, and cannot
// read another process's /proc; what the level gives up is listed, and
// utimensat outside the roots — the first thing listed — indeed works
// (the list is not decoration), while chmod there is refused by change
// capture, as the entry says.
func TestContainerLevelConfines(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	secret := filepath.Join(dir, "secret")
	mine := filepath.Join(dir, "mine")
	for _, f := range []string{secret, mine} {
		if err := os.WriteFile(f, []byte("s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sb, err := New(Policy{Workspace: ws, Level: LevelContainer, CaptureChanges: true, ReadOnlyPaths: []string{mine}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	e := sb.Enforcement()
	t.Logf("%+v", e)
	if e.Level != LevelContainer || len(e.Missing) != 0 || !slicesContainsPrefix(e.Lost, "read-only mounts outside the read-write roots") {
		t.Fatalf("enforcement: %+v", e)
	}
	if sb.newPID || sb.newUser || sb.mountNS != 0 {
		t.Fatalf("a namespace at the container level: %+v", sb.plan)
	}
	var mu sync.Mutex
	var announced []string
	port := ln.Addr().(*net.TCPAddr).Port
	r := sh(t, sb, fmt.Sprintf(`echo after > f; echo new > g; cat f g
cat %s && echo READ-SECRET
(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo NET-REACHED
cat /proc/1/environ >/dev/null 2>&1 && echo READ-PROC
chmod 0644 %s && echo CHMOD-OUTSIDE
touch -d @0 %s && echo TOUCH-OUTSIDE
true`, secret, port, mine, mine), func(c *Command) {
		c.BeforeChange = func(paths []string) error {
			mu.Lock()
			announced = append(announced, paths...)
			mu.Unlock()
			return nil
		}
	})
	if r.st.Code != 0 || !strings.HasPrefix(r.out, "after\nnew\n") {
		t.Fatalf("the writes: %v", r)
	}
	for _, bad := range []string{"READ-SECRET", "NET-REACHED", "READ-PROC", "CHMOD-OUTSIDE"} {
		if strings.Contains(r.out, bad) {
			t.Errorf("%s at the container level: %v", bad, r)
		}
	}
	real, _ := filepath.EvalSymlinks(ws)
	if !slices.Contains(announced, filepath.Join(real, "f")) || !slices.Contains(announced, filepath.Join(real, "g")) {
		t.Errorf("the writes were not captured: %q", announced)
	}
	// Listed lost, and so it works: a file of the user's outside the
	// roots, readable by grant, gets its times changed.
	if !strings.Contains(r.out, "TOUCH-OUTSIDE") {
		t.Errorf("utimensat outside the roots failed although Lost lists it: %v", r)
	}
}

// TestCaptureOnTheCommandsOwnThread: where unshare(CLONE_FILES) is
// refused (Docker's default profile), a captured command starts from a
// spawner thread of its own whose program carries the capture calls.
// Changes are announced to that command's hook only, also with two
// commands at once, and the .git name rule holds.
func TestCaptureOnTheCommandsOwnThread(t *testing.T) {
	noUnshare := maskedHost(func(h *hostInfo) {
		h.unshareFiles = errors.New("test: unshare refused")
		withoutCgroups(h) // the command's own thread sits in no v1 slot
	})
	ws := t.TempDir()
	sb, err := newOnHost(Policy{Workspace: ws, Level: LevelContainer, CaptureChanges: true}, noUnshare)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if !sb.captureThread || !sb.capture || sb.captureChild != nil {
		t.Fatalf("plan: %+v", sb.plan)
	}
	real, _ := filepath.EvalSymlinks(ws)
	var wg sync.WaitGroup
	results := make([]result, 2)
	seen := make([][]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errb bytes.Buffer
			st, err := sb.Run(context.Background(), &Command{Path: "/bin/bash", Dir: ws,
				Args:   []string{"bash", "-c", fmt.Sprintf("for n in 1 2 3; do echo $n > f%d-$n; done; mkdir .git 2>&1 || echo refused", i)},
				Stdout: &out, Stderr: &errb,
				BeforeChange: func(paths []string) error {
					seen[i] = append(seen[i], paths...)
					return nil
				}})
			if err != nil {
				results[i] = result{err: err.Error()}
				return
			}
			results[i] = result{out: out.String(), err: errb.String(), st: st}
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.st == nil || r.st.Code != 0 || !strings.Contains(r.out, "refused") {
			t.Errorf("command %d: %v", i, r)
		}
		for n := 1; n <= 3; n++ {
			if !slices.Contains(seen[i], filepath.Join(real, fmt.Sprintf("f%d-%d", i, n))) {
				t.Errorf("command %d: f%d-%d not announced: %q", i, i, n, seen[i])
			}
		}
		for _, p := range seen[i] {
			if !strings.Contains(filepath.Base(p), fmt.Sprintf("f%d-", i)) {
				t.Errorf("command %d was told of another's change: %s", i, p)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(ws, ".git")); err == nil {
		t.Errorf("a .git was made")
	}
	// The commands' own threads are not pooled.
	sb.spMu.Lock()
	n := len(sb.spAll)
	sb.spMu.Unlock()
	if n > 1 {
		t.Errorf("%d pooled spawner threads: the commands' own threads went to the pool", n)
	}
}
