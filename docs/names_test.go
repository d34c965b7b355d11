// Package docs holds the manual's topic pages (the *.md files here) and the
// test that keeps every file name the manual and the code's comments give
// pointing at a file that exists.
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// external lists names that look like repository files but name something
// else, each with the reason. A name is matched as written, or by its last
// element.
var external = map[string]string{
	// Files in a user's repository, home or workspace.
	"AGENTS.md":           "project instructions in a user's repository",
	"CLAUDE.md":           "project instructions in a user's repository",
	"policy.toml":         "a user's or a workspace's policy file",
	".mcp.json":           "a workspace's MCP configuration",
	"config.toml":         "cargo's configuration, in a user's home or workspace",
	"credentials.toml":    "cargo's credential file in a user's home",
	"rust-toolchain.toml": "rustup's file in a user's workspace",
	"Cargo.toml":          "a Rust project's manifest",
	"pyproject.toml":      "a Python project's manifest",
	"package.json":        "a Node project's manifest",
	"package-lock.json":   "npm's lockfile in a user's project",
	"summary.schema.json": "an example --output-schema file",
	"a.go":                "a path in an example tool input",
	"b.go":                "a file name in an example of a turn's changes",
	"vendor/ignored.go":   "a file an end-to-end test writes in its workspace",
	"one-turn.json":       "the script bench/run.sh and bench/startup_ab.sh write",
	"mcp.json":            "an --mcp-config file a CLI test makes in its temporary directories",
	// Other projects' sources, named for what they do.
	"dir.c":                              "git's source (its ignore rules)",
	"wildmatch.c":                        "git's source (its glob matcher)",
	"tea_init.go":                        "Bubble Tea's source",
	"internal/poll":                      "a Go standard library package",
	"fs/notify/fanotify/fanotify_user.c": "a Linux kernel source file",
	"include/uapi/linux/fanotify.h":      "a Linux kernel header",
	"include/uapi/linux/seccomp.h":       "a Linux kernel header",
	"linux/landlock.h":                   "a Linux kernel header",
	"sys/mount.h":                        "a libc header",
	"fs/locks.c":                         "a Linux kernel source file",
	"kernel/signal.c":                    "a Linux kernel source file",
	"fs/namei.c":                         "a Linux kernel source file",
	"include/uapi/linux/magic.h":         "a Linux kernel header",
	// Not files at all.
	"tools/call":               "an MCP method name",
	"tools/image/node/VERSION": "Volta's layout under its home",
}

// systemDirs are the first elements of absolute paths that name a machine's
// own files, never the repository's: a comment may name /etc/npmrc or
// /usr/share/cargo/registry. Any other absolute path to a file (a checkout
// of this repository, a developer's notes folder) names a file the reader
// does not have.
var systemDirs = map[string]bool{
	"bin": true, "boot": true, "dev": true, "etc": true, "home": true,
	"lib": true, "lib32": true, "lib64": true, "libx32": true, "media": true,
	"mnt": true, "opt": true, "proc": true, "root": true, "run": true,
	"sbin": true, "srv": true, "sys": true, "tmp": true, "usr": true,
	"var": true,
}

var extensions = []string{".go", ".c", ".h", ".md", ".sh", ".toml", ".json", ".txtar"}

// repo is the tree the test checks: its root and every path in it.
type repo struct {
	root  string
	paths map[string]bool // slash-separated, relative to root; files and directories
	base  map[string]bool // base names of every path
	top   map[string]bool // the root's entries
}

func loadRepo(t *testing.T) *repo {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository root %s has no go.mod: %v", root, err)
	}
	r := &repo{root: root, paths: map[string]bool{}, base: map[string]bool{}, top: map[string]bool{}}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.IsDir() && (rel == ".git" || rel == "bin") {
			return filepath.SkipDir
		}
		r.paths[rel] = true
		r.base[d.Name()] = true
		if !strings.Contains(rel, "/") {
			r.top[rel] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// exists says whether name, met in the file at rel, names a path of the
// repository: relative to that file's directory or one above it (a comment
// in sandbox/ says internal/spawn), or as the tail of a longer path (a
// comment says notify/capture_linux.go for sandbox/internal/notify's). A
// name with no directory is looked for by its base name anywhere.
func (r *repo) exists(rel, name string) bool {
	name = strings.TrimSuffix(name, "/")
	if strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") {
		return r.paths[path.Clean(path.Join(path.Dir(rel), name))]
	}
	if !strings.Contains(name, "/") {
		return r.base[name]
	}
	for dir := path.Dir(rel); ; dir = path.Dir(dir) {
		if r.paths[path.Clean(path.Join(dir, name))] {
			return true
		}
		if dir == "." {
			break
		}
	}
	for p := range r.paths {
		if strings.HasSuffix(p, "/"+name) {
			return true
		}
	}
	return false
}

var (
	urlRE   = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s)>\]"'` + "`" + `]*`)
	tokenRE = regexp.MustCompile(`[A-Za-z0-9_.~$@*{}+\-/]+`)
	// domainRE is a first element that is a host name (github.com/…,
	// golang.org/x/…): a module path, not a file of ours.
	domainRE = regexp.MustCompile(`^[a-z0-9-]+(\.[a-z0-9-]+)*\.(com|org|io|dev|net|in|sh|co|me|cc)$`)
)

// names returns the path-like tokens of text that must name a repository
// path: a name ending in one of extensions, a path starting with one of the
// root's entries (kernel/…, examples/demo), or an absolute path outside
// systemDirs.
func (r *repo) names(text string) []string {
	text = urlRE.ReplaceAllString(text, " ")
	var out []string
	for _, tok := range tokenRE.FindAllString(text, -1) {
		tok = strings.TrimRight(tok, ".-")
		tok = strings.TrimLeft(tok, "-")
		if tok == "" || strings.ContainsAny(tok, "*{}$~@") || strings.Contains(tok, "...") {
			continue
		}
		if strings.HasPrefix(tok, "/") {
			first, _, _ := strings.Cut(strings.TrimPrefix(tok, "/"), "/")
			if !systemDirs[first] && hasExt(tok) {
				out = append(out, tok)
			}
			continue
		}
		if strings.HasPrefix(tok, ".git/") {
			continue // a user's repository's git directory
		}
		first, _, hasSlash := strings.Cut(strings.TrimPrefix(tok, "./"), "/")
		if domainRE.MatchString(first) {
			continue
		}
		switch {
		case hasExt(tok):
			out = append(out, tok)
		case hasSlash && r.top[first] && !strings.HasPrefix(tok, "./"):
			out = append(out, tok)
		}
	}
	return out
}

func hasExt(tok string) bool {
	for _, e := range extensions {
		if strings.HasSuffix(tok, e) && len(tok) > len(e) && tok[len(tok)-len(e)-1] != '/' {
			return true
		}
	}
	return false
}

// allowed says whether name is in external, and marks the entry used.
func allowed(name string, used map[string]bool) bool {
	for _, n := range []string{name, path.Base(name)} {
		if _, ok := external[n]; ok {
			used[n] = true
			return true
		}
	}
	return false
}

// comments returns the comment text of a Go, C or shell source, line by
// line, with each line's number.
func comments(rel string, src []byte) (lines []string, nums []int) {
	switch path.Ext(rel) {
	case ".go":
		fset := token.NewFileSet()
		f := fset.AddFile(rel, -1, len(src))
		var s scanner.Scanner
		s.Init(f, src, nil, scanner.ScanComments)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.COMMENT {
				continue
			}
			line := fset.Position(pos).Line
			for i, l := range strings.Split(lit, "\n") {
				if t := strings.TrimSpace(l); strings.HasPrefix(t, "#include") || strings.HasPrefix(t, "#cgo") {
					continue // a cgo preamble's directive: C headers, not our files
				}
				lines = append(lines, l)
				nums = append(nums, line+i)
			}
		}
	case ".c", ".h":
		in := false
		for i, l := range strings.Split(string(src), "\n") {
			var b strings.Builder
			for len(l) > 0 {
				if in {
					end := strings.Index(l, "*/")
					if end < 0 {
						b.WriteString(l)
						l = ""
						break
					}
					b.WriteString(l[:end])
					l, in = l[end+2:], false
					continue
				}
				open, line := strings.Index(l, "/*"), strings.Index(l, "//")
				switch {
				case line >= 0 && (open < 0 || line < open):
					b.WriteString(l[line+2:])
					l = ""
				case open >= 0:
					l, in = l[open+2:], true
				default:
					l = ""
				}
			}
			if b.Len() > 0 {
				lines = append(lines, b.String())
				nums = append(nums, i+1)
			}
		}
	default: // shell, Makefile
		for i, l := range strings.Split(string(src), "\n") {
			if _, c, ok := strings.Cut(l, "#"); ok && !strings.Contains(l, "$#") {
				lines = append(lines, c)
				nums = append(nums, i+1)
			}
		}
	}
	return lines, nums
}

// sources are the files whose names are checked: the repository's
// Markdown (README.md, BENCHMARKS.md, docs/*.md), and the comments of its
// Go, C and shell sources and Makefile.
func (r *repo) sources() []string {
	var out []string
	for p := range r.paths {
		switch {
		case strings.Contains(p, "/testdata/"):
		case strings.HasSuffix(p, ".md") && (!strings.Contains(p, "/") || strings.HasPrefix(p, "docs/")):
			out = append(out, p)
		case strings.HasSuffix(p, ".go"), strings.HasSuffix(p, ".c"), strings.HasSuffix(p, ".h"),
			strings.HasSuffix(p, ".sh"), p == "Makefile", p == ".ci/run":
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// TestNamedFilesExist: every file or repository path that the manual
// (README.md, BENCHMARKS.md, docs/*.md) or a comment of the code names
// exists, so a reader sent to it finds it. Names of files outside the
// repository (a user's AGENTS.md, a kernel source) are in external with
// their reason; an absolute path outside the machine's system directories
// (a developer's checkout or notes) is always an error.
func TestNamedFilesExist(t *testing.T) {
	r := loadRepo(t)
	var bad []string
	used := map[string]bool{}
	for _, rel := range r.sources() {
		src, err := os.ReadFile(filepath.Join(r.root, rel))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		var nums []int
		if strings.HasSuffix(rel, ".md") {
			for i, l := range strings.Split(string(src), "\n") {
				lines, nums = append(lines, l), append(nums, i+1)
			}
		} else {
			lines, nums = comments(rel, src)
		}
		for i, l := range lines {
			for _, name := range r.names(l) {
				if strings.HasPrefix(name, "/") {
					bad = append(bad, fmt.Sprintf("%s:%d: %s is an absolute path on some machine, not a file of the repository", rel, nums[i], name))
					continue
				}
				if !r.exists(rel, name) && !allowed(name, used) {
					bad = append(bad, fmt.Sprintf("%s:%d: %s does not exist", rel, nums[i], name))
				}
			}
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
	for n := range external {
		if !used[n] {
			t.Errorf("external lists %q, which nothing names any more: remove it", n)
		}
	}
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestMarkdownLinks: every relative link of the manual leads to a file of
// the repository, and every #anchor to a heading of the page it names.
func TestMarkdownLinks(t *testing.T) {
	r := loadRepo(t)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchors[rel]; ok {
			return a
		}
		a := headingAnchors(filepath.Join(r.root, rel))
		anchors[rel] = a
		return a
	}
	for _, rel := range r.sources() {
		if !strings.HasSuffix(rel, ".md") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(r.root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(src), "\n") {
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || !strings.ContainsAny(target, "./#") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := rel
				if file != "" {
					dest = path.Clean(path.Join(path.Dir(rel), file))
					if !r.paths[dest] {
						t.Errorf("%s:%d: link %s: %s does not exist", rel, i+1, target, dest)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading with anchor #%s", rel, i+1, target, dest, anchor)
				}
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation but '-' and '_' removed, spaces
// made '-', a repeated one suffixed -1, -2….
func headingAnchors(file string) map[string]bool {
	out := map[string]bool{}
	f, err := os.ReadFile(file)
	if err != nil {
		return out
	}
	seen := map[string]int{}
	fence := false
	sc := bufio.NewScanner(bytes.NewReader(f))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, c := range strings.ToLower(h) {
			switch {
			case c == ' ':
				b.WriteRune('-')
			case c == '-' || c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c):
				b.WriteRune(c)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestNamesAndExists: what the checks above take for a file name, and how
// a name is found, on names the tree's comments and pages use.
func TestNamesAndExists(t *testing.T) {
	r := loadRepo(t)
	for _, c := range []struct {
		text string
		want []string
	}{
		{"the main filter (the sandbox's seccomp_linux.go, routingSockopts)", []string{"seccomp_linux.go"}},
		{"see `kernel/doc.go`, and internal/spawn's doc.go.", []string{"kernel/doc.go", "internal/spawn", "doc.go"}},
		{"(from /work/shared/notes/model-facts.md: 1,167,540)", []string{"/work/shared/notes/model-facts.md"}},
		{"/etc/npmrc, /usr/share/cargo/registry, /checkpoints/objects", nil},
		{"https://example.com/a/b.md and github.com/google/jsonschema-go/x.go", nil},
		{"~/.cargo/config.toml, $GOMODCACHE/cache.json, docs/**/*.md, .git/config", nil},
		{"examples/demo and sandbox/internal/spawn/pidinit", []string{"examples/demo", "sandbox/internal/spawn/pidinit"}},
		{"not a path: and/or, TCP/UDP, go.mod", nil},
	} {
		if got := r.names(c.text); !slices.Equal(got, c.want) {
			t.Errorf("names(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	for _, c := range []struct {
		from, name string
		want       bool
	}{
		{"sandbox/doc.go", "notify/capture_linux.go", true},  // the tail of a longer path
		{"sandbox/doc.go", "internal/spawn", true},           // relative to the file's directory
		{"docs/sandbox.md", "../examples/demo", true},        // ./ and ../ only from the file's directory
		{"docs/sandbox.md", "./examples/demo", false},        //
		{"kernel/doc.go", "DESIGN.md", false},                // nowhere in the tree
		{"sandbox/doc.go", "sandbox/netsup_linux.go", false}, // a directory that holds no such file
		{"sandbox/internal/notify/doc.go", "capture_linux.go", true},
	} {
		if got := r.exists(c.from, c.name); got != c.want {
			t.Errorf("exists(%q, %q) = %v, want %v", c.from, c.name, got, c.want)
		}
	}
}
