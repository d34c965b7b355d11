package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnTempBoundary: with calls in the command's TMPDIR let through
// (notify's own_linux.go), no inode gets names both there and in the
// workspace — a write through the TMPDIR name would change the workspace
// file unrecorded. Hard links across fail, and so do renames of a
// directory or of a file with another name (EXDEV, which mv and cp meet
// between file systems and answer by copying); a plain file moves. And
// what the process can no longer make itself in the workspace, an
// unnamed O_TMPFILE file, the supervisor makes for it.
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
os.link(T + "/t", T + "/t2")
try_("rename multi-linked tmp->ws", lambda: os.rename(T + "/t", "t.ws"))
try_("rename file ws->tmp", lambda: os.rename("one", T + "/one"))
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
		"rename multi-linked tmp->ws EXDEV",
		"rename file ws->tmp ok",
		"tmpfile UNNAMED",
	}
	got := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(got) == len(want) && got[6] == "rename file ws->tmp EXDEV" {
		got[6] = "rename file ws->tmp ok" // each root a mount of its own: EXDEV from the kernel
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The workspace's changes were all heard of: one moved out, named
	// made. Nothing in TMPDIR was.
	for rel, pre := range map[string]string{"one": `file:"ONE":644`, "named": "absent"} {
		if got, ok := h.seen[rel]; !ok || got != pre {
			t.Errorf("the hook saw %q as %q (heard: %v), want %q", rel, got, ok, pre)
		}
	}
	for rel := range h.seen {
		if rel != "one" && rel != "named" && rel != "t.ws" && rel != "d" {
			t.Errorf("the hook heard of %q, which no call changed", rel)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "two")); err != nil || string(b) != "TWO" {
		t.Errorf("two: %q %v", b, err)
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
		})
	}
}
