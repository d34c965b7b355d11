package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
)

// withFailOpen runs f with change capture letting unresolvable calls
// through, as it did before it failed closed: the "without the fix" half.
func withFailOpen(t *testing.T, f func()) {
	t.Helper()
	notify.TestHooks.CaptureFailOpen = true
	defer func() { notify.TestHooks.CaptureFailOpen = false }()
	f()
}

// TestCaptureFailsClosed: a write-side call whose path the capturer cannot
// resolve must fail (EPERM), never run unrecorded. Each case first runs
// with the rule off, where the change happens and the hook never hears of
// it, then with the rule, where the call is refused.
func TestCaptureFailsClosed(t *testing.T) {
	// The capture's own refusal, alone: the process's read-only domain
	// (ownwrites_linux.go) is a second wall, which would refuse the
	// fail-open half's write too.
	testOwnWritesKeepRoots = true
	sb, ws := newTestSandbox(t, capturing)
	testOwnWritesKeepRoots = false
	// 60 components of 70 bytes: deeper than PATH_MAX (4096), made one
	// relative mkdir at a time; the write comes from the deepest cwd.
	comp := strings.Repeat("d", 70)
	deep := `for i in $(seq 60); do mkdir ` + comp + ` || break; cd ` + comp + ` || exit; done
echo x > f && echo WROTE`
	for _, tc := range []struct{ name, script, file string }{
		{"cwd deeper than PATH_MAX", deep, "/f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newPreImages(ws)
			reported := func() bool {
				h.mu.Lock()
				defer h.mu.Unlock()
				for p := range h.seen {
					if strings.HasSuffix(p, tc.file) || p == tc.file {
						return true
					}
				}
				return false
			}
			withFailOpen(t, func() {
				r := sh(t, sb, tc.script, func(c *Command) { c.BeforeChange = h.hook })
				if !strings.Contains(r.out, "WROTE") || reported() {
					t.Errorf("without the rule the change should happen unrecorded (else this proves nothing): %v, reported %v", r, h.order)
				}
			})
			cleanWorkspace(t, ws)
			h.reset()
			r := sh(t, sb, tc.script, func(c *Command) { c.BeforeChange = h.hook })
			if strings.Contains(r.out, "WROTE") && !reported() {
				t.Errorf("a change capture could not resolve ran unrecorded: %v", r)
			}
			if !strings.Contains(r.err, "Operation not permitted") {
				t.Errorf("want EPERM: %v", r)
			}
			cleanWorkspace(t, ws)
		})
	}
}

// TestCaptureResolvesThroughDescriptors: the removed working directory's
// ".." still leads to the workspace, and /proc/PID/cwd reads
// "... (deleted)", a name no path-based capture can use. Resolved from the
// process's cwd descriptor, the write is made and recorded.
func TestCaptureResolvesThroughDescriptors(t *testing.T) {
	sb, ws := newTestSandbox(t, capturing)
	h := newPreImages(ws)
	r := sh(t, sb, "mkdir gone && cd gone && rmdir ../gone && echo x > ../y && echo WROTE", func(c *Command) { c.BeforeChange = h.hook })
	h.mu.Lock()
	defer h.mu.Unlock()
	if !strings.Contains(r.out, "WROTE") || h.seen["y"] != "absent" {
		t.Errorf("write from a removed cwd: %v, pre-images %v", r, h.seen)
	}
}

func cleanWorkspace(t *testing.T, ws string) {
	t.Helper()
	ents, _ := os.ReadDir(ws)
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(ws, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCaptureHardLinks: a hard link is a second name for the same bytes
// (internal/notify/capture_linux.go, rules (a)-(c)).
func TestCaptureHardLinks(t *testing.T) {
	outside := t.TempDir() // a read-write path on the workspace's file system
	sb, ws := newTestSandbox(t, func(p *Policy) {
		p.CaptureChanges = true
		p.ReadWritePaths = append(p.ReadWritePaths, outside)
	})
	var a, b syscall.Stat_t
	if syscall.Stat(ws, &a) != nil || syscall.Stat(outside, &b) != nil || a.Dev != b.Dev {
		t.Skip("the workspace and the temp dir are on different file systems: no hard link between them; would check rule (a) and (c)")
	}
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := newPreImages(ws)
	run := func(script string) result {
		t.Helper()
		h.reset()
		cleanWorkspace(t, ws)
		write("a", "A")
		return sh(t, sb, script, func(c *Command) { c.BeforeChange = h.hook })
	}

	// (b) ln inside the workspace records the source too; the write
	// through the new name then finds a.
	r := run("ln a b && echo x >> b")
	if r.st.Code != 0 || h.seen["a"] != `file:"A":644` || h.seen["b"] != "absent" {
		t.Errorf("ln a b; echo x >> b: %v, pre-images %v", r, h.seen)
	}

	// (a) a workspace file linked out of the workspace is refused; the
	// same link works unconfined.
	free := t.TempDir()
	os.WriteFile(filepath.Join(free, "a"), []byte("A"), 0o644)
	if out, err := exec.Command("ln", filepath.Join(free, "a"), filepath.Join(outside, "free-link")).CombinedOutput(); err != nil {
		t.Fatalf("unconfined ln across the directories failed, so the test proves nothing: %v %s", err, out)
	}
	for _, dst := range []string{"$TMPDIR/a", outside + "/a"} {
		r = run("ln a " + dst + " && echo LINKED")
		if strings.Contains(r.out, "LINKED") || !strings.Contains(r.err, "Operation not permitted") {
			t.Errorf("ln a %s: %v", dst, r)
		}
	}
	// Through linkat(AT_EMPTY_PATH) from an open descriptor, too.
	if _, err := exec.LookPath("python3"); err == nil {
		r = run(`python3 -c 'import os; fd = os.open("a", os.O_RDONLY); os.link("/proc/self/fd/%d" % fd, "` + outside + `/b", follow_symlinks=True)' 2>&1 || echo REFUSED`)
		if !strings.Contains(r.out, "REFUSED") {
			t.Errorf("link of an open workspace file out of the workspace: %v", r)
		}
	}

	// (c) a pair linked before the command, one name inside and one
	// outside or both inside: writing through any name records every
	// workspace name.
	for _, tc := range []struct{ name, other, script string }{
		{"both inside", filepath.Join(ws, "b"), "echo x >> b"},
		{"the other name outside", filepath.Join(outside, "o"), "echo x >> " + filepath.Join(outside, "o")},
		{"truncate", filepath.Join(ws, "b"), "truncate -s 0 b"},
		{"chmod", filepath.Join(ws, "b"), "chmod 600 b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.reset()
			cleanWorkspace(t, ws)
			os.Remove(filepath.Join(outside, "o"))
			write("a", "A")
			if err := os.Link(filepath.Join(ws, "a"), tc.other); err != nil {
				t.Fatal(err)
			}
			r := sh(t, sb, tc.script, func(c *Command) { c.BeforeChange = h.hook })
			if r.st.Code != 0 || h.seen["a"] != `file:"A":644` {
				t.Errorf("%s: %v, pre-images %v", tc.script, r, h.seen)
			}
		})
	}
}

// TestCaptureSocketBind: a pathname unix socket bound in the workspace is
// a new file, reported before it exists, under each supervisor.
func TestCaptureSocketBind(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed; would check that bind(2) of a unix socket is reported")
	}
	modes := []NetworkMode{NetworkNone, NetworkUnrestricted}
	if netSupervisor != nil && Probe().SeccompUserNotify {
		modes = append(modes, NetworkLoopback)
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			sb, ws := newTestSandbox(t, func(p *Policy) { p.CaptureChanges = true; p.Network = mode })
			h := newPreImages(ws)
			r := sh(t, sb, `mkdir -p run && python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("run/app.sock"); print("bound")'`,
				func(c *Command) { c.BeforeChange = h.hook })
			if !strings.Contains(r.out, "bound") || h.seen["run/app.sock"] != "absent" {
				t.Errorf("bind: %v, pre-images %v", r, h.seen)
			}
			if fi, err := os.Lstat(filepath.Join(ws, "run/app.sock")); err != nil || fi.Mode()&os.ModeSocket == 0 {
				t.Errorf("no socket file was made: %v", err)
			}
		})
	}
}

// TestCaptureHardLinkWalkIsBounded: past the walk's bound the capturer
// cannot know every name of a multiply-linked file, so the write is
// refused (EPERM) rather than half recorded.
func TestCaptureHardLinkWalkIsBounded(t *testing.T) {
	sb, ws := newTestSandbox(t, capturing)
	for i := range 30 {
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d", i)), nil, 0o644)
	}
	os.WriteFile(filepath.Join(ws, "zz"), []byte("Z"), 0o644)
	if err := os.Link(filepath.Join(ws, "zz"), filepath.Join(ws, "zz2")); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { notify.TestHooks.HardLinkWalkLimit = n }(notify.TestHooks.HardLinkWalkLimit)
	notify.TestHooks.HardLinkWalkLimit = 10
	h := newPreImages(ws)
	r := sh(t, sb, "echo x >> zz2 && echo WROTE; echo x >> f00 && echo PLAIN", func(c *Command) { c.BeforeChange = h.hook })
	if strings.Contains(r.out, "WROTE") || !strings.Contains(r.err, "Operation not permitted") {
		t.Errorf("a write to a hard-linked file past the walk's bound: %v", r)
	}
	if !strings.Contains(r.out, "PLAIN") {
		t.Errorf("a write to a file with one name must not walk at all: %v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "zz")); string(b) != "Z" {
		t.Errorf("the refused write happened: %q", b)
	}
}
