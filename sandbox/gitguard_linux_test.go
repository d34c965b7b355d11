package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
)

// The workspace's .git is read-only and no command can make a new one
// (gitguard_linux.go). Each attack runs twice on a fresh workspace: with
// Policy.GitWritable, where it must work (the test proves the attack is
// real), and with the default, where it must fail and leave the user's
// repository as it was.

// gitSetup makes, unconfined, what a user's workspace holds: a repository
// with one commit, and beside it a checkout whose .git is a file naming
// its git directory (as `git worktree add` and submodules make).
func gitSetup(t *testing.T, ws string) {
	t.Helper()
	script := `set -e
git init -q .
echo one > f
git add f
git -c user.email=u@x -c user.name=u commit -qm one
git init -q --separate-git-dir="$PWD/store" wt
`
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git setup: %v\n%s", err, out)
	}
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed: would check that the workspace's .git is read-only to commands")
	}
}

func TestGitReadOnly(t *testing.T) {
	requireGit(t)
	exists := func(rel string) func(ws string) bool {
		return func(ws string) bool { _, err := os.Lstat(filepath.Join(ws, rel)); return err == nil }
	}
	contains := func(rel, s string) func(ws string) bool {
		return func(ws string) bool {
			b, _ := os.ReadFile(filepath.Join(ws, rel))
			return strings.Contains(string(b), s)
		}
	}
	gone := func(rel string) func(ws string) bool {
		return func(ws string) bool { return !exists(rel)(ws) }
	}
	for _, tc := range []struct {
		name, script string
		done         func(ws string) bool // the attack's effect on the host
	}{
		{"hook", `printf '#!/bin/sh\necho planted\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, exists(".git/hooks/pre-commit")},
		{"config", `printf '[core]\n\tfsmonitor = ./evil\n' >> .git/config`, contains(".git/config", "fsmonitor")},
		{"rename and replace", `mv .git x && mkdir .git`, exists("x/HEAD")},
		{"remove", `rm -rf .git`, gone(".git/HEAD")},
		{"hard link into .git", `echo evil > h && ln h .git/hooks/post-checkout`, exists(".git/hooks/post-checkout")},
		{"gitdir file rewritten", `echo "gitdir: $PWD/evil" > wt/.git`, contains("wt/.git", "evil")},
		{"gitdir file replaced by a symlink", `ln -sfn "$PWD/evil" wt/.git`, func(ws string) bool {
			fi, err := os.Lstat(filepath.Join(ws, "wt/.git"))
			return err == nil && fi.Mode()&os.ModeSymlink != 0
		}},
		{"separate git dir", `printf '[core]\n\thooksPath = /x\n' >> store/config`, contains("store/config", "hooksPath")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, writable := range []bool{true, false} {
				ws := t.TempDir()
				gitSetup(t, ws) // before New, which finds the .git entries
				sb, err := New(Policy{Workspace: ws, GitWritable: writable})
				if err != nil {
					t.Fatal(err)
				}
				r := sh(t, sb, "mkdir -p evil; "+tc.script)
				sb.Close()
				switch {
				case writable && !tc.done(ws):
					t.Fatalf("with GitWritable the attack did not work, so this test proves nothing: %v", r)
				case !writable && tc.done(ws):
					t.Fatalf("the attack worked on the protected .git: %v", r)
				case !writable && r.st.Code == 0:
					t.Errorf("the attack failed but the command did not say so: %v", r)
				}
				if !writable {
					t.Logf("refused: %s", strings.SplitN(strings.TrimSpace(r.err), "\n", 2)[0])
				}
			}
		})
	}
}

// TestGitNewNamesRefused: with change capture (every command of such a
// sandbox goes through it, whether or not it records changes), no command
// can make a .git — a directory, a gitdir file, a symlink, by rename or
// link, or git init — in the workspace or a repository's subdirectory.
// (In TMPDIR and the private /tmp it can, and nothing of it can leave:
// TestPrivateRepositoryStaysPrivate.)
func TestGitNewNamesRefused(t *testing.T) {
	requireGit(t)
	for _, tc := range []struct{ name, script, made string }{
		{"mkdir", `mkdir -p sub && mkdir sub/.git`, "sub/.git"},
		{"gitdir file", `mkdir -p sub && echo "gitdir: $PWD/evil" > sub/.git`, "sub/.git"},
		{"symlink", `mkdir -p sub && ln -s "$PWD/evil" sub/.git`, "sub/.git"},
		{"rename onto .git", `mkdir -p sub/x && mv sub/x sub/.git`, "sub/.git"},
		{"hard link to .git", `mkdir -p sub && echo "gitdir: $PWD/evil" > g && ln g sub/.git`, "sub/.git"},
		{"through a symlink's target", `mkdir -p sub && ln -s .git sub/l && echo "gitdir: $PWD/evil" > sub/l`, "sub/.git"},
		{"git init", `git init -q sub`, "sub/.git"},
		{"in the workspace's root", `mkdir .git`, ".git"},
		{"upper case", `mkdir -p sub && mkdir sub/.GIT`, "sub/.GIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, writable := range []bool{true, false} {
				sb, ws := newTestSandbox(t, func(p *Policy) { p.GitWritable = writable; p.CaptureChanges = true })
				if sb.captureChild == nil {
					t.Skipf("no change capture here (%v): would check that %q cannot make %s", sb.Enforcement().Missing, tc.script, tc.made)
				}
				os.Mkdir(filepath.Join(ws, "evil"), 0o755)
				r := sh(t, sb, tc.script)
				_, err := os.Lstat(filepath.Join(ws, tc.made))
				switch {
				case writable && err != nil:
					t.Fatalf("with GitWritable %s was not made, so this test proves nothing: %v", tc.made, r)
				case !writable && err == nil:
					t.Fatalf("%s was made: %v", tc.made, r)
				case !writable && r.st.Code == 0:
					t.Errorf("refused, but the command did not say so: %v", r)
				}
			}
		})
	}
}

// TestGitStillReads: with the .git read-only, status, diff and log work;
// commit fails and says why.
func TestGitStillReads(t *testing.T) {
	requireGit(t)
	ws := t.TempDir()
	gitSetup(t, ws)
	sb, err := New(Policy{Workspace: ws, CaptureChanges: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	t.Logf("Enforcement notes: %q", sb.Enforcement().Notes)
	if !slicesContainsPrefix(sb.Enforcement().Notes, "git: read-only") {
		t.Errorf("Enforcement does not say .git is read-only: %q", sb.Enforcement().Notes)
	}
	r := sh(t, sb, `set -e; echo two >> f; git status --short; git diff --stat | tail -1; git log --oneline | wc -l`)
	if r.st.Code != 0 || !strings.Contains(r.out, " M f") || !strings.Contains(r.out, "1 file changed") || !strings.HasSuffix(r.out, "1\n") {
		t.Fatalf("git status/diff/log with a read-only .git: %v", r)
	}
	r = sh(t, sb, `git -c user.email=a@b -c user.name=a commit -qam two`)
	if r.st.Code == 0 || !strings.Contains(r.err, "Read-only file system") {
		t.Fatalf("git commit: want a failure naming the read-only file system: %v", r)
	}
	t.Logf("git commit says: %s", strings.TrimSpace(r.err))
}

// TestGitUnprotectedSaysSo: where .git cannot be protected, Enforcement
// says so.
func TestGitUnprotectedSaysSo(t *testing.T) {
	sb, _ := newTestSandbox(t, func(p *Policy) { p.GitWritable = true })
	if !slicesContainsPrefix(sb.Enforcement().Notes, "git: .git is writable") {
		t.Errorf("GitWritable not in the notes: %q", sb.Enforcement().Notes)
	}
	sb, _ = newTestSandbox(t, nil)
	if !slicesContainsPrefix(sb.Enforcement().Notes, "git: ") {
		t.Errorf("no git note: %q", sb.Enforcement().Notes)
	}
	if !sb.pol.CaptureChanges && sb.mountNS != spawn.MountNone && !slicesContainsPrefix(sb.Enforcement().Notes, "git: no .git in the writable roots; new .git names NOT refused") {
		t.Errorf("a sandbox without capture does not say new .git names are allowed: %q", sb.Enforcement().Notes)
	}
	// No mount namespace (best effort): nothing is bound, and the notes
	// say so; the hook attack then works, as the note warns.
	requireGit(t)
	ws := t.TempDir()
	gitSetup(t, ws)
	sb, err := newOnHost(Policy{Workspace: ws, BestEffort: true}, maskedHost(withoutMountNS))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if !slicesContainsPrefix(sb.Enforcement().Notes, "git: existing .git entries are NOT protected (no private mount namespace") {
		t.Errorf("without a mount namespace the notes do not say .git is writable: %q", sb.Enforcement().Notes)
	}
	if !slicesContainsPrefix(sb.Enforcement().Lost, "the workspace's .git: commands can write it") {
		t.Errorf("without a mount namespace or capture, Lost does not list the workspace's .git: %q", sb.Enforcement().Lost)
	}
	if r := sh(t, sb, `echo x > .git/hooks/pre-commit`); r.st.Code != 0 {
		t.Errorf("without a mount namespace the hook could not be written, so the note would be wrong: %v", r)
	}
}

func slicesContainsPrefix(ss []string, prefix string) bool {
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// unconfinedGit runs git as the user would, outside the sandbox, in dir.
func unconfinedGit(t *testing.T, home, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+home)
	cmd.CombinedOutput() // its effect is what the callers look at
}

// TestGitDirsRefused: with change capture, no command can make a
// repository git finds without a .git name (a HEAD file beside objects/
// and refs/: a bare repository, whose config's core.fsmonitor the user's
// next `git status` beneath it runs), nor write in a .git that New did
// not bind (nested deeper than one level, or made after New). Each attack
// works with GitWritable, shown by its effect: for the bare layout, the
// user's unconfined git status running the payload, which only touches a
// file of the test's.
func TestGitDirsRefused(t *testing.T) {
	requireGit(t)
	exists := func(rel string) func(ws, marker string) bool {
		return func(ws, _ string) bool { _, err := os.Lstat(filepath.Join(ws, rel)); return err == nil }
	}
	layout := `mkdir -p y/objects y/refs && echo "ref: refs/heads/main" > y/h && `
	for _, tc := range []struct {
		name         string
		before       string // unconfined, before New
		after        string // unconfined, after New
		script       string // confined; MARKER is the payload's file
		done         func(ws, marker string) bool
		wantReadOnly bool // refused with EROFS, as a bound .git is
	}{
		{name: "bare layout with fsmonitor", script: `mkdir -p src/objects src/refs src/pkg && echo "ref: refs/heads/master" > src/HEAD && ` +
			`printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch MARKER; false"\n' > src/config`,
			done: func(ws, marker string) bool {
				unconfinedGit(t, ws, filepath.Join(ws, "src/pkg"), "status")
				_, err := os.Stat(marker)
				return err == nil
			}},
		{name: "git init --bare", script: `git init -q --bare x`, done: func(ws, _ string) bool { return isGitDir(filepath.Join(ws, "x")) }},
		{name: "objects and refs beside an existing HEAD", before: `mkdir -p d/pkg && echo "ref: refs/heads/main" > d/HEAD`,
			script: `mkdir d/objects d/refs && printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch MARKER; false"\n' > d/config`,
			done: func(ws, marker string) bool {
				unconfinedGit(t, ws, filepath.Join(ws, "d/pkg"), "status")
				_, err := os.Stat(marker)
				return err == nil
			}},
		{name: "rename onto HEAD", script: layout + `mv y/h y/HEAD`, done: exists("y/HEAD")},
		{name: "hard link to HEAD", script: layout + `ln y/h y/HEAD`, done: exists("y/HEAD")},
		{name: "symlink HEAD", script: `mkdir -p y/objects y/refs && ln -s refs/heads/main y/HEAD`, done: exists("y/HEAD")},
		{name: "nested .git hook", before: `git init -q a/b`, script: `printf '#!/bin/sh\ntouch MARKER\n' > a/b/.git/hooks/pre-commit && chmod +x a/b/.git/hooks/pre-commit`,
			done: exists("a/b/.git/hooks/pre-commit"), wantReadOnly: true},
		{name: "nested .git config", before: `git init -q a/b`, script: `git -C a/b config core.fsmonitor "touch MARKER; false"`,
			done: func(ws, _ string) bool {
				b, _ := os.ReadFile(filepath.Join(ws, "a/b/.git/config"))
				return strings.Contains(string(b), "fsmonitor")
			}},
		{name: "nested hook made executable", before: `git init -q a/b && printf '#!/bin/sh\n' > a/b/.git/hooks/pre-commit`, script: `chmod +x a/b/.git/hooks/pre-commit`,
			done: func(ws, _ string) bool {
				fi, err := os.Stat(filepath.Join(ws, "a/b/.git/hooks/pre-commit"))
				return err == nil && fi.Mode()&0o100 != 0
			}, wantReadOnly: true},
		{name: "hard link of a nested .git file", before: `git init -q a/b`, script: `ln a/b/.git/config cfg && echo "[core] fsmonitor = x" >> cfg`,
			done: func(ws, _ string) bool {
				b, _ := os.ReadFile(filepath.Join(ws, "a/b/.git/config"))
				return strings.Contains(string(b), "fsmonitor")
			}},
		{name: "existing hard link of a nested .git file", before: `git init -q a/b && ln a/b/.git/config cfg`, script: `echo "[core] fsmonitor = x" >> cfg`,
			done: func(ws, _ string) bool {
				b, _ := os.ReadFile(filepath.Join(ws, "a/b/.git/config"))
				return strings.Contains(string(b), "fsmonitor")
			}, wantReadOnly: true},
		{name: ".git made after New", after: `git init -q .`, script: `printf '#!/bin/sh\ntouch MARKER\n' > .git/hooks/pre-commit`,
			done: exists(".git/hooks/pre-commit"), wantReadOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, writable := range []bool{true, false} {
				ws := t.TempDir()
				marker := filepath.Join(t.TempDir(), "ran")
				run := func(script string) {
					if script == "" {
						return
					}
					cmd := exec.Command("/bin/sh", "-c", script)
					cmd.Dir = ws
					cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws)
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("%s: %v\n%s", script, err, out)
					}
				}
				run(tc.before)
				sb, err := New(Policy{Workspace: ws, GitWritable: writable, CaptureChanges: true})
				if err != nil {
					t.Fatal(err)
				}
				if sb.captureChild == nil && !writable {
					sb.Close()
					t.Skipf("no change capture here (%v): would check that %q is refused", sb.Enforcement().Missing, tc.script)
				}
				run(tc.after)
				r := sh(t, sb, strings.ReplaceAll(tc.script, "MARKER", marker))
				sb.Close()
				done := tc.done(ws, marker)
				switch {
				case writable && !done:
					t.Fatalf("with GitWritable the attack did not work, so this test proves nothing: %v", r)
				case !writable && done:
					t.Fatalf("the attack worked: %v", r)
				case !writable && r.st.Code == 0:
					t.Errorf("refused, but the command did not say so: %v", r)
				case !writable && tc.wantReadOnly && !strings.Contains(r.err, "Read-only file system"):
					t.Errorf("a write in a .git not bound at New: want EROFS, as a bound one answers: %v", r)
				}
				if _, err := os.Stat(marker); err == nil && !writable {
					t.Errorf("the payload ran")
				}
				if !writable {
					t.Logf("refused: %s", strings.SplitN(strings.TrimSpace(r.err), "\n", 2)[0])
				}
			}
		})
	}
}

// TestGitBareRepoBound: a bare repository already in the workspace (a
// child directory that is a git directory, no .git name) is bound
// read-only at New like a .git, without change capture; a root that is
// one is found too (gitEntries).
func TestGitBareRepoBound(t *testing.T) {
	requireGit(t)
	for _, writable := range []bool{true, false} {
		ws := t.TempDir()
		unconfinedGit(t, ws, ws, "init", "-q", "--bare", "store")
		if !isGitDir(filepath.Join(ws, "store")) {
			t.Fatal("git init --bare made no git directory")
		}
		sb, err := New(Policy{Workspace: ws, GitWritable: writable})
		if err != nil {
			t.Fatal(err)
		}
		r := sh(t, sb, `printf '[core]\n\tfsmonitor = "touch x; false"\n' >> store/config`)
		notes := sb.Enforcement().Notes
		sb.Close()
		b, _ := os.ReadFile(filepath.Join(ws, "store/config"))
		planted := strings.Contains(string(b), "fsmonitor")
		switch {
		case writable && !planted:
			t.Fatalf("with GitWritable the bare repository's config was not written, so this test proves nothing: %v", r)
		case !writable && (planted || !strings.Contains(r.err, "Read-only file system")):
			t.Fatalf("bare repository's config: planted %v: %v", planted, r)
		case !writable && !slicesContainsPrefix(notes, "git: read-only (bound over itself, so it cannot be written, moved or removed): "+canonical([]string{ws})[0]+"/store"):
			t.Errorf("Enforcement does not name the bare repository: %q", notes)
		}
	}
	ws := t.TempDir()
	unconfinedGit(t, ws, ws, "init", "-q", "--bare", ".")
	real := canonical([]string{ws})
	if list, _ := gitEntries(real, real); len(list) != 1 || list[0].Path != real[0] {
		t.Errorf("a workspace that is a bare repository: gitEntries = %v, want the root", list)
	}
}
