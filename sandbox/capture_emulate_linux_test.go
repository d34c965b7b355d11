package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
)

// TestCaptureEmulationSemantics: the supervisor now performs every
// captured call itself (capture_emulate_linux.go); what the command sees
// must be what the kernel would have given it — flags, modes, descriptor
// numbers, errors, FIFOs, devices, /proc/self paths.
func TestCaptureEmulationSemantics(t *testing.T) {
	sb, ws := newTestSandbox(t, capturing)
	h := newPreImages(ws)
	py := ""
	if _, err := exec.LookPath("python3"); err == nil {
		py = "python3"
	}
	for _, tc := range []struct {
		name, script, want string
		python             bool
	}{
		{name: "append", script: "echo a > f; exec 3>>f; echo b >&3; exec 3>&-; cat f", want: "a\nb\n"},
		{name: "truncate on open", script: "echo long-old-content > f; echo n > f; cat f", want: "n\n"},
		{name: "umask on create", script: "umask 027; echo x > m; mkdir d; stat -c %a m d", want: "640\n750\n"},
		{name: "an existing file keeps its mode", script: "echo x > k; chmod 604 k; umask 077; echo y > k; stat -c %a k; cat k", want: "604\ny\n"},
		{name: "relative names: down, up, through links", script: "mkdir -p a/b; cd a/b; echo 1 > f; echo 2 > ../g; ln -s .. up; echo 3 > up/h; ln -s \"$PWD\" here; echo 4 > here/i; cd ../..; cat a/b/f a/g a/h a/b/i", want: "1\n2\n3\n4\n"},
		{name: "noclobber is O_EXCL", script: "echo x > e; set -C; echo y > e 2>/dev/null || echo refused; cat e", want: "refused\nx\n"},
		{name: "inherited without O_CLOEXEC", script: "exec 4>g; readlink /proc/self/fd/4 | sed 's,.*/,,'", want: "g\n"},
		{name: "devices and own descriptors", script: "echo x > /dev/null && echo y > /dev/stdout && echo z > /proc/self/fd/1 && echo w > /dev/fd/1 && echo v >/dev/stderr", want: "y\nz\nw\n"},
		// The command has no controlling terminal: /dev/tty must not
		// become the supervisor's.
		{name: "no controlling terminal", script: "{ echo x > /dev/tty; } 2>&1 | sed 's/.*: //'", want: "No such device or address\n"},
		{name: "through /proc/self/cwd", script: "echo x > /proc/self/cwd/pc; cat pc", want: "x\n"},
		{name: "FIFO open waits for its reader, others go on", script: "mkfifo p; (echo hi > p) & echo other > o; cat p; wait; cat o", want: "hi\nother\n"},
		{name: "rename, link, symlink, unlink, rmdir", script: "echo 1 > a; mv a b; ln b c; ln -s c s; cat s; rm b; rm s; mkdir -p x/y; rmdir x/y x; ls | grep -v lnk", want: "1\nc\n"},
		{name: "chmod", script: "echo 1 > cm; chmod 600 cm; stat -c %a cm; chmod u+x cm; stat -c %a cm", want: "600\n700\n"},
		{name: "truncate(2)", script: "echo 12345 > tr; truncate -s 2 tr; cat tr; echo", want: "12\n"},
		{name: "missing directory", script: "{ echo x > nodir/f; } 2>&1 | sed 's/.*: //'", want: "No such file or directory\n"},
		{name: "write outside the writable roots", script: "{ echo x > /etc/lite-agent-capture-test; } 2>&1 | sed 's/.*: //'", want: "Permission denied\n"},
		{name: "lowest free descriptor, O_CLOEXEC", python: true, script: `python3 -c '
import os, fcntl
a = os.open("n1", os.O_WRONLY|os.O_CREAT, 0o644)
b = os.open("/dev/null", os.O_RDONLY); os.close(b)
os.close(a)
c = os.open("n2", os.O_WRONLY|os.O_CREAT, 0o644)
print(a == c, fcntl.fcntl(c, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)
for fl, name in ((os.O_NOFOLLOW, "lnk"), (os.O_DIRECTORY, "n1"), (os.O_CREAT|os.O_EXCL, "n1")):
    try:
        os.open(name, os.O_WRONLY|fl)
    except OSError as e:
        print(e.strerror)
d = os.open("n2", os.O_WRONLY|os.O_NONBLOCK|os.O_APPEND)
print(bool(fcntl.fcntl(d, fcntl.F_GETFL) & os.O_NONBLOCK), bool(fcntl.fcntl(d, fcntl.F_GETFL) & os.O_APPEND))
for name in ("t1", "t2"):
    with open(name, "w") as f:
        f.write("hello")
    os.chmod(name, 0o640)
os.close(os.open("t1", os.O_RDONLY|os.O_TRUNC))
e = os.open("t2", os.O_RDWR|os.O_TRUNC|os.O_CREAT, 0o600)
print(os.path.getsize("t1"), os.path.getsize("t2"), oct(os.stat("t2").st_mode & 0o777), fcntl.fcntl(e, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR)
'`, want: "True 1\nToo many levels of symbolic links\nNot a directory\nFile exists\nTrue True\n0 0 0o640 True\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.python && py == "" {
				t.Skip("python3 not installed; would check descriptor numbers and open flags")
			}
			cleanWorkspace(t, ws)
			os.Symlink("n1", filepath.Join(ws, "lnk"))
			h.reset()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, errb strings.Builder
			st, err := sb.Run(ctx, &Command{Path: "/bin/bash", Args: []string{"bash", "-c", tc.script}, Dir: ws,
				Stdout: &out, Stderr: &errb, BeforeChange: h.hook})
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("%s\nstdout %q, want %q (exit %d, stderr %q)", tc.script, out.String(), tc.want, st.Code, errb.String())
			}
		})
	}
}

// TestCaptureEmulationConfined: the emulated call must not do more than
// the command could. As root the supervisor has CAP_DAC_OVERRIDE and
// CAP_FOWNER, which the command has not: a file of another user with mode
// 0600 stays unwritable and its mode unchangeable, and a directory it
// cannot search stays closed. Landlock does not govern chmod, but the
// emulated chmod keeps to the read-write roots: a file of the command's
// own user in a read-only path keeps its mode (without capture the
// command can change it: that is shown first).
func TestCaptureEmulationConfined(t *testing.T) {
	ro := t.TempDir()
	own := filepath.Join(ro, "own")
	if err := os.WriteFile(own, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, ws := newTestSandbox(t, func(p *Policy) {
		p.CaptureChanges = true
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, ro)
	})
	h := newPreImages(ws)
	run := func(script string, hook ChangeFunc) result {
		return sh(t, sb, script, func(c *Command) { c.Dir = ws; c.BeforeChange = hook })
	}
	// chmod outside the read-write roots.
	if r := run("chmod 600 "+own+" && echo CHANGED", nil); !strings.Contains(r.out, "CHANGED") {
		t.Logf("without capture chmod outside the workspace failed too (%v): the read-only mount namespace (network modes none and unrestricted) refuses it already", r)
	}
	os.Chmod(own, 0o644)
	if r := run("chmod 600 "+own+" && echo CHANGED", h.hook); strings.Contains(r.out, "CHANGED") {
		t.Errorf("chmod of a file in a read-only path went through under capture: %v", r)
	}
	if fi, _ := os.Stat(own); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode of %s is %o", own, fi.Mode().Perm())
	}
	// A set-id file that exists is not opened for writing: a write
	// through mmap would keep its bit (without capture it is opened).
	suid := filepath.Join(ws, "suid")
	os.WriteFile(suid, []byte("ELF"), 0o755)
	os.Chmod(suid, os.ModeSetuid|0o755)
	if r := run("echo x >> suid && echo WROTE", nil); !strings.Contains(r.out, "WROTE") {
		t.Logf("without capture the set-id file was not writable either (%v)", r)
	}
	os.WriteFile(suid, []byte("ELF"), 0o755)
	os.Chmod(suid, os.ModeSetuid|0o755)
	if r := run("echo x >> suid && echo WROTE", h.hook); strings.Contains(r.out, "WROTE") || !strings.Contains(r.err, "Operation not permitted") {
		t.Errorf("write-side open of a set-uid file under capture: %v", r)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the credential part (another user's 0600 file) needs root to set up")
		return
	}
	theirs := filepath.Join(ws, "theirs")
	os.WriteFile(theirs, []byte("THEIRS"), 0o600)
	os.Chown(theirs, nobody, nobody)
	closed := filepath.Join(ws, "closed")
	os.Mkdir(closed, 0o700)
	os.WriteFile(filepath.Join(closed, "f"), []byte("F"), 0o666)
	os.Chown(closed, nobody, nobody)
	script := "echo x > theirs; echo x >> theirs; chmod 666 theirs; echo x > closed/f; mkdir closed/d; rm closed/f; echo done"
	// With the supervisor's own credentials the emulation would write
	// the file: the attack the credential rule stops.
	notify.TestHooks.CaptureKeepCreds = true
	run(script, h.hook)
	notify.TestHooks.CaptureKeepCreds = false
	if b, _ := os.ReadFile(theirs); string(b) == "THEIRS" {
		t.Error("with the supervisor's credentials another user's 0600 file stayed unwritten: this test proves nothing")
	}
	os.WriteFile(theirs, []byte("THEIRS"), 0o600)
	os.Chmod(theirs, 0o600)
	os.WriteFile(filepath.Join(closed, "f"), []byte("F"), 0o666)
	os.Remove(filepath.Join(closed, "d"))
	r := run(script, h.hook)
	if !strings.Contains(r.out, "done") {
		t.Fatal(r)
	}
	if b, _ := os.ReadFile(theirs); string(b) != "THEIRS" {
		t.Errorf("another user's 0600 file was written: %q (%v)", b, r)
	}
	if fi, _ := os.Stat(theirs); fi.Mode().Perm() != 0o600 {
		t.Errorf("another user's file's mode changed to %o", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(filepath.Join(closed, "f")); string(b) != "F" {
		t.Errorf("a file in a directory the command cannot search was written: %q", b)
	}
	if _, err := os.Stat(filepath.Join(closed, "d")); err == nil {
		t.Error("a directory was made in a directory the command cannot write")
	}
	if n := strings.Count(r.err, "Permission denied") + strings.Count(r.err, "Operation not permitted"); n < 6 {
		t.Errorf("want six refusals: %v", r)
	}
}

// BenchmarkCaptureCalls: one confined bash making 200 captured calls
// (100 creations, 100 appends to an existing file), with change capture
// and a hook that records nothing, against the same command without
// capture: the difference over 200 is the cost of one captured call.
//
//	go test ./sandbox -run '^$' -bench CaptureCalls -benchtime 20x -count 5
func BenchmarkCaptureCalls(b *testing.B) {
	script := "for i in $(seq 100); do echo x > f$i; echo y >> f1; done"
	for _, capture := range []bool{false, true} {
		name := "without-capture"
		if capture {
			name = "with-capture"
		}
		b.Run(name, func(b *testing.B) {
			sb, ws := newTestSandbox(b, capturing)
			var hook ChangeFunc
			if capture {
				hook = func([]string) error { return nil }
			}
			for b.Loop() {
				st, err := sb.Run(context.Background(), &Command{Path: "/bin/bash", Args: []string{"bash", "-c", script}, Dir: ws, BeforeChange: hook})
				if err != nil || st.Code != 0 {
					b.Fatal(err, st)
				}
			}
		})
	}
}

// TestCaptureMakeExisting: a call that makes a name fails EEXIST on one
// that exists before any permission check, as the kernel answers
// (filename_create): `mkdir -p` of a read-only directory that exists (npm
// does it for its cache) goes on, with no refusal reported, where the
// emulation used to answer EACCES from its write rule. A new name there is
// still refused, and a name in a directory the command cannot search is
// not revealed (root only: the directory must belong to another user).
func TestCaptureMakeExisting(t *testing.T) {
	ro := t.TempDir()
	if err := os.Mkdir(filepath.Join(ro, "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ro, "file"), []byte("x"), 0o644)
	closed := filepath.Join(ro, "closed")
	os.Mkdir(closed, 0o700)
	os.Mkdir(filepath.Join(closed, "x"), 0o755)
	root := os.Geteuid() == 0
	if root {
		os.Chown(closed, nobody, nobody)
	}
	sb, ws := newTestSandbox(t, func(p *Policy) {
		p.CaptureChanges = true
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, ro)
	})
	if sb.captureChild == nil {
		t.Skipf("no change capture here (%v): would check EEXIST for existing names outside the writable roots", sb.Enforcement().Missing)
	}
	h := newPreImages(ws)
	run := func(script string) result {
		return sh(t, sb, script, func(c *Command) { c.Dir = ws; c.BeforeChange = h.hook })
	}
	errOf := func(s string) string { // the last ": "-separated part of each line
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			out = append(out, l[strings.LastIndex(l, ": ")+2:])
		}
		return strings.Join(out, "\n")
	}
	r := run(`mkdir -p "` + ro + `/cache" && echo made-p; mkdir "` + ro + `/cache"; ln -sT x "` + ro + `/cache"; mkfifo "` + ro + `/file"; ln -T "` + ro + `/file" "` + ro + `/cache"; true`)
	if r.out != "made-p\n" || errOf(r.err) != "File exists\nFile exists\nFile exists\nFile exists" {
		t.Errorf("making existing names outside the writable roots: %v", r)
	}
	if len(r.st.Refusals) != 0 {
		t.Errorf("EEXIST reported as refusals: %+v", r.st.Refusals)
	}
	if note := RefusalNote(r.st.Refusals, r.st.MoreRefusals, true); note != "" {
		t.Errorf("a refusal note for EEXIST: %q", note)
	}
	if r := run(`python3 -c 'import os; os.open("` + ro + `/file", os.O_WRONLY|os.O_CREAT|os.O_EXCL)'`); r.st.Code == 127 {
		t.Log("no python3 in the sandbox: would check open(O_CREAT|O_EXCL) of an existing file")
	} else {
		if !strings.Contains(r.err, "FileExistsError") || len(r.st.Refusals) != 0 {
			t.Errorf("O_CREAT|O_EXCL of an existing file outside the writable roots: %v %+v", r, r.st.Refusals)
		}
	}
	// A new name is refused as before.
	r = run(`mkdir "` + ro + `/new"`)
	if errOf(r.err) != "Permission denied" || !slices.ContainsFunc(r.st.Refusals, func(f Refusal) bool { return f.Rule == "write" }) {
		t.Errorf("mkdir of a new name outside the writable roots: %v %+v", r, r.st.Refusals)
	}
	if _, err := os.Stat(filepath.Join(ro, "new")); err == nil {
		t.Error("a directory was made outside the writable roots")
	}
	if !root {
		t.Log("not root: a directory the command cannot search needs another user to set up")
		return
	}
	// Looked at with the supervisor's own credentials, the name would
	// show: the leak the command's credentials keep closed.
	notify.TestHooks.CaptureKeepCreds = true
	r = run(`mkdir "` + closed + `/x"`)
	notify.TestHooks.CaptureKeepCreds = false
	if errOf(r.err) != "File exists" {
		t.Errorf("with the supervisor's credentials the existing name stayed unseen (%v): this test proves nothing", r)
	}
	r = run(`mkdir "` + closed + `/x"`)
	if errOf(r.err) != "Permission denied" {
		t.Errorf("mkdir of an existing name in a directory the command cannot search: %v (want Permission denied, never File exists)", r)
	}
	// link(2) onto an existing name looks the old name up first: in a
	// directory the command cannot search, that is EACCES whether or not
	// the old name exists — never EEXIST for one and ENOENT for the other.
	os.WriteFile(filepath.Join(closed, "secret"), []byte("s"), 0o644)
	os.WriteFile(filepath.Join(ws, "exists"), []byte("e"), 0o644)
	linkBoth := `python3 -c 'import os
for s in ("secret", "nothere"):
    try: os.link("` + closed + `/" + s, "exists")
    except OSError as e: print(e.strerror)'`
	notify.TestHooks.CaptureKeepCreds = true
	r = run(linkBoth)
	notify.TestHooks.CaptureKeepCreds = false
	if r.st.Code == 127 {
		t.Log("no python3 in the sandbox: would check link(2) of a name in a directory the command cannot search")
		return
	}
	if r.out != "File exists\nNo such file or directory\n" {
		t.Errorf("with the supervisor's credentials link(2) did not tell the names apart (%v): this check proves nothing", r)
	}
	if r = run(linkBoth); r.out != "Permission denied\nPermission denied\n" {
		t.Errorf("link(2) of names in a directory the command cannot search: %v (want Permission denied for both)", r)
	}
}

// TestCaptureUmaskChanged: a creation made for the command takes the
// umask of the process that asks. Until a process of the tree calls
// umask(2) every process has the command's first umask, which the
// capture reads once (Capture.umaskOf); every umask call is notified, so
// a umask changed after a first creation (in the shell, in a subshell)
// is read again rather than taken from what was read before.
func TestCaptureUmaskChanged(t *testing.T) {
	sb, ws := newTestSandbox(t, capturing)
	if sb.captureChild == nil {
		t.Skipf("no change capture here (%v): would check the modes of files created after a umask change", sb.Enforcement().Missing)
	}
	h := newPreImages(ws)
	// grep reads its own status: no umask call before the first creation.
	r := sh(t, sb, "grep ^Umask: /proc/self/status; echo a > u1; umask 027; echo b > u2; mkdir ud; (umask 077; echo c > u3; mkdir ud3); echo d > u4; stat -c %a u1 u2 ud u3 ud3 u4",
		func(c *Command) { c.Dir = ws; c.BeforeChange = h.hook })
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 7 {
		t.Fatalf("%v", r)
	}
	var first uint32
	if _, err := fmt.Sscanf(lines[0], "Umask:\t%o", &first); err != nil {
		t.Fatalf("%q: %v", lines[0], err)
	}
	want := []string{fmt.Sprintf("%o", 0o666&^first), "640", "750", "600", "700", "640"}
	if got := lines[1:]; !slices.Equal(got, want) {
		t.Errorf("modes %v, want %v (first umask %o): %v", got, want, first, r)
	}
}
