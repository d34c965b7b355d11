package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestStaleTempDirsRemoved: the temp dir of a process killed with SIGKILL
// is removed by the next process that makes a sandbox; live owners' dirs,
// dirs of other names and a reused pid are judged right.
func TestStaleTempDirsRemoved(t *testing.T) {
	switch os.Getenv("LITE_AGENT_STALE_CHILD") {
	case "wait":
		// The child: make a sandbox, say where its temp dir is, wait to
		// be killed.
		sb, err := New(Policy{Workspace: os.Getenv("LITE_AGENT_STALE_WS")})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("TMP", sb.tmpRoot)
		io.ReadAll(os.Stdin)
		os.Exit(0)
	case "start":
		// The next start: New, Close, exit.
		sb, err := New(Policy{Workspace: os.Getenv("LITE_AGENT_STALE_WS")})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		sb.Close()
		os.Exit(0)
	}
	tmp, ws := t.TempDir(), t.TempDir()
	child := func(mode string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStaleTempDirsRemoved$")
		cmd.Env = append(os.Environ(), "LITE_AGENT_STALE_CHILD="+mode, "LITE_AGENT_STALE_WS="+ws, "TMPDIR="+tmp)
		return cmd
	}
	cmd := child("wait")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	line, err := bufio.NewReader(out).ReadString('\n')
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "TMP ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q %v", line, err)
	}
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), tmpPrefix+strconv.Itoa(cmd.Process.Pid)+".") {
		t.Errorf("temp dir %s is not named after its owner", dir)
	}
	os.WriteFile(filepath.Join(dir, "left-behind"), []byte("x"), 0o644)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed child's temp dir is already gone, so the test proves nothing: %v", err)
	}

	// Others in the same directory: a live owner (this process), this
	// pid with another start time (a reused pid), an old-style name.
	start, err := procStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	live := filepath.Join(tmp, tmpPrefix+me+"."+strconv.FormatUint(start, 10)+"-live")
	reused := filepath.Join(tmp, tmpPrefix+me+"."+strconv.FormatUint(start+1, 10)+"-reused")
	old := filepath.Join(tmp, tmpPrefix+"123456")
	for _, d := range []string{live, reused, old} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	next := child("start")
	if b, err := next.CombinedOutput(); err != nil {
		t.Fatalf("next start: %v\n%s", err, b)
	}
	for d, want := range map[string]bool{dir: false, reused: false, live: true, old: true} {
		_, err := os.Stat(d)
		if got := err == nil; got != want {
			t.Errorf("%s: exists=%v after the next start, want %v", filepath.Base(d), got, want)
		}
	}
	// RemoveStaleTempDirs (for gc) finds nothing more.
	if got, err := removeStaleTempDirs(tmp); len(got) != 0 || err != nil {
		t.Errorf("second sweep: %v %v", got, err)
	}
}
