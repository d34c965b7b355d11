package checkpoint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The Recorder is what the kernel hands tools as their snapshot recorder
// (tools.SnapshotRecorder; spelled out here so that this package's tests
// do not depend on the tools package building).
var _ interface{ RecordSnapshot(path string) error } = (*Recorder)(nil)

// node is one path of a tree copy: what a byte-for-byte comparison needs.
type node struct {
	kind    Kind
	mode    fs.FileMode
	content string // file content or symlink target
}

func (n node) String() string {
	c := n.content
	if len(c) > 40 {
		c = c[:40] + "…"
	}
	return fmt.Sprintf("%s %v %q", n.kind, n.mode, c)
}

// snapshotTree copies the state of every path below dir (except .git).
func snapshotTree(t testing.TB, dir string) map[string]node {
	t.Helper()
	out := map[string]node{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch m := fi.Mode(); {
		case m&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = node{kind: KindSymlink, content: target}
		case m.IsDir():
			out[rel] = node{kind: KindDir, mode: m.Perm() | m&(fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky)}
		case m.IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = node{kind: KindFile, mode: m.Perm() | m&(fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky), content: string(b)}
		default:
			out[rel] = node{kind: KindOther}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of %s: %v", dir, err)
	}
	return out
}

// treeDiff describes how got differs from want ("" when equal).
func treeDiff(want, got map[string]node) string {
	var lines []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("missing %q (want %v)", p, w))
		case g != w:
			lines = append(lines, fmt.Sprintf("%q: got %v, want %v", p, g, w))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			lines = append(lines, fmt.Sprintf("extra %q (%v)", p, g))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func assertTree(t testing.TB, dir string, want map[string]node, what string) {
	t.Helper()
	if d := treeDiff(want, snapshotTree(t, dir)); d != "" {
		t.Fatalf("%s: the tree differs:\n%s", what, d)
	}
}

type env struct {
	t     testing.TB
	ws    string
	state string
	rec   *Recorder
}

func newEnv(t testing.TB, opts *Options) *env {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ws: ws, state: t.TempDir()}
	e.open("s1", opts)
	return e
}

func (e *env) open(id string, opts *Options) {
	e.t.Helper()
	r, err := Open(e.state, id, e.ws, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.rec = r
	e.t.Cleanup(func() { r.Close() })
}

func (e *env) abs(rel string) string { return filepath.Join(e.ws, filepath.FromSlash(rel)) }

// record is what a perfect capturer does before a change.
func (e *env) record(paths ...string) {
	e.t.Helper()
	for _, p := range paths {
		if err := e.rec.RecordSnapshot(p); err != nil {
			e.t.Fatalf("RecordSnapshot(%s): %v", p, err)
		}
	}
}

func (e *env) seal(tool string) *Checkpoint {
	e.t.Helper()
	cp, err := e.rec.Seal(SealInfo{Reason: ReasonToolCall, ToolCallID: "id-" + tool, ToolName: tool, UserTurn: 0})
	if err != nil {
		e.t.Fatalf("Seal: %v", err)
	}
	return cp
}

// Workspace operations that record first, like the tools do.

func (e *env) write(rel, content string) {
	e.t.Helper()
	// Missing parents first, top-down, as write_file does.
	var missing []string
	for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
		if _, err := os.Lstat(e.abs(d)); err == nil {
			break
		}
		missing = append([]string{d}, missing...)
	}
	e.record(missing...)
	e.record(rel)
	e.must(os.MkdirAll(filepath.Dir(e.abs(rel)), 0o755))
	e.must(os.WriteFile(e.abs(rel), []byte(content), 0o644))
	// What write_file does after writing: say what the agent wrote.
	if err := e.rec.RecordWrite(rel, []byte(content)); err != nil {
		e.t.Fatalf("RecordWrite(%s): %v", rel, err)
	}
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// plain writes without recording: the user, or another program.
func (e *env) plain(rel, content string) {
	e.t.Helper()
	e.must(os.MkdirAll(filepath.Dir(e.abs(rel)), 0o755))
	e.must(os.WriteFile(e.abs(rel), []byte(content), 0o644))
}
