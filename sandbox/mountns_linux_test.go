package sandbox

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
)

// TestMountNSMetadata: Landlock has no right for file metadata, so before
// the read-only mount namespace a confined command could chmod, chown (to
// itself) and touch files it owns outside the writable roots — as root,
// root's files anywhere. Each attack runs unconfined first on a file this
// test owns (it must work: the test proves something), then confined on a
// fresh copy, where it must fail and leave the file as it was. The file
// sits in a directory the policy grants read-only, and in one Landlock
// does not grant at all.
func TestMountNSMetadata(t *testing.T) {
	ro := t.TempDir()
	hidden := t.TempDir()
	sb, ws := newTestSandbox(t, func(p *Policy) { p.ReadOnlyPaths = append(p.ReadOnlyPaths, ro) })
	t.Logf("Enforcement: %+v", sb.Enforcement())
	metadataRefused(t, sb, ro, hidden)
	// Everything ordinary still works: the workspace and TMPDIR are
	// writable with their metadata, the data sinks of /dev take writes,
	// git and sh work in the workspace.
	t.Run("ordinary", func(t *testing.T) {
		script := `set -e
echo a > f; chmod 0755 f; touch -d 2001-01-01 f; chown $(id -u):$(id -g) f
mkdir -p d/e; mv f d/e/g; rm -r d
echo b > "$TMPDIR/t"; chmod 0600 "$TMPDIR/t"; touch "$TMPDIR/t"; rm "$TMPDIR/t"
echo c > /dev/null; head -c 4 /dev/zero > /dev/null; echo d > /dev/full 2>/dev/null || true
sh -c 'echo sh-ok > s'
git init -q repo && cd repo && echo x > x && git add x && git -c user.email=a@b -c user.name=a commit -qm m && git log --oneline | wc -l
`
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git not installed: would check git init/commit in the workspace")
		}
		r := sh(t, sb, script)
		if r.st.Code != 0 || strings.TrimSpace(r.out) != "1" {
			t.Fatalf("ordinary work failed: %v", r)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "s")); string(b) != "sh-ok\n" {
			t.Errorf("sh in the workspace wrote %q", b)
		}
	})
	// A mount of the test's own inside the workspace keeps the flags it
	// has outside: a read-only one stays read-only.
	t.Run("workspace submount keeps its flags", func(t *testing.T) {
		if !root() {
			t.Skip("needs root to mount: would check that a read-only bind inside the workspace stays read-only")
		}
		sub := filepath.Join(ws, "rosub")
		os.Mkdir(sub, 0o755)
		if err := syscall.Mount(ro, sub, "", syscall.MS_BIND, ""); err != nil {
			t.Skipf("bind mount: %v (would check a read-only submount)", err)
		}
		defer syscall.Unmount(sub, syscall.MNT_DETACH)
		if err := syscall.Mount("", sub, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount ro: %v", err)
		}
		// A fresh sandbox: the namespace is a copy made when its
		// spawner thread or child starts.
		sb2, _ := newTestSandbox(t, func(p *Policy) { p.Workspace = ws })
		r := sh(t, sb2, "echo x > rosub/new")
		if r.st.Code == 0 || !strings.Contains(r.err, "Read-only file system") {
			t.Errorf("write to a read-only submount of the workspace: %v", r)
		}
		r = sh(t, sb2, "echo x > ok && rm ok")
		if r.st.Code != 0 {
			t.Errorf("workspace not writable next to the submount: %v", r)
		}
	})
}

// TestMountNSHeldByTheSupervisor: with a namespace per command, the
// supervisor holds it while the command runs, so that its teardown is not
// on the command's exit path (spawn.HoldMountNS).
func TestMountNSHeldByTheSupervisor(t *testing.T) {
	sb, _ := newTestSandbox(t, nil)
	if sb.mountNS != spawn.MountChild {
		t.Skipf("mount namespace mode %d, not per command: nothing is held (would check the supervisor's reference)", sb.mountNS)
	}
	pr, pw := io.Pipe()
	p, err := sb.Start(context.Background(), &Command{Path: "/bin/cat", Args: []string{"cat"}, Stdin: pr})
	if err != nil {
		t.Fatal(err)
	}
	held := p.mntNS
	pw.Close()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if held < 0 {
		t.Errorf("no reference to the command's mount namespace was taken")
	}
}

// refusedMsg reports whether a coreutils error names a refusal (EROFS
// from the read-only mount, or EPERM/EACCES).
// absentInside: under a root skeleton (spawn's rootfs_linux.go) an ungranted path
// does not exist inside at all, a stronger refusal than EACCES or EROFS.
func absentInside(sb *Sandbox, msg string) bool {
	return sb.mounts.RootSkeleton() >= 0 && (strings.Contains(msg, "No such file or directory") || msg == "ENOENT")
}

func refusedMsg(s string) bool {
	for _, m := range []string{"Read-only file system", "Operation not permitted", "Permission denied"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

func statT(t *testing.T, p string) syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestMountNSMetadataEveryNetworkMode: the network supervisor of modes
// loopback and private resolves unix socket paths as the child would,
// and accepts the sandbox's own mount namespace for it (the notification
// server's sameRoot, sandbox/internal/notify), so the read-only mounts hold
// in every mode.
func TestMountNSMetadataEveryNetworkMode(t *testing.T) {
	for _, mode := range []NetworkMode{NetworkLoopback, NetworkPrivate, NetworkUnrestricted} {
		t.Run(string(mode), func(t *testing.T) {
			ro := t.TempDir()
			hidden := t.TempDir()
			sb, _ := newTestSandbox(t, func(p *Policy) {
				p.ReadOnlyPaths = append(p.ReadOnlyPaths, ro)
				p.Network = mode
			})
			if !slices.ContainsFunc(sb.Enforcement().Notes, func(n string) bool { return strings.Contains(n, "read-only") }) {
				t.Logf("Enforcement: %+v", sb.Enforcement())
			}
			metadataRefused(t, sb, ro, hidden)
		})
	}
}

// metadataRefused runs the metadata attacks on test-owned files in ro (a
// read-only path of sb) and hidden (not granted): each refused confined,
// each shown working unconfined.
func metadataRefused(t *testing.T, sb *Sandbox, ro, hidden string) {
	t.Helper()
	uid, gid := os.Getuid(), os.Getgid()
	for _, tc := range []struct {
		name string
		cmd  string // %s: the file
		// changed reports whether the attack changed the file.
		changed func(before, after syscall.Stat_t) bool
	}{
		{"chmod", "chmod 0777 %s", func(b, a syscall.Stat_t) bool { return a.Mode != b.Mode }},
		{"chmod of the directory", "chmod 0777 $(dirname %s)", nil},
		// chown to oneself needs no capability; it clears set-id bits and
		// changes ctime, and its success shows the mount is writable.
		{"chown to self", "chown " + strconv.Itoa(uid) + ":" + strconv.Itoa(gid) + " %s", func(b, a syscall.Stat_t) bool { return a.Ctim != b.Ctim }},
		{"touch -d", "touch -d '2001-02-03 04:05:06' %s", func(b, a syscall.Stat_t) bool { return a.Mtim != b.Mtim }},
		{"touch -a (utimensat)", "touch -a -d '2001-02-03' %s", func(b, a syscall.Stat_t) bool { return a.Atim != b.Atim }},
	} {
		for _, dir := range []string{ro, hidden} {
			where := "read-only dir"
			if dir == hidden {
				where = "ungranted dir"
			}
			t.Run(tc.name+" in a "+where, func(t *testing.T) {
				sub, err := os.MkdirTemp(dir, "d")
				if err != nil {
					t.Fatal(err)
				}
				os.Chmod(sub, 0o755)
				f := filepath.Join(sub, "victim")
				if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := strings.ReplaceAll(tc.cmd, "%s", f)
				st0 := statT(t, f)
				dst0 := statT(t, sub)
				r := sh(t, sb, cmd)
				st1, dst1 := statT(t, f), statT(t, sub)
				if r.st.Code == 0 {
					t.Errorf("confined %q succeeded: %v", cmd, r)
				} else if !refusedMsg(r.err) && !(dir == hidden && absentInside(sb, r.err)) {
					t.Errorf("confined %q failed for another reason: %v", cmd, r)
				}
				if tc.changed != nil && tc.changed(st0, st1) || dst0.Mode != dst1.Mode {
					t.Errorf("confined %q changed the file: %+v -> %+v", cmd, st0, st1)
				}
				out, err := exec.Command("bash", "-c", cmd).CombinedOutput()
				if err != nil {
					t.Fatalf("unconfined %q failed, so the test proves nothing: %v %s", cmd, err, out)
				}
				if st2, dst2 := statT(t, f), statT(t, sub); tc.changed != nil && !tc.changed(st1, st2) || tc.changed == nil && dst2.Mode == dst1.Mode {
					t.Errorf("unconfined %q changed nothing, so the test proves nothing", cmd)
				}
			})
		}
	}

}
