package spawn

/*
#include <stdlib.h>
#include "confine.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Pseudo-terminals (script(1), Python's pty, node-pty, a test's openpty).
//
// The host's devpts is shared by every terminal of the machine: granted
// as is, /dev/pts would let a confined command open the user's other
// terminals of the same uid and read their keystrokes. So a command gets
// a devpts instance of its sandbox's own instead, mounted over the host's
// in its private mount namespace (la_attach_devpts): /dev/pts/N by path
// is then one of the sandbox's ptys, /dev/ptmx allocates in that
// instance (it opens the devpts mounted topmost beside it), and the
// host's ptys have no path at all.
//
// Landlock rules name inodes, and its walk skips a directory a mount
// covers: a rule on the path /dev/pts, opened by the supervisor, would
// name the host devpts root, which no access inside ever passes. The rule
// must be on the instance's own root. Hence one instance per Sandbox,
// made at New, detached (la_make_devpts: fsopen/fsmount), its rule added
// to the one ruleset there; every namespace the sandbox makes (a spawner
// thread's as root, each command's otherwise) mounts a clone of it. The
// commands of one sandbox share its ptys, as they share its workspace;
// two sandboxes never share one.
//
// Without a private mount namespace (BestEffort where the kernel or user
// has none) there is nowhere to cover the host's devpts: ptys are then
// off, and Enforcement's notes say so. Off is the safe side of a grant,
// so this never fails New.

// devptsProbe says whether a devpts instance made here can be mounted in
// another namespace (cloning a detached mount from elsewhere: Linux
// 6.15+), by doing exactly that once.
var devptsProbe probeOnce

func probeDevpts(u User) error {
	fd, err := makeDevpts(u)
	if err != nil {
		return err
	}
	own, _ := newMounts(nil)
	defer own.Free() // closes fd
	own.setDevpts(fd)
	return probeMountNS(!u.Root, false, u.UID, u.GID, own)
}

// makeDevpts creates u's detached devpts instance: directly as root,
// else in a throwaway user namespace (whose superblock keeps it).
func makeDevpts(u User) (int, error) {
	um := C.CString(fmt.Sprintf("%d %d 1", u.UID, u.UID))
	gm := C.CString(fmt.Sprintf("%d %d 1", u.GID, u.GID))
	defer C.free(unsafe.Pointer(um))
	defer C.free(unsafe.Pointer(gm))
	fd := int(C.la_make_devpts(cbool(!u.Root), um, gm))
	if fd < 0 {
		return -1, fmt.Errorf("making a devpts instance: %w", syscall.Errno(-fd))
	}
	return fd, nil
}

// AddDevpts gives m (the sandbox's mounts, nil with MountNone) a devpts
// instance of the sandbox's own, or says why ptys are off (off "" and
// !ok: the policy does not want them). ns is the sandbox's mount mode;
// wanted, whether its policy names the pseudo-terminal paths (and
// Landlock can grant them).
func (m *Mounts) AddDevpts(u User, ns MountMode, wanted bool) (ok bool, off string) {
	switch {
	case !wanted:
		return false, ""
	case ns == MountNone || m == nil:
		return false, "no private mount namespace to hide the host's devpts in"
	}
	if err := devptsProbe.do(func() error { return probeDevpts(u) }); err != nil {
		return false, "a devpts instance of the sandbox's own cannot be mounted here: " + err.Error()
	}
	fd, err := makeDevpts(u)
	if err != nil {
		return false, err.Error()
	}
	m.setDevpts(fd)
	return true, ""
}

// PtyDevice is the device of the sandbox's devpts instance, or 0
// (notify.Options.PtyDev: change capture opens its ptys for a command).
func (c *Mounts) PtyDevice() uint64 {
	var st syscall.Stat_t
	if fd := c.devpts(); fd < 0 || syscall.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Dev
}

// addPtyRules grants the sandbox's ptys: /dev/ptmx (the host's device
// node, which allocates in the instance mounted beside it) and, by its
// fd, the instance's root — the one rule that reaches /dev/pts/N.
func addPtyRules(rulesetFD int, handled uint64, devpts int) error {
	if err := addPathRule(rulesetFD, handled, Rule{"/dev/ptmx", llPty}); err != nil {
		return err
	}
	return addFDRule(rulesetFD, handled, devpts, Rule{"/dev/pts (the sandbox's devpts instance)", llPty})
}
