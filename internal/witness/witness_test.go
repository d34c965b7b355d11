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

func TestCheckSkipsOnlyWhatACleanCheckWitnessed(t *testing.T) {
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
	// A check that is not clean leaves none, and removes none either.
	dirty := &counter{clean: false}
	other := t.TempDir()
	Check(other, "go", key, dirty.verify)
	Check(other, "go", key, dirty.verify)
	if dirty.runs != 2 || exists(t, Path(other, "go")) {
		t.Fatalf("a check that was not clean: runs %d, witness %v", dirty.runs, exists(t, Path(other, "go")))
	}
	// A witness that is not a plain file of ours holding the key.
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

func TestWithdrawKeepsTheNextCheckFull(t *testing.T) {
	dir := t.TempDir()
	key := []byte("k")
	c := &counter{clean: true}
	Check(dir, "go", key, c.verify)
	h, err := Withdraw(dir, "go")
	if err != nil || exists(t, Path(dir, "go")) {
		t.Fatalf("Withdraw: %v, witness left: %v", err, exists(t, Path(dir, "go")))
	}
	// While the writer holds: checked in full, and nothing left (a
	// write after the check would be unseen).
	if _, skipped := Check(dir, "go", key, c.verify); skipped || c.runs != 2 || exists(t, Path(dir, "go")) {
		t.Fatalf("a check while a writer holds: skipped %v, runs %d, witness %v", skipped, c.runs, exists(t, Path(dir, "go")))
	}
	h.Release()
	h.Release() // twice is harmless
	if _, skipped := Check(dir, "go", key, c.verify); skipped || c.runs != 3 || !exists(t, Path(dir, "go")) {
		t.Fatalf("the first check after the writer: skipped %v, runs %d, witness %v", skipped, c.runs, exists(t, Path(dir, "go")))
	}
	if _, skipped := Check(dir, "go", key, c.verify); !skipped {
		t.Fatal("not skipped once witnessed again")
	}
	// A directory that is not there holds no witness: nothing to hold.
	if h, err := Withdraw(filepath.Join(dir, "absent"), "go"); h != nil || err != nil {
		t.Fatalf("Withdraw of an absent directory: %v, %v", h, err)
	}
}

// A writer that comes while a check runs waits for it, and then removes
// what it left: were it to go on at once, its change could fall after
// the check's look and before the witness is left, and the witness
// would stand for a cache it never saw.
func TestWithdrawWaitsForARunningCheck(t *testing.T) {
	dir := t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
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
	withdrawn := make(chan error)
	go func() {
		h, err := Withdraw(dir, "go")
		h.Release()
		withdrawn <- err
	}()
	// The writer is queued behind the check's lock (/proc/locks lists a
	// blocked request with "->").
	waitFor(t, func() bool { return blockedOn(t, st.Ino) })
	select {
	case err := <-withdrawn:
		t.Fatalf("Withdraw returned (%v) while the check held its lock", err)
	default:
	}
	close(finish)
	if <-checked {
		t.Fatal("the check was skipped")
	}
	if err := <-withdrawn; err != nil {
		t.Fatal(err)
	}
	if exists(t, Path(dir, "go")) {
		t.Fatal("the witness the check left outlived the writer that waited for it")
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
