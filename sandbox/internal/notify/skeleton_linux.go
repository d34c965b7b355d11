package notify

import (
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// skeletonPath names a directory of the sandbox's root skeleton that
// change capture opened in a command's root (fdPath fails for it: the
// host has another directory at that path, or none). The kernel's name
// for it is its path from the command's root, and the skeleton mirrors
// the host: each of its directories is at the path of the granted tree
// it leads to. Never beneath a read-write root (those are bound trees,
// not the skeleton's), so the capturer refuses changes there as Landlock
// would, and allows the devices it lets a shell write to.
func (c *Capture) skeletonPath(fd int, st *unix.Stat_t) (string, bool) {
	if c.rootDev == 0 || st.Dev != c.rootDev || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", false
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "", false
	}
	return p, true
}

// tmpPath names a directory of the sandbox's private /tmp that change
// capture opened in a command's root (sandbox/internal/spawn's
// tmpfs_linux.go): mounted nowhere in the host's tree, the kernel names
// it by its path from the command's root, which is /tmp, /dev/shm,
// /var/tmp or /run and beneath (the tmpfs's directories mounted there).
// What it names there is the private /tmp's own (a grant beneath /tmp is
// another mount, with the host's path, which fdPath gives): never beneath
// a read-write root, and writable as one (writable, onTmp).
func (c *Capture) tmpPath(fd int, st *unix.Stat_t) (string, bool) {
	if c.tmpDev == 0 || st.Dev != c.tmpDev || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", false
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || filepath.Clean(p) != p || !(paths.Within(p, "/tmp") || paths.Within(p, "/dev/shm") || paths.Within(p, "/var/tmp") || paths.Within(p, "/run")) {
		return "", false
	}
	return p, true
}

// onTmp reports whether t's directory is on the sandbox's private /tmp.
func (c *Capture) onTmp(t *target) bool {
	return c.tmpDev != 0 && t.dir >= 0 && t.dirDev == c.tmpDev
}

// mountRoot reports whether t's name is a mount point in the command's
// namespace (a lookup through the command's mounts lands on the root of
// what is mounted there). The kernel refuses to move or remove one in
// the namespace it is mounted in (EBUSY), but change capture makes those
// calls in the supervisor's namespace, where it is not: without this the
// command could move a grant's mount point in its private /tmp away and
// put a directory of its own at the grant's path.
func mountRoot(t *target) bool {
	if t.dir < 0 {
		return false
	}
	var sx unix.Statx_t
	if unix.Statx(t.dir, t.base(), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO, &sx) != nil {
		return false
	}
	return sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// ptyPath names the root of the sandbox's devpts instance that change
// capture opened in a command's root: /dev/pts there (a devpts has no
// other directory). The instance is the sandbox's own, mounted nowhere in
// the host's tree, so fdPath cannot name it; its entries are the ptys
// the policy grants (ptmx and this sandbox's own /dev/pts/N), opened for
// the command by the supervisor with the command's credentials and
// O_NOCTTY (open), as the command's own open would have made them.
func (c *Capture) ptyPath(st *unix.Stat_t) (string, bool) {
	if c.ptyDev == 0 || st.Dev != c.ptyDev || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", false
	}
	return "/dev/pts", true
}

// onPty reports whether t is a character device in the sandbox's devpts
// instance.
func (c *Capture) onPty(t *target) bool {
	if c.ptyDev == 0 || t.dir < 0 || t.dirDev != c.ptyDev {
		return false
	}
	ts, err := t.stat()
	return err == nil && ts.Mode&unix.S_IFMT == unix.S_IFCHR
}
