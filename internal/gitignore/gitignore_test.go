package gitignore

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// The ignore files of the comparison repository: every rule of
// gitignore(5) that the recorder and grep rely on, and the corners where
// the two engines this package replaces went wrong ("build/**" with a
// re-included file, escaped characters, trailing spaces, classes,
// unterminated classes, "**" in every position, nested files).
var gitCaseFiles = map[string]string{
	".gitignore": `# a comment
*.log
!keep.log
build/**
!build/keep.txt
!build/sub/keep.txt
/rootonly
docs/**/*.pdf
lib/gen
out/
\#hash
\!bang
trail   
trailesc\ 
[abc].c
[!x]y.z
[^q]w.z
file[[:digit:]].txt
[0-9]num
**/deep
foo/**
a/**/b
a**b
ignored_dir/
!ignored_dir/reinc.txt
q?.md
*.tmp
\*star
unterminated[ab
x/*/y
mid/**z
`,
	"sub/.gitignore":        "!x.log\nlocal.txt\n/anch\nmid/dle\n!*.tmp\n",
	"sub/deeper/.gitignore": "*\n!*.keep\n!keepdir/\n",
	"crlf/.gitignore":       "crlf.txt\r\nother\r\n",
	// A deeper file wins over the root's "out/", and its own directory's
	// file does not decide whether the directory itself is ignored.
	"out2/.gitignore": "!*.log\n",
}

// gitCasePaths are checked; a trailing '/' makes a directory.
var gitCasePaths = []string{
	"main.go", "x.log", "keep.log", "deep/keep.log", "sub/x.log", "sub/y.log",
	"build/", "build/keep.txt", "build/other.txt", "build/sub/", "build/sub/keep.txt",
	"rootonly", "sub/rootonly",
	"docs/a.pdf", "docs/x/y/b.pdf", "docs/a.txt", "x/docs/a.pdf",
	"lib/gen", "x/lib/gen",
	"out", "out3/out/", "out3/out/f.txt", "outx/f.txt",
	"#hash", "!bang", "hash", "bang",
	"trail", "trailesc ", "trailesc",
	"a.c", "d.c", "ay.z", "xy.z", "aw.z", "qw.z", "file1.txt", "filea.txt", "5num", "xnum",
	"deep2/deep", "x/y/deep", "deep/",
	"foo/", "foo/bar", "foo/baz/qux",
	"a/b", "a/x/b", "a/x/y/b", "aXYb", "ab",
	"ignored_dir/", "ignored_dir/reinc.txt",
	"q1.md", "q12.md", "q\xc3\xa9.md",
	"a.tmp", "sub/a.tmp",
	"*star", "xstar", "unterminated[ab", "unterminateda",
	"x/1/y", "x/1/2/y", "mid/z", "mid/a/b/z", "mid/az",
	"sub/local.txt", "local.txt", "sub/anch", "sub/x/anch", "sub/mid/dle", "sub/x/mid/dle", "mid/dle",
	"sub/deeper/a.txt", "sub/deeper/b.keep", "sub/deeper/keepdir/", "sub/deeper/keepdir/c.txt",
	"sub/deeper/dir/", "sub/deeper/dir/d.keep",
	"crlf/crlf.txt", "crlf/other", "crlf/other2",
	"out2/", "out2/a.log",
}

func gitEnv(home string) []string {
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
}

// gitCheckIgnore runs git check-ignore on paths and returns, for each, the
// source:line of the pattern that ignores it, or "" when it is not ignored.
func gitCheckIgnore(t *testing.T, repo string, paths []string) map[string]string {
	t.Helper()
	cmd := exec.Command("git", "check-ignore", "--no-index", "-v", "-n", "-z", "--stdin")
	cmd.Dir = repo
	cmd.Env = gitEnv(repo)
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("git check-ignore: %v: %s", err, stderr.String())
	}
	// -z -v: source NUL line NUL pattern NUL path NUL, per path.
	f := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(f)%4 != 0 {
		t.Fatalf("git check-ignore output: %q", out)
	}
	got := map[string]string{}
	for i := 0; i < len(f); i += 4 {
		src, line, pat, p := f[i], f[i+1], f[i+2], f[i+3]
		if src != "" && !strings.HasPrefix(pat, "!") {
			got[p] = src + ":" + line
		} else {
			got[p] = ""
		}
	}
	return got
}

func buildRepo(t *testing.T, files map[string]string, paths []string) string {
	t.Helper()
	repo := t.TempDir()
	for _, p := range paths {
		full := filepath.Join(repo, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		full := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// diskTree is a Tree over the .gitignore files of repo.
func diskTree(repo string) *Tree {
	return NewTree(func(dir string) []*List {
		name := path.Join(dir, ".gitignore")
		data, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(name)))
		if err != nil {
			return nil
		}
		return []*List{Parse(data, dir, name)}
	}, nil, nil)
}

// TestAgreesWithGitCheckIgnore builds a repository with the ignore files
// above, asks git check-ignore about every path, and requires the same
// verdict and the same deciding pattern (file:line) from Tree.
func TestAgreesWithGitCheckIgnore(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH: this test would compare every verdict of the package with git check-ignore --no-index on a table of ignore files and paths")
	}
	repo := buildRepo(t, gitCaseFiles, gitCasePaths)
	init := exec.Command("git", "init", "-q", repo)
	init.Env = gitEnv(repo)
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	os.Remove(filepath.Join(repo, ".git", "info", "exclude"))
	var query []string
	for _, p := range gitCasePaths {
		query = append(query, strings.TrimSuffix(p, "/"))
	}
	want := gitCheckIgnore(t, repo, query)
	tree := diskTree(repo)
	for _, p := range gitCasePaths {
		isDir := strings.HasSuffix(p, "/")
		rel := strings.TrimSuffix(p, "/")
		w, ok := want[rel]
		if !ok {
			t.Errorf("git said nothing about %q", rel)
			continue
		}
		_, pat := tree.Ignored(rel, isDir)
		got := ""
		if pat != nil {
			got = fmt.Sprintf("%s:%d", pat.File, pat.Line)
		}
		if got != w {
			t.Errorf("%q: ignored by %q, git says %q", p, got, w)
		}
	}
}

// TestBuildStarStarKeepsReincludedFile is the disagreement that motivated
// the package: the recorder used to treat "build/**" as ignoring build
// itself, so a tracked build/keep.txt was never recorded.
func TestBuildStarStarKeepsReincludedFile(t *testing.T) {
	tree := NewTree(func(dir string) []*List {
		if dir == "" {
			return []*List{Parse([]byte("build/**\n!build/keep.txt\n"), "", ".gitignore")}
		}
		return nil
	}, nil, nil)
	if name, p := tree.Ignored("build/keep.txt", false); p != nil {
		t.Fatalf("build/keep.txt ignored (as %s by %s:%d); git keeps it", name, p.File, p.Line)
	}
	if name, p := tree.Ignored("build/other.o", false); p == nil || name != "build/other.o" {
		t.Fatalf("build/other.o: %q, %v; want ignored", name, p)
	}
	if _, p := tree.Ignored("build", true); p != nil {
		t.Fatal(`"build/**" must not match build itself`)
	}
}

func TestPrecedenceOfHighAndLowLists(t *testing.T) {
	root := Parse([]byte("*.gen\n"), "", ".gitignore")
	high := ParseLines([]string{"!keep.gen", "*.bak"}, "")
	low := Parse([]byte("*.bak\n!x.bak\n*.o\n"), "", ".git/info/exclude")
	tree := NewTree(func(dir string) []*List {
		if dir == "" {
			return []*List{root}
		}
		return nil
	}, []*List{high}, []*List{low})
	for _, c := range []struct {
		path string
		want string
	}{
		{"a.gen", ".gitignore:1"},
		{"keep.gen", ""}, // the high list wins over the files
		{"x.bak", ":2"},  // and over the low list
		{"a.o", ".git/info/exclude:3"},
		{"main.go", ""},
	} {
		_, p := tree.Ignored(c.path, false)
		got := ""
		if p != nil {
			got = fmt.Sprintf("%s:%d", p.File, p.Line)
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.path, got, c.want)
		}
	}
}

func TestWildmatch(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		want          bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "a/main.go", false},
		{"**/x", "x", true},
		{"**/x", "a/b/x", true},
		{"a/**", "a", false},
		{"a/**", "a/b/c", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a**b", "a/b", false},
		{"[]]", "]", true},
		{"[", "[", false}, // unterminated: git matches nothing
		{`\*`, "*", true},
		{"?", "/", false},
		{"[[:upper:]]x", "Ax", true},
		{"[[:bogus:]]x", "Ax", false},
		{"*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 60), false}, // no exponential backtracking
	} {
		if got := wildmatch(c.pattern, c.text); got != c.want {
			t.Errorf("wildmatch(%q, %q) = %v, want %v", c.pattern, c.text, got, c.want)
		}
	}
}

func BenchmarkStackMatch(b *testing.B) {
	s := (*Stack)(nil).Push(Parse([]byte("*.log\nnode_modules/\n/build/\n!keep.log\ndocs/**/*.pdf\n*.min.js\n"), "", ".gitignore"))
	s = s.Push(Parse([]byte("local.txt\n*.tmp\n"), "src", "src/.gitignore"))
	for b.Loop() {
		s.Excluded("src/pkg/handler/server_handler.go", false)
		s.Excluded("src/pkg/handler", true)
	}
}
