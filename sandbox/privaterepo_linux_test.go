package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Repositories in private roots (notify's private_linux.go): a command may
// make one in its TMPDIR and in the sandbox's private /tmp, as test suites
// do, and nothing of it may arrive where the person runs git.

// privateTmp reports whether sb has a private /tmp of its own.
func privateTmp(sb *Sandbox) bool {
	return slices.ContainsFunc(sb.Enforcement().Notes, func(n string) bool { return strings.HasPrefix(n, "/tmp: a private tmpfs") })
}

// TestRepositoriesInPrivateRoots: git init and commit work in $TMPDIR and
// in /tmp, with the .git rule on, while git init in the workspace is still
// refused and its refusal is reported.
func TestRepositoriesInPrivateRoots(t *testing.T) {
	requireGit(t)
	sb, ws := newTestSandbox(t, func(p *Policy) { p.CaptureChanges = true })
	if sb.captureChild == nil {
		t.Skipf("no change capture here (%v): would check that repositories can be made in TMPDIR and /tmp and not in the workspace", sb.Enforcement().Missing)
	}
	dirs := []string{`"$TMPDIR/repo"`}
	if privateTmp(sb) {
		dirs = append(dirs, "/tmp/repo")
	}
	for _, d := range dirs {
		script := `set -e; git init -q ` + d + `; cd ` + d + `; echo x > f; git add f
git -c user.email=u@x -c user.name=u commit -qm one; git log --oneline | wc -l`
		if r := sh(t, sb, script); r.st.Code != 0 || strings.TrimSpace(r.out) != "1" {
			t.Errorf("a repository in %s: %v", d, r)
		}
	}
	r := sh(t, sb, `git init -q newrepo`)
	if r.st.Code == 0 {
		t.Fatalf("git init in the workspace was not refused: %v", r)
	}
	if _, err := os.Lstat(filepath.Join(ws, "newrepo/.git")); err == nil {
		t.Fatal("newrepo/.git was made in the workspace")
	}
	want := filepath.Join(canonical([]string{ws})[0], "newrepo/.git")
	if !slices.ContainsFunc(r.st.Refusals, func(f Refusal) bool { return f.Rule == "git" && f.Target == want }) {
		t.Errorf("refusals %v: want the .git rule on %s", r.st.Refusals, want)
	}
	if note := RefusalNote(r.st.Refusals, r.st.MoreRefusals, true); !strings.Contains(note, want) || !strings.Contains(note, "--git writable") {
		t.Errorf("note %q: want the path and the flag", note)
	}
}

// TestPrivateRepositoryStaysPrivate: a repository made in TMPDIR or /tmp
// cannot be moved, copied, linked or exchanged into the workspace, nor
// reached from it through a symbolic link.
//
// Each attack runs in two sandboxes: one with its private mount namespace,
// where every root is a mount of its own (a rename or hard link between
// two roots is EXDEV there, even when change capture makes it), and one
// without (BestEffort), where the roots are one file system and the rule
// alone stops a rename. With GitWritable the attack must leave a
// repository reachable from the workspace in one of them (so the attack is
// real); with the default, in neither. Whether the repository is reachable
// is looked at by the command itself as it ends (a TMPDIR is emptied when
// its command ends: a link into it then leads nowhere), and in the
// workspace afterwards.
func TestPrivateRepositoryStaysPrivate(t *testing.T) {
	requireGit(t)
	if _, err := os.Stat("/usr/bin/realpath"); err != nil {
		t.Skip("no realpath: would check that a repository made in TMPDIR cannot reach the workspace")
	}
	esc := probeBinary(t)
	newSandbox := func(t *testing.T, writable, mountNS bool) (*Sandbox, string) {
		ws := t.TempDir()
		p := Policy{Workspace: ws, GitWritable: writable, CaptureChanges: true, BestEffort: !mountNS,
			ReadOnlyPaths: []string{filepath.Dir(esc)}}
		if writable {
			// A temporary directory of the caller's: the process then
			// writes the workspace itself (no plan.ownWrites), whose
			// boundary rule (notify's own_linux.go) would refuse a
			// directory moved out of TMPDIR for a reason of its own.
			p.TempDir = t.TempDir()
		}
		h := host()
		if !mountNS {
			h = maskedHost(withoutMountNS)
		}
		sb, err := newOnHost(p, h)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { sb.Close() })
		return sb, ws
	}
	const mk = `git init -q "$TMPDIR/r" && `
	for _, tc := range []struct {
		name, script, reach string // reach: where, in the workspace, a repository must not be
		needTmp             bool
	}{
		{"rename a directory", mk + `$ESC rename "$TMPDIR/r" r1`, "r1", false},
		{"rename one holding a repository deeper", `mkdir -p "$TMPDIR/o/p" && git init -q "$TMPDIR/o/p/q" && $ESC rename "$TMPDIR/o" o`, "o/p/q", false},
		{"mv (a rename, then a copy)", mk + `mv "$TMPDIR/r" r2`, "r2", false},
		{"mv from the private /tmp", `git init -q /tmp/r && mv /tmp/r r3`, "r3", true},
		{"cp -r", mk + `cp -r "$TMPDIR/r" r4`, "r4", false},
		{"tar", mk + `tar -C "$TMPDIR" -cf - r | tar -xf - --transform s/^r/r5/`, "r5", false},
		{"symlink", mk + `ln -s "$TMPDIR/r" r6`, "r6", false},
		{"relative symlink", mk + `ln -s "$(realpath -m --relative-to="$PWD" "$TMPDIR/r")" r7`, "r7", false},
		{"symlink renamed in", mk + `ln -s "$TMPDIR/r" "$TMPDIR/l" && $ESC rename "$TMPDIR/l" r8`, "r8", false},
		{"symlink hard-linked in", mk + `ln -s "$TMPDIR/r" "$TMPDIR/l" && ln -P "$TMPDIR/l" r9`, "r9", false},
		{"relative symlink moved to another parent", mk + `mkdir -p x/y && ln -s "$(realpath -m --relative-to="$PWD/y" "$TMPDIR/r")" x/y/l && $ESC rename x/y y`, "y/l", false},
		{"rename exchange", mk + `mkdir d && $ESC rename-exchange "$TMPDIR/r" d`, "d", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attackWorked := false
			for _, mountNS := range []bool{true, false} {
				if tc.needTmp && !mountNS {
					continue // no private /tmp without the namespace
				}
				for _, writable := range []bool{true, false} {
					sb, ws := newSandbox(t, writable, mountNS)
					if sb.captureChild == nil {
						t.Skipf("no change capture here (%v): would check %q", sb.Enforcement().Missing, tc.script)
					}
					if tc.needTmp && !privateTmp(sb) {
						t.Skipf("no private /tmp here: would check %q", tc.script)
					}
					script := tc.script + `; test -e "` + tc.reach + `/.git" && echo REPOSITORY-REACHED`
					r := sh(t, sb, script, func(c *Command) { c.Env = append(c.Env, "ESC="+esc) })
					_, err := os.Stat(filepath.Join(ws, tc.reach, ".git"))
					reached := err == nil || strings.Contains(r.out, "REPOSITORY-REACHED")
					if writable {
						attackWorked = attackWorked || reached
						continue
					}
					if reached {
						t.Fatalf("mount namespace %v: a repository is reachable at %s in the workspace: %v", mountNS, tc.reach, r)
					}
					if !slices.ContainsFunc(r.st.Refusals, func(f Refusal) bool { return f.Rule == "git" }) {
						t.Errorf("mount namespace %v: refused, but no refusal by the .git rule was reported: %v %v", mountNS, r, r.st.Refusals)
					}
				}
			}
			if !attackWorked {
				t.Errorf("with GitWritable no repository reached %s in either sandbox, so this test proves nothing", tc.reach)
			}
		})
	}
}
