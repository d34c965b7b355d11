package checkpoint

import (
	"path/filepath"

	"github.com/lite-agent/lite-agent/internal/paths"

	"golang.org/x/sys/unix"
)

// plainLook is relPath of p, and what an lstat of p says (absent, or
// there and whether a directory or a symlink), when no directory on the
// way to p is a symlink — the common case, and always so for the
// canonical paths change capture gives: one openat2 of the parent
// refusing symlinks and one fstatat in it, where relPath stats every
// component and the workspace's Root walks them again (RecordSnapshot's
// capture then takes look instead of its own lstat). ok false: a symlink
// on the way, a parent missing, or a path relPath refuses; the caller
// then asks relPath.
func plainLook(workspace, p string) (rel string, look lookHint, ok bool) {
	if filepath.IsAbs(p) {
		r, within := paths.Rel(workspace, p)
		if !within {
			return "", look, false
		}
		rel = r
	} else {
		rel = filepath.Clean(p)
	}
	if rel == "." || !filepath.IsLocal(rel) {
		return "", look, false
	}
	dir, base := filepath.Split(filepath.Join(workspace, rel))
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return "", look, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	switch err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		look = lookHint{rel: filepath.ToSlash(rel), seen: true, isDir: st.Mode&unix.S_IFMT == unix.S_IFDIR,
			link: st.Mode&unix.S_IFMT == unix.S_IFLNK}
	case err == unix.ENOENT || err == unix.ENOTDIR:
		look = lookHint{rel: filepath.ToSlash(rel), seen: true, absent: true}
	}
	return filepath.ToSlash(rel), look, true
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
