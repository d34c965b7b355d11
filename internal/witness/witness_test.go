package witness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// counter is a verify that counts its runs and reports clean.
type counter struct {
	runs  int
	clean bool
}

func (c *counter) verify() ([]string, bool) {
	c.runs++
	return []string{fmt.Sprintf("run %d", c.runs)}, c.clean
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	return err == nil
}

// isolate gives the test a BaseDir (and so a lock) of its own: the
// sandboxes of other packages' tests hold the user's.
func isolate(t *testing.T) string {
	t.Helper()
	x := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", x)
	base, err := BaseDir()
	if err != nil || base != filepath.Join(x, "lite-agent") {
		t.Fatalf("BaseDir = %q, %v", base, err)
	}
	os.MkdirAll(base, 0o700)
	return base
}

func TestCheckSkipsOnlyWhatACleanCheckWitnessed(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	key := []byte("go.sum's hash\n")
	c := &counter{clean: true}
	notes, skipped := Check(dir, "go", key, c.verify)
	if skipped || c.runs != 1 || len(notes) != 1 || !exists(t, Path(dir, "go")) {
		t.Fatalf("first check: skipped %v, runs %d, notes %q, witness %v", skipped, c.runs, notes, exists(t, Path(dir, "go")))
	}
	if notes, skipped := Check(dir, "go", key, c.verify); !skipped || c.runs != 1 || notes != nil {
		t.Fatalf("second check with nothing withdrawn: skipped %v, runs %d, notes %q", skipped, c.runs, notes)
	}
	// Another key (the lockfile changed, or the check's version): in full.
	if _, skipped := Check(dir, "go", []byte("another\n"), c.verify); skipped || c.runs != 2 {
		t.Fatalf("a check with another key was skipped (runs %d)", c.runs)
	}
	// Another cache's witness is its own.
	if _, skipped := Check(dir, "rust", key, c.verify); skipped || c.runs != 3 {
		t.Fatalf("the rust cache's check was skipped on the go cache's witness (runs %d)", c.runs)
	}
	// A check that is not clean leaves none.
	dirty := &counter{clean: false}
	other := t.TempDir()
	Check(other, "go", key, dirty.verify)
	Check(other, "go", key, dirty.verify)
	if dirty.runs != 2 || exists(t, Path(other, "go")) {
		t.Fatalf("a check that was not clean: runs %d, witness %v", dirty.runs, exists(t, Path(other, "go")))
	}
	// A witness that is not a plain file holding the key.
	for name, plant := range map[string]func(p string) error{
		"a link":      func(p string) error { return os.Symlink(Path(dir, "go"), p) },
		"a directory": func(p string) error { return os.Mkdir(p, 0o700) },
		"a prefix":    func(p string) error { return os.WriteFile(p, key[:3], 0o600) },
		"longer":      func(p string) error { return os.WriteFile(p, append(key, 'x'), 0o600) },
	} {
		d := t.TempDir()
		if err := plant(Path(d, "go")); err != nil {
			t.Fatal(err)
		}
		c := &counter{}
		if _, skipped := Check(d, "go", key, c.verify); skipped || c.runs != 1 {
			t.Errorf("%s in the witness's place was taken for it", name)
		}
	}
}

// While any sandbox lives — whatever cache it was given — a check runs
// in full and leaves no witness: a descriptor into the cache may be held
// by any sandbox's process. Withdraw removes a witness left before.
func TestNoWitnessLeftWhileASandboxLives(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	key := []byte("k")
	c := &counter{clean: true}
	Check(dir, "go", key, c.verify)
	live, err := Enter()
	if err != nil {
		t.Fatal(err)
	}
	if _, skipped := Check(dir, "go", key, c.verify); !skipped {
		t.Fatal("a standing witness was not trusted while a sandbox that changed nothing lives")
	}
	if err := Withdraw(dir, "go"); err != nil || exists(t, Path(dir, "go")) {
		t.Fatalf("Withdraw: %v, witness left: %v", err, exists(t, Path(dir, "go")))
	}
	if err := Withdraw(dir, "go"); err != nil {
		t.Fatalf("Withdraw of no witness: %v", err)
	}
	if _, skipped := Check(dir, "go", key, c.verify); skipped || c.runs != 2 || exists(t, Path(dir, "go")) {
		t.Fatalf("a check while a sandbox lives: skipped %v, runs %d, witness %v", skipped, c.runs, exists(t, Path(dir, "go")))
	}
	live.Release()
	live.Release() // twice is harmless
	if _, skipped := Check(dir, "go", key, c.verify); skipped || c.runs != 3 || !exists(t, Path(dir, "go")) {
		t.Fatalf("the first check after the sandbox: skipped %v, runs %d, witness %v", skipped, c.runs, exists(t, Path(dir, "go")))
	}
}

// Once a sandbox's processes may have outlived it, no witness is left
// until every cache is gone (ClearOutlived); standing ones still count.
func TestNoWitnessLeftAfterProcessesOutlivedASandbox(t *testing.T) {
	isolate(t)
	dir, fresh := t.TempDir(), t.TempDir()
	key := []byte("k")
	c := &counter{clean: true}
	Check(dir, "go", key, c.verify)
	if err := MarkOutlived(); err != nil {
		t.Fatal(err)
	}
	if _, skipped := Check(dir, "go", key, c.verify); !skipped {
		t.Fatal("a witness left before the mark was not trusted")
	}
	Check(fresh, "go", key, c.verify)
	if exists(t, Path(fresh, "go")) {
		t.Fatal("a witness was left after processes outlived a sandbox")
	}
	ClearOutlived()
	Check(fresh, "go", key, c.verify)
	if !exists(t, Path(fresh, "go")) {
		t.Fatal("no witness left once the mark was cleared")
	}
}

// A sandbox that starts while a check runs waits for it: were it to go
// on at once, its processes could change the cache after the check's
// look and before the witness is left, and the witness would stand for a
// cache it never saw.
func TestASandboxWaitsForARunningCheck(t *testing.T) {
	base := isolate(t)
	dir := t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(base, &st); err != nil {
		t.Fatal(err)
	}
	inCheck, finish := make(chan struct{}), make(chan struct{})
	checked := make(chan bool)
	go func() {
		_, skipped := Check(dir, "go", []byte("k"), func() ([]string, bool) {
			close(inCheck)
			<-finish
			return nil, true
		})
		checked <- skipped
	}()
	<-inCheck
	entered := make(chan error)
	go func() {
		live, err := Enter()
		if err == nil {
			err = Withdraw(dir, "go")
		}
		live.Release()
		entered <- err
	}()
	// The sandbox is queued behind the check's lock (/proc/locks lists a
	// blocked request with "->").
	waitFor(t, func() bool { return blockedOn(t, st.Ino) })
	select {
	case err := <-entered:
		t.Fatalf("Enter returned (%v) while the check held its lock", err)
	default:
	}
	close(finish)
	if <-checked {
		t.Fatal("the check was skipped")
	}
	if err := <-entered; err != nil {
		t.Fatal(err)
	}
	if exists(t, Path(dir, "go")) {
		t.Fatal("the witness the check left outlived the sandbox that waited for it")
	}
}

// blockedOn reports whether /proc/locks shows a request waiting for a
// lock on inode ino.
func blockedOn(t *testing.T, ino uint64) bool {
	f, err := os.Open("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks to see the writer wait: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "->") && strings.Contains(l, fmt.Sprintf(":%d ", ino)) {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, failing after a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
