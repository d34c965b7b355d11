package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOwnTempBoundary: with calls in the command's TMPDIR let through
// (notify's own_linux.go), nothing crosses between it and the workspace
// by name — a file with names on both sides, or opened in TMPDIR and
// then moved into the workspace, could be changed there unrecorded. Hard
// links and renames across fail with EXDEV, as between file systems (mv
// and cp then copy), whatever the entry is: the rule looks at where the
// directories lie, never at the entry, which the process's own calls may
// swap meanwhile. What the process can no longer make itself in the
// workspace, an unnamed O_TMPFILE file, the supervisor makes for it, and
// such a file may be given its first name there. Run at the container
// level too, where TMPDIR and the workspace may be one mount and only
// this rule stands between them.
func TestOwnTempBoundary(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: would check each call's errno")
	}
	sb, ws := newTestSandbox(t, capturing)
	if sb.ownRoot == "" {
		t.Skip("this host gives the sandbox no own temporary root (Landlock ABI < 3): nothing is let through, nothing to keep apart")
	}
	put := func(name, data string) {
		t.Helper()
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("one", "ONE")
	put("two", "TWO")
	if err := os.Link(filepath.Join(ws, "two"), filepath.Join(ws, "two.link")); err != nil {
		t.Fatal(err)
	}
	put("dir/f", "F")
	h := newPreImages(ws)
	script := `
import errno, os
T = os.environ["TMPDIR"]
def try_(what, f):
    try:
        f()
        print(what, "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
open(T + "/t", "w").write("T")
try_("link tmp->ws", lambda: os.link(T + "/t", "t.ws"))
try_("link ws->tmp", lambda: os.link("one", T + "/one"))
try_("rename multi-linked ws->tmp", lambda: os.rename("two", T + "/two"))
try_("rename dir ws->tmp", lambda: os.rename("dir", T + "/dir"))
os.mkdir(T + "/d")
try_("rename dir tmp->ws", lambda: os.rename(T + "/d", "d"))
try_("rename file tmp->ws", lambda: os.rename(T + "/t", "t.ws"))
os.symlink("x", T + "/s")
try_("link symlink tmp->ws", lambda: os.link(T + "/s", "s.ws", follow_symlinks=False))
try_("rename symlink tmp->ws", lambda: os.rename(T + "/s", "s.ws"))
try_("rename file ws->tmp", lambda: os.rename("one", T + "/one"))
fd2 = os.open(T + "/t", os.O_RDONLY)
try_("link descriptor tmp->ws", lambda: os.link("/proc/self/fd/%d" % fd2, "t.fd", follow_symlinks=True))
fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600)
os.write(fd, b"UNNAMED")
os.link("/proc/self/fd/%d" % fd, "named")
print("tmpfile", open("named").read())
`
	r := sh(t, sb, "python3 -c '"+script+"'", func(c *Command) { c.BeforeChange = h.hook })
	if r.st.Code != 0 {
		t.Fatalf("script: %v", r)
	}
	want := []string{
		"link tmp->ws EXDEV",
		"link ws->tmp EPERM", // the workspace's own rule (a) comes first
		"rename multi-linked ws->tmp EXDEV",
		"rename dir ws->tmp EXDEV",
		"rename dir tmp->ws EXDEV",
		"rename file tmp->ws EXDEV",
		"link symlink tmp->ws EXDEV",
		"rename symlink tmp->ws EXDEV",
		"rename file ws->tmp EXDEV",
		"link descriptor tmp->ws EXDEV",
		"tmpfile UNNAMED",
	}
	got := strings.Split(strings.TrimSpace(r.out), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The command's report names the rule, with its reason.
	if !slices.ContainsFunc(r.st.Refusals, func(f Refusal) bool {
		return f.Rule == "temp-boundary" && strings.Contains(f.Why, "as between two file systems")
	}) {
		t.Errorf("no temp-boundary refusal reported: %+v", r.st.Refusals)
	}
	// The one workspace change, named, was heard of; nothing else was
	// (a refused call is refused before the hook), and every workspace
	// file is as it was.
	if got, ok := h.seen["named"]; !ok || got != "absent" {
		t.Errorf("the hook saw named as %q (heard: %v), want absent", got, ok)
	}
	for rel := range h.seen {
		if rel != "named" {
			t.Errorf("the hook heard of %q, which no call changed", rel)
		}
	}
	for name, data := range map[string]string{"one": "ONE", "two": "TWO", "two.link": "TWO", "dir/f": "F"} {
		if b, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(b) != data {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	for _, name := range []string{"t.ws", "s.ws", "t.fd", "d"} {
		if _, err := os.Lstat(filepath.Join(ws, name)); err == nil {
			t.Errorf("%s was made in the workspace", name)
		}
	}
}

// TestOwnTmpfs: with no read-write root beneath /tmp the private tmpfs is
// the process's own (its writes are let through); with the workspace in
// /tmp it is not (a rule on the tmpfs would grant the workspace), and its
// writes are the supervisor's. Either way /tmp works as outside.
func TestOwnTmpfs(t *testing.T) {
	for _, tc := range []struct {
		name string
		ws   func(*testing.T) string
		own  bool
	}{
		{"workspace in $HOME", outsideTmpfs, true},
		{"workspace in /tmp", func(t *testing.T) string { return t.TempDir() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := New(Policy{Workspace: tc.ws(t), Level: testLevel(), CaptureChanges: true})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() { sb.Close() })
			if sb.ownRoot == "" || !privateTmp(sb) {
				t.Skip("no own temporary root or no private /tmp here: nothing to tell apart")
			}
			if sb.ownTmp != tc.own {
				t.Errorf("the private /tmp is the process's own: %v, want %v", sb.ownTmp, tc.own)
			}
			r := sh(t, sb, `umask 027; echo hi > /tmp/x && mkdir /tmp/d && stat -c %a /tmp/x /tmp/d && cat /tmp/x && rm -r /tmp/d /tmp/x && ls -A /tmp | grep -c -x -e x -e d`,
				func(c *Command) { c.BeforeChange = func([]string) error { return nil } })
			if got := strings.Fields(r.out); strings.Join(got, " ") != "640 750 hi 0" {
				t.Errorf("/tmp inside: %v", r)
			}
			// An unnamed file in /tmp: made by the process, or by the
			// supervisor where /tmp is read-only to the process.
			if _, err := exec.LookPath("python3"); err == nil {
				r = sh(t, sb, `python3 -c 'import os; fd = os.open("/tmp", os.O_TMPFILE | os.O_WRONLY, 0o600); os.write(fd, b"x"); os.link("/proc/self/fd/%d" % fd, "/tmp/named"); print(open("/tmp/named").read())'`,
					func(c *Command) { c.BeforeChange = func([]string) error { return nil } })
				if strings.TrimSpace(r.out) != "x" {
					t.Errorf("O_TMPFILE in /tmp: %v", r)
				}
			}
		})
	}
}

// Calls in the private /tmp, when it is the process's own, are told
// own from a descriptor of the command's /tmp (ownFastTmp) unless a
// symbolic link lies on the way: one leading into the workspace sends
// the call to the full resolution, where it is made by the supervisor
// and recorded — by a link in the middle of the path or at its end.
func TestOwnFastTmp(t *testing.T) {
	ws := outsideTmpfs(t)
	sb, err := New(Policy{Workspace: ws, Level: testLevel(), CaptureChanges: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	if sb.ownRoot == "" || !privateTmp(sb) || !sb.ownTmp {
		t.Skip("the private /tmp is not the process's own here: nothing is let through")
	}
	var seen []string
	record := func(c *Command) {
		c.BeforeChange = func(paths []string) error { seen = append(seen, paths...); return nil }
	}
	r := sh(t, sb, `mkdir -p /tmp/a/b && echo x > /tmp/a/b/f && cat /tmp/a/b/f && rm /tmp/a/b/f && rmdir /tmp/a/b /tmp/a && echo done`, record)
	if strings.Fields(r.out)[0] != "x" || !strings.Contains(r.out, "done") || len(seen) != 0 {
		t.Fatalf("own /tmp calls: %v, recorded %q", r, seen)
	}
	r = sh(t, sb, `ln -s "$WS" /tmp/l && echo y > /tmp/l/g && ln -s "$WS/h" /tmp/fl && echo z > /tmp/fl && cat "$WS/g" "$WS/h"`,
		record, func(c *Command) { c.Env = append(c.Env, "WS="+ws) })
	if strings.Join(strings.Fields(r.out), " ") != "y z" {
		t.Fatalf("writes through links in /tmp: %v", r)
	}
	for _, want := range []string{filepath.Join(ws, "g"), filepath.Join(ws, "h")} {
		if !slices.Contains(seen, want) {
			t.Errorf("%s, written through a link in /tmp, was not recorded (recorded %q)", want, seen)
		}
	}
}

// A read-only grant beneath /tmp is mounted on the private tmpfs: a
// Landlock rule on the tmpfs would reach it, and its read-only mount
// refuses a regular file's write but not a FIFO's. So with such a grant
// the tmpfs is not the process's own, and the supervisor, which makes
// its writes, writes no grant mounted there: a FIFO granted read-only
// (or one in a directory granted read-only) takes no bytes from inside.
// Outside, the same write reaches the reader.
func TestReadOnlyGrantBeneathTmp(t *testing.T) {
	ws := outsideTmpfs(t)
	dir, err := os.MkdirTemp("/tmp", "ro-grant-")
	if err != nil {
		t.Skipf("no directory of the test's own in /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	rd, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	buf := make([]byte, 64)
	if err := os.WriteFile(fifo, []byte("outside"), 0); err != nil {
		t.Fatalf("the write outside: %v", err)
	}
	if n, _ := rd.Read(buf); string(buf[:n]) != "outside" {
		t.Fatalf("the reader got %q outside", buf[:n])
	}
	for _, grant := range []string{fifo, dir} {
		t.Run(filepath.Base(grant), func(t *testing.T) {
			sb, err := New(Policy{Workspace: ws, Level: testLevel(), CaptureChanges: true, ReadOnlyPaths: []string{grant}})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() { sb.Close() })
			if !privateTmp(sb) || sb.ownRoot == "" {
				t.Skip("no private /tmp or no own temporary root here: the grant is not mounted on a tmpfs of the sandbox's")
			}
			if sb.ownTmp {
				t.Error("a read-only grant beneath /tmp left the tmpfs the process's own")
			}
			r := sh(t, sb, `echo inside > "$F" && echo wrote; echo ok > /tmp/own && cat /tmp/own`, func(c *Command) { c.Env = append(c.Env, "F="+fifo) })
			if strings.Contains(r.out, "wrote") || !strings.Contains(r.out, "ok") {
				t.Errorf("writing the granted FIFO: %v", r)
			}
			if n, _ := rd.Read(buf); n > 0 {
				t.Errorf("the reader outside got %q from inside", buf[:n])
			}
		})
	}
}

// TestOwnWritesNarrowedByOverlap: a temporary directory inside a
// read-write root (here the system's temporary directory granted whole)
// would make that root's changes the process's own, unrecorded: the
// sandbox then leaves every change to the supervisor, and its notes say
// so instead of the plan's.
func TestOwnWritesNarrowedByOverlap(t *testing.T) {
	sb, err := New(Policy{Workspace: t.TempDir(), Level: testLevel(), CaptureChanges: true, ReadWritePaths: []string{os.TempDir()}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	if !sb.capture {
		t.Skip("no change capture here: nothing to narrow")
	}
	if sb.ownRoot != "" || sb.ownWrites {
		t.Errorf("own root %q (ownWrites %v) inside the read-write root %s", sb.ownRoot, sb.ownWrites, os.TempDir())
	}
	notes := sb.Enforcement().Notes
	if slices.Contains(notes, ownWritesNote) || !slices.Contains(notes, ownWritesOffNote) && sb.h.abi >= 3 {
		t.Errorf("notes: %q", notes)
	}
}
