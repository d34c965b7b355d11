package notify

import (
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// skeletonPath names a directory of the sandbox's root skeleton that
// change capture opened in a command's root (fdPath fails for it: the
// host has another directory at that path, or none). The kernel's name
// for it is its path from the command's root, and the skeleton mirrors
// the host: each of its directories is at the path of the granted tree
// it leads to. Never beneath a read-write root (those are bound trees,
// not the skeleton's), so the capturer refuses changes there as Landlock
// would, and allows the devices it lets a shell write to.
func (c *Capture) skeletonPath(fd int) (string, bool) {
	var st unix.Stat_t
	if c.rootDev == 0 || unix.Fstat(fd, &st) != nil || st.Dev != c.rootDev || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", false
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "", false
	}
	return p, true
}
