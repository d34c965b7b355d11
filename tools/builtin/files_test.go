package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/tools"
)

// filesTestEnv is a temporary workspace opened as an os.Root, and a
// directory outside it holding a file the tools must never read or change.
type filesTestEnv struct {
	ws      string // workspace, absolute, symlinks resolved
	outside string // a directory outside the workspace
	secret  string // outside/secret.txt
	ctx     *tools.Context
}

const filesTestSecret = "TOP SECRET outside the workspace\n"

func newFilesTestEnv(t *testing.T) *filesTestEnv {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte(filesTestSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &filesTestEnv{ws: ws, outside: outside, secret: secret, ctx: &tools.Context{Root: root, Workspace: ws}}
}

// write creates a file in the workspace (and its parents).
func (e *filesTestEnv) write(t *testing.T, rel, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(e.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func (e *filesTestEnv) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkSecret fails the test if the outside file changed or if more appeared
// next to it.
func (e *filesTestEnv) checkSecret(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(e.secret)
	if err != nil || string(b) != filesTestSecret {
		t.Errorf("the file outside the workspace changed: %q, %v", b, err)
	}
	entries, _ := os.ReadDir(e.outside)
	if len(entries) != 1 {
		var names []string
		for _, en := range entries {
			names = append(names, en.Name())
		}
		t.Errorf("files appeared outside the workspace: %v", names)
	}
}

// filesCall calls tool with input (marshalled to JSON) and returns the result
// and its text.
func filesCall(t *testing.T, ctx *tools.Context, tool *tools.Tool, input any) (*tools.Result, string) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	r := tool.Call(ctx, raw)
	return r, r.TextOf()
}

// filesMustOK calls tool and fails the test on an error result.
func filesMustOK(t *testing.T, ctx *tools.Context, tool *tools.Tool, input any) string {
	t.Helper()
	r, text := filesCall(t, ctx, tool, input)
	if r.IsError {
		t.Fatalf("%s %v: unexpected error: %s", tool.Name(), input, text)
	}
	return text
}

// filesMustFail calls tool, fails the test unless the result is an error,
// and checks that the message contains each of wants.
func filesMustFail(t *testing.T, ctx *tools.Context, tool *tools.Tool, input any, wants ...string) string {
	t.Helper()
	r, text := filesCall(t, ctx, tool, input)
	if !r.IsError {
		t.Fatalf("%s %v: want an error, got: %s", tool.Name(), input, text)
	}
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s %v: error %q does not mention %q", tool.Name(), input, text, w)
		}
	}
	return text
}

type filesObj = map[string]any

func TestFileToolsDeclarations(t *testing.T) {
	for _, tc := range []struct {
		tool     *tools.Tool
		readOnly bool
	}{
		{ReadFile(), true}, {ListDir(), true}, {Glob(), true},
		{WriteFile(), false}, {EditFile(), false},
	} {
		if tc.tool.ReadOnly() != tc.readOnly {
			t.Errorf("%s: ReadOnly() = %v, want %v", tc.tool.Name(), tc.tool.ReadOnly(), tc.readOnly)
		}
		s := tc.tool.Security()
		if s == nil || s.Network != tools.NetworkNone || s.Filesystem != tools.FilesystemWorkspace {
			t.Errorf("%s: security %+v", tc.tool.Name(), s)
		}
		wantSide := tools.SideEffectsWorkspace
		if tc.readOnly {
			wantSide = tools.SideEffectsNone
		}
		if s != nil && s.SideEffects != wantSide {
			t.Errorf("%s: side effects %q, want %q", tc.tool.Name(), s.SideEffects, wantSide)
		}
		a := tc.tool.Annotations()
		if a.Title == "" || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: annotations %+v", tc.tool.Name(), a)
		}
		if !tc.readOnly && (a.DestructiveHint == nil || !*a.DestructiveHint) {
			t.Errorf("%s: a writing tool should be marked destructive", tc.tool.Name())
		}
	}
}

func TestFileToolsSchemaViolation(t *testing.T) {
	e := newFilesTestEnv(t)
	filesMustFail(t, e.ctx, ReadFile(), filesObj{}, "path")
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "x", "offset": 0}, "offset")
	filesMustFail(t, e.ctx, EditFile(), filesObj{"path": "x", "old_string": "a"}, "new_string")
}

func TestFileToolsPathsInside(t *testing.T) {
	e := newFilesTestEnv(t)
	e.write(t, "dir/hello.txt", "hello\n", 0o644)
	abs := filepath.Join(e.ws, "dir/hello.txt")

	for _, p := range []string{"dir/hello.txt", "./dir/../dir/hello.txt", abs} {
		if got := filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": p}); got != "     1\thello" {
			t.Errorf("read_file %s = %q", p, got)
		}
	}
	for _, p := range []string{"dir", abs[:len(abs)-len("/hello.txt")]} {
		if got := filesMustOK(t, e.ctx, ListDir(), filesObj{"path": p}); got != "hello.txt (6 bytes)" {
			t.Errorf("list_dir %s = %q", p, got)
		}
	}
	filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": filepath.Join(e.ws, "dir/new.txt"), "content": "new"})
	if got := e.read(t, "dir/new.txt"); got != "new" {
		t.Errorf("write_file with an absolute path wrote %q", got)
	}
	filesMustOK(t, e.ctx, EditFile(), filesObj{"path": abs, "old_string": "hello", "new_string": "bye"})
	if got := e.read(t, "dir/hello.txt"); got != "bye\n" {
		t.Errorf("edit_file with an absolute path left %q", got)
	}
	// A symlink inside the workspace to a file inside it is followed.
	if err := os.Symlink("dir/hello.txt", filepath.Join(e.ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if got := filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": "link.txt"}); got != "     1\tbye" {
		t.Errorf("read_file through an inside symlink = %q", got)
	}
}

func TestFileToolsPathsOutsideRefused(t *testing.T) {
	e := newFilesTestEnv(t)
	e.write(t, "inside.txt", "inside\n", 0o644)
	if err := os.Symlink(e.outside, filepath.Join(e.ws, "outdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.secret, filepath.Join(e.ws, "outfile")); err != nil {
		t.Fatal(err)
	}
	// A relative link that climbs out is refused as well.
	rel, err := filepath.Rel(e.ws, e.secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(e.ws, "outrel")); err != nil {
		t.Fatal(err)
	}

	rec := &filesRecorder{ws: e.ws}
	e.ctx.Snapshots = rec
	files := []string{
		"../secret.txt",
		"../" + filepath.Base(e.outside) + "/secret.txt",
		e.secret,
		"outdir/secret.txt",
		"outfile",
		"outrel",
		"outdir/new.txt",
		"outdir/sub/new.txt",
	}
	for _, p := range files {
		t.Run(p, func(t *testing.T) {
			for _, tc := range []struct {
				tool  *tools.Tool
				input filesObj
			}{
				{ReadFile(), filesObj{"path": p}},
				{WriteFile(), filesObj{"path": p, "content": "pwned"}},
				{EditFile(), filesObj{"path": p, "old_string": "TOP SECRET", "new_string": "pwned"}},
			} {
				text := filesMustFail(t, e.ctx, tc.tool, tc.input)
				if strings.Contains(text, "TOP SECRET outside") {
					t.Errorf("%s %s leaked the outside file: %s", tc.tool.Name(), p, text)
				}
				if !strings.Contains(text, "outside the workspace") {
					t.Errorf("%s %s: the error does not say the path is outside the workspace: %q", tc.tool.Name(), p, text)
				}
			}
			e.checkSecret(t)
			if len(rec.calls) != 0 {
				t.Errorf("snapshots recorded for a refused path: %+v", rec.calls)
			}
		})
	}
	for _, p := range []string{"..", e.outside, "outdir", "/"} {
		filesMustFail(t, e.ctx, ListDir(), filesObj{"path": p}, "outside the workspace")
		filesMustFail(t, e.ctx, Glob(), filesObj{"pattern": "*", "path": p}, "outside the workspace")
	}
	// Walking the workspace neither follows outdir nor lists the links
	// that lead outside.
	got := filesMustOK(t, e.ctx, Glob(), filesObj{"pattern": "**/*"})
	if got != "inside.txt" {
		t.Errorf("glob ** in a workspace with outside links = %q, want only inside.txt", got)
	}
	e.checkSecret(t)
}

func TestReadFileOffsetLimit(t *testing.T) {
	e := newFilesTestEnv(t)
	var content strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&content, "line %d\n", i)
	}
	e.write(t, "ten.txt", content.String(), 0o644)
	e.write(t, "nonl.txt", "a\nb", 0o644)
	e.write(t, "crlf.txt", "a\r\nb\r\n", 0o644)
	e.write(t, "blank.txt", "\n", 0o644)

	lines := func(from, to int) string {
		var b []string
		for i := from; i <= to; i++ {
			b = append(b, fmt.Sprintf("%6d\tline %d", i, i))
		}
		return strings.Join(b, "\n")
	}
	for _, tc := range []struct {
		name  string
		input filesObj
		want  string
	}{
		{"whole", filesObj{"path": "ten.txt"}, lines(1, 10)},
		{"middle", filesObj{"path": "ten.txt", "offset": 3, "limit": 2}, lines(3, 4) + "\n\n(Showing lines 3-4 of 10. To continue, call read_file with offset=5.)"},
		{"from start", filesObj{"path": "ten.txt", "limit": 4}, lines(1, 4) + "\n\n(Showing lines 1-4 of 10. To continue, call read_file with offset=5.)"},
		{"limit reaches the end exactly", filesObj{"path": "ten.txt", "offset": 7, "limit": 4}, lines(7, 10)},
		{"limit past the end", filesObj{"path": "ten.txt", "offset": 9, "limit": 100}, lines(9, 10)},
		{"last line", filesObj{"path": "ten.txt", "offset": 10}, lines(10, 10)},
		{"no final newline", filesObj{"path": "nonl.txt"}, "     1\ta\n     2\tb"},
		{"no final newline, limited", filesObj{"path": "nonl.txt", "limit": 1}, "     1\ta\n\n(Showing lines 1-1 of 2. To continue, call read_file with offset=2.)"},
		{"crlf", filesObj{"path": "crlf.txt"}, "     1\ta\n     2\tb"},
		{"one blank line", filesObj{"path": "blank.txt"}, "     1\t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := filesMustOK(t, e.ctx, ReadFile(), tc.input); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "ten.txt", "offset": 11}, "offset 11", "has 10 lines")
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "nonl.txt", "offset": 3}, "has 2 lines")
}

func TestReadFileLongLinesAndSizeCap(t *testing.T) {
	e := newFilesTestEnv(t)

	// A long line is cut at readFileMaxLineBytes, on a rune boundary.
	long := strings.Repeat("a", readFileMaxLineBytes-1) + strings.Repeat("é", 100)
	e.write(t, "long.txt", "short\n"+long+"\nafter\n", 0o644)
	got := filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": "long.txt"})
	parts := strings.Split(got, "\n")
	if len(parts) != 3 || parts[0] != "     1\tshort" || parts[2] != "     3\tafter" {
		t.Fatalf("unexpected output around a long line: %.200q", got)
	}
	if !strings.HasPrefix(parts[1], "     2\t"+strings.Repeat("a", readFileMaxLineBytes-1)+"…") ||
		!strings.HasSuffix(parts[1], fmt.Sprintf("[line truncated: %d bytes in total]", len(long))) {
		t.Errorf("long line not truncated with a marker: %.80q…%q", parts[1], parts[1][len(parts[1])-60:])
	}
	if !utf8.ValidString(got) {
		t.Error("truncation split a UTF-8 sequence")
	}

	// Output stops near 256 KiB with a note naming the next offset, and
	// reading from there continues where it stopped.
	var b strings.Builder
	const n, width = 400, 1500
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%04d%s\n", i, strings.Repeat("x", width-4))
	}
	e.write(t, "big.txt", b.String(), 0o644)
	got = filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": "big.txt"})
	if len(got) > readFileMaxOutputBytes+500 {
		t.Errorf("output is %d bytes, over the cap", len(got))
	}
	body, note, ok := strings.Cut(got, "\n\n(")
	if !ok {
		t.Fatalf("no continuation note at the end: %q", got[len(got)-200:])
	}
	shown := strings.Count(body, "\n") + 1
	wantNote := fmt.Sprintf("Output stopped after line %d of %d to stay under 256 KiB. To continue, call read_file with offset=%d;", shown, n, shown+1)
	if !strings.HasPrefix(note, wantNote) {
		t.Errorf("note = %q, want prefix %q", note, wantNote)
	}
	if shown < 150 || shown >= n {
		t.Errorf("showed %d lines of %d", shown, n)
	}
	next := filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": "big.txt", "offset": shown + 1, "limit": 1})
	if want := fmt.Sprintf("%6d\t%04d", shown+1, shown+1); !strings.HasPrefix(next, want) {
		t.Errorf("continuing at offset %d gave %.30q, want prefix %q", shown+1, next, want)
	}
}

func TestReadFileKinds(t *testing.T) {
	e := newFilesTestEnv(t)
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), bytes.Repeat([]byte{0}, 20)...)
	jpeg := append([]byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10}, []byte("JFIF\x00")...)
	gif := []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00")
	webp := []byte("RIFF\x24\x00\x00\x00WEBPVP8 \x00\x00")
	for name, data := range map[string][]byte{
		"pic.png": png, "pic.JPG": jpeg, "pic.jpeg": jpeg, "pic.gif": gif, "pic.webp": webp,
		"png-named.bin": png, "text.png": []byte("not an image\n"),
		"prog.bin":  append([]byte("ELF"), 0, 1, 2, 3),
		"empty.txt": nil,
	} {
		e.write(t, name, string(data), 0o644)
	}
	if err := os.Mkdir(filepath.Join(e.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		file, mime string
		data       []byte
	}{
		{"pic.png", "image/png", png},
		{"pic.JPG", "image/jpeg", jpeg},
		{"pic.jpeg", "image/jpeg", jpeg},
		{"pic.gif", "image/gif", gif},
		{"pic.webp", "image/webp", webp},
	} {
		r, _ := filesCall(t, e.ctx, ReadFile(), filesObj{"path": tc.file})
		if r.IsError {
			t.Errorf("%s: %s", tc.file, r.TextOf())
			continue
		}
		var img *tools.Content
		for i := range r.Content {
			if r.Content[i].Type == tools.ContentImage {
				img = &r.Content[i]
			}
		}
		if img == nil || img.MIMEType != tc.mime || !bytes.Equal(img.Data, tc.data) {
			t.Errorf("%s: want an image block of %s with the file's bytes, got %+v", tc.file, tc.mime, r.Content)
		}
	}

	// Image magic under another extension is just binary; an image
	// extension on text is just text.
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "png-named.bin"}, fmt.Sprintf("png-named.bin is a binary file (%d bytes)", len(png)))
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "prog.bin"}, "prog.bin is a binary file (7 bytes)")
	if got := filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": "text.png"}); got != "     1\tnot an image" {
		t.Errorf("text.png = %q", got)
	}
	if got := filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": "empty.txt"}); got != "(empty file)" {
		t.Errorf("empty file = %q", got)
	}
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "sub"}, "directory", "list_dir")
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "nope.txt"}, "nope.txt does not exist")

	// An image over the limit is refused, not sent.
	big := append(append([]byte{}, png...), make([]byte, readFileMaxImageBytes)...)
	e.write(t, "huge.png", string(big), 0o644)
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "huge.png"}, "image/png", "5 MiB")
}

// filesRecorder is a fake SnapshotRecorder: it notes each path and whether
// it existed when RecordSnapshot was called, with its content then.
type filesRecorder struct {
	ws    string
	calls []filesSnap
	err   error
}

type filesSnap struct {
	path    string
	existed bool
	content string
}

func (r *filesRecorder) RecordSnapshot(p string) error {
	if r.err != nil {
		return r.err
	}
	s := filesSnap{path: filepath.ToSlash(p)}
	full := filepath.Join(r.ws, p)
	if _, err := os.Lstat(full); err == nil {
		s.existed = true
		if b, err := os.ReadFile(full); err == nil {
			s.content = string(b)
		}
	}
	r.calls = append(r.calls, s)
	return nil
}

func TestWriteFile(t *testing.T) {
	e := newFilesTestEnv(t)
	rec := &filesRecorder{ws: e.ws}
	e.ctx.Snapshots = rec

	// New file with missing parents: the parents, then the file, are
	// recorded before any of them exists.
	got := filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": "a/b/c.txt", "content": "hello\n"})
	if want := "Created a/b/c.txt with 6 bytes. Created directories: a/, a/b/."; got != want {
		t.Errorf("result = %q, want %q", got, want)
	}
	wantCalls := []filesSnap{{path: "a"}, {path: "a/b"}, {path: "a/b/c.txt"}}
	if fmt.Sprint(rec.calls) != fmt.Sprint(wantCalls) {
		t.Errorf("snapshots = %+v, want %+v", rec.calls, wantCalls)
	}
	if got := e.read(t, "a/b/c.txt"); got != "hello\n" {
		t.Errorf("content = %q", got)
	}
	// New files and directories get the usual modes (as the umask allows).
	ref := filepath.Join(e.ws, "ref")
	if err := os.WriteFile(ref, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ref+"dir", 0o755); err != nil {
		t.Fatal(err)
	}
	refFile, _ := os.Stat(ref)
	refDir, _ := os.Stat(ref + "dir")
	fi, _ := os.Stat(filepath.Join(e.ws, "a/b/c.txt"))
	di, _ := os.Stat(filepath.Join(e.ws, "a/b"))
	if fi.Mode() != refFile.Mode() || di.Mode() != refDir.Mode() {
		t.Errorf("modes: file %v dir %v, want %v and %v", fi.Mode(), di.Mode(), refFile.Mode(), refDir.Mode())
	}

	// Overwriting keeps the mode and records the old content first.
	e.write(t, "run.sh", "#!/bin/sh\necho old\n", 0o755)
	rec.calls = nil
	got = filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": "run.sh", "content": "#!/bin/sh\necho new\n"})
	if !strings.HasPrefix(got, "Overwrote run.sh with 19 bytes") {
		t.Errorf("result = %q", got)
	}
	if len(rec.calls) != 1 || rec.calls[0] != (filesSnap{"run.sh", true, "#!/bin/sh\necho old\n"}) {
		t.Errorf("snapshots = %+v", rec.calls)
	}
	if fi, _ := os.Stat(filepath.Join(e.ws, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode after overwrite = %v, want 0755", fi.Mode().Perm())
	}
	if got := e.read(t, "run.sh"); got != "#!/bin/sh\necho new\n" {
		t.Errorf("content = %q", got)
	}

	// Only the directories that were missing are recorded.
	rec.calls = nil
	filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": "a/x/y.txt", "content": ""})
	wantCalls = []filesSnap{{path: "a/x"}, {path: "a/x/y.txt"}}
	if fmt.Sprint(rec.calls) != fmt.Sprint(wantCalls) {
		t.Errorf("snapshots = %+v, want %+v", rec.calls, wantCalls)
	}

	// Refusals.
	filesMustFail(t, e.ctx, WriteFile(), filesObj{"path": "a", "content": "x"}, "a is a directory")
	filesMustFail(t, e.ctx, WriteFile(), filesObj{"path": ".", "content": "x"}, "workspace directory")
	filesMustFail(t, e.ctx, WriteFile(), filesObj{"path": "run.sh/x.txt", "content": "x"}, "run.sh is not a directory")
	if err := os.Symlink("nowhere.txt", filepath.Join(e.ws, "dangling")); err != nil {
		t.Fatal(err)
	}
	filesMustFail(t, e.ctx, WriteFile(), filesObj{"path": "dangling", "content": "x"}, "does not exist")
	if _, err := os.Lstat(filepath.Join(e.ws, "nowhere.txt")); err == nil {
		t.Error("write_file created the target of a dangling symlink")
	}
}

func TestWriteFileRecorderErrorBlocksWrite(t *testing.T) {
	e := newFilesTestEnv(t)
	e.write(t, "old.txt", "old", 0o644)
	e.ctx.Snapshots = &filesRecorder{ws: e.ws, err: errors.New("disk full")}

	filesMustFail(t, e.ctx, WriteFile(), filesObj{"path": "new/dir/f.txt", "content": "x"}, "disk full", "nothing was written")
	if _, err := os.Lstat(filepath.Join(e.ws, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a parent directory was created although its snapshot failed: %v", err)
	}
	filesMustFail(t, e.ctx, WriteFile(), filesObj{"path": "old.txt", "content": "new"}, "disk full")
	if got := e.read(t, "old.txt"); got != "old" {
		t.Errorf("file changed although its snapshot failed: %q", got)
	}
	filesMustFail(t, e.ctx, EditFile(), filesObj{"path": "old.txt", "old_string": "old", "new_string": "new"}, "disk full", "nothing was changed")
	if got := e.read(t, "old.txt"); got != "old" {
		t.Errorf("file edited although its snapshot failed: %q", got)
	}
}

func TestEditFile(t *testing.T) {
	const src = "package main\n\nfunc a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n\nfunc c() {\n\treturn 1\n}\n"
	for _, tc := range []struct {
		name     string
		input    filesObj
		want     string   // the file afterwards, if the edit succeeds
		wantText []string // in the result (success) or the error
		fail     bool
	}{
		{
			name:     "unique",
			input:    filesObj{"old_string": "func b() {\n\treturn 1", "new_string": "func b() {\n\treturn 2"},
			want:     strings.Replace(src, "func b() {\n\treturn 1", "func b() {\n\treturn 2", 1),
			wantText: []string{"replaced 1 occurrence.", "Lines 4-11 after the edit:\n     4\t\treturn 1\n     5\t}\n     6\t\n     7\tfunc b() {\n     8\t\treturn 2\n     9\t}\n    10\t\n    11\tfunc c() {"},
		},
		{
			name:     "replace_all",
			input:    filesObj{"old_string": "return 1", "new_string": "return 0", "replace_all": true},
			want:     strings.ReplaceAll(src, "return 1", "return 0"),
			wantText: []string{"replaced 3 occurrences.", "after the first edit", "     4\t\treturn 0"},
		},
		{
			name:     "replace_all with a single match",
			input:    filesObj{"old_string": "func c", "new_string": "func d", "replace_all": true},
			want:     strings.Replace(src, "func c", "func d", 1),
			wantText: []string{"replaced 1 occurrence."},
		},
		{
			name:     "delete",
			input:    filesObj{"old_string": "\nfunc c() {\n\treturn 1\n}\n", "new_string": ""},
			want:     strings.TrimSuffix(src, "\nfunc c() {\n\treturn 1\n}\n"),
			wantText: []string{"replaced 1 occurrence."},
		},
		{name: "ambiguous", input: filesObj{"old_string": "return 1", "new_string": "return 2"}, fail: true,
			wantText: []string{"found 3 times", "surrounding", "replace_all"}},
		{name: "not found", input: filesObj{"old_string": "return  1", "new_string": "x"}, fail: true,
			wantText: []string{"not found", "whitespace", "indentation", "read_file"}},
		{name: "indentation differs", input: filesObj{"old_string": "    return 1\n}\n\nfunc c", "new_string": "x"}, fail: true,
			wantText: []string{"not found"}},
		{name: "empty old_string", input: filesObj{"old_string": "", "new_string": "x"}, fail: true,
			wantText: []string{"old_string is empty", "write_file"}},
		{name: "identical", input: filesObj{"old_string": "func a", "new_string": "func a"}, fail: true,
			wantText: []string{"identical"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newFilesTestEnv(t)
			rec := &filesRecorder{ws: e.ws}
			e.ctx.Snapshots = rec
			e.write(t, "main.go", src, 0o755)
			in := filesObj{"path": "main.go"}
			for k, v := range tc.input {
				in[k] = v
			}
			if tc.fail {
				filesMustFail(t, e.ctx, EditFile(), in, tc.wantText...)
				if got := e.read(t, "main.go"); got != src {
					t.Errorf("a failed edit changed the file to %q", got)
				}
				if len(rec.calls) != 0 {
					t.Errorf("a failed edit recorded snapshots: %+v", rec.calls)
				}
				return
			}
			text := filesMustOK(t, e.ctx, EditFile(), in)
			for _, w := range tc.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("result %q does not contain %q", text, w)
				}
			}
			if got := e.read(t, "main.go"); got != tc.want {
				t.Errorf("file = %q, want %q", got, tc.want)
			}
			if fi, _ := os.Stat(filepath.Join(e.ws, "main.go")); fi.Mode().Perm() != 0o755 {
				t.Errorf("mode after edit = %v, want 0755", fi.Mode().Perm())
			}
			if len(rec.calls) != 1 || rec.calls[0] != (filesSnap{"main.go", true, src}) {
				t.Errorf("snapshot not recorded before the edit: %+v", rec.calls)
			}
		})
	}
}

func TestEditFileRefusals(t *testing.T) {
	e := newFilesTestEnv(t)
	e.write(t, "data.bin", "abc\x00def", 0o644)
	e.write(t, "crlf.txt", "one\r\ntwo\r\nthree\r\n", 0o644)
	if err := os.Mkdir(filepath.Join(e.ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	filesMustFail(t, e.ctx, EditFile(), filesObj{"path": "missing.txt", "old_string": "a", "new_string": "b"}, "does not exist", "write_file")
	filesMustFail(t, e.ctx, EditFile(), filesObj{"path": "data.bin", "old_string": "abc", "new_string": "x"}, "binary")
	filesMustFail(t, e.ctx, EditFile(), filesObj{"path": "dir", "old_string": "a", "new_string": "b"}, "directory")
	if _, err := os.Lstat(filepath.Join(e.ws, "missing.txt")); err == nil {
		t.Error("edit_file created a missing file")
	}

	// Text copied from read_file has bare newlines; a CRLF file still
	// matches and keeps its line endings.
	got := filesMustOK(t, e.ctx, EditFile(), filesObj{"path": "crlf.txt", "old_string": "one\ntwo", "new_string": "1\n2"})
	if !strings.Contains(got, "CRLF") || !strings.Contains(got, "     1\t1\n     2\t2\n     3\tthree") {
		t.Errorf("result = %q", got)
	}
	if got := e.read(t, "crlf.txt"); got != "1\r\n2\r\nthree\r\n" {
		t.Errorf("crlf file = %q", got)
	}
}

func TestListDir(t *testing.T) {
	e := newFilesTestEnv(t)
	e.write(t, "b.txt", "12345", 0o644)
	e.write(t, "a.go", "", 0o644)
	e.write(t, "sub/inner.txt", "x", 0o644)
	e.write(t, ".hidden", "hi", 0o644)
	if err := os.Symlink("sub/inner.txt", filepath.Join(e.ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.outside, filepath.Join(e.ws, "z-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.ws, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		".hidden (2 bytes)",
		"a.go (0 bytes)",
		"b.txt (5 bytes)",
		"empty/",
		"link -> sub/inner.txt",
		"sub/",
		"z-out -> " + e.outside,
	}, "\n")
	for _, in := range []filesObj{{}, {"path": "."}, {"path": ""}, {"path": e.ws}} {
		if got := filesMustOK(t, e.ctx, ListDir(), in); got != want {
			t.Errorf("list_dir %v =\n%s\nwant\n%s", in, got, want)
		}
	}
	if got := filesMustOK(t, e.ctx, ListDir(), filesObj{"path": "empty"}); got != "(empty is an empty directory)" {
		t.Errorf("empty dir = %q", got)
	}
	filesMustFail(t, e.ctx, ListDir(), filesObj{"path": "b.txt"}, "not a directory", "read_file")
	filesMustFail(t, e.ctx, ListDir(), filesObj{"path": "nope"}, "nope does not exist")

	// The cap.
	const total = listDirMaxEntries + 5
	for i := range total {
		e.write(t, fmt.Sprintf("many/f%04d", i), "", 0o644)
	}
	got := filesMustOK(t, e.ctx, ListDir(), filesObj{"path": "many"})
	body, note, ok := strings.Cut(got, "\n\n")
	if !ok || !strings.Contains(note, fmt.Sprintf("first %d of %d entries", listDirMaxEntries, total)) {
		t.Errorf("cap note = %q", note)
	}
	lines := strings.Split(body, "\n")
	if len(lines) != listDirMaxEntries || lines[0] != "f0000 (0 bytes)" || lines[len(lines)-1] != fmt.Sprintf("f%04d (0 bytes)", listDirMaxEntries-1) {
		t.Errorf("capped listing has %d lines, %q … %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

// TestFileToolsRecordEveryHardLink: write_file and edit_file write in
// place, so a file with a second name (made earlier by bash, say) changes
// under both: each name's pre-image is recorded first (issue 11).
func TestFileToolsRecordEveryHardLink(t *testing.T) {
	for _, tool := range []string{"write_file", "edit_file"} {
		t.Run(tool, func(t *testing.T) {
			e := newFilesTestEnv(t)
			rec := &filesRecorder{ws: e.ws}
			e.ctx.Snapshots = rec
			a := filepath.Join(e.ws, "a.txt")
			if err := os.WriteFile(a, []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Mkdir(filepath.Join(e.ws, "sub"), 0o755)
			if err := os.Link(a, filepath.Join(e.ws, "sub", "b.txt")); err != nil {
				t.Fatal(err)
			}
			if tool == "write_file" {
				filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": "a.txt", "content": "new\n"})
			} else {
				filesMustOK(t, e.ctx, EditFile(), filesObj{"path": "a.txt", "old_string": "old", "new_string": "new"})
			}
			var paths []string
			for _, c := range rec.calls {
				paths = append(paths, c.path)
			}
			if fmt.Sprint(paths) != "[a.txt sub/b.txt]" {
				t.Errorf("recorded %v, want a.txt and its other name sub/b.txt", paths)
			}
			if b, _ := os.ReadFile(filepath.Join(e.ws, "sub", "b.txt")); string(b) != "new\n" {
				t.Errorf("the write did not go through the shared inode (so this proves nothing): %q", b)
			}
		})
	}
}
