package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

func TestTwoSessionsInOneWorkspace(t *testing.T) {
	e := newEnv(t, nil) // session s1
	a := e.rec
	b, err := Open(e.state, "s2", e.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := Open(e.state, "s2", e.ws, nil); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("a second recorder on s2: %v, want ErrSessionBusy", err)
	}
	e.plain("shared.txt", "v0\n")
	// Both record and seal concurrently.
	var wg sync.WaitGroup
	for i, r := range []*Recorder{a, b} {
		wg.Go(func() {
			for j := range 20 {
				p := fmt.Sprintf("s%d/f%d.txt", i+1, j)
				if err := r.RecordSnapshot(filepath.Dir(p)); err != nil {
					t.Error(err)
				}
				if err := r.RecordSnapshot(p); err != nil {
					t.Error(err)
				}
				os.MkdirAll(e.abs(filepath.Dir(p)), 0o755)
				os.WriteFile(e.abs(p), []byte(p), 0o644)
				if _, err := r.Seal(SealInfo{Reason: ReasonToolCall, UserTurn: 0}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// s1 edits the shared file; then s2 edits it.
	if err := a.RecordSnapshot("shared.txt"); err != nil {
		t.Fatal(err)
	}
	e.plain("shared.txt", "by s1\n")
	a.Seal(SealInfo{Reason: ReasonToolCall})
	if err := b.RecordSnapshot("shared.txt"); err != nil {
		t.Fatal(err)
	}
	e.plain("shared.txt", "by s2\n")
	b.Seal(SealInfo{Reason: ReasonToolCall})

	// s1 cannot silently undo s2's edit: for s1 it is a change made
	// outside the agent.
	rep, err := a.Rewind(0, RewindOptions{})
	if !errors.Is(err, ErrConflict) || len(rep.Conflicts) != 1 || rep.Conflicts[0].Path != "shared.txt" {
		t.Fatalf("s1 rewind over s2's edit: %v, %+v", err, rep)
	}
	// Per file, s1 undoes only its own files; s2's are untouched.
	if _, err := a.Rewind(0, RewindOptions{Paths: []string{"s1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.abs("s1")); !os.IsNotExist(err) {
		t.Fatal("s1/ should be gone")
	}
	if got, _ := os.ReadFile(e.abs("s2/f19.txt")); string(got) != "s2/f19.txt" {
		t.Fatalf("s2's file: %q", got)
	}
	a.Close()
	b.Close()
	if rep, err := Verify(e.state); err != nil || !rep.OK() || rep.Sessions != 2 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	// s2 rewinds all of its own work, the shared file included.
	if _, err := Rewind(e.state, "s2", 0, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(e.abs("shared.txt")); string(got) != "by s1\n" {
		t.Fatalf("shared.txt = %q, want s1's version (s2's pre-image)", got)
	}
}

func TestConcurrentRecordSnapshot(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 50 {
		e.plain(fmt.Sprintf("d/f%02d", i), fmt.Sprintf("file %d\n", i))
	}
	before := snapshotTree(t, e.ws)
	// Many goroutines record overlapping paths (the directory with its
	// subtree, and files inside it) — like a capturer and tools at once.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				p := fmt.Sprintf("d/f%02d", (i*7+g)%50)
				if g%3 == 0 && i%10 == 0 {
					p = "d"
				}
				if err := e.rec.RecordSnapshot(p); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for i := range 50 {
		e.plain(fmt.Sprintf("d/f%02d", i), "changed\n")
	}
	cp := e.seal("many")
	if len(cp.Files) != 50 {
		t.Fatalf("%d files changed, want 50", len(cp.Files))
	}
	if _, err := e.rec.Rewind(0, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	assertTree(t, e.ws, before, "rewind after concurrent recording")
}

func TestPathsAreCanonical(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("real/f.txt", "v0\n")
	e.must(os.Symlink("real", e.abs("alias")))
	// An absolute path, and a path through a symlinked directory, name
	// the same file as its plain relative path.
	e.record(filepath.Join(e.ws, "alias/f.txt"))
	e.record("real/f.txt")
	e.plain("real/f.txt", "v1\n")
	cp := e.seal("edit")
	if len(cp.Files) != 1 || cp.Files[0].Path != "real/f.txt" {
		t.Fatalf("files %+v, want only real/f.txt", cp.Files)
	}
	for _, bad := range []string{"../outside", "/etc/passwd", ".", ""} {
		if err := e.rec.RecordSnapshot(bad); err == nil {
			t.Errorf("RecordSnapshot(%q) was accepted", bad)
		}
	}
	e.must(os.Symlink("/tmp", e.abs("out")))
	if err := e.rec.RecordSnapshot("out/x"); !errors.Is(err, ErrOutsideWorkspace) {
		t.Errorf("a path through a symlink leading out: %v, want ErrOutsideWorkspace", err)
	}
	// The state directory must be outside the workspace.
	if _, err := Open(filepath.Join(e.ws, "state"), "x", e.ws, nil); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
		t.Fatalf("a state dir inside the workspace: %v", err)
	}
}

func TestWatcherNoticesExternalWrites(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.rec.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "agent\n")
	e.write("sub/b.txt", "agent b\n")
	e.seal("write") // 1
	// The agent's own next write (recorded in the open checkpoint) is
	// not external, even though the watcher sees it.
	e.write("c.txt", "agent c\n")
	e.write("a.txt", "agent again\n")
	time.Sleep(5 * watchDebounce)
	e.seal("write") // 2
	// Someone else edits a tracked file, and creates a directory with a
	// tracked path inside (the watcher must add the new directory).
	e.plain("a.txt", "the user's edit\n")
	e.must(os.Remove(e.abs("sub/b.txt")))
	e.plain("untracked.txt", "not the agent's business\n")

	var ext []ExternalChange
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		cps := e.rec.Checkpoints()
		ext = cps[len(cps)-1].External
		if len(ext) >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var got []string
	for _, x := range ext {
		got = append(got, x.Path+"="+string(x.Now))
	}
	if strings.Join(got, " ") != "a.txt=file sub/b.txt=absent" {
		t.Fatalf("external changes after checkpoint 2: %v", got)
	}
	for _, c := range e.rec.Checkpoints()[:2] {
		if len(c.External) > 0 {
			t.Fatalf("checkpoint %d lists the agent's own writes as external: %v", c.Number, c.External)
		}
	}
	// A rewind over them is refused (sub/b.txt, created by the agent and
	// deleted by the user, is already as it was at 0: no conflict there).
	rep, err := e.rec.Rewind(0, RewindOptions{})
	if !errors.Is(err, ErrConflict) || len(rep.Conflicts) != 1 || rep.Conflicts[0].Path != "a.txt" {
		t.Fatalf("rewind over external changes: %v, %+v", err, rep.Conflicts)
	}
	if rep, err := e.rec.Rewind(0, RewindOptions{Force: true}); err != nil {
		t.Fatal(err, rep)
	}
	if got, _ := os.ReadFile(e.abs("untracked.txt")); string(got) != "not the agent's business\n" {
		t.Fatal("an untracked file was touched")
	}
	// Redo brings the user's edit back from the store.
	cps := e.rec.Checkpoints()
	if _, err := e.rec.Rewind(cps[len(cps)-1].Number-1, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(e.abs("a.txt")); string(got) != "the user's edit\n" {
		t.Fatalf("a.txt after redo = %q", got)
	}
}

func TestWatcherOverflowIsNoted(t *testing.T) {
	e := newEnv(t, nil)
	e.write("a.txt", "agent\n")
	e.seal("w")
	e.rec.noteIncomplete("the file watcher's event queue overflowed; every tracked path was re-checked")
	cps := e.rec.Checkpoints()
	if got := cps[len(cps)-1].Incomplete; len(got) != 1 || !strings.Contains(got[0], "overflowed") {
		t.Fatalf("incomplete: %v", got)
	}
	e.rec.Close()
	cps, _ = List(e.state, "s1")
	if len(cps[len(cps)-1].Incomplete) != 1 {
		t.Fatal("the note did not reach the log")
	}
}

// TestWatcherOverflow: when the kernel's event queue overflows, events are
// lost; the gap is noted and every tracked path is checked again.
func TestWatcherOverflow(t *testing.T) {
	e := newEnv(t, nil)
	e.write("a.txt", "agent\n")
	e.seal("write")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.rec.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	// A change whose events are lost: made while nothing watches (the
	// watch is removed), then the overflow the kernel would report.
	e.rec.watch.fw.Remove(e.ws)
	e.plain("a.txt", "changed while events were lost\n")
	e.rec.watch.fw.Errors <- fsnotify.ErrEventOverflow
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		cps := e.rec.Checkpoints()
		if c := cps[len(cps)-1]; len(c.Incomplete) == 1 && len(c.External) == 1 && c.External[0].Path == "a.txt" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("after an overflow: %+v", e.rec.Checkpoints())
}

// A directory moved away by someone else: its tracked contents changed
// with no event of their own.
func TestNoteExternalCoversPathsBelowADirectory(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("d/keep", "k\n")
	for i := range 70 {
		e.write(fmt.Sprintf("d/x%02d", i), "agent\n")
	}
	e.seal("write")
	e.must(os.Rename(e.abs("d"), e.abs("elsewhere")))
	batch := []string{"d"}
	for i := range 70 { // a large batch of unrelated paths too
		batch = append(batch, fmt.Sprintf("other%d", i))
	}
	e.rec.NoteExternal(batch)
	cps := e.rec.Checkpoints()
	if ext := cps[len(cps)-1].External; len(ext) != 70 || ext[0].Path != "d/x00" || ext[0].Now != KindAbsent {
		t.Fatalf("external: %d %+v", len(ext), ext)
	}
}

// TestWatcherSeesNamesBeginningWithDots: a change made outside the agent
// to a file whose name begins with ".." (a name like any other, inside
// the workspace) is noted like any other. The watcher took every
// workspace-relative path starting with ".." for one outside.
func TestWatcherSeesNamesBeginningWithDots(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.rec.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	e.write("..foo", "agent\n")
	e.write("a.txt", "agent\n")
	e.seal("write")
	e.plain("..foo", "the user's edit\n")
	e.plain("a.txt", "the user's edit\n")

	want := "..foo=file a.txt=file"
	var got []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		cps := e.rec.Checkpoints()
		got = got[:0]
		for _, x := range cps[len(cps)-1].External {
			got = append(got, x.Path+"="+string(x.Now))
		}
		if strings.Join(got, " ") == want {
			return
		}
	}
	t.Fatalf("external changes: %v, want %s", got, want)
}

// TestRelPathThroughADanglingLink: a path through a link to a directory
// not made yet has the key it will have once the directory exists (where
// the kernel will put the file), not one through the link's name.
func TestRelPathThroughADanglingLink(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("later", filepath.Join(ws, "dl")); err != nil {
		t.Fatal(err)
	}
	before, err := relPath(ws, "dl/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "later"), 0o755); err != nil {
		t.Fatal(err)
	}
	after, err := relPath(ws, "dl/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if before != "later/x.txt" || after != before {
		t.Fatalf("the key of dl/x.txt: %q before later/ exists, %q after; want later/x.txt both times", before, after)
	}
	if err := os.Symlink(t.TempDir()+"/later", filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := relPath(ws, "out/x.txt"); !errors.Is(err, ErrOutsideWorkspace) {
		t.Fatalf("a path through a dangling link out of the workspace: %v, want ErrOutsideWorkspace", err)
	}
}
