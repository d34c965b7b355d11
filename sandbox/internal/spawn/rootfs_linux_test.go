package spawn

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPlanRoot pins what the root skeleton is made of (planRoot), without
// making one: the symlinks met on the way to a grant are recreated with
// their text, a grant beneath another is left to the outer bind, /proc
// grants are left to the sandbox's /proc, a missing path or one through a
// file is skipped, a read-write root is bound read-write only with the
// identity la_mount_setup made writable, and / itself is refused. The
// skeleton's effect inside a command (names-only listing, the old root
// unreachable) is tested through a Sandbox in package sandbox
// (TestParentsListNamesOnly, TestOldRootUnreachable).
func TestPlanRoot(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"real/sub", "rw", "rw2"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(tmp, "real/sub/file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(tmp, "ln")); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(tmp, "rw"), &st); err != nil {
		t.Fatal(err)
	}
	rw := []mountRoot{{path: filepath.Join(tmp, "rw"), dev: st.Dev, ino: st.Ino}}
	rules := []Rule{
		{Path: filepath.Join(tmp, "ln/sub"), Access: RO}, // through the link
		{Path: file, Access: RW},                         // beneath the grant above
		{Path: "/proc/cpuinfo", Access: RO},              // the sandbox's /proc has it
		{Path: filepath.Join(tmp, "missing"), Access: RO},
		{Path: file + "/x", Access: RO}, // through a file: does not exist
		{Path: filepath.Join(tmp, "rw"), Access: RW},
		{Path: filepath.Join(tmp, "rw2"), Access: RW}, // not made writable by la_mount_setup
	}
	plan, err := planRoot(rules, true, rw, false)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]skelEntry{}
	for _, e := range plan.entries {
		entries[e.path] = e
	}
	for p, kind := range map[string]byte{
		filepath.Join(tmp, "ln"): skelLink, filepath.Join(tmp, "real"): skelDir, filepath.Join(tmp, "real/sub"): skelDir,
		"/proc": skelDir, "/dev": skelDir, "/dev/pts": skelDir, "/dev/ptmx": skelLink,
	} {
		if e, ok := entries[p]; !ok || e.kind != kind {
			t.Errorf("skeleton entry %s: %+v (present %v), want kind %c", p, e, ok, kind)
		}
	}
	if e := entries[filepath.Join(tmp, "ln")]; e.target != "real" {
		t.Errorf("the link on the way has target %q, want its own text %q", e.target, "real")
	}
	if e := entries["/dev/ptmx"]; e.target != "pts/ptmx" {
		t.Errorf("/dev/ptmx links to %q, want the sandbox devpts' pts/ptmx", e.target)
	}
	for _, absent := range []string{filepath.Join(tmp, "missing"), "/proc/cpuinfo"} {
		if _, ok := entries[absent]; ok {
			t.Errorf("skeleton has %s, which the sandbox's /proc covers, or which does not exist", absent)
		}
	}
	binds := map[string]rootBind{}
	for _, b := range plan.binds {
		binds[b.path] = b
	}
	want := map[string]int{
		filepath.Join(tmp, "real/sub"): bindRO, filepath.Join(tmp, "rw"): bindRW, filepath.Join(tmp, "rw2"): bindRO,
		"/proc": bindOwn, "/dev/pts": bindOwn,
	}
	if len(binds) != len(want) {
		t.Errorf("binds %+v, want exactly %v", plan.binds, want)
	}
	for p, kind := range want {
		if b, ok := binds[p]; !ok || b.kind != kind {
			t.Errorf("bind %s: %+v (present %v), want kind %d", p, b, ok, kind)
		}
	}
	if b := binds[filepath.Join(tmp, "rw")]; b.dev != st.Dev || b.ino != st.Ino {
		t.Errorf("the read-write bind carries %d:%d, want the identity la_mount_setup made writable %d:%d", b.dev, b.ino, st.Dev, st.Ino)
	}
	for i := 1; i < len(plan.binds); i++ {
		if len(plan.binds[i].path) < len(plan.binds[i-1].path) {
			t.Errorf("binds not parents first: %+v", plan.binds)
		}
	}
	if _, err := planRoot([]Rule{{Path: "/", Access: RO}}, false, nil, false); !errors.Is(err, errRootGranted) {
		t.Errorf("a grant of / itself: %v, want errRootGranted", err)
	}
	// A link's text is walked as the kernel walks it: "real/sub/.." is
	// real. (A policy's own paths are cleaned lexically before this, for
	// the ruleset and the skeleton alike.)
	if err := os.Symlink("real/sub/..", filepath.Join(tmp, "up")); err != nil {
		t.Fatal(err)
	}
	plan, err = planRoot([]Rule{{Path: filepath.Join(tmp, "up"), Access: RO}}, false, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.binds) != 2 || plan.binds[1].path != filepath.Join(tmp, "real") {
		t.Errorf("up (-> real/sub/..) is bound as %+v, want /proc and %s", plan.binds, filepath.Join(tmp, "real"))
	}
}
