package notify

import (
	"errors"
	"io/fs"
	"syscall"
)

// ErrTooManyEntries is returned by HardLinkNames when the tree is larger
// than its bound: the caller cannot know every name, and must refuse the
// change (a rewind could not bring the bytes back under the names it did
// not find).
var ErrTooManyEntries = errors.New("sandbox: too many files to find every name of a hard-linked file")

// hardLinkWalkLimit bounds HardLinkNames: directory entries looked at
// (TestHooks.HardLinkWalkLimit replaces it in tests).
const hardLinkWalkLimit = 200_000

// HardLinkNames returns every name in fsys (a workspace) of the inode that
// name leads to (symlinks followed, as a write follows them), when it is a
// regular file with more than one link; nil when it is absent, not a
// regular file, or has one name. It is the one implementation of hard
// link rule (c) (capture_linux.go), used by the change capture and by the
// in-process file tools. The walk stays on the file system of name and
// stops once every link is found; entries it cannot read are skipped.
func HardLinkNames(fsys fs.FS, name string) ([]string, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() || st.Nlink < 2 {
		return nil, nil
	}
	limit := hardLinkWalkLimit
	if TestHooks.HardLinkWalkLimit != 0 {
		limit = TestHooks.HardLinkWalkLimit
	}
	var names []string
	seen := 0
	done := errors.New("all found")
	err = fs.WalkDir(fsys, ".", func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: nothing to find there
		}
		if seen++; seen > limit {
			return ErrTooManyEntries
		}
		if !d.Type().IsRegular() && !d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		qs, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if qs.Dev != st.Dev {
			if d.IsDir() {
				return fs.SkipDir // another file system: no name there
			}
			return nil
		}
		if !d.IsDir() && qs.Ino == st.Ino {
			names = append(names, q)
			if uint64(len(names)) >= uint64(st.Nlink) {
				return done
			}
		}
		return nil
	})
	if err != nil && err != done {
		return nil, err
	}
	return names, nil
}
