package sandbox

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
)

// The workspace's .git, read-only (Policy.GitWritable false, the default).
//
// Why: git runs code that a repository's own files name — .git/hooks/*,
// and .git/config's core.fsmonitor (run by every `git status`, which most
// shell prompts run in the directory), core.hooksPath, core.sshCommand,
// filters, aliases; a submodule's .git/modules/*/config likewise. A
// confined command that could write them would plant code the user's next
// git command runs outside the sandbox with all of the user's rights. So:
//
//  1. Existing .git entries are bound over themselves read-only in every
//     private mount namespace the sandbox makes (spawn_linux.c,
//     la_bind_readonly, right after the writable roots are attached, so
//     the root skeleton's recursive clones take them along). A write
//     beneath one fails with EROFS; the entry is a mount point in the
//     command's namespace, so it cannot be renamed away or removed
//     (EBUSY): `mv .git x && mkdir .git` has nothing to move.
//  2. Change capture refuses, where rule 1 cannot reach, a new .git or
//     HEAD name and any change beneath a .git, however deep or new
//     (notify.RefusedGitPath, one decision shared with the in-process
//     file tools).
//
// Which entries (gitEntries, at New): for each writable root but the
// private TMPDIR — the workspace and Policy.ReadWritePaths — its own
// .git, and the .git of each directory directly inside it (a folder of
// checkouts side by side), and each of those directories that is itself
// a git directory (isGitDir: a bare repository; the root too, which then
// is read-only whole, as a repository is). A .git directory is protected
// whole; a .git
// file ("gitdir: PATH", a worktree or a submodule's checkout) is itself
// protected (its line redirects git), and so are the directory it names
// and that directory's commondir (a worktree's shared config and hooks)
// when they lie beneath a writable root (elsewhere they are read-only
// already). A .git symlink's target is protected the same way; the link
// itself is a name, covered by rule 2. Repositories nested deeper, and
// those made after New, are not looked for: walking the whole tree at
// every New would cost in proportion to the workspace (node_modules);
// rule 2 still keeps a command from making one or writing in one.
//
// Limits, said in Enforcement's notes: without a private mount namespace
// (BestEffort without the kernel support, or a read-write root that is
// / itself) nothing is bound and .git stays writable.

// Bounds of gitEntries' look: the directories of a root looked into for
// a .git, and the entries protected. Past either, the notes say what was
// left out.
const (
	gitScanChildren = 2048
	gitMaxEntries   = 32
)

// gitEntries returns the .git entries to bind read-only (see the top of
// this file): scan are the canonical roots to look in, rw every canonical
// writable root (a gitdir target outside them is read-only already).
// left says what the bounds left out ("" when nothing).
func gitEntries(scan, rw []string) (out []spawn.ReadOnlyBind, left string) {
	add := func(p string) {
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return
		}
		if !slices.ContainsFunc(rw, func(r string) bool { return paths.Within(p, r) }) {
			return // not writable: nothing to protect
		}
		out = append(out, spawn.ReadOnlyBind{Path: p, Dev: st.Dev, Ino: st.Ino})
	}
	// one protects dir/.git and what it leads to, and dir itself when it
	// is a git directory (a bare repository).
	one := func(dir string) {
		if isGitDir(dir) {
			add(dir)
		}
		p := filepath.Join(dir, ".git")
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			add(p)
		case unix.S_IFREG:
			add(p)
			if gd := gitdirOf(p); gd != "" {
				add(gd)
				if cd := commondirOf(gd); cd != "" {
					add(cd)
				}
			}
		case unix.S_IFLNK:
			if t, err := filepath.EvalSymlinks(p); err == nil {
				add(t)
				if cd := commondirOf(t); cd != "" {
					add(cd)
				}
			}
		}
	}
	for _, root := range scan {
		var st unix.Stat_t
		if unix.Stat(root, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		one(root)
		f, err := os.Open(root)
		if err != nil {
			continue
		}
		ents, err := f.ReadDir(gitScanChildren + 1)
		f.Close()
		if err == nil && len(ents) > gitScanChildren {
			left = "directories past the first " + strconv.Itoa(gitScanChildren) + " of " + root + " were not looked into"
			ents = ents[:gitScanChildren]
		}
		for _, e := range ents {
			if e.IsDir() && !paths.IsGitName(e.Name()) {
				one(filepath.Join(root, e.Name()))
			}
		}
	}
	// Parents first; an entry at or beneath another is covered by its
	// recursive bind (a submodule's .git/modules/x).
	slices.SortStableFunc(out, func(a, b spawn.ReadOnlyBind) int { return len(a.Path) - len(b.Path) })
	var kept []spawn.ReadOnlyBind
	for _, m := range out {
		if !slices.ContainsFunc(kept, func(k spawn.ReadOnlyBind) bool { return paths.Within(m.Path, k.Path) }) {
			kept = append(kept, m)
		}
	}
	if len(kept) > gitMaxEntries {
		left = strconv.Itoa(len(kept)-gitMaxEntries) + " .git entries past the first " + strconv.Itoa(gitMaxEntries) + " are not protected"
		kept = kept[:gitMaxEntries]
	}
	return kept, left
}

// isGitDir reports whether dir is itself a git directory, as git's
// is_git_directory judges one without a .git name: a HEAD file (or
// symlink) beside objects/ and refs/ directories. A bare repository (git
// init --bare, a mirror clone) in the workspace is one: `git -C dir ...`
// and a `git status` in a directory beneath it whose config names it as
// core.worktree's repository use its config and hooks. (The content of
// HEAD is not checked: git checks it, but a HEAD it rejects today is
// still not one a command should rewrite.)
func isGitDir(dir string) bool {
	var st unix.Stat_t
	if unix.Lstat(filepath.Join(dir, "HEAD"), &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return false
	}
	for _, d := range []string{"objects", "refs"} {
		if unix.Stat(filepath.Join(dir, d), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return false
		}
	}
	return true
}

// gitdirOf reads a .git file's "gitdir: PATH" line: the canonical
// directory it names (relative to the file's directory), or "".
func gitdirOf(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return ""
	}
	rest, ok := strings.CutPrefix(sc.Text(), "gitdir:")
	if !ok {
		return ""
	}
	return resolveGitPath(filepath.Dir(file), strings.TrimSpace(rest))
}

// commondirOf reads gitdir/commondir (a worktree's pointer to the
// repository holding config and hooks): the canonical directory, or "".
func commondirOf(gitdir string) string {
	b, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return ""
	}
	return resolveGitPath(gitdir, strings.TrimSpace(string(b)))
}

// resolveGitPath is p (relative to base when not absolute), canonical,
// when it is a directory; else "".
func resolveGitPath(base, p string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
		return ""
	}
	return r
}

// protectGit finds the .git entries to bind read-only at New (after the
// mount roots are made) and returns Enforcement's notes on what is and
// is not protected: never silent.
func (s *Sandbox) protectGit() []string {
	if s.pol.GitWritable {
		return []string{"git: .git is writable (Policy.GitWritable): a command can plant hooks and config that the user's git runs outside the sandbox"}
	}
	var notes []string
	// The same condition New compiles the capture program on (read
	// here, not s.captureChild, which a goroutine is still making).
	names := "new .git and HEAD names, and changes beneath any .git, refused (every command's calls that change names go through change capture)"
	switch {
	case !s.capture:
		names = "new .git names NOT refused (no change capture in this sandbox: Policy.CaptureChanges), nor HEAD names or changes beneath a .git made later or nested deeper"
	case s.workspaceReal == "":
		// Change capture works relative to the workspace (newCapture):
		// a sandbox with write grants but no workspace has none.
		names = "new .git names NOT refused (no workspace, so no change capture: the write grants are not guarded), nor HEAD names or changes beneath a .git made later or nested deeper"
	}
	if s.mounts == nil || s.mountNS == spawn.MountNone {
		return append(notes, "git: existing .git entries are NOT protected (no private mount namespace to bind them read-only in); "+names)
	}
	scan := canonical(append([]string{s.pol.Workspace}, s.pol.ReadWritePaths...))
	list, left := gitEntries(scan, s.rwRoots)
	s.mounts.SetReadOnlyBinds(list)
	what := make([]string, len(list))
	for i, m := range list {
		what[i] = m.Path
	}
	switch {
	case len(list) == 0:
		notes = append(notes, "git: no .git in the writable roots; "+names)
	default:
		notes = append(notes, "git: read-only (bound over itself, so it cannot be written, moved or removed): "+strings.Join(what, ", ")+"; "+names)
	}
	if left != "" {
		notes = append(notes, "git: "+left)
	}
	return notes
}

// guardsGitNames reports whether every command of the sandbox is
// captured, one without Command.BeforeChange only for the .git name rule
// (a no-op hook): so that the rule holds in every command of a sandbox
// made with Policy.CaptureChanges, not only in those that record
// checkpoints. A sandbox without CaptureChanges has no capture program,
// and its commands may create a .git (Enforcement's notes say so).
func (s *Sandbox) guardsGitNames() bool {
	return !s.pol.GitWritable && s.capture
}
