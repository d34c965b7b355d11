package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/tools"
)

// grepTestWorkspace creates a workspace holding files (path → content) and
// returns a call context with its root open.
func grepTestWorkspace(t *testing.T, files map[string]string) *tools.Context {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &tools.Context{Ctx: context.Background(), Workspace: dir, Root: root}
}

// grepRun calls the grep tool and returns its text, failing the test if
// the result's error flag is not wantErr.
func grepRun(t *testing.T, ctx *tools.Context, wantErr bool, input map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	r := Grep().Call(ctx, raw)
	text := r.TextOf()
	if r.IsError != wantErr {
		t.Fatalf("grep %s: IsError = %v, want %v; text:\n%s", raw, r.IsError, wantErr, text)
	}
	return text
}

func grepWantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	if w := strings.Join(want, "\n"); got != w {
		t.Errorf("output:\n%s\nwant:\n%s", got, w)
	}
}

var grepTestFiles = map[string]string{
	"a.go":          "package a\n\nfunc Alpha() {}\nfunc beta() {}\n",
	"b.txt":         "alpha\nALPHA\nnothing\n",
	"sub/c.go":      "package sub\n// Alpha again\nvar x = 1\n",
	"sub/deep/d.ts": "export const alpha = 1;\n",
	"z/e.md":        "no match here\n",
}

func TestGrepDeclaration(t *testing.T) {
	if Grep().Name() != "grep" || !Grep().ReadOnly() {
		t.Fatalf("name %q, read-only %v", Grep().Name(), Grep().ReadOnly())
	}
	sec := Grep().Security()
	if sec == nil || sec.Network != tools.NetworkNone || sec.Filesystem != tools.FilesystemWorkspace || sec.SideEffects != tools.SideEffectsNone {
		t.Fatalf("security = %+v", sec)
	}
	a := Grep().Annotations()
	if a.Title != "Search file contents" || a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Fatalf("annotations = %+v", a)
	}
	schema := string(Grep().InputSchemaJSON())
	for _, want := range []string{`"pattern"`, `"path"`, `"glob"`, `"output_mode"`, `"context"`, `"case_insensitive"`, `"enum":["files_with_matches","content","count"]`, `"required":["pattern"]`} {
		if !strings.Contains(schema, want) {
			t.Errorf("schema lacks %s: %s", want, schema)
		}
	}
}

func TestGrepOutputModes(t *testing.T) {
	ctx := grepTestWorkspace(t, grepTestFiles)
	// files_with_matches is the default; paths are sorted, '/' first.
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "Alpha"}), "a.go", "sub/c.go")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "Alpha", "output_mode": "files_with_matches"}), "a.go", "sub/c.go")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "func", "output_mode": "count"}), "a.go:2")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": `func \w+\(`, "output_mode": "content"}),
		"a.go:3:func Alpha() {}",
		"a.go:4:func beta() {}")
}

func TestGrepCaseInsensitive(t *testing.T) {
	ctx := grepTestWorkspace(t, grepTestFiles)
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "alpha", "case_insensitive": true}),
		"a.go", "b.txt", "sub/c.go", "sub/deep/d.ts")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "alpha", "case_insensitive": true, "output_mode": "count"}),
		"a.go:1", "b.txt:2", "sub/c.go:1", "sub/deep/d.ts:1")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "alpha"}), "b.txt", "sub/deep/d.ts")

	// Case folding is Unicode's, as in rg: the Kelvin sign folds to k and
	// the long s to s, which the ASCII prefilter must not miss.
	ctx = grepTestWorkspace(t, map[string]string{
		"kelvin.txt": "x \u212Aelvin x\n",
		"long-s.txt": "be \u017Ftrict\n",
		"mixed.txt":  "one\nA HaNdLeR(x) here\nthree\n",
		"none.txt":   "handle r\nhandle\nhandler\n",
	})
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "kelvin|strict", "case_insensitive": true, "output_mode": "content"}),
		"kelvin.txt:1:x \u212Aelvin x", "long-s.txt:1:be \u017Ftrict")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": `handler\(`, "case_insensitive": true, "output_mode": "content"}),
		"mixed.txt:2:A HaNdLeR(x) here")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "ELVIN", "case_insensitive": true}), "kelvin.txt")
}

func TestGrepContextLines(t *testing.T) {
	var lines []string
	for i := 1; i <= 30; i++ {
		l := fmt.Sprintf("line %d", i)
		if i == 5 || i == 7 || i == 20 {
			l += " MATCH"
		}
		lines = append(lines, l)
	}
	ctx := grepTestWorkspace(t, map[string]string{
		"f.txt": strings.Join(lines, "\n") + "\n",
		"g.txt": "MATCH first\nsecond\n",
		"h.txt": "MATCH\n",
	})
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "MATCH", "output_mode": "content", "context": 2}),
		"f.txt-3-line 3",
		"f.txt-4-line 4",
		"f.txt:5:line 5 MATCH",
		"f.txt-6-line 6",
		"f.txt:7:line 7 MATCH",
		"f.txt-8-line 8",
		"f.txt-9-line 9",
		"--",
		"f.txt-18-line 18",
		"f.txt-19-line 19",
		"f.txt:20:line 20 MATCH",
		"f.txt-21-line 21",
		"f.txt-22-line 22",
		"--",
		"g.txt:1:MATCH first",
		"g.txt-2-second", // context that reaches the end of a file
		"--",
		"h.txt:1:MATCH")
	// Groups that just touch are not separated; context stops at the
	// file's edges.
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "MATCH", "output_mode": "content", "context": 6, "path": "f.txt"}),
		"f.txt-1-line 1", "f.txt-2-line 2", "f.txt-3-line 3", "f.txt-4-line 4",
		"f.txt:5:line 5 MATCH", "f.txt-6-line 6", "f.txt:7:line 7 MATCH",
		"f.txt-8-line 8", "f.txt-9-line 9", "f.txt-10-line 10", "f.txt-11-line 11", "f.txt-12-line 12", "f.txt-13-line 13",
		"f.txt-14-line 14", "f.txt-15-line 15", "f.txt-16-line 16", "f.txt-17-line 17", "f.txt-18-line 18", "f.txt-19-line 19",
		"f.txt:20:line 20 MATCH",
		"f.txt-21-line 21", "f.txt-22-line 22", "f.txt-23-line 23", "f.txt-24-line 24", "f.txt-25-line 25", "f.txt-26-line 26")
}

func TestGrepLineSemantics(t *testing.T) {
	ctx := grepTestWorkspace(t, map[string]string{
		"f.txt":     "foo bar\nbar foo\n\nfoo\r\nlast foo",
		"empty.txt": "",
	})
	// ^ and $ anchor at line boundaries; \s does not run into the next line.
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "^foo", "output_mode": "content"}),
		"f.txt:1:foo bar", "f.txt:4:foo")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": `foo$`, "output_mode": "content"}),
		"f.txt:2:bar foo", "f.txt:5:last foo")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": `foo\s+bar`, "output_mode": "count"}), "f.txt:1")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": `^$`, "output_mode": "content"}), "f.txt:3:")
	// \A anchors at the start of each line, as each line is matched alone.
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": `\Abar`, "output_mode": "content"}), "f.txt:2:bar foo")
}

func TestGrepGlob(t *testing.T) {
	ctx := grepTestWorkspace(t, grepTestFiles)
	for _, tc := range []struct {
		glob string
		want []string
	}{
		{"*.go", []string{"a.go", "sub/c.go"}},
		{"**/*.go", []string{"a.go", "sub/c.go"}},
		{"sub/**/*.ts", []string{"sub/deep/d.ts"}},
		{"*.{go,ts}", []string{"a.go", "sub/c.go", "sub/deep/d.ts"}},
		{"!*.go", []string{"b.txt", "sub/deep/d.ts"}},
		{"*.md", nil},
	} {
		got := grepRun(t, ctx, false, map[string]any{"pattern": "(?i)alpha", "glob": tc.glob})
		if tc.want == nil {
			if !strings.HasPrefix(got, "No matches") {
				t.Errorf("glob %q: %q, want no matches", tc.glob, got)
			}
			continue
		}
		if w := strings.Join(tc.want, "\n"); got != w {
			t.Errorf("glob %q: got\n%s\nwant\n%s", tc.glob, got, w)
		}
	}
	// A glob with a slash may also be relative to the searched directory.
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "alpha", "path": "sub", "glob": "deep/*.ts"}), "sub/deep/d.ts")
}

func TestGrepPath(t *testing.T) {
	ctx := grepTestWorkspace(t, grepTestFiles)
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "(?i)alpha", "path": "sub"}), "sub/c.go", "sub/deep/d.ts")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "(?i)alpha", "path": "sub/deep/"}), "sub/deep/d.ts")
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "(?i)alpha", "path": "b.txt", "output_mode": "content"}),
		"b.txt:1:alpha", "b.txt:2:ALPHA")
	// An absolute path inside the workspace works too.
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "Alpha", "path": filepath.Join(ctx.Workspace, "sub")}), "sub/c.go")

	for _, p := range []string{"../", "/etc", "missing"} {
		got := grepRun(t, ctx, true, map[string]any{"pattern": "x", "path": p})
		if !strings.Contains(got, p) {
			t.Errorf("path %q: error %q does not name the path", p, got)
		}
	}
}

func TestGrepNoMatches(t *testing.T) {
	ctx := grepTestWorkspace(t, grepTestFiles)
	got := grepRun(t, ctx, false, map[string]any{"pattern": "zzz_not_there"})
	if !strings.HasPrefix(got, `No matches for "zzz_not_there" in the workspace`) || !strings.Contains(got, "searched 5 files") {
		t.Errorf("no-match message: %q", got)
	}
}

func TestGrepGitignore(t *testing.T) {
	const needle = "NEEDLE"
	ctx := grepTestWorkspace(t, map[string]string{
		".gitignore":               "*.log\n!keep.log\nbuild/\n/anchored.txt\n# comment\n\n",
		"app.log":                  needle,
		"keep.log":                 needle,
		"build/out.txt":            needle,
		"src/build":                needle, // a file: "build/" is for directories only
		"anchored.txt":             needle,
		"src/anchored.txt":         needle, // "/anchored.txt" is anchored to the root
		"src/.gitignore":           "generated/\n!app.log\nlocal.txt\n",
		"src/app.log":              needle, // re-included by the nested file
		"src/local.txt":            needle,
		"local.txt":                needle, // the nested file applies below src only
		"src/generated/x.go":       needle,
		"src/main.go":              needle,
		".git/config":              needle,
		".git/objects/ab/cdef":     needle,
		"up/.GIT/config":           needle, // ".git" in any case (paths.IsGitName)
		"sub/.git":                 needle, // a .git file (a worktree link), not a directory
		".github/workflows/ci.yml": needle, // hidden files are searched
	})
	// Only .git directories are skipped; sub/.git is a regular file.
	got := grepRun(t, ctx, false, map[string]any{"pattern": needle})
	grepWantLines(t, got,
		".github/workflows/ci.yml",
		"keep.log",
		"local.txt",
		"src/anchored.txt",
		"src/app.log",
		"src/build",
		"src/main.go",
		"sub/.git")

	// Searching below the root still applies the root's .gitignore.
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": needle, "path": "src"}),
		"src/anchored.txt", "src/app.log", "src/build", "src/main.go")
	// A file named explicitly is searched even though it is ignored.
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": needle, "path": "app.log"}), "app.log")
}

func TestGrepGitInfoExclude(t *testing.T) {
	ctx := grepTestWorkspace(t, map[string]string{
		".git/info/exclude": "excluded.txt\n",
		"excluded.txt":      "hit",
		"kept.txt":          "hit",
	})
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "hit"}), "kept.txt")
}

func TestGrepBinarySkipped(t *testing.T) {
	bin := "\x00\x01\x02 NEEDLE in a binary file"
	late := strings.Repeat("x", looksBinarySniffBytes+10) + "\x00 NEEDLE after the probe"
	ctx := grepTestWorkspace(t, map[string]string{
		"bin.dat":  bin,
		"late.txt": late, // the NUL is beyond the first 8 KiB: searched
		"text.txt": "NEEDLE",
	})
	grepWantLines(t, grepRun(t, ctx, false, map[string]any{"pattern": "NEEDLE"}), "late.txt", "text.txt")
	got := grepRun(t, ctx, false, map[string]any{"pattern": "NEEDLE", "path": "bin.dat"})
	if !strings.Contains(got, "No matches") || !strings.Contains(got, "1 binary file") {
		t.Errorf("binary file named explicitly: %q", got)
	}
}

func TestGrepSymlinkOutsideNotFollowed(t *testing.T) {
	outside := t.TempDir()
	marker := fmt.Sprintf("OUTSIDE_MARKER_%d", time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := grepTestWorkspace(t, map[string]string{"inside.txt": "nothing special\n"})
	for name, target := range map[string]string{
		"link-file.txt": filepath.Join(outside, "secret.txt"),
		"link-dir":      outside,
		"rel-link":      "../" + filepath.Base(outside),
	} {
		if err := os.Symlink(target, filepath.Join(ctx.Workspace, name)); err != nil {
			t.Skipf("cannot create symlinks here: %v (would have checked that grep does not follow them out of the workspace)", err)
		}
	}
	for _, in := range []map[string]any{
		{"pattern": "OUTSIDE_MARKER"},
		{"pattern": "OUTSIDE_MARKER", "output_mode": "content"},
		{"pattern": ".", "output_mode": "content"},
		{"pattern": "OUTSIDE_MARKER", "output_mode": "content", "path": "link-file.txt"},
		{"pattern": "OUTSIDE_MARKER", "output_mode": "content", "path": "link-dir"},
		{"pattern": "OUTSIDE_MARKER", "output_mode": "content", "path": "link-dir/secret.txt"},
	} {
		raw, _ := json.Marshal(in)
		r := Grep().Call(ctx, raw)
		if text := r.TextOf(); strings.Contains(text, marker) {
			t.Errorf("grep %s read outside the workspace:\n%s", raw, text)
		}
	}
	// Naming the link explicitly is an error that says why.
	got := grepRun(t, ctx, true, map[string]any{"pattern": "x", "path": "link-dir"})
	if !strings.Contains(got, "outside the workspace") {
		t.Errorf("link-dir: %q", got)
	}
}

func TestGrepSpecialFilesDoNotBlock(t *testing.T) {
	ctx := grepTestWorkspace(t, map[string]string{"a.txt": "hit\n"})
	if err := syscall.Mkfifo(filepath.Join(ctx.Workspace, "fifo"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v (would have checked that grep neither opens nor waits on one)", err)
	}
	done := make(chan *tools.Result, 2)
	go func() {
		done <- Grep().Call(ctx, json.RawMessage(`{"pattern":"hit"}`))
		done <- Grep().Call(ctx, json.RawMessage(`{"pattern":"hit","path":"fifo"}`))
	}()
	for _, want := range []string{"a.txt", "fifo is neither a regular file nor a directory"} {
		select {
		case r := <-done:
			if got := r.TextOf(); !strings.Contains(got, want) || r.IsError != (want != "a.txt") {
				t.Errorf("got %q (IsError %v), want %q", got, r.IsError, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("grep blocked on a FIFO")
		}
	}
}

func TestGrepOutputCap(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	ctx := grepTestWorkspace(t, map[string]string{"big.txt": b.String(), "long.txt": strings.Repeat("é", 1000) + " match\n"})
	got := grepRun(t, ctx, false, map[string]any{"pattern": "match", "output_mode": "content"})
	lines := strings.Split(got, "\n")
	if !strings.HasPrefix(lines[0], "big.txt:1:match 0") {
		t.Errorf("first line %q", lines[0])
	}
	if !strings.Contains(got, "[Output truncated: showing 1000 of 3001 output lines (3001 matching lines in 2 files)") ||
		!strings.Contains(got, "Narrow the search") {
		t.Errorf("truncation note missing or wrong:\n%s", got[len(got)-min(len(got), 600):])
	}
	if n := strings.Count(got, "\nbig.txt:"); n != 999 {
		t.Errorf("%d big.txt lines shown after the first, want 999", n)
	}
	// Long lines are shortened at a character boundary.
	got = grepRun(t, ctx, false, map[string]any{"pattern": "match", "output_mode": "content", "path": "long.txt"})
	if !strings.HasPrefix(got, "long.txt:1:éé") || !strings.Contains(got, "more bytes]") || len(got) > grepMaxLineBytes+100 {
		t.Errorf("long line: %q", got)
	}

	// files_with_matches is capped too.
	files := map[string]string{}
	for i := range 1200 {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%10, i)] = "hit\n"
	}
	ctx = grepTestWorkspace(t, files)
	got = grepRun(t, ctx, false, map[string]any{"pattern": "hit"})
	if !strings.Contains(got, "showing the first 1000 of 1200 matching files") {
		t.Errorf("files cap note missing:\n%s", got[len(got)-min(len(got), 400):])
	}
	if !strings.HasPrefix(got, "d00/f0000.txt\nd00/f0010.txt\n") {
		t.Errorf("not sorted: %q", got[:40])
	}
}

func TestGrepInvalidInput(t *testing.T) {
	ctx := grepTestWorkspace(t, grepTestFiles)
	got := grepRun(t, ctx, true, map[string]any{"pattern": "func("})
	if !strings.Contains(got, "invalid regular expression") || !strings.Contains(got, "missing closing )") {
		t.Errorf("invalid regexp: %q", got)
	}
	got = grepRun(t, ctx, true, map[string]any{"pattern": "x", "output_mode": "lines"})
	if !strings.Contains(got, "output_mode") {
		t.Errorf("invalid output_mode does not name the field: %q", got)
	}
	got = grepRun(t, ctx, true, map[string]any{"pattern": "x", "context": -1})
	if !strings.Contains(got, "context") {
		t.Errorf("negative context does not name the field: %q", got)
	}
	grepRun(t, ctx, true, map[string]any{"pattern": ""})
	grepRun(t, ctx, true, map[string]any{"pattern": "x", "bogus": 1})
	// Without a workspace the tool says so instead of crashing.
	got = grepRun(t, &tools.Context{}, true, map[string]any{"pattern": "x"})
	if !strings.Contains(got, "no workspace") {
		t.Errorf("no workspace: %q", got)
	}
}

func TestGrepCancelled(t *testing.T) {
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("d/f%03d.txt", i)] = "hit\n"
	}
	ctx := grepTestWorkspace(t, files)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	ctx.Ctx = c
	r := Grep().Call(ctx, json.RawMessage(`{"pattern":"hit"}`))
	if !r.IsError || !strings.Contains(r.TextOf(), "cancel") {
		t.Errorf("cancelled search: %+v", r)
	}
}

func TestGrepRequiredLiteral(t *testing.T) {
	for _, tc := range []struct{ pattern, lit string }{
		{"hello", "hello"},
		{`func \w+Handler\(`, "Handler("},
		{"(?i)hello", ""}, // a case-folded literal; see TestGrepFoldLiteral
		{"a|b", ""},
		{"x(abc)+y", "abc"},
		{"(abc)?def", "def"},
		{"[ab]c", "c"},
	} {
		m, err := newGrepMatcher(tc.pattern, false)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.lit) != tc.lit {
			t.Errorf("%q: literal %q, want %q", tc.pattern, m.lit, tc.lit)
		}
	}
}

func TestGrepFoldLiteral(t *testing.T) {
	for _, tc := range []struct{ pattern, lower string }{
		{"hello", "hello"},
		{`func \w+Handler\(`, "handler("},
		{"kelvin", "elvin"},  // 'k' also folds to the Kelvin sign
		{"mask_size", "ize"}, // 's' also folds to the long s
		{"ok", ""},           // nothing long enough
		{"café au lait", " au lait"},
	} {
		m, err := newGrepMatcher(tc.pattern, true)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if m.fold != nil {
			got = string(m.fold.lower)
		}
		if got != tc.lower || m.lit != nil {
			t.Errorf("%q: fold literal %q (literal %q), want %q", tc.pattern, got, m.lit, tc.lower)
		}
	}
	f := newGrepFoldLit("HANDLER(")
	if f.lower[f.anchor] != '(' {
		t.Errorf("anchor %q, want the non-letter '('", f.lower[f.anchor])
	}
	buf := []byte("handle handlex HANDLER( xhandler(")
	ff := newGrepFoldFinder(f, buf)
	var got []int
	for from := 0; ; {
		i := ff.index(from)
		if i < 0 {
			break
		}
		got = append(got, i)
		from = i + 1
	}
	if fmt.Sprint(got) != "[15 25]" {
		t.Errorf("occurrences at %v, want [15 25]", got)
	}
}

// TestGrepPlantedIgnoreFiles: the agent can write ignore files, so a FIFO
// or a symlink there must neither hang nor flood grep. Before ignore files
// were read with internal/safefile, a FIFO at .git/info/exclude blocked
// grep for ever in open(2) (a FIFO without a writer blocks a reader), and
// a src/.gitignore symlink was followed to whatever it named inside the
// workspace when src was searched. Now both are treated as absent: grep
// skips less, never hangs.
func TestGrepPlantedIgnoreFiles(t *testing.T) {
	ctx := grepTestWorkspace(t, map[string]string{
		"src/a.go":  "hit\n",
		"src/b.log": "hit\n",
		"rules":     "*\n", // would ignore everything if followed
	})
	ws := ctx.Workspace
	if err := os.MkdirAll(filepath.Join(ws, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, ".git", "info", "exclude"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v (would have checked that a FIFO ignore file does not block grep)", err)
	}
	if err := os.Symlink("../rules", filepath.Join(ws, "src", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(ws, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 2)
	go func() {
		done <- Grep().Call(ctx, json.RawMessage(`{"pattern":"hit"}`)).TextOf()
		done <- Grep().Call(ctx, json.RawMessage(`{"pattern":"hit","path":"src"}`)).TextOf()
	}()
	for range 2 {
		select {
		case got := <-done:
			if !strings.Contains(got, "src/a.go") || !strings.Contains(got, "src/b.log") {
				t.Errorf("grep = %q, want both files (planted ignore files are not read)", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("grep blocked on a planted ignore file")
		}
	}
}
