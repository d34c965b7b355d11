// Package witness keeps the mark "unchanged since lite-agent last
// checked it" on a per-workspace toolchain cache, so that a session's
// start can skip checking a cache that no sandbox could have changed
// since.
//
// The check it saves (internal/machine's VerifyWorkspaceCache: every
// extracted Go module and downloaded zip stat'ed, each one whose stat
// moved hashed again) is what keeps a module source edited by one
// session from being compiled by the next. Its cost is the stat of every
// file, at every session start. The witness replaces that walk by a
// promise the sandbox keeps: no sandboxed process can change anything
// beneath the cache without the witness being gone first.
//
// # The protocol
//
// A cache's witness is a file, NAME.unchanged, in the cache's parent
// directory (dir), which no sandbox is granted. It holds the checker's key.
// One lock serves every cache of the user: flock(2) on BaseDir, the
// directory all per-workspace caches live beneath.
//
//   - Every sandbox, whatever its policy, holds a shared lock on BaseDir
//     from its start until none of its processes is left (Enter, Live's
//     Release). A descriptor that can write a cache may travel from one
//     sandbox's process to another's (SCM_RIGHTS over a unix socket both
//     reach): while any sandbox lives, a cache may be written through a
//     descriptor no call of its names.
//   - A sandbox whose processes can change a checked cache removes the
//     cache's witness (Withdraw) before the first change any of them can
//     make: at its start when they write the cache themselves; otherwise
//     (change capture, the cache read-only to the process's own Landlock
//     domain) before its supervisor makes the first change beneath the
//     cache for them.
//   - A checker — a session's start — skips the check when the witness
//     holds its key. Otherwise it takes an exclusive lock on BaseDir
//     without waiting, runs the full check, and leaves the witness only
//     when the check was clean (every digest settled, no file with a
//     second name) and it held the lock from before the check until the
//     witness was left: no sandbox was alive then, so no process could
//     hold a descriptor into the cache or change it meanwhile (a sandbox
//     starting then waits for the lock in Enter). Without the lock it
//     checks in full and leaves nothing.
//
// So a witness is left only when no sandboxed process exists, and
// removed before any sandboxed process can change its cache: a witness
// that stands saw every change, as long as every sandbox follows the
// protocol — a lite-agent older than this package does not
// (docs/toolchains.md says what to do after an upgrade while an older
// session runs) — and ends its processes when it ends. A sandbox that
// cannot (no cgroup and no PID namespace to find the whole tree: a
// process that calls setsid outlives it) marks the user's caches
// outlived (MarkOutlived): no witness is left after that until every
// cache has been removed (`lite-agent gc --caches`, ClearOutlived), when
// any descriptor such a process holds leads to a file no cache has.
//
// The key is everything besides the cache that the check's outcome
// depends on: the workspace's go.sum or Cargo.lock (a crate no lockfile
// named is kept unchecked; once the lockfile names it, a full check would
// hold it to that line) and the version of the check itself. A key that
// differs from the witness's means a full check.
//
// A hard link is a second name through which a file changes without any
// call naming the cache: a file of the cache with a link elsewhere (the
// workspace, the build cache) could be written later through that name
// alone. The check therefore leaves no witness while any checked file
// has more than one link (go and cargo make none), and the next session
// checks again in full: its stat digest sees the write.
//
// Whoever can write dir (a read-write grant above the cache) can leave
// a witness of their own, as they could already write the check's record
// of digests beside it: granting that is trusting the agent with the
// cache.
package witness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Suffix ends a witness's name: NAME.unchanged in the cache's parent.
const Suffix = ".unchanged"

// outlivedName, in BaseDir, says a sandbox's processes may have outlived
// it (MarkOutlived).
const outlivedName = "sandboxes-outlived"

// Path is the witness of the cache named name kept in dir.
func Path(dir, name string) string { return filepath.Join(dir, name+Suffix) }

// BaseDir is $XDG_CACHE_HOME/lite-agent (or ~/.cache/lite-agent): the
// directory every per-workspace cache lives beneath, and the lock.
func BaseDir() (string, error) {
	d := os.Getenv("XDG_CACHE_HOME")
	if d == "" || !filepath.IsAbs(d) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the cache directory: %w (set XDG_CACHE_HOME)", err)
		}
		d = filepath.Join(home, ".cache")
	}
	return filepath.Join(d, "lite-agent"), nil
}

// Live is a sandbox's shared lock on BaseDir.
type Live struct{ fd int }

// Enter takes a sandbox's shared lock on BaseDir (making it if need be),
// waiting for a check that holds it exclusively. The sandbox releases it
// when none of its processes is left.
func Enter() (*Live, error) {
	base, err := BaseDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, err
	}
	fd, err := openDir(base)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: base, Err: err}
	}
	if err := flock(fd, unix.LOCK_SH); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "flock", Path: base, Err: err}
	}
	return &Live{fd: fd}, nil
}

// Release ends the hold. Safe on nil and more than once.
func (l *Live) Release() {
	if l == nil || l.fd < 0 {
		return
	}
	unix.Close(l.fd) // the lock goes with the descriptor
	l.fd = -1
}

// Withdraw removes the witness of the cache named name kept in dir. The
// caller holds Enter's lock, and calls it before any of its processes
// can change the cache.
func Withdraw(dir, name string) error {
	if err := os.Remove(Path(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// MarkOutlived records that a sandbox's processes may outlive it: no
// witness is left from now on, until ClearOutlived.
func MarkOutlived() error {
	base, err := BaseDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(base, outlivedName), nil, 0o600)
}

// ClearOutlived takes MarkOutlived's mark away: for when every cache has
// been removed, so that what an outliving process holds leads nowhere a
// check looks.
func ClearOutlived() {
	if base, err := BaseDir(); err == nil {
		os.Remove(filepath.Join(base, outlivedName))
	}
}

// Check runs verify, the full check of the cache whose witness name is
// kept in dir, unless the witness says nothing changed since it was left
// by a check with the same key. verify returns its notes and whether the
// cache is clean: every digest it recorded settled and no file it saw
// with a second name. Check leaves the witness, holding key, after a
// clean check made while no sandbox lived; skipped reports that verify
// did not run.
func Check(dir, name string, key []byte, verify func() (notes []string, clean bool)) (notes []string, skipped bool) {
	if holds(dir, name, key) {
		return nil, true
	}
	base, err := BaseDir()
	if err == nil {
		err = os.MkdirAll(base, 0o700)
	}
	if err != nil {
		notes, _ = verify()
		return notes, false
	}
	lock, err := openDir(base)
	if err != nil {
		notes, _ = verify()
		return notes, false
	}
	defer unix.Close(lock) // releases the lock, after the witness is left
	if flock(lock, unix.LOCK_EX|unix.LOCK_NB) != nil {
		notes, _ = verify() // a sandbox lives (or the lock failed): check, leave nothing
		return notes, false
	}
	notes, clean := verify()
	if clean && !outlived(base) {
		leave(dir, name, key)
	}
	return notes, false
}

// outlived reports whether MarkOutlived's mark is there (or cannot be
// looked for).
func outlived(base string) bool {
	_, err := os.Lstat(filepath.Join(base, outlivedName))
	return !errors.Is(err, os.ErrNotExist)
}

// holds reports whether the witness is there, a regular file holding key.
func holds(dir, name string, key []byte) bool {
	fd, err := unix.Open(Path(dir, name), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), name+Suffix)
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != int64(len(key)) {
		return false
	}
	got := make([]byte, len(key)+1)
	n, _ := io.ReadFull(f, got)
	return n == len(key) && bytes.Equal(got[:n], key)
}

// leave makes the witness, holding key. A failure leaves none, or one
// whose content is not key: the next session checks in full.
func leave(dir, name string, key []byte) {
	p := Path(dir, name)
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), name+Suffix)
	if _, err := f.Write(key); err != nil {
		os.Remove(p)
	}
	f.Close()
}

func openDir(dir string) (int, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}
