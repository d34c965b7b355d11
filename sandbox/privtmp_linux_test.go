package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// /tmp inside is writable (programs that ignore TMPDIR: a JVM's
// java.io.tmpdir, JUnit's TemporaryFolder), and private: a file written
// there is not in the host's /tmp, another sandbox does not see it, the
// sandbox's next command does, and it is gone with the sandbox. A grant
// beneath /tmp (this test's workspace is one) is still there, and its
// mount point can be neither moved nor removed, with or without change
// capture (which makes those calls in the supervisor's namespace).
func TestPrivateTmp(t *testing.T) {
	for _, capture := range []bool{false, true} {
		t.Run("capture="+strconv.FormatBool(capture), func(t *testing.T) {
			name := "lite-agent-privtmp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			mut := func(p *Policy) { p.CaptureChanges = capture }
			sb, ws := newTestSandbox(t, mut)
			if !strings.HasPrefix(ws, "/tmp/") {
				t.Skipf("the test's workspace %s is not beneath /tmp (TMPDIR is set): would check a grant beneath the private /tmp", ws)
			}
			if !hasNote(sb, "/tmp: a private tmpfs") {
				t.Fatalf("no private /tmp: %v", sb.Enforcement().Notes)
			}
			var cap []string
			withHook := func(c *Command) {
				if capture {
					c.BeforeChange = func(paths []string) error { cap = append(cap, paths...); return nil }
				}
			}
			r := sh(t, sb, "echo secret > /tmp/"+name+" && cat /tmp/"+name+" && test -d "+ws+" && echo ws-ok", withHook)
			if r.st.Code != 0 || !strings.Contains(r.out, "secret") || !strings.Contains(r.out, "ws-ok") {
				t.Fatalf("writing /tmp/%s inside: %v (notes %v)", name, r, sb.Enforcement().Notes)
			}
			if _, err := os.Lstat(filepath.Join("/tmp", name)); err == nil {
				t.Errorf("/tmp/%s written inside is in the host's /tmp", name)
			}
			for _, p := range cap {
				if strings.Contains(p, name) {
					t.Errorf("a write to the private /tmp was reported as a workspace change: %v", cap)
				}
			}
			if r := sh(t, sb, "cat /tmp/"+name); r.st.Code != 0 || !strings.Contains(r.out, "secret") {
				t.Errorf("the sandbox's next command does not see its /tmp/%s: %v", name, r)
			}
			other, _ := newTestSandbox(t, mut)
			if r := sh(t, other, "cat /tmp/"+name); r.st.Code == 0 || strings.Contains(r.out, "secret") {
				t.Errorf("another sandbox sees /tmp/%s: %v", name, r)
			}
			// The workspace's mount point, and the first directory of
			// the path to it, cannot be moved away or removed, nor
			// replaced by a directory of the command's own.
			top := "/tmp/" + strings.Split(strings.TrimPrefix(ws, "/tmp/"), "/")[0]
			r = sh(t, sb, "mv "+top+" /tmp/moved; rmdir "+top+"; mv /tmp/"+name+" "+top+"; touch "+ws+"/still && ls "+ws, withHook)
			if !strings.Contains(r.out, "still") {
				t.Errorf("the workspace at %s moved or replaced: %v", ws, r)
			}
			if _, err := os.Stat(filepath.Join(ws, "still")); err != nil {
				t.Errorf("the workspace inside is not the workspace: %v", err)
			}
			if !strings.Contains(r.err, "busy") {
				t.Errorf("moving %s: not EBUSY: %v", top, r)
			}
			// Gone with the sandbox: Close closes its last reference (the
			// commands' namespaces ended with them).
			dev := sb.mounts.TmpDevice()
			if dev == 0 || !holdsDevice(t, dev) {
				t.Fatalf("no descriptor of this process is on the private /tmp (device %d)", dev)
			}
			if err := sb.Close(); err != nil {
				t.Fatal(err)
			}
			if holdsDevice(t, dev) {
				t.Errorf("the private /tmp is still held after Close")
			}
		})
	}
}

func hasNote(sb *Sandbox, prefix string) bool {
	for _, n := range sb.Enforcement().Notes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// holdsDevice reports whether a descriptor of this process is on dev.
func holdsDevice(t *testing.T, dev uint64) bool {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		var st unix.Stat_t
		if err == nil && unix.Fstat(fd, &st) == nil && st.Dev == dev {
			return true
		}
	}
	return false
}

// TestPrivateShmVarTmpRun: /dev/shm (POSIX shared memory and semaphores),
// /var/tmp and /run are writable and the sandbox's own, like its /tmp: what
// a command writes there is not in the host's, nor in another sandbox's,
// and the sandbox's next command sees it.
func TestPrivateShmVarTmpRun(t *testing.T) {
	sb, _ := newTestSandbox(t, func(p *Policy) { p.CaptureChanges = true })
	if !hasNote(sb, "/tmp: a private tmpfs") {
		t.Skipf("no private /tmp here (%v): would check /dev/shm, /var/tmp and /run", sb.Enforcement().Notes)
	}
	other, _ := newTestSandbox(t, nil)
	name := "lite-agent-privshm-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, dir := range []string{"/dev/shm", "/var/tmp", "/run"} {
		p := dir + "/" + name
		if r := sh(t, sb, "echo mine > "+p+" && cat "+p); r.st.Code != 0 || r.out != "mine\n" {
			t.Errorf("writing %s inside: %v", p, r)
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s written inside is in the host's %s", p, dir)
		}
		// Unconfined the same write lands in the host's (so the check
		// above proves something), where the host has the directory
		// and this user may write it.
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && unix.Access(dir, unix.W_OK) == nil {
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Errorf("unconfined, writing %s failed, so the check above proves nothing: %v", p, err)
			}
			os.Remove(p)
		}
		if r := sh(t, sb, "cat "+p); r.out != "mine\n" {
			t.Errorf("the sandbox's next command does not see %s: %v", p, r)
		}
		if r := sh(t, other, "cat "+p); r.st.Code == 0 {
			t.Errorf("another sandbox sees %s: %v", p, r)
		}
	}
}
