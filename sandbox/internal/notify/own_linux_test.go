package notify

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOwnFast: the shortcut lets a call through only for a clean
// absolute path beneath the own root that reaches its last component
// without a symbolic link (a final one only when the call would not
// follow it), a mount or "..": anything else goes to the full resolution.
func TestOwnFast(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a/b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a/f"), nil, 0o644))
	must(os.Symlink(outside, filepath.Join(root, "out")))
	must(os.Symlink(filepath.Join(outside, "x"), filepath.Join(root, "a/last")))
	c := &Capture{ownFD: -1}
	c.openOwnRoot(root)
	defer c.close()
	for _, tc := range []struct {
		p      string
		follow bool
		want   bool
	}{
		{root + "/new", true, true},
		{root + "/a/f", true, true},
		{root + "/a/b/new", true, true},
		{root + "/a/missing/new", true, false}, // no such directory: resolved in full, which says ENOENT
		{root + "/out/x", true, false},         // a link on the way
		{root + "/a/last", true, false},        // a final link, followed
		{root + "/a/last", false, true},        // not followed: the link itself
		{root + "/a/../a/f", true, false},      // not clean
		{root + "//a/f", true, false},
		{root + "/a/f/", true, false},
		{root, true, false}, // the root itself
		{outside + "/x", true, false},
		{"a/f", true, false}, // relative: resolved from the process's cwd
		{root + "x/y", true, false},
	} {
		if got := c.ownFast(tc.p, tc.follow); got != tc.want {
			t.Errorf("ownFast(%q, follow %v) = %v, want %v", tc.p, tc.follow, got, tc.want)
		}
	}
	// Without an own root nothing is let through.
	none := &Capture{ownFD: -1}
	if none.ownFast(root+"/new", true) {
		t.Error("a capture without an own root let a call through")
	}
}
