package notify

import (
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Calls the process makes itself: its own temporary directories.
//
// Emulating a call (capture_emulate_linux.go) is what keeps a captured
// change from landing somewhere the supervisor did not look: the
// process's own call would resolve its path a second time, from memory
// and a working directory another thread can change. That matters only
// where the process's own call could change something the capture must
// see or refuse. In a sandbox made for it (CaptureOptions.OwnRoot), the
// process's own Landlock domain can write in a few places only:
//
//   - the sandbox's temporary directories (OwnRoot, the parent of every
//     command's TMPDIR), made empty for the sandbox;
//   - with OwnTmp, the sandbox's private /tmp, a tmpfs mounted only in
//     its namespaces (without: a read-write root is mounted beneath it,
//     which a rule on the tmpfs would grant too, so the sandbox leaves
//     the tmpfs read-only to the process; its ownwrites_linux.go);
//   - the writable devices (/dev/null and the like) and its ptys.
//
// Every other read-write root — the workspace, a toolchain's cache, a
// --allow-write directory — is read-only to the process itself, and
// changes there only through the supervisor, which records them. None of
// the own places is recorded, nor under the .git rule (private_linux.go).
// So a captured call whose paths all resolve to an own place is answered
// CONTINUE: if another thread redirects it between our look and the
// kernel's, the call lands either in an own place again or somewhere
// Landlock refuses it (EACCES, EXDEV) — never an unrecorded change. A
// test suite that creates and removes thousands of files in its
// temporary directory then pays a notification per call, not an
// emulated call.
//
// Two things keep that argument whole:
//
//  1. Nothing crosses the boundary of an own directory by name: every
//     rename, exchange and hard link between an own directory and any
//     other fails with EXDEV, as between two file systems (which, in the
//     sandbox's own mount namespace, they are anyway: each root is a
//     mount of its own), and mv and cp copy instead (crossesOwn). The
//     one exception is the first name of an unnamed O_TMPFILE file,
//     judged on our copy of its descriptor. So an inode never has names
//     both in an own place and elsewhere (a write through the own name
//     would change the other's bytes), and no file opened in an own
//     place becomes a workspace file under a descriptor the process
//     holds. The rule looks only at where the two directories lie
//     (descriptors held since they were resolved), never at the entry
//     they name: the process's own calls there go on while we decide,
//     so an own place's entry may be swapped under any look by name
//     (a symbolic link's text, a link count, a type). The calls still
//     emulated there act on what they pinned: chmod and truncate on the
//     inode they open without following a link (swapped in meanwhile,
//     it can only be one made in an own place: nothing else has a name
//     there), a rename or link within the own places on names that stay
//     there.
//  2. Only calls whose every effect Landlock governs are let through:
//     open, creat, unlink, rmdir, mkdir, mknod and symlink. chmod (which
//     Landlock does not govern), truncate by path, rename, link and bind
//     (which carry the rules above) are always emulated. The sandbox
//     sets OwnRoot only with Landlock ABI 3 or later, where truncation
//     (O_TRUNC) is governed too.
//
// Most such calls name an absolute path beneath OwnRoot or /tmp: ownFast
// and ownFastTmp recognise them from a descriptor of OwnRoot or of the
// command's /tmp without the full resolution through the process's root
// (resolve). Anything else — a relative path, a symbolic link on the way
// — is resolved in full first, and let through when it lands in an own
// place (ownPlace). Neither looks for a set-id file (ownSetID): none can
// be in an own place — the process cannot set a set-id bit (seccomp
// refuses the modes; chmod is always emulated), the sandbox made both
// places empty, and the tmpfs is nosuid.

// openOwnRoot prepares the own places of a capture (CaptureOptions.OwnRoot).
func (c *Capture) openOwnRoot(root string) {
	if root == "" || !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return
	}
	c.ownRoot = root
}

// ownDir reports whether t's name lies in an own directory: beneath
// OwnRoot, or on the private /tmp with OwnTmp.
func (c *Capture) ownDir(t *target) bool {
	if c.ownRoot == "" {
		return false
	}
	if c.onTmp(t) {
		return c.ownTmp // its paths are not the host's: never beneath OwnRoot
	}
	if t.path == "" || t.path == c.ownRoot {
		return false
	}
	return paths.WithinClean(t.path, c.ownRoot)
}

// ownPlace reports whether a call on t changes only an own place: t's
// name in an own directory, or t a writable device or one of the
// sandbox's ptys.
func (c *Capture) ownPlace(t *target) bool {
	if c.ownRoot == "" {
		return false
	}
	return c.ownDir(t) || c.devices[t.path] || c.onPty(t)
}

// ownFast reports whether the absolute path p names an entry beneath
// OwnRoot when looked up from there with no symbolic link, mount or ".."
// on the way (follow: a final symbolic link would be followed, so one
// found there sends the call to the full resolution). The process's own
// call then resolves p to the same entry unless something changes
// meanwhile; what changes it is the race Landlock bounds (see the top of
// this file).
func (c *Capture) ownFast(p string, follow bool) bool {
	if c.ownRoot == "" || len(p) <= len(c.ownRoot)+1 || filepath.Clean(p) != p {
		return false
	}
	rest, ok := paths.Rel(c.ownRoot, p)
	if !ok || rest == "." {
		return false
	}
	if c.ownFD < 0 {
		fd, err := unix.Open(c.ownRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			c.ownRoot = "" // gone: nothing is let through any more
			return false
		}
		c.ownFD = fd
	}
	return lookedUpBeneath(c.ownFD, rest, follow)
}

// ownFastTmp is ownFast for the private /tmp when it is an own place
// (OwnTmp): an absolute, clean p beneath /tmp looked up from the
// command's /tmp itself — a descriptor of the tmpfs's root in the
// command's mount namespace, taken once from thread tid's root (the
// tree cannot change its root or its mounts) — staying on the tmpfs.
// A grant mounted beneath /tmp is another mount: its paths go to the
// full resolution.
func (c *Capture) ownFastTmp(w *credWorker, n notifier, tid int, p string, follow bool) bool {
	const tmp = "/tmp/"
	if c.ownRoot == "" || !c.ownTmp || c.tmpDev == 0 || c.tmpFD == -2 || len(p) <= len(tmp) || p[:len(tmp)] != tmp || filepath.Clean(p) != p {
		return false
	}
	if c.tmpFD < 0 {
		fd := -1
		var errno unix.Errno
		if !w.do(func() { fd, errno = openChildPathAt(tid, c.mountNS, atFDCWD, "/tmp", true, n.confirm) }) || errno != 0 {
			return false // the full resolution says what the thread meets
		}
		var st unix.Statx_t
		if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_INO, &st) != nil || unix.Mkdev(st.Dev_major, st.Dev_minor) != c.tmpDev ||
			st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 || st.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
			unix.Close(fd)
			c.tmpFD = -2 // not the tmpfs's root: never again
			return false
		}
		c.tmpFD = fd
	}
	return lookedUpBeneath(c.tmpFD, p[len(tmp):], follow)
}

// ownQuick reports whether p is an own place by ownFast or ownFastTmp.
func (c *Capture) ownQuick(w *credWorker, n notifier, tid int, p string, follow bool) bool {
	return c.ownFast(p, follow) || c.ownFastTmp(w, n, tid, p, follow)
}

// lookedUpBeneath reports whether rest, a clean relative path, names an
// entry beneath the directory root when looked up from it with no
// symbolic link, mount crossing or ".." on the way, and (follow) no
// symbolic link as its last component.
func lookedUpBeneath(root int, rest string, follow bool) bool {
	dir, name := filepath.Split(rest)
	dfd := root
	if dir != "" {
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV}
		fd, err := unix.Openat2(root, dir, &how)
		if err != nil {
			return false
		}
		defer unix.Close(fd)
		dfd = fd
	}
	if !follow {
		return true
	}
	var st unix.Stat_t
	err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return err == unix.ENOENT
	}
	return st.Mode&unix.S_IFMT != unix.S_IFLNK
}

// crossesOwn is rule 1 at the top of this file for a rename or link from
// o to t (exchange or not): 0, or EXDEV when one directory is an own one
// and the other is not. It decides on o's and t's directories alone,
// which the resolution holds open; an unnamed file linked by descriptor
// (o.dir < 0) is judged on our copy of the descriptor, whose link count
// only a captured linkat, answered one at a time, can raise.
func (c *Capture) crossesOwn(o, t *target, link bool) unix.Errno {
	if c.ownRoot == "" || c.ownDir(o) == c.ownDir(t) {
		return 0
	}
	if link && o.dir < 0 && o.fd >= 0 {
		var st unix.Stat_t
		if unix.Fstat(o.fd, &st) == nil && st.Nlink == 0 {
			return 0 // an unnamed file's first name
		}
	}
	return c.refused(RuleTempBoundary, t, unix.EXDEV)
}

// ownSetID reports whether an open with flags would write an existing
// set-id file at t, which the emulated open refuses (rule 1 keeps such
// files out of the own places; this keeps the refusal if one is there).
func (c *Capture) ownSetID(t *target, flags int) bool {
	if flags&unix.O_ACCMODE == unix.O_RDONLY && flags&unix.O_TRUNC == 0 {
		return false
	}
	st, err := t.firstStat()
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0
}

// tmpfile answers open(2) with O_TMPFILE in a sandbox with own places:
// in one, the process makes the unnamed file itself; elsewhere its
// domain cannot (the directory is read-only to it), so the file is made
// here, in the directory p names as the process resolves it, with its
// credentials and umask, and installed in the process. Nothing is
// recorded: the file has no name until linkat gives it one, which is
// captured (twoNames).
func (c *Capture) tmpfile(w *credWorker, n notifier, tid int, dirfd int32, p string, flags int, mode uint32) (int64, unix.Errno, bool, bool) {
	t, e := c.resolve(w, n, tid, dirfd, p, true, takeFD(tid, n))
	defer t.close()
	if e != 0 {
		return c.failed(e)
	}
	if t.dir < 0 {
		return 0, unix.ENOTDIR, false, false // a descriptor's file is no directory to make one in
	}
	var dfd int
	err := errNotRun // unless the call below runs
	w.do(func() {
		dfd, err = unix.Openat(t.dir, t.name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if unix.Fstat(dfd, &st) != nil {
		return 0, unix.EPERM, false, false
	}
	onTmp := c.tmpDev != 0 && st.Dev == c.tmpDev
	if onTmp && c.ownTmp || !onTmp && t.path != "" && paths.WithinClean(t.path, c.ownRoot) {
		return 0, 0, true, false // an own directory (or the root of one)
	}
	inRoot := onTmp // the private /tmp, read-write as a root (Capture.writable)
	for _, r := range c.roots {
		inRoot = inRoot || t.path != "" && paths.WithinClean(t.path, r)
	}
	if !inRoot {
		return 0, c.refused(RuleWrite, &t, unix.EACCES), false, false // what Landlock answers
	}
	if e := c.refusesGit(&t); e != 0 {
		return 0, e, false, false
	}
	cloexec := flags&unix.O_CLOEXEC != 0
	oflags := flags&(openFlags|unix.O_TMPFILE) | unix.O_CLOEXEC | unix.O_NOCTTY // O_CREAT too: EINVAL, as for the process
	umask := c.umaskOf(tid)
	var fd int
	err = errNotRun
	w.do(func() {
		unix.Umask(umask)
		fd, err = unix.Openat(dfd, ".", oflags, mode&0o7777)
	})
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	defer unix.Close(fd)
	n.sendFD(fd, cloexec)
	return 0, 0, false, true
}
