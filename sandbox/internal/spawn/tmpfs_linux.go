package spawn

/*
#include <stdlib.h>
#include "confine.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A /tmp of the sandbox's own (and a /dev/shm and a /var/tmp: directories
// of the same tmpfs, each mounted at its path; rootfs_linux.go's planTmp).
//
// Why: many programs write to /tmp whatever TMPDIR says (the JVM's
// java.io.tmpdir, which Maven's surefire keeps; some C and C++ tools;
// Python's tempfile with a cleared environment), and the root skeleton's
// /tmp is read-only: they fail. The host's /tmp cannot be granted (it
// holds every other program's files), so each Sandbox gets a tmpfs of its
// own there, made once at New (la_make_tmp, detached: mounted nowhere the
// host or another sandbox walks), cloned onto the root skeleton's /tmp in
// every namespace the sandbox makes. The commands of one sandbox share it,
// as they share its workspace; it is freed when the Sandbox is (Free
// closes the last reference once its commands' namespaces are gone), so
// nothing of it outlives the sandbox, even after a SIGKILL of the
// supervisor. Its size is bounded (size=, the sandbox's memory limit:
// tmpfs pages are memory, and charged to the writer's memory cgroup).
//
// The grants beneath /tmp (a test's workspace, the sandbox's own TMPDIR,
// which stays a directory of the host's bound at its own path) are bound
// onto mount points la_make_tmp makes in it: in every namespace of the
// sandbox they are mount points, which no command can move or remove
// (EBUSY; change capture, which makes such calls in the supervisor's
// namespace, answers the same for a mount root). A rename or hard link
// between it and any other tree is EXDEV: another superblock.
//
// Landlock: one rule, by fd, on the instance's root (a rule on the path
// /tmp would name the host's inode, which no access inside passes),
// read-write as the workspace. Rules are hierarchical, so the grants
// bound beneath it are reachable with its rights too; that grants
// nothing new: every mount of the namespace but the read-write roots is
// read-only, and reading them is granted already.

// makeTmp creates the detached private /tmp of at most size bytes holding
// entries (paths relative to /tmp, parents first).
func makeTmp(u User, size int64, entries []skelEntry) (int, error) {
	um := C.CString(fmt.Sprintf("%d %d 1", u.UID, u.UID))
	gm := C.CString(fmt.Sprintf("%d %d 1", u.GID, u.GID))
	sz := C.CString(strconv.FormatInt(size, 10))
	defer C.free(unsafe.Pointer(um))
	defer C.free(unsafe.Pointer(gm))
	defer C.free(unsafe.Pointer(sz))
	n := len(entries)
	ce := (*C.struct_la_skel_entry)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(C.struct_la_skel_entry{}))))
	defer C.free(unsafe.Pointer(ce))
	arr := unsafe.Slice(ce, n+1)
	for i, e := range entries {
		arr[i].path = C.CString(strings.TrimPrefix(e.path, "/"))
		defer C.free(unsafe.Pointer(arr[i].path))
		arr[i].kind = C.char(e.kind)
		if e.kind == skelLink {
			arr[i].target = C.CString(e.target)
			defer C.free(unsafe.Pointer(arr[i].target))
		}
	}
	fd := int(C.la_make_tmp(cbool(!u.Root), um, gm, sz, ce, C.int(n)))
	if fd < 0 {
		return -1, fmt.Errorf("making the private /tmp: %w", syscall.Errno(-fd))
	}
	return fd, nil
}

// setTmp hands c the private /tmp.
func (c *Mounts) setTmp(fd int) {
	c.own.tmp_fd = C.int(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		c.tmpDev = st.Dev
	}
}

// TmpDevice is the private /tmp's device, or 0 (notify.Options.TmpDev).
func (c *Mounts) TmpDevice() uint64 {
	if c == nil {
		return 0
	}
	return c.tmpDev
}

// addTmpRules grants the private tmpfs's directories (/tmp, /dev/shm,
// /var/tmp: tmpDirs) access (RW, or RO where the supervisor makes the
// process's changes: Mounts.AddRules), by fd. Each is mounted by itself, so
// Landlock's walk up from a file in /tmp leaves the tmpfs at that
// directory (the mount's root) for the skeleton: a rule on the tmpfs's
// own root would never be met.
func addTmpRules(rulesetFD int, handled uint64, tmp int, access uint64) error {
	for p, dir := range tmpDirs {
		fd, err := unix.Openat(tmp, dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT {
			continue // not made: the skeleton left that path as it is
		}
		if err != nil {
			return fmt.Errorf("the private %s: %w", p, err)
		}
		err = addFDRule(rulesetFD, handled, fd, Rule{p + " (the sandbox's private tmpfs)", access})
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}
