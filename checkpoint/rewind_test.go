package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// scenario runs one edit of every kind, each as a sealed tool call, and
// keeps a copy of the tree at every checkpoint.
func scenario(t *testing.T, e *env) []map[string]node {
	e.plain("b.txt", "bee\n")
	e.plain("c.txt", "sea\n")
	e.plain("script.sh", "#!/bin/sh\necho hi\n")
	e.plain("old-link-target", "x\n")
	e.must(os.Symlink("old-link-target", e.abs("ln-old")))
	e.plain("tree/keep/k.txt", "keep\n")
	e.plain("tree/sub/s.txt", "sub\n")

	if _, err := e.rec.Seal(SealInfo{Reason: ReasonUserTurn, UserTurn: 0}); err != nil {
		t.Fatal(err)
	}
	states := []map[string]node{snapshotTree(t, e.ws)} // checkpoint 0

	step := func(tool string, f func()) {
		t.Helper()
		f()
		cp := e.seal(tool)
		if cp == nil {
			t.Fatalf("%s: Seal returned no checkpoint", tool)
		}
		if cp.Number != len(states) {
			t.Fatalf("%s: checkpoint %d, want %d", tool, cp.Number, len(states))
		}
		states = append(states, snapshotTree(t, e.ws))
	}
	step("write", func() { e.write("a.txt", "one\ntwo\nthree\n") })                 // 1
	step("overwrite", func() { e.write("a.txt", "one\n2\nthree\nfour\n") })         // 2
	step("delete", func() { e.record("b.txt"); e.must(os.Remove(e.abs("b.txt"))) }) // 3
	step("rename", func() {                                                         // 4: delete + create of two paths
		e.record("c.txt", "d.txt")
		e.must(os.Rename(e.abs("c.txt"), e.abs("d.txt")))
	})
	step("chmod", func() { e.record("script.sh"); e.must(os.Chmod(e.abs("script.sh"), 0o755)) }) // 5
	step("symlink", func() {                                                                     // 6: a new link, and a link re-pointed
		e.record("ln-new", "ln-old")
		e.must(os.Symlink("a.txt", e.abs("ln-new")))
		e.must(os.Remove(e.abs("ln-old")))
		e.must(os.Symlink("d.txt", e.abs("ln-old")))
	})
	step("mkdir -p", func() { // 7: like a shell: each mkdir, then the file
		for _, d := range []string{"x", "x/y", "x/y/z"} {
			e.record(d)
			e.must(os.Mkdir(e.abs(d), 0o750))
		}
		e.record("x/y/z/f.txt")
		e.plain("x/y/z/f.txt", "deep\n")
	})
	step("write_file nested", func() { e.write("n1/n2/n3.txt", "nested\n") }) // 8
	step("mv dir", func() {                                                   // 9: a directory renamed: recorded with its subtree
		e.record("tree/sub", "tree/moved")
		e.must(os.Rename(e.abs("tree/sub"), e.abs("tree/moved")))
	})
	step("rm -r", func() { // 10: the recursive record covers the contents
		e.record("n1")
		e.must(os.RemoveAll(e.abs("n1")))
	})
	step("file becomes dir", func() { // 11
		e.record("d.txt")
		e.must(os.Remove(e.abs("d.txt")))
		e.must(os.Mkdir(e.abs("d.txt"), 0o700))
		e.plain("d.txt/inner", "in\n")
	})
	return states
}

func TestRewindToEveryCheckpoint(t *testing.T) {
	e := newEnv(t, nil)
	states := scenario(t, e)
	last := len(states) - 1

	// Down to 0, then up again (each rewind is undoable), then jumps.
	order := []int{}
	for n := last - 1; n >= 0; n-- {
		order = append(order, n)
	}
	order = append(order, last, 3, 9, 0, 6, last)
	for _, to := range order {
		rep, err := e.rec.Rewind(to, RewindOptions{})
		if err != nil {
			t.Fatalf("rewind to %d: %v (conflicts %v)", to, err, rep)
		}
		assertTree(t, e.ws, states[to], "after rewind to "+strconv.Itoa(to))
		// The rewind is a checkpoint whose state is that of `to`.
		if rep.Checkpoint >= 0 {
			for len(states) <= rep.Checkpoint {
				states = append(states, nil)
			}
			states[rep.Checkpoint] = states[to]
		}
	}
	// Rewinding to a rewind's own checkpoint works too.
	cps := e.rec.Checkpoints()
	lastCP := cps[len(cps)-1]
	if lastCP.Reason != ReasonRewind || lastCP.RewindTo != last {
		t.Fatalf("last checkpoint %+v, want a rewind to %d", lastCP, last)
	}
}

func TestCheckpointListing(t *testing.T) {
	e := newEnv(t, nil)
	scenario(t, e)
	cps, err := List(e.state, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if cps[0].Number != 0 || cps[0].Reason != ReasonUserTurn || cps[0].UserTurn != 0 {
		t.Fatalf("checkpoint 0: %+v", cps[0])
	}
	byNum := map[int]Checkpoint{}
	for _, c := range cps {
		byNum[c.Number] = c
	}
	c1 := byNum[1]
	if c1.ToolName != "write" || c1.ToolCallID != "id-write" || len(c1.Files) != 1 {
		t.Fatalf("checkpoint 1: %+v", c1)
	}
	if f := c1.Files[0]; f.Path != "a.txt" || f.Change != "created" || !f.Lines || f.Added != 3 || f.Removed != 0 {
		t.Fatalf("checkpoint 1 file: %+v", f)
	}
	if f := byNum[2].Files[0]; f.Change != "modified" || f.Added != 2 || f.Removed != 1 {
		t.Fatalf("checkpoint 2 file: %+v (want +2 -1)", f)
	}
	if f := byNum[3].Files[0]; f.Change != "deleted" || f.Removed != 1 {
		t.Fatalf("checkpoint 3 file: %+v", f)
	}
	if f := byNum[5].Files[0]; f.Change != "mode" || f.Added+f.Removed != 0 {
		t.Fatalf("checkpoint 5 file: %+v", f)
	}
	var paths []string
	for _, f := range byNum[9].Files {
		paths = append(paths, f.Path+":"+f.Change)
	}
	if got := strings.Join(paths, " "); got != "tree/moved:created tree/moved/s.txt:created tree/sub:deleted tree/sub/s.txt:deleted" {
		t.Fatalf("checkpoint 9 files: %s", got)
	}
	if f := byNum[11].Files; len(f) != 2 || f[0].Change != "replaced" || f[1].Path != "d.txt/inner" {
		t.Fatalf("checkpoint 11 files: %+v", f)
	}
}

func TestConflictAndForceAndRedo(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("f.txt", "original\n")
	e.write("f.txt", "agent\n")
	e.write("g.txt", "agent g\n")
	e.seal("write")              // 1
	e.plain("f.txt", "user's\n") // the user edits after the agent
	before := snapshotTree(t, e.ws)

	_, err := Rewind(e.state, "s1", 0, RewindOptions{})
	if !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("rewind of a session in use: %v, want ErrSessionBusy", err)
	}
	rep, err := e.rec.Rewind(0, RewindOptions{})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("rewind over a user edit: err %v, want ErrConflict", err)
	}
	if len(rep.Conflicts) != 1 || rep.Conflicts[0].Path != "f.txt" {
		t.Fatalf("conflicts %+v, want f.txt", rep.Conflicts)
	}
	assertTree(t, e.ws, before, "a refused rewind changes nothing")

	rep, err = e.rec.Rewind(0, RewindOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(e.abs("f.txt")); string(got) != "original\n" {
		t.Fatalf("forced rewind: f.txt = %q", got)
	}
	if _, err := os.Lstat(e.abs("g.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("g.txt, created after checkpoint 0, still exists: %v", err)
	}
	// Redo: rewind to the checkpoint before the rewind brings back what
	// was there, the user's edit included.
	if _, err := e.rec.Rewind(rep.Checkpoint-1, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	assertTree(t, e.ws, before, "redo")
}

func TestPerFileRestore(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("a.txt", "a0\n")
	e.plain("b.txt", "b0\n")
	e.write("a.txt", "a1\n")
	e.write("b.txt", "b1\n")
	e.seal("edit") // 1
	e.record("dir")
	e.write("dir/sub/c.txt", "c\n")
	e.seal("edit") // 2
	e.record("dir")
	e.must(os.RemoveAll(e.abs("dir")))
	e.seal("rm") // 3

	rep, err := e.rec.Rewind(0, RewindOptions{Paths: []string{"a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changes) != 1 || rep.Changes[0].Path != "a.txt" {
		t.Fatalf("changes %+v, want only a.txt", rep.Changes)
	}
	if a, _ := os.ReadFile(e.abs("a.txt")); string(a) != "a0\n" {
		t.Fatalf("a.txt = %q", a)
	}
	if b, _ := os.ReadFile(e.abs("b.txt")); string(b) != "b1\n" {
		t.Fatalf("b.txt = %q, want it untouched", b)
	}
	// A file inside a removed directory comes back with its directories.
	if _, err := e.rec.Rewind(2, RewindOptions{Paths: []string{filepath.Join(e.ws, "dir/sub/c.txt")}}); err != nil {
		t.Fatal(err)
	}
	if c, _ := os.ReadFile(e.abs("dir/sub/c.txt")); string(c) != "c\n" {
		t.Fatalf("dir/sub/c.txt = %q", c)
	}
	if _, err := e.rec.Rewind(0, RewindOptions{Paths: []string{"nothing-here"}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rewind of an untouched path: %v, want ErrNotFound", err)
	}
}

func TestDryRunDiff(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n")
	e.plain("run.sh", "echo\n")
	e.write("a.txt", "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n")
	e.write("new.txt", "fresh\n")
	e.record("run.sh")
	e.must(os.Chmod(e.abs("run.sh"), 0o755))
	e.seal("edit")
	e.rec.Close()
	before := snapshotTree(t, e.ws)

	rep, err := Rewind(e.state, "s1", 0, RewindOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	assertTree(t, e.ws, before, "a dry run writes nothing")
	want := `diff --lite-agent a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -2,7 +2,7 @@
 2
 3
 4
-FIVE
+5
 6
 7
 8
diff --lite-agent a/new.txt b/new.txt
deleted file mode 100644
--- a/new.txt
+++ /dev/null
@@ -1 +0,0 @@
-fresh
diff --lite-agent a/run.sh b/run.sh
old mode 100755
new mode 100644
`
	if rep.Diff != want {
		t.Fatalf("dry-run diff:\n%s\nwant:\n%s", rep.Diff, want)
	}
	if rep.Checkpoint != -1 {
		t.Fatalf("a dry run recorded checkpoint %d", rep.Checkpoint)
	}
	cps, _ := List(e.state, "s1")
	if len(cps) != 2 {
		t.Fatalf("%d checkpoints after a dry run, want 2", len(cps))
	}
}

func TestUntrackedFilesAreNeverDeleted(t *testing.T) {
	e := newEnv(t, nil)
	e.write("gen/a.txt", "a\n")
	e.seal("gen") // 1
	e.plain("gen/mine.txt", "the user's own file\n")
	rep, err := e.rec.Rewind(0, RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.abs("gen/a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("gen/a.txt should be gone")
	}
	if b, err := os.ReadFile(e.abs("gen/mine.txt")); err != nil || string(b) != "the user's own file\n" {
		t.Fatalf("the user's file: %q, %v", b, err)
	}
	if len(rep.Kept) != 1 || rep.Kept[0] != "gen" {
		t.Fatalf("kept %v, want [gen]", rep.Kept)
	}
}

func TestSealNoOpAndUserTurns(t *testing.T) {
	e := newEnv(t, nil)
	if cp, err := e.rec.Seal(SealInfo{Reason: ReasonToolCall}); err != nil || cp != nil {
		t.Fatalf("empty tool-call seal: %v, %v; want nil, nil", cp, err)
	}
	// Recorded but unchanged: still nothing.
	e.plain("a.txt", "a\n")
	e.record("a.txt")
	if cp, err := e.rec.Seal(SealInfo{Reason: ReasonToolCall}); err != nil || cp != nil {
		t.Fatalf("unchanged seal: %v, %v; want nil, nil", cp, err)
	}
	for turn := range 3 {
		cp, err := e.rec.Seal(SealInfo{Reason: ReasonUserTurn, UserTurn: turn})
		if err != nil || cp == nil || cp.Number != turn || cp.UserTurn != turn {
			t.Fatalf("user turn %d: %+v, %v", turn, cp, err)
		}
	}
	if _, err := e.rec.Seal(SealInfo{Reason: "bogus"}); err == nil {
		t.Fatal("an unknown reason was accepted")
	}
	if _, err := e.rec.Seal(SealInfo{Reason: ReasonRewind}); err == nil {
		t.Fatal("the reserved reason rewind was accepted")
	}
	// A resumed session continues the numbering.
	e.rec.Close()
	e.open("s1", nil)
	e.write("b.txt", "b\n")
	if cp := e.seal("w"); cp == nil || cp.Number != 3 {
		t.Fatalf("after resume: %+v, want checkpoint 3", cp)
	}
}

// A restored file with another hard link: the other name is another path,
// which the rewind must not change.
func TestHardLinkKeepsItsContent(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("f", "v0\n")
	e.write("f", "v1\n")
	e.seal("edit")
	e.must(os.Link(e.abs("f"), e.abs("other-name")))
	if _, err := e.rec.Rewind(0, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(e.abs("f")); string(b) != "v0\n" {
		t.Fatalf("f = %q", b)
	}
	if b, _ := os.ReadFile(e.abs("other-name")); string(b) != "v1\n" {
		t.Fatalf("the other link changed: %q", b)
	}
}
