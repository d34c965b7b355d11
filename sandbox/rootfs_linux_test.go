package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
)

// rootFixture is a workspace with a secret sibling: <parent>/ws and
// <parent>/secret-sibling-7/key, readable unconfined.
func rootFixture(t *testing.T) (parent, ws, secretDir string) {
	t.Helper()
	parent = t.TempDir()
	// The sandbox's user (uid 65534 in TestAsUnprivilegedUser) must reach
	// them unconfined: the secret's unreadability inside is the sandbox's.
	for _, d := range []string{parent, filepath.Dir(parent)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws = filepath.Join(parent, "ws")
	secretDir = filepath.Join(parent, "secret-sibling-7")
	for _, d := range []string{ws, secretDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(secretDir, "key"), []byte("sibling-secret-3141\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return parent, ws, secretDir
}

// names lists a directory unconfined.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestParentsListNamesOnly: the workspace's parents, / and /tmp list inside
// the sandbox, showing only the names of granted things; a sibling of the
// workspace (listed and readable unconfined) is neither listed nor
// readable, and Python walking up from its cwd works.
func TestParentsListNamesOnly(t *testing.T) {
	parent, ws, secretDir := rootFixture(t)
	// Unconfined, the sibling is there to find: the test would prove
	// nothing otherwise.
	if !slices.Contains(names(t, parent), "secret-sibling-7") {
		t.Fatal("unconfined: the sibling is not listed")
	}
	if b, err := os.ReadFile(filepath.Join(secretDir, "key")); err != nil || !strings.Contains(string(b), "sibling-secret") {
		t.Fatalf("unconfined: the sibling's file is not readable: %v", err)
	}
	if !slices.Contains(names(t, "/"), "root") || !slices.Contains(names(t, "/"), "etc") {
		t.Fatal("unconfined: / has no root or etc")
	}
	sb, err := New(Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if sb.mountNS == spawn.MountNone {
		t.Skipf("no private mount namespace here (%v): would check that / is a skeleton of the granted paths", sb.Enforcement())
	}
	if sb.mounts.RootSkeleton() < 0 {
		t.Fatalf("a mount namespace but no root skeleton: %v", sb.Enforcement().Notes)
	}
	// The temp dir's name in /tmp (TMPDIR may put it deeper).
	tmpdir, _, _ := strings.Cut(strings.TrimPrefix(sb.tmpRoot, "/tmp/"), "/")
	r := sh(t, sb, `set -e
echo "== parent"; ls -a ..
echo "== root"; ls -a /
echo "== tmp"; ls -a /tmp
echo "== etc"; ls /etc
echo "== cwd"; pwd
cat ../secret-sibling-7/key 2>&1 || echo no-read
ls ../secret-sibling-7 2>&1 || echo no-list
test -e ../secret-sibling-7 || echo no-name
cat /etc/os-release | head -1
/lib64/ld-linux-x86-64.so.2 --version >/dev/null 2>&1 && echo loader-ok || echo no-loader
python3 -c '
import os, pathlib
for p in pathlib.Path.cwd().parents:
    os.listdir(p)
n = 0
for root, dirs, files in os.walk(".."):
    n += 1
print("python-ok", n > 0)
'`, func(c *Command) { c.Dir = ws })
	if r.st.Code != 0 {
		t.Fatalf("listing inside: %v", r)
	}
	section := func(name string) []string {
		_, rest, _ := strings.Cut(r.out, "== "+name+"\n")
		part, _, _ := strings.Cut(rest, "== ")
		return strings.Fields(part)
	}
	for _, want := range []string{"ws"} {
		if !slices.Contains(section("parent"), want) {
			t.Errorf("the workspace's parent lists %q, want %s among them", section("parent"), want)
		}
	}
	if slices.Contains(section("parent"), "secret-sibling-7") {
		t.Errorf("the workspace's parent lists the secret sibling: %q", section("parent"))
	}
	rootNames := section("root")
	for _, want := range []string{"usr", "etc", "tmp", "proc", "dev", "bin", "lib64"} {
		if !slices.Contains(rootNames, want) {
			t.Errorf("/ lists %q, want %s among them", rootNames, want)
		}
	}
	// (var and run are there: /var/tmp and /run are the sandbox's own,
	// directories of its private tmpfs, and /var holds nothing else.)
	for _, absent := range []string{"root", "home", "boot", "srv"} {
		if slices.Contains(rootNames, absent) && !slices.ContainsFunc(sb.readable, func(p string) bool { return paths.Within(p, "/"+absent) }) {
			t.Errorf("/ lists %s, which nothing grants: %q", absent, rootNames)
		}
	}
	if got := section("tmp"); !slices.Contains(got, tmpdir) {
		t.Errorf("/tmp lists %q, want the temp dir %s", got, tmpdir)
	}
	for _, n := range section("tmp") {
		if n == "." || n == ".." || n == tmpdir {
			continue
		}
		if !slices.ContainsFunc(sb.readable, func(p string) bool { return paths.Within(p, "/tmp/"+n) }) {
			t.Errorf("/tmp lists %s, which nothing grants", n)
		}
	}
	if got := section("etc"); slices.Contains(got, "shadow") || !slices.Contains(got, "os-release") {
		t.Errorf("/etc lists %q: want os-release and no shadow", got)
	}
	for _, want := range []string{"no-read", "no-list", "no-name", "PRETTY_NAME", "loader-ok", "python-ok True"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("inside: want %q in the output: %v", want, r)
		}
	}
	if strings.Contains(r.out, "sibling-secret") {
		t.Errorf("inside: the sibling's secret was read: %v", r)
	}
}

// TestOldRootUnreachable: after the switch nothing of the host's tree is
// reachable: a secret file at a path the sandbox does not grant (readable
// unconfined) cannot be listed or opened by its path, through
// /proc/self/root, or by climbing ".." from /.
func TestOldRootUnreachable(t *testing.T) {
	_, ws, secretDir := rootFixture(t)
	secret := filepath.Join(secretDir, "key")
	if out, err := exec.Command("cat", secret).CombinedOutput(); err != nil || !strings.Contains(string(out), "sibling-secret") {
		t.Fatalf("unconfined: cat %s: %v %q", secret, err, out)
	}
	sb, err := New(Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if sb.mounts.RootSkeleton() < 0 {
		t.Skipf("no root skeleton here (%v): would check that the host's root is unreachable", sb.Enforcement().Notes)
	}
	r := sh(t, sb, `
s=`+secret+`
for p in "$s" "/proc/self/root$s" "/../../..$s" "/proc/self/root/../..$s" "/proc/1/root$s"; do
  cat "$p" 2>/dev/null && echo "read $p"
  test -e "$p" && echo "exists $p"
done
cd / && cd .. && cd .. && ls -a . | tr '\n' ' '; echo
ls -a /proc/self/root/.. | tr '\n' ' '; echo
readlink /proc/self/root; echo
grep -c . /proc/self/mountinfo >/dev/null && echo mountinfo-ok
grep -q ' / / .*ext4\| / / .*overlay' /proc/self/mountinfo && echo host-root-mounted
true`)
	if strings.Contains(r.out, "sibling-secret") || strings.Contains(r.out, "read ") || strings.Contains(r.out, "exists ") || strings.Contains(r.out, "host-root-mounted") {
		t.Errorf("inside, the old root is reachable: %v", r)
	}
	lines := strings.Split(r.out, "\n")
	if len(lines) < 3 || strings.Contains(lines[0], "secret") || strings.Contains(lines[0], "root ") || strings.Contains(lines[1], "root ") {
		t.Errorf(".. from / leads somewhere new: %v", r)
	}
	if !strings.Contains(r.out, "mountinfo-ok") {
		t.Errorf("no /proc/self/mountinfo inside: %v", r)
	}
}

// TestRootSymlinksOnTheWay: a granted path reached through symlinks
// (Debian's /lib64 -> usr/lib64, the dynamic loader's own path) resolves
// inside as outside: the links are recreated with their text, the tree
// they lead to is bound at its canonical path, and what lies beside it
// there is not (the link is never a way into ungranted places). A granted
// path that does not exist is skipped.
func TestRootSymlinksOnTheWay(t *testing.T) {
	base := t.TempDir()
	os.Chmod(base, 0o755)
	os.Chmod(filepath.Dir(base), 0o755)
	for _, d := range []string{"real/granted", "real/beside"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(base, "real/granted/ok"), []byte("granted-ok\n"), 0o644)
	os.WriteFile(filepath.Join(base, "real/beside/secret"), []byte("beside-secret\n"), 0o644)
	// rel -> real (relative), abs -> <base>/real/granted (absolute).
	if err := os.Symlink("real", filepath.Join(base, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "real/granted"), filepath.Join(base, "abs")); err != nil {
		t.Fatal(err)
	}
	// Unconfined the links lead to both directories.
	if b, err := os.ReadFile(filepath.Join(base, "rel/beside/secret")); err != nil || !strings.Contains(string(b), "beside-secret") {
		t.Fatalf("unconfined: %v", err)
	}
	sb, ws := newTestSandbox(t, func(p *Policy) {
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, filepath.Join(base, "rel/granted"), filepath.Join(base, "abs"))
		// A system path that does not exist (as /lib32 on most
		// machines) is skipped, in the skeleton too.
		p.SystemPaths = append(DefaultSystemPaths(), filepath.Join(base, "no-such-dir"))
	})
	_ = ws
	if sb.mounts.RootSkeleton() < 0 {
		t.Skipf("no root skeleton here (%v): would check the symlinks on the way to granted paths", sb.Enforcement().Notes)
	}
	r := sh(t, sb, `b=`+base+`
cat $b/rel/granted/ok $b/abs/ok
readlink $b/rel $b/abs
ls $b | tr '\n' ' '; echo
ls $b/real | tr '\n' ' '; echo
test -e $b/no-such-dir || echo no-missing
cat $b/rel/beside/secret 2>&1 || echo no-beside
/lib64/ld-linux-x86-64.so.2 --help >/dev/null 2>&1 && echo loader-ok`)
	want := "granted-ok\ngranted-ok\nreal\n" + filepath.Join(base, "real/granted") + "\nabs real rel \ngranted \nno-missing\n"
	if !strings.HasPrefix(r.out, want) {
		t.Errorf("inside:\n%s\nwant it to start with\n%s", r.out, want)
	}
	if strings.Contains(r.out, "beside-secret") || !strings.Contains(r.out, "no-beside") {
		t.Errorf("the link led beside the granted tree: %v", r)
	}
	if _, err := os.Stat("/lib64/ld-linux-x86-64.so.2"); err == nil && !strings.Contains(r.out, "loader-ok") {
		t.Errorf("the dynamic loader's own path does not work inside: %v", r)
	}
}

// TestParentsUnlistableWithoutMountNS: without a private mount namespace
// (best effort) nothing changes: the host's / stays, listing the
// workspace's parent is refused, and a note says why.
func TestParentsUnlistableWithoutMountNS(t *testing.T) {
	_, ws, _ := rootFixture(t)
	sb, err := newOnHost(Policy{Workspace: ws, BestEffort: true}, maskedHost(withoutMountNS))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	if !slices.ContainsFunc(sb.Enforcement().Notes, func(n string) bool {
		return strings.HasPrefix(n, "listing: the workspace's parents (/, /tmp, $HOME) cannot be listed")
	}) {
		t.Errorf("no note says the parents cannot be listed: %v", sb.Enforcement().Notes)
	}
	if sb.mounts.RootSkeleton() >= 0 {
		t.Fatal("a root skeleton without a mount namespace")
	}
	r := sh(t, sb, "ls .. && echo listed", func(c *Command) { c.Dir = ws })
	if r.st.Code == 0 || strings.Contains(r.out, "listed") || !strings.Contains(r.err, "Permission denied") {
		t.Errorf("listing the workspace's parent without a mount namespace: %v", r)
	}
}

// TestServerResolvesRelativePathsInRoot: the notification server resolves
// a relative path (a unix socket's, here) inside the command's root, as
// the command would. Resolved from the server's own root, an absolute
// symlink the command planted in the workspace was followed through the
// host's tree: connecting to "link/key" and "link/none" then told apart
// a file that exists outside the grants (ECONNREFUSED: something is
// there) from one that does not (ENOENT) — unconfined the two differ
// just so. Inside, the sibling does not exist: both are ENOENT. A
// relative path through an absolute link into the workspace still works.
func TestServerResolvesRelativePathsInRoot(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 not found: would check that the server resolves relative unix paths inside the command's root")
	}
	_, ws, secretDir := rootFixture(t)
	if err := os.Symlink(secretDir, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Join(ws, "sock")
	if err := os.Mkdir(sockDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sockDir, filepath.Join(ws, "tows")); err != nil {
		t.Fatal(err)
	}
	unixServer(t, filepath.Join(sockDir, "s"))
	const probe = `
import socket, sys, errno
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p); print(p, "ok")
    except OSError as e:
        print(p, errno.errorcode.get(e.errno, e.errno))
`
	cmd := exec.Command(py, "-c", probe, "link/key", "link/none")
	cmd.Dir = ws
	if out, _ := cmd.CombinedOutput(); string(out) != "link/key ECONNREFUSED\nlink/none ENOENT\n" {
		t.Fatalf("unconfined the two paths are not told apart (%q): the check below would prove nothing", out)
	}
	sb, err := New(Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if sb.mounts.RootSkeleton() < 0 {
		t.Skipf("no root skeleton here (%v): the server resolves from the same root as the command", sb.Enforcement().Notes)
	}
	got := runConfined(t, sb, py, "-c", probe, "link/key", "link/none", "tows/s")
	if got != "link/key ENOENT\nlink/none ENOENT\ntows/s ok\n" {
		t.Errorf("confined: %q, want both outside paths ENOENT and the workspace's socket reached", got)
	}
	// From a removed working directory there is no name to resolve
	// inside the root; the fallback refuses symlinks rather than follow
	// one through the server's root, so the two still look alike.
	got = runConfined(t, sb, "/bin/bash", "-c", `mkdir gone && cd gone && rmdir ../gone && `+py+` -c '`+probe+`' ../link/key ../link/none ../tows/s`)
	if got != "../link/key ELOOP\n../link/none ELOOP\n../tows/s ELOOP\n" {
		t.Errorf("confined, from a removed cwd: %q, want ELOOP for each (no symlink followed)", got)
	}
}
