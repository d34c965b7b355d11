package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	e := newFilesTestEnv(t)
	for _, f := range []string{
		"main.go", "README.md", "b/c.go", "b/d/e.go", "b/x.txt", "B/z.go",
		"cmd/tool/main.go", "cfg.yml", "cfg.yaml",
		".git/hooks/h.go", "sub/.git/objects/o.go", ".github/w.go",
		"up/.GIT/objects/p.go", // ".git" in any case: one rule (paths.IsGitName)
	} {
		e.write(t, f, "x", 0o644)
	}
	if err := os.Mkdir(filepath.Join(e.ws, "emptydir.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A link to a directory is not followed (no duplicates, no loops); a
	// link to a file inside is listed.
	if err := os.Symlink("b", filepath.Join(e.ws, "blink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(e.ws, "b/loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("main.go", filepath.Join(e.ws, "alias.go")); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		input filesObj
		want  []string
	}{
		{"doublestar", filesObj{"pattern": "**/*.go"}, []string{".github/w.go", "B/z.go", "alias.go", "b/c.go", "b/d/e.go", "cmd/tool/main.go", "main.go"}},
		{"top level", filesObj{"pattern": "*.go"}, []string{"alias.go", "main.go"}},
		{"alternatives", filesObj{"pattern": "*.{yml,yaml}"}, []string{"cfg.yaml", "cfg.yml"}},
		{"middle star", filesObj{"pattern": "cmd/*/main.go"}, []string{"cmd/tool/main.go"}},
		{"literal", filesObj{"pattern": "README.md"}, []string{"README.md"}},
		{"in a directory", filesObj{"pattern": "**/*.go", "path": "b"}, []string{"b/c.go", "b/d/e.go"}},
		{"in a directory, ./", filesObj{"pattern": "./*", "path": "./b/"}, []string{"b/c.go", "b/x.txt"}},
		{"absolute path", filesObj{"pattern": "*.go", "path": filepath.Join(e.ws, "b")}, []string{"b/c.go"}},
		{"absolute pattern", filesObj{"pattern": filepath.Join(e.ws, "b", "**", "*.go")}, []string{"b/c.go", "b/d/e.go"}},
		{"explicit .git is still hidden", filesObj{"pattern": ".git/**"}, nil},
		{"explicit .GIT is still hidden", filesObj{"pattern": "up/.GIT/**"}, nil},
		{"everything", filesObj{"pattern": "**", "path": "b"}, []string{"b/c.go", "b/d/e.go", "b/x.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := filesMustOK(t, e.ctx, Glob(), tc.input)
			want := strings.Join(tc.want, "\n")
			if tc.want == nil {
				want = fmt.Sprintf("No files match %q in the workspace.", tc.input["pattern"])
			}
			if got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}

	filesMustFail(t, e.ctx, Glob(), filesObj{"pattern": "[abc"}, "invalid glob pattern")
	filesMustFail(t, e.ctx, Glob(), filesObj{"pattern": "{a,b"}, "invalid glob pattern")
	filesMustFail(t, e.ctx, Glob(), filesObj{"pattern": "../*"}, `".."`)
	filesMustFail(t, e.ctx, Glob(), filesObj{"pattern": "/etc/*"}, "absolute")
	filesMustFail(t, e.ctx, Glob(), filesObj{"pattern": ""}, "pattern is empty")
	filesMustFail(t, e.ctx, Glob(), filesObj{"pattern": "*", "path": "main.go"}, "not a directory")
	filesMustFail(t, e.ctx, Glob(), filesObj{"pattern": "*", "path": "nope"}, "nope does not exist")
	filesMustFail(t, e.ctx, Glob(), filesObj{}, "pattern")
	if got := filesMustOK(t, e.ctx, Glob(), filesObj{"pattern": "**/*.rs", "path": "b"}); got != `No files match "**/*.rs" under b.` {
		t.Errorf("no match = %q", got)
	}
}

func TestGlobCap(t *testing.T) {
	e := newFilesTestEnv(t)
	const total = globMaxResults + 7
	for i := range total {
		e.write(t, fmt.Sprintf("d%d/f%04d.txt", i%3, i), "", 0o644)
	}
	got := filesMustOK(t, e.ctx, Glob(), filesObj{"pattern": "**/*.txt"})
	body, note, ok := strings.Cut(got, "\n\n")
	if !ok || !strings.Contains(note, fmt.Sprintf("first %d of %d matching files; 7 more matched", globMaxResults, total)) {
		t.Errorf("cap note = %q", note)
	}
	lines := strings.Split(body, "\n")
	if len(lines) != globMaxResults {
		t.Fatalf("got %d lines, want %d", len(lines), globMaxResults)
	}
	for i := 1; i < len(lines); i++ {
		if lines[i-1] >= lines[i] {
			t.Fatalf("not sorted: %q before %q", lines[i-1], lines[i])
		}
	}
	if lines[0] != "d0/f0000.txt" {
		t.Errorf("first = %q", lines[0])
	}
}
