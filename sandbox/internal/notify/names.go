package notify

import "strings"

// ProtectedName reports whether name, one path component (trailing
// slashes allowed), is a name no confined process may create: ".git".
//
// Why: git runs code named in a repository's own files — hooks, and
// config keys such as core.fsmonitor (run by every `git status`, which
// most shell prompts run), core.hooksPath, core.sshCommand, filters and
// aliases — with all of the user's rights, outside the sandbox. A .git a
// command made (a directory, a file holding "gitdir: ...", a symlink) is
// a repository the user's next git command in that directory would use.
// Existing .git entries are bound read-only in the command's mount
// namespace (the sandbox's gitguard_linux.go); this name rule covers the
// new ones.
//
// Case is ignored: on a case-insensitive directory (ext4 casefold,
// a mounted FAT or NTFS tree) ".GIT" is the same entry, and refusing it
// elsewhere costs nothing. It is the one decision of the name, used by
// change capture (capture_emulate_linux.go) and, through
// sandbox.ProtectedName, by the in-process file tools.
func ProtectedName(name string) bool {
	return strings.EqualFold(strings.TrimRight(name, "/"), ".git")
}
