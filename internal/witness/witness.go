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
// The cache's parent directory (dir) holds the witness, a file named
// NAME.unchanged, and is itself the lock (flock(2) on a descriptor of
// the directory: it cannot be replaced by a file a writer does not hold,
// and a directory put in its place holds another cache). No sandbox is
// granted dir.
//
//   - A writer — a sandbox whose processes can change the cache — calls
//     Withdraw before the first change any of its processes can make: it
//     takes a shared lock on dir, then removes the witness, and holds the
//     lock until none of its processes is left (Hold.Release). A sandbox
//     whose processes write the cache themselves withdraws at its start;
//     one whose every change there is made by its supervisor (change
//     capture: the process's own Landlock domain cannot write the cache)
//     withdraws before the supervisor makes the first one. A descriptor
//     the supervisor opens for writing is handed to the process, which
//     can write through it at any later time: hence the lock is held for
//     the sandbox's life, not for the call.
//   - A checker — a session's start — takes an exclusive lock on dir
//     without waiting. Holding it, no writer is live (a live one holds the
//     shared lock) and none can start (Withdraw waits for the lock). Then a
//     witness there holding the checker's key means no change since it was
//     left: the check is skipped. Otherwise the full check runs, and the
//     witness is left, holding the key, only when the check says the cache
//     is clean (every digest settled, no file with a second name) — all
//     before the lock is released. Without the lock (a writer is live), the
//     full check runs and no witness is left.
//
// The key is everything besides the cache that the check's outcome
// depends on: the workspace's go.sum or Cargo.lock (a crate no lockfile
// named is kept unchecked; once the lockfile names it, a full check would
// hold it to that line) and the version of the check itself. A key that
// differs from the witness's means a full check.
//
// A writer that withdrew before a checker's lock keeps the checker from
// its lock until the writer's sandbox is gone; a writer arriving during a
// check waits for it; a writer after it withdraws the witness the check
// left. So a witness is never present while a change the check did not
// see is possible, as long as every writer follows the protocol: a
// lite-agent older than this package does not (docs/toolchains.md says
// what to do after an upgrade while an older session runs).
//
// A hard link is a second name through which a file changes without any
// call naming the cache: a file of the cache with a link elsewhere (the
// workspace) could be written later through that name alone. The check
// therefore leaves no witness while any checked file has more than one
// link (go and cargo make none), and the next session checks again in
// full, as before this package: its stat digest sees the write.
package witness

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Suffix ends a witness's name: NAME.unchanged in the cache's parent.
const Suffix = ".unchanged"

// Path is the witness of the cache named name kept in dir.
func Path(dir, name string) string { return filepath.Join(dir, name+Suffix) }

// Hold is a writer's shared lock on a witness's directory.
type Hold struct{ fd int }

// Withdraw makes the caller a writer of the cache whose witness name is
// kept in dir: it waits for any check running there to end, takes the
// shared lock, and removes the witness. The caller releases the hold when
// none of its processes can change the cache any more. A dir that does
// not exist holds no witness and needs no hold (nil, nil): a cache made
// there later is another directory than the one the caller's grants
// name.
func Withdraw(dir, name string) (*Hold, error) {
	fd, err := openDir(dir)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if err := flock(fd, unix.LOCK_SH); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "flock", Path: dir, Err: err}
	}
	if err := unix.Unlinkat(fd, name+Suffix, 0); err != nil && err != unix.ENOENT {
		unix.Close(fd)
		return nil, &os.PathError{Op: "remove", Path: Path(dir, name), Err: err}
	}
	return &Hold{fd: fd}, nil
}

// Release ends the hold. Safe on nil and more than once.
func (h *Hold) Release() {
	if h == nil || h.fd < 0 {
		return
	}
	unix.Close(h.fd) // the lock goes with the descriptor
	h.fd = -1
}

// Check runs verify, the full check of the cache whose witness name is
// kept in dir, unless the witness says nothing changed since it was left
// by a check with the same key. verify returns its notes and whether the
// cache is clean: every digest it recorded settled and no file it saw
// with a second name. Check leaves the witness, holding key, after a
// clean check made while no writer was live; skipped reports that verify
// did not run.
func Check(dir, name string, key []byte, verify func() (notes []string, clean bool)) (notes []string, skipped bool) {
	fd, err := openDir(dir)
	if err != nil {
		notes, _ = verify()
		return notes, false
	}
	defer unix.Close(fd) // releases the lock, after the witness is left
	if flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		notes, _ = verify() // a writer is live (or the lock failed): check, leave nothing
		return notes, false
	}
	if holds(fd, name, key) {
		return nil, true
	}
	notes, clean := verify()
	if clean {
		leave(fd, name, key)
	}
	return notes, false
}

// holds reports whether the witness is there, a regular file of ours
// holding key.
func holds(dirfd int, name string, key []byte) bool {
	fd, err := unix.Openat(dirfd, name+Suffix, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
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
func leave(dirfd int, name string, key []byte) {
	fd, err := unix.Openat(dirfd, name+Suffix, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), name+Suffix)
	if _, err := f.Write(key); err != nil {
		unix.Unlinkat(dirfd, name+Suffix, 0)
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
