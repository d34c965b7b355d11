package checkpoint

import (
	"os"
	"strings"
	"testing"
)

func TestIgnoreMatcher(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(dir+"/"+p[:strings.LastIndex(p, "/")+1], 0o755)
		os.WriteFile(dir+"/"+p, []byte(s), 0o644)
	}
	write(".gitignore", "# build output\nbuild/\n*.log\n!keep.log\n/rootonly\ndocs/**/*.pdf\nlib/gen\n")
	write("sub/.gitignore", "local.txt\n!important.log\n")
	write(".lite-agent-ignore", "secrets.env\n")
	ig := newIgnorer(dir, DefaultIgnoreFiles, []string{"*.bak", "!special.bak"}, nil)
	for _, c := range []struct {
		path  string
		dir   bool
		want  string // the name reported, "" for not ignored
		where string
	}{
		{"main.go", false, "", ""},
		{"build", true, "build/", ".gitignore:2"},
		{"build", false, "", ""}, // "build/" matches directories only
		{"build/out/x.o", false, "build/", ".gitignore:2"},
		{"a/build/x", false, "a/build/", ".gitignore:2"},
		{"x.log", false, "x.log", ".gitignore:3"},
		{"deep/er/x.log", false, "deep/er/x.log", ".gitignore:3"},
		{"keep.log", false, "", ""},
		{"rootonly", false, "rootonly", ".gitignore:5"},
		{"sub/rootonly", false, "", ""},
		{"docs/a/b/c.pdf", false, "docs/a/b/c.pdf", ".gitignore:6"},
		{"docs/c.pdf", false, "docs/c.pdf", ".gitignore:6"},
		{"lib/gen", true, "lib/gen/", ".gitignore:7"},
		{"x/lib/gen", true, "", ""}, // a pattern with a slash is anchored
		{"sub/local.txt", false, "sub/local.txt", "sub/.gitignore:1"},
		{"local.txt", false, "", ""},
		{"sub/important.log", false, "", ""}, // re-included deeper
		{"secrets.env", false, "secrets.env", ".lite-agent-ignore:1"},
		{"a.bak", false, "a.bak", "ignore option *.bak"},
		{"build/x.bak", false, "build/", ".gitignore:2"},
		{"special.bak", false, "", ""},
		{".git/config", false, ".git/", "git metadata"},
		{"vendor/x/.git/HEAD", false, "vendor/x/.git/", "git metadata"},
		{"up/.GIT/config", false, "up/.GIT/", "git metadata"}, // any case: paths.IsGitName
		{"a/.github/x", false, "", ""},
	} {
		name, why, ok := ig.ignored(c.path, c.dir)
		if (c.want != "") != ok || name != c.want || (ok && why != c.where) {
			t.Errorf("ignored(%q, dir=%v) = %q, %q, %v; want %q, %q", c.path, c.dir, name, why, ok, c.want, c.where)
		}
	}
}

func TestIgnoredPathsAreNamedAndLeftAlone(t *testing.T) {
	e := newEnv(t, &Options{MaxFileSize: 1000, Ignore: []string{"gen/"}})
	e.plain(".gitignore", "node_modules/\n*.tmp\n")
	e.plain(".lite-agent-ignore", "secret.txt\n")
	e.plain("big.bin", strings.Repeat("x", 5000))
	e.write("node_modules/pkg/index.js", "module\n")
	e.write("scratch.tmp", "tmp\n")
	e.write("secret.txt", "s3cr3t\n")
	e.write("gen/out.go", "package gen\n")
	e.write("big.bin", strings.Repeat("y", 6000))
	e.write("src/main.go", "package main\n")
	cp := e.seal("many")
	var names []string
	for _, ig := range cp.Ignored {
		names = append(names, ig.Path+" ("+ig.Reason+")")
	}
	c := createdReason
	want := "big.bin (larger than the 1000-byte size cap) gen/ (" + c + "ignore option gen/) node_modules/ (" + c + ".gitignore:1) scratch.tmp (" + c + ".gitignore:2) secret.txt (" + c + ".lite-agent-ignore:1)"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("ignored:\n%s\nwant:\n%s", got, want)
	}
	var files []string
	for _, f := range cp.Files {
		files = append(files, f.Path)
	}
	if got := strings.Join(files, " "); got != "big.bin src src/main.go" {
		t.Fatalf("files %s", got)
	}
	after := snapshotTree(t, e.ws)
	rep, err := e.rec.Rewind(0, RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// src is gone; the ignored paths are as the agent left them; big.bin
	// could not be restored (not recorded) and is reported.
	if len(rep.Skipped) != 1 || rep.Skipped[0].Path != "big.bin" {
		t.Fatalf("skipped %+v, want big.bin", rep.Skipped)
	}
	for p, n := range after {
		if strings.HasPrefix(p, "src") {
			continue
		}
		got := snapshotTree(t, e.ws)[p]
		if got != n {
			t.Errorf("%s changed by the rewind: %v -> %v", p, n, got)
		}
	}
	if _, err := os.Lstat(e.abs("src")); !os.IsNotExist(err) {
		t.Fatalf("src still exists: %v", err)
	}
}
