package checkpoint

import (
	"path/filepath"

	"github.com/lite-agent/lite-agent/internal/paths"

	"golang.org/x/sys/unix"
)

// plainName is relPath of p, and whether p is a symlink, when no
// directory on the way to p is a symlink — the common case, and always
// so for the canonical paths change capture gives: one openat2 of the
// parent refusing symlinks and one fstatat in it, where relPath stats
// every component and the workspace's Root walks them again. ok false:
// a symlink on the way, a parent missing, or a path relPath refuses;
// the caller then asks relPath.
func plainName(workspace, p string) (rel string, link, ok bool) {
	if filepath.IsAbs(p) {
		r, within := paths.Rel(workspace, p)
		if !within {
			return "", false, false
		}
		rel = r
	} else {
		rel = filepath.Clean(p)
	}
	if rel == "." || !filepath.IsLocal(rel) {
		return "", false, false
	}
	dir, base := filepath.Split(filepath.Join(workspace, rel))
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return "", false, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	link = unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
	return filepath.ToSlash(rel), link, true
}

// plainRel is relPath of p when no directory on the way to p is a
// symlink: one openat2 of the parent refusing symlinks, where relPath
// stats every component from the root. ok false: the caller asks
// relPath.
func plainRel(workspace, p string) (rel string, ok bool) {
	if filepath.IsAbs(p) {
		r, within := paths.Rel(workspace, p)
		if !within {
			return "", false
		}
		rel = r
	} else {
		rel = filepath.Clean(p)
	}
	if rel == "." || !filepath.IsLocal(rel) {
		return "", false
	}
	dir := filepath.Dir(rel)
	if dir == "." {
		return filepath.ToSlash(rel), true // in the workspace itself
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, filepath.Join(workspace, dir), &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return "", false
	}
	unix.Close(fd)
	return filepath.ToSlash(rel), true
}
