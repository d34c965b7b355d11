package checkpoint

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The attack: an agent writes an ignore file matching everything, then
// rewrites and deletes files that existed when the session started. Before
// the rules were limited to paths the session creates and frozen at the
// session's start, none of those changes had a pre-image (the recorder
// re-read a changed ignore file at once, and ignored paths were never
// recorded), so Rewind(0) restored nothing and reported success. Run on
// the code before this change, this test fails at its first check: the
// checkpoint of the deletions has no file at all, only "src/ (.gitignore:1)"
// and "docs/ (.gitignore:1)" named as ignored, by the agent's own file.
func TestIgnoreFileCannotHideExistingFiles(t *testing.T) {
	for _, ignoreFile := range []string{".lite-agent-ignore", ".gitignore"} {
		t.Run(ignoreFile, func(t *testing.T) {
			e := newEnv(t, nil)
			e.plain("a.txt", "original a\n")
			e.plain("src/b.go", "package b\n")
			e.plain("docs/c.md", "# c\n")
			e.plain("docs/deep/d.md", "d\n")
			e.plain(".gitignore", "*.log\n") // an existing ignore file, rewritten below
			start := snapshotTree(t, e.ws)

			e.write(ignoreFile, "*\n")
			e.seal("write ignore")
			e.write("a.txt", "owned\n")
			e.seal("rewrite")
			e.record("src/b.go")
			e.must(os.Remove(e.abs("src/b.go")))
			e.record("docs")
			e.must(os.RemoveAll(e.abs("docs")))
			e.write("new.txt", "created under the new rule: recorded, the rule was not in force at the start\n")
			cp := e.seal("delete")
			if cp == nil || !slices.ContainsFunc(cp.Files, func(f FileChange) bool { return f.Path == "src/b.go" }) {
				t.Fatalf("the deletion of src/b.go was not recorded: %+v", cp)
			}
			if _, err := e.rec.Rewind(0, RewindOptions{}); err != nil {
				t.Fatal(err)
			}
			assertTree(t, e.ws, start, "after Rewind(0)")
		})
	}
}

// An ignore file that is a FIFO or a symlink to /dev/zero (planted by the
// agent in an earlier session) must neither hang the recorder nor exhaust
// its memory: it is read with safefile and treated as empty. Before, a
// symlinked ignore file was skipped by an lstat check but a FIFO swapped in
// after it would have blocked the read; now the open itself never blocks.
func TestPlantedIgnoreFilesDoNotHang(t *testing.T) {
	e := newEnv(t, nil)
	if err := syscall.Mkfifo(e.abs(".gitignore"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO: %v (would have checked that a FIFO ignore file does not block the recorder)", err)
	}
	e.must(os.Symlink("/dev/zero", e.abs(".lite-agent-ignore")))
	// Above safefile's 1 MiB cap: refused, so no rule (record more).
	e.plain("sub/.gitignore", "*\n"+strings.Repeat("#\n", 1<<20))
	done := make(chan *Checkpoint, 1)
	go func() {
		e.write("x.txt", "x\n")
		e.write("sub/y.txt", "y\n")
		done <- e.seal("write")
	}()
	select {
	case cp := <-done:
		if got := strings.Join(fileNames(cp), " "); got != "sub/y.txt x.txt" {
			t.Fatalf("recorded %q, want sub/y.txt x.txt (ignored: %v)", got, ignoredNames(cp))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the recorder blocked on a planted ignore file")
	}
}

func ignoredNames(cp *Checkpoint) []string {
	var out []string
	if cp == nil {
		return nil
	}
	for _, ig := range cp.Ignored {
		out = append(out, ig.Path)
	}
	return out
}

func fileNames(cp *Checkpoint) []string {
	var out []string
	if cp == nil {
		return nil
	}
	for _, f := range cp.Files {
		out = append(out, f.Path)
	}
	return out
}

// The rules in force are those at the session's start: a change to an
// ignore file applies from the next session on, whether the directory's
// rules were first needed before the change (cached) or after it (the
// pre-image is read, not the agent's version); a continued session keeps
// its start's rules and still knows what it created under them.
func TestIgnoreRulesAreThoseOfTheSessionStart(t *testing.T) {
	e := newEnv(t, nil)
	e.plain(".gitignore", "*.tmp\n")
	e.plain("sub/.gitignore", "*.gen\n")

	// Root rules needed before the change, sub's only after it.
	e.write("a.tmp", "a\n")
	e.write(".gitignore", "*.log\n")
	e.write("sub/.gitignore", "*.out\n")
	e.write("b.tmp", "b\n")
	e.write("b.log", "b\n")
	e.write("sub/c.gen", "c\n")
	e.write("sub/c.out", "c\n")
	cp := e.seal("s1")
	if got, want := strings.Join(ignoredNames(cp), " "), "a.tmp b.tmp sub/c.gen"; got != want {
		t.Errorf("session 1 skipped %q, want %q (the rules at its start)", got, want)
	}
	if got, want := strings.Join(fileNames(cp), " "), ".gitignore b.log sub/.gitignore sub/c.out"; got != want {
		t.Errorf("session 1 recorded %q, want %q", got, want)
	}
	e.must(e.rec.Close())

	// The same session, continued: the same rules, and a.tmp is still
	// known as its own creation (skipped, not recorded as existing).
	e.open("s1", nil)
	e.write("a.tmp", "a2\n")
	e.write("d.log", "d\n")
	e.write("d.tmp", "d\n")
	cp = e.seal("s1 continued")
	if got, want := strings.Join(ignoredNames(cp), " "), "a.tmp d.tmp"; got != want {
		t.Errorf("continued session skipped %q, want %q", got, want)
	}
	e.must(e.rec.Close())

	// A new session: the changed files are its rules.
	e.open("s2", nil)
	e.write("e.log", "e\n")
	e.write("e.tmp", "e\n")
	e.write("sub/f.out", "f\n")
	e.write("sub/f.gen", "f\n")
	cp = e.seal("s2")
	if got, want := strings.Join(ignoredNames(cp), " "), "e.log sub/f.out"; got != want {
		t.Errorf("session 2 skipped %q, want %q", got, want)
	}
	// A file that existed at s2's start is recorded though a rule matches.
	e.write("b.log", "b2\n")
	cp = e.seal("s2 existing")
	if got := strings.Join(fileNames(cp), " "); got != "b.log" {
		t.Errorf("session 2 recorded %q, want b.log (it existed at the start)", got)
	}
}

// New paths the session creates under a rule in force at its start are
// still skipped, with everything below an ignored directory it created,
// and named in the checkpoint; "build/**" with "!build/keep.txt" records
// build/keep.txt, as git keeps it (the old engine skipped it).
func TestNewIgnoredPathsAreStillSkipped(t *testing.T) {
	e := newEnv(t, nil)
	e.plain(".gitignore", "node_modules/\nbuild/**\n!build/keep.txt\n")
	e.write("node_modules/pkg/index.js", "x\n")
	e.write("build/out.o", "o\n")
	e.write("build/keep.txt", "keep\n")
	cp := e.seal("create")
	if got, want := strings.Join(ignoredNames(cp), " "), "build/out.o node_modules/"; got != want {
		t.Errorf("skipped %q, want %q", got, want)
	}
	if got, want := strings.Join(fileNames(cp), " "), "build build/keep.txt"; got != want {
		t.Errorf("recorded %q, want %q", got, want)
	}
	for _, ig := range cp.Ignored {
		if !strings.HasPrefix(ig.Reason, createdReason) {
			t.Errorf("%s: reason %q does not say it was created in this session", ig.Path, ig.Reason)
		}
	}
	// Changed again in a later checkpoint: still the session's own.
	e.write("node_modules/pkg/index.js", "y\n")
	e.write("node_modules/pkg/new.js", "y\n")
	cp = e.seal("again")
	if got, want := strings.Join(ignoredNames(cp), " "), "node_modules/"; got != want {
		t.Errorf("skipped %q, want %q", got, want)
	}
	if len(fileNames(cp)) != 0 {
		t.Errorf("recorded %v, want nothing", fileNames(cp))
	}
}

// A file above the size cap that existed at the start is named as not
// covered in the checkpoint and in the rewind, whatever the ignore files
// say; the rest is restored.
func TestExistingFileAboveCapIsReported(t *testing.T) {
	e := newEnv(t, &Options{MaxFileSize: 100})
	e.plain("big.bin", strings.Repeat("b", 200))
	e.plain("a.txt", "a\n")
	e.write(".lite-agent-ignore", "*\n")
	e.write("big.bin", strings.Repeat("c", 300))
	e.write("a.txt", "changed\n")
	cp := e.seal("w")
	if !slices.Contains(ignoredNames(cp), "big.bin") {
		t.Fatalf("big.bin not named as not covered: %+v", cp.Ignored)
	}
	rep, err := e.rec.Rewind(0, RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].Path != "big.bin" || !strings.Contains(rep.Skipped[0].Reason, "size cap") {
		t.Fatalf("rewind skipped %+v, want big.bin (size cap)", rep.Skipped)
	}
	if b, _ := os.ReadFile(e.abs("a.txt")); string(b) != "a\n" {
		t.Fatalf("a.txt = %q after the rewind", b)
	}
}

// A directory-only rule ("out/") cannot match a path that does not exist
// yet: mkdir records out as absent, and the seal then sees a directory the
// session created under the rule and leaves it out, with what was made
// inside; later changes inside it stay skipped.
func TestDirOnlyRuleOnACreatedDirectory(t *testing.T) {
	e := newEnv(t, nil)
	e.plain(".gitignore", "out/\n")
	e.record("out")
	e.must(os.Mkdir(e.abs("out"), 0o755))
	e.write("out/x.o", "x\n")
	cp := e.seal("mkdir")
	if got := strings.Join(ignoredNames(cp), " "); got != "out/" || len(fileNames(cp)) != 0 {
		t.Fatalf("skipped %q, recorded %v; want out/ skipped, nothing recorded", got, fileNames(cp))
	}
	e.write("out/y.o", "y\n")
	cp = e.seal("again")
	if got := strings.Join(ignoredNames(cp), " "); got != "out/" || len(fileNames(cp)) != 0 {
		t.Fatalf("skipped %q, recorded %v; want out/ skipped, nothing recorded", got, fileNames(cp))
	}
}
