package notify

import (
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// The .git rule's names: the one decision of which paths no confined
// process may change while .git is protected (CaptureOptions.GitWritable
// off), used by change capture (capture_emulate_linux.go) and, through
// the sandbox's RefusedGitPath, by the in-process file
// tools and the sandbox's scan for existing repositories
// (gitguard_linux.go).
//
// Why: git runs code named in a repository's own files — hooks, and
// config keys such as core.fsmonitor (run by every `git status`, which
// most shell prompts run), core.hooksPath, core.sshCommand, filters and
// aliases — with all of the user's rights, outside the sandbox. A
// repository a command made or changed is one the user's next git
// command in that directory would use. git finds one two ways: a ".git"
// entry (a directory, a file holding "gitdir: ...", a symlink), and a
// directory that is itself a git directory, which is any directory
// holding a file "HEAD" beside objects/ and refs/ (a bare repository;
// git's is_git_directory, which needs no .git name: `git status` in
// src/pkg finds src/ when src/HEAD, src/objects and src/refs exist, and
// src/config's core.worktree makes it the repository of the tree).
// Existing ones are bound read-only in the command's mount namespace
// (gitguard_linux.go); these names cover the rest.

// GitDirName reports whether name, one path component (trailing slashes
// allowed), is one no confined process may give a new entry, because the
// entry makes a repository: ".git" in any case (paths.IsGitName, the
// name of a repository's entry; the scan for existing repositories skips
// entries of this name too), or "HEAD" exactly — the file that, beside
// objects/ and refs/, makes its directory a git directory. Case matters for HEAD: git looks for "HEAD" (on a
// case-insensitive directory "head" would be the same entry; git makes
// none there, and no file system in a workspace is expected to fold
// case, so "head", a common word, stays allowed).
func GitDirName(name string) bool {
	return paths.IsGitName(name) || strings.TrimRight(name, "/") == "HEAD"
}

// RefusedGitPath reports whether a confined change to p (a create, a
// write, a truncate, a mode change, a rename or link of either name) is
// refused while .git is protected: p is in a .git (it has a .git
// component anywhere, paths.HasGitComponent: whether or not that .git
// existed when the sandbox was made and however deep), or its last
// component is a GitDirName. Removals are not judged by it: a removal
// plants nothing, and a .git the sandbox protects is a mount point that
// cannot be removed anyway.
func RefusedGitPath(p string) bool {
	p = strings.TrimRight(p, "/")
	return paths.HasGitComponent(p) || GitDirName(p[strings.LastIndexByte(p, '/')+1:])
}

// GitDirPart reports whether name, one path component, is one of the
// entries that, beside an existing HEAD, complete a git directory:
// "objects" and "refs" (git's is_git_directory), and "commondir", through
// which it looks for them. A new one is refused in a directory that holds
// a HEAD (CompletesGitDir): a HEAD already there — a fixture, a leftover —
// is no repository until a command adds them.
func GitDirPart(name string) bool {
	switch strings.TrimRight(name, "/") {
	case "objects", "refs", "commondir":
		return true
	}
	return false
}

// CompletesGitDir reports whether making name in a directory is refused
// while .git is protected: name is a GitDirPart and the directory has an
// entry named HEAD (hasHEAD says so: the caller looks, in the directory
// it resolved, without following a link).
func CompletesGitDir(name string, hasHEAD func() bool) bool {
	return GitDirPart(name) && hasHEAD()
}
