package paths

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWithinAndRel(t *testing.T) {
	for _, c := range []struct {
		p, root string
		within  bool
		rel     string
	}{
		{"/ws", "/ws", true, "."},
		{"/ws/a/b", "/ws", true, "a/b"},
		{"/ws/", "/ws", true, "."},
		{"/ws/../ws/a", "/ws", true, "a"},
		{"/ws/..foo", "/ws", true, "..foo"}, // a name beginning "..", inside
		{"/ws/a/../..", "/ws", false, ""},
		{"/wsx", "/ws", false, ""},
		{"/w", "/ws", false, ""},
		{"/", "/ws", false, ""},
		{"/etc/passwd", "/", true, "etc/passwd"},
		{"/", "/", true, "."},
		{"a/b", "/ws", false, ""},
		{"/ws/a", "ws", false, ""},
		{"a/b", ".", true, "a/b"},
		{"../a", ".", false, ""},
		{"..a", ".", true, "..a"},
		{"a", "a", true, "."},
		{"a/b", "a", true, "b"},
	} {
		if got := Within(c.p, c.root); got != c.within {
			t.Errorf("Within(%q, %q) = %v", c.p, c.root, got)
		}
		rel, ok := Rel(c.root, c.p)
		if ok != c.within || rel != c.rel {
			t.Errorf("Rel(%q, %q) = %q, %v; want %q, %v", c.root, c.p, rel, ok, c.rel, c.within)
		}
		if got := Beneath(c.p, c.root); got != (c.within && c.rel != ".") {
			t.Errorf("Beneath(%q, %q) = %v", c.p, c.root, got)
		}
	}
}

func TestReal(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dir+"/ws/sub", 0o755))
	must(os.MkdirAll(dir+"/secret", 0o755))
	must(os.Symlink(dir+"/secret", dir+"/ws/out"))  // absolute link out
	must(os.Symlink("sub", dir+"/ws/in"))           // relative link in
	must(os.Symlink("../secret", dir+"/ws/sub/up")) // .. applies to the target
	must(os.Symlink("loop", dir+"/ws/loop"))
	for _, c := range []struct{ p, want string }{
		{dir + "/ws/sub/new/file", dir + "/ws/sub/new/file"},
		{dir + "/ws/out/key", dir + "/secret/key"},
		{dir + "/ws/in/../sub/x", dir + "/ws/sub/x"},
		// filepath.Abs/Clean would say ws/x; the kernel follows out first.
		{dir + "/ws/out/../x", dir + "/x"},
		{dir + "/ws/sub/up/k", dir + "/ws/secret/k"},
		{dir + "/ws/missing/../sub", dir + "/ws/sub"},
		{dir + "/ws/loop/x", dir + "/ws/loop/x"},
	} {
		if got := Real(c.p); got != c.want {
			t.Errorf("Real(%q) = %q, want %q", c.p, got, c.want)
		}
	}
	if got := RealFrom(dir+"/ws", "out/key"); got != dir+"/secret/key" {
		t.Errorf("RealFrom = %q", got)
	}
}

func TestGitNames(t *testing.T) {
	for name, want := range map[string]bool{".git": true, ".GIT": true, ".git/": true, ".github": false, "git": false, "x.git": false} {
		if IsGitName(name) != want {
			t.Errorf("IsGitName(%q) = %v", name, !want)
		}
	}
	for p, want := range map[string]bool{"a/.git/config": true, ".Git": true, "a/.github/x": false, "/ws/src": false} {
		if HasGitComponent(p) != want {
			t.Errorf("HasGitComponent(%q) = %v", p, !want)
		}
	}
}

// TestResolve: Resolve walks like Real but insists that the path exists,
// and asks before following each link, with the link's own real path.
func TestResolve(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dir+"/ws/sub", 0o755))
	must(os.MkdirAll(dir+"/home/shared", 0o755))
	must(os.WriteFile(dir+"/home/shared/cfg", nil, 0o644))
	must(os.WriteFile(dir+"/ws/cfg", nil, 0o644))
	must(os.Symlink(dir+"/ws", dir+"/home/proj"))   // the user's link into ws
	must(os.Symlink(dir+"/home", dir+"/ws/sub/up")) // a link inside ws
	must(os.Symlink("loop", dir+"/ws/loop"))
	inWS := func(link string) bool { return !Within(link, dir+"/ws") }
	for _, c := range []struct {
		p, want string
		err     error
	}{
		{dir + "/home/proj/cfg", dir + "/ws/cfg", nil},
		// The kernel's "..": after the user's link, from the workspace.
		{dir + "/home/proj/../home/shared/cfg", dir + "/home/shared/cfg", nil},
		{dir + "/ws/sub/../cfg", dir + "/ws/cfg", nil},
		{dir + "/ws/sub/up/shared/cfg", "", ErrLinkRefused},
		{dir + "/home/proj/sub/up/shared/cfg", "", ErrLinkRefused},
		{dir + "/ws/missing", "", fs.ErrNotExist},
		{dir + "/ws/missing/../cfg", "", fs.ErrNotExist},
		{dir + "/ws/cfg/x", "", syscall.ENOTDIR},
	} {
		got, err := Resolve(c.p, inWS)
		if got != c.want || (c.err == nil) != (err == nil) || c.err != nil && !errors.Is(err, c.err) {
			t.Errorf("Resolve(%q) = %q, %v; want %q, %v", c.p, got, err, c.want, c.err)
		}
	}
	if _, err := Resolve(dir+"/ws/loop/x", nil); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Resolve through a link loop: %v, want ELOOP", err)
	}
	if got, err := Resolve(dir+"/ws/sub/up/shared/cfg", nil); err != nil || got != dir+"/home/shared/cfg" {
		t.Errorf("Resolve with every link followed = %q, %v", got, err)
	}
	t.Chdir(dir + "/home/proj")
	if got, err := Resolve("../home/shared/cfg", inWS); err != nil || got != dir+"/home/shared/cfg" {
		t.Errorf("Resolve relative to a working directory reached through a link = %q, %v", got, err)
	}
}

// TestIsClean: isClean agrees with filepath.Clean, so that skipping
// Clean for a clean path never changes an answer.
func TestIsClean(t *testing.T) {
	for _, p := range []string{
		"", "/", ".", "..", "../..", "../a", "a/..", "a/../b", "/..", "/../a", "/a/..",
		"//", "/a//b", "a//", "/a/", "a/", "./a", "a/.", "/a/./b", "/a/b", "a", "a/b",
		"..a", "/..a", "a/..b", "/ws/..foo", ".../x", "../../a/../b", "/a/b/.", "./", "../",
		"../.", "./..", "/.", ".a", "/.git", "a/.b/.", "...",
	} {
		if got, want := isClean(p), filepath.Clean(p) == p; got != want {
			t.Errorf("isClean(%q) = %v, want %v", p, got, want)
		}
	}
}

func FuzzIsClean(f *testing.F) {
	for _, s := range []string{"/a/../b", "../a", "a//b", "/", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := isClean(p), filepath.Clean(p) == p; got != want {
			t.Errorf("isClean(%q) = %v, want %v", p, got, want)
		}
	})
}

// TestWithinCleanAgrees: on clean paths WithinClean is Within.
func TestWithinCleanAgrees(t *testing.T) {
	ps := []string{"/", "/ws", "/ws/a", "/ws/..foo", "/wsx", "/w", "/etc", ".", "a", "a/b", "..", "../a", "..a"}
	for _, p := range ps {
		for _, r := range ps {
			if WithinClean(p, r) != Within(p, r) {
				t.Errorf("WithinClean(%q, %q) = %v, Within says %v", p, r, WithinClean(p, r), Within(p, r))
			}
		}
	}
}

// TestWalkerAgreesWithReal: a Walker resolves every path as Real does —
// links absolute and relative, chains, ".." after a link, missing
// components, a loop — also when paths share their directories and are
// resolved again; and it answers from its memory.
func TestWalkerAgreesWithReal(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b/c", "x/bin", "y"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "x/bin/tool"), nil, 0o755)
	for link, target := range map[string]string{
		"x/bin/proxy": "tool", "x/bin/abs": filepath.Join(root, "a/b"), "y/up": "../a/b/c",
		"y/chain": "up", "y/loop1": "loop2", "y/loop2": "loop1", "a/b/c/back": "../../..",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	rels := []string{"", "a/b/c", "x/bin/proxy", "x/bin/abs/c", "x/bin/abs/../b", "y/up/..", "y/chain/back/x/bin/proxy",
		"y/loop1", "y/loop1/z", "missing/z/..", "a/b/missing/../c", "x/bin/tool/..", "y/up/../../../x"}
	var w Walker
	for round := range 2 {
		for _, rel := range rels {
			p := filepath.Join(root, rel)
			if got, want := w.Real(p), Real(p); got != want {
				t.Errorf("round %d: Walker.Real(%s) = %s, Real = %s", round, rel, got, want)
			}
		}
	}
	// Its memory: a link changed after it was read is answered as read.
	before := w.Real(filepath.Join(root, "x/bin/proxy"))
	os.Remove(filepath.Join(root, "x/bin/proxy"))
	os.Symlink("../../y", filepath.Join(root, "x/bin/proxy"))
	if got := w.Real(filepath.Join(root, "x/bin/proxy")); got != before {
		t.Errorf("a Walker looked a link up again: %s, was %s", got, before)
	}
	if fi, err := w.Lstat(filepath.Join(root, "x/bin/proxy")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("Lstat: %v %v", fi, err)
	}
}
