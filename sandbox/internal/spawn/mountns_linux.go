package spawn

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Read-only mounts: what stops chmod, chown and utimensat outside the
// writable roots (Landlock has no right for file metadata). The mechanism
// is in spawn_linux.c (la_mount_setup); this file decides where it runs
// and which roots stay writable.
//
// Where the namespace is made:
//   - MountThread (root, no per-namespace pid_max to write): each spawner
//     thread unshares CLONE_NEWNS once, before it loads its seccomp
//     program, and every child it vforks is born in that namespace — no
//     namespace is copied or torn down per command;
//   - MountChild (unprivileged users, in the user namespace the child
//     creates anyway; root when the child must first write its PID
//     namespace's pid_max through a writable /proc): the clone gets
//     CLONE_NEWNS and the child runs la_mount_setup before it confines
//     itself;
//   - MountNone: BestEffort without the kernel support (Enforcement.Missing
//     says so), or a read-write root that is / itself (nothing outside
//     the writable roots is left to protect).
type MountMode int

const (
	MountNone   MountMode = iota // no private mount namespace
	MountThread                  // one per spawner thread (ThreadProgram.Mounts)
	MountChild                   // one per command (Request.NewNS)
)

// NewMounts makes the sandbox's mounts from its canonical read-write roots
// (the same list the Landlock ruleset grants read-write): what
// la_mount_setup attaches (it drops a root beneath another), each with
// the identity its walk must find, recorded now. whole reports a root
// that is / itself: then nothing is left to make read-only, and m is nil.
func NewMounts(rw []string) (m *Mounts, whole bool, err error) {
	var roots []mountRoot
	for _, p := range rw {
		if p == "/" {
			return nil, true, nil
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return nil, false, fmt.Errorf("sandbox: read-write root %s: %w", p, err)
		}
		roots = append(roots, mountRoot{path: p, dev: st.Dev, ino: st.Ino})
	}
	m, err = newMounts(roots)
	return m, false, err
}

// pidfdGetMntNamespace is PIDFD_GET_MNT_NAMESPACE, _IO(0xFF, 3) (Linux
// 6.11): a namespace fd of the pidfd's process.
const pidfdGetMntNamespace = 0xFF03

// HoldMountNS takes a reference to the mount namespace of a command's
// first process (MountChild), or returns -1. The last reference to a mount
// namespace tears it down, and that waits for an RCU grace period: ~0.1
// ms, but one to two milliseconds at the 90th percentile on a loaded
// machine. Held here, it is not the command's exit that drops it but
// ReleaseMountNS, off the path of Wait. Only a cost matter: without it the
// namespace simply dies with the tree.
func HoldMountNS(pidfd int) int {
	fd, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(pidfd), pidfdGetMntNamespace, 0)
	if e != 0 {
		return -1
	}
	unix.CloseOnExec(int(fd))
	return int(fd)
}

// ReleaseMountNS drops the reference HoldMountNS took, in the background.
func ReleaseMountNS(fd int) {
	if fd >= 0 {
		go unix.Close(fd)
	}
}
