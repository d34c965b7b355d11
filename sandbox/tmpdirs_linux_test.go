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
	"time"
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

	// The killed child's own first New swept the directory and marked it
	// swept: a start within sweepInterval leaves the stale ones for later.
	if b, err := child("start").CombinedOutput(); err != nil {
		t.Fatalf("start: %v\n%s", err, b)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("a start within sweepInterval of the last sweep swept (%v)", err)
	}
	// Once sweepInterval has passed, the next start sweeps.
	marker := filepath.Join(tmp, sweepMarker+strconv.Itoa(os.Geteuid()))
	past := time.Now().Add(-sweepInterval - time.Second)
	if err := os.Chtimes(marker, past, past); err != nil {
		t.Fatalf("the first sweep left no marker: %v", err)
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

// TestSweepDue: a user's sweeps of one temporary directory are at least
// sweepInterval apart, and a marker that is not the user's own regular
// file is not trusted (every start sweeps, as before markers).
func TestSweepDue(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, sweepMarker+strconv.Itoa(os.Geteuid()))
	now := time.Now()
	if !sweepDue(dir, now) {
		t.Fatal("no marker: not due")
	}
	fi, err := os.Lstat(marker)
	if err != nil || !fi.Mode().IsRegular() || !ownedByMe(fi) {
		t.Fatalf("the first sweep's marker: %v %v", fi, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*")); len(m) != 0 {
		t.Errorf("the marker is taken for a sandbox's directory by a glob of theirs: %v", m)
	}
	if sweepDue(dir, now.Add(time.Second)) {
		t.Error("due a second after the last sweep")
	}
	later := now.Add(sweepInterval + time.Second)
	if !sweepDue(dir, later) {
		t.Error("not due sweepInterval after the last sweep")
	}
	if sweepDue(dir, later.Add(time.Second)) {
		t.Error("the sweep at later was not marked: due again a second after it")
	}
	if !sweepDue(dir, later.Add(-time.Hour)) {
		t.Error("a marker time in the future (clock set back) is not due")
	}

	// Not this user's regular file of its own: due every time, and
	// nothing is changed through it.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(target, past, past)
	for name, mk := range map[string]func() error{
		"symlink":   func() error { return os.Symlink(target, marker) },
		"directory": func() error { return os.Mkdir(marker, 0o700) },
		// Another user's hard link to a file of ours (possible where
		// fs.protected_hardlinks is off): our own regular file, but
		// not the marker; its times are neither read nor reset.
		"hard link": func() error { return os.Link(target, marker) },
	} {
		os.Remove(marker)
		if err := mk(); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if !sweepDue(dir, time.Now()) {
				t.Errorf("%s marker, call %d: not due", name, i)
			}
		}
	}
	if fi, err := os.Stat(target); err != nil || !fi.ModTime().Equal(past) {
		t.Errorf("the symlink's target was touched: %v %v", fi.ModTime(), err)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: a marker of another user (which every start must ignore) is not tried")
		return
	}
	os.Remove(marker)
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(marker, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if !sweepDue(dir, time.Now()) {
			t.Errorf("another user's fresh marker, call %d: not due", i)
		}
	}
}
