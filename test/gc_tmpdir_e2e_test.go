package test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestGCRemovesAKilledSandboxTempDir: `lite-agent sandbox run` killed with
// SIGKILL cannot remove its sandbox's TMPDIR; `lite-agent gc` does, and
// leaves a live sandbox's alone.
func TestGCRemovesAKilledSandboxTempDir(t *testing.T) {
	tmp, ws := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp)
	start := func() (*exec.Cmd, *os.File) {
		t.Helper()
		cmd := exec.Command(binary, "sandbox", "run", "--workspace", ws, "--", "sh", "-c", "echo started; read x")
		cmd.Env = env
		stdin, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = stdin
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stdin.Close()
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "started\n" {
			t.Fatalf("the sandboxed command did not start: %q %v", line, err)
		}
		return cmd, w
	}
	dirs := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "lite-agent-sandbox-*"))
		return m
	}

	// The live one first: a sandbox's first start removes stale dirs
	// itself, so the killed one must be the last to start.
	live, w2 := start()
	defer func() { w2.Close(); live.Wait() }()
	liveDirs := dirs()
	if len(liveDirs) != 1 {
		t.Fatalf("the live sandbox's temp dir: %v", liveDirs)
	}
	liveDir := liveDirs[0]

	killed, w1 := start()
	defer w1.Close()
	killed.Process.Signal(syscall.SIGKILL) // ours: the test started it
	killed.Wait()
	var stale []string
	for _, d := range dirs() {
		if d != liveDir {
			stale = append(stale, d)
		}
	}
	if len(stale) != 1 {
		t.Fatalf("after kill -9, temp dirs %v: want the killed sandbox's one beside %s", dirs(), liveDir)
	}

	gc := exec.Command(binary, "gc", "--state-dir", t.TempDir())
	gc.Env = env
	out, err := gc.CombinedOutput()
	if err != nil {
		t.Fatalf("gc: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "removed the stale sandbox temporary directory "+stale[0]) {
		t.Errorf("gc did not report removing %s:\n%s", stale[0], out)
	}
	if _, err := os.Stat(stale[0]); !os.IsNotExist(err) {
		t.Errorf("the killed sandbox's temp dir is still there: %v", err)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("gc removed a live sandbox's temp dir: %v", err)
	}
}
