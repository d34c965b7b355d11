package sandbox

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Read-only mounts: what stops chmod, chown and utimensat outside the
// writable roots (Landlock has no right for file metadata). The mechanism
// is in spawn_linux.c (la_mount_setup); this file decides where it runs
// and which roots stay writable.
//
// Where the namespace is made:
//   - mountThread (root, no per-namespace pid_max to write): each spawner
//     thread unshares CLONE_NEWNS once, before it loads its seccomp
//     program, and every child it vforks is born in that namespace — no
//     namespace is copied or torn down per command;
//   - mountChild (unprivileged users, in the user namespace the child
//     creates anyway; root when the child must first write its PID
//     namespace's pid_max through a writable /proc): the clone gets
//     CLONE_NEWNS and the child runs la_mount_setup before it confines
//     itself;
//   - none: BestEffort without the kernel support (Enforcement.Missing
//     says so), or a read-write root that is / itself (nothing outside
//     the writable roots is left to protect).
type mountMode int

const (
	mountNone mountMode = iota
	mountThread
	mountChild
)

// mountNSProbe says whether this user can have the private read-only mount
// namespace: root directly (CAP_SYS_ADMIN), others in a user namespace.
var mountNSProbe = sync.OnceValue(func() error {
	h := host()
	if h.root {
		return probeMountNS(false, false, 0, 0, nil)
	}
	if h.userns != nil {
		return fmt.Errorf("no user namespace: %w", h.userns)
	}
	return probeMountNS(true, false, h.uid, h.gid, nil)
})

// mountRootsFor turns the canonical read-write roots (Sandbox.rwRoots, the
// same list the Landlock ruleset grants read-write) into what
// la_mount_setup attaches (which drops a root beneath another), each with
// the identity its walk must find. whole reports a root that is / itself:
// then nothing is left to make read-only.
func mountRootsFor(rw []string) (roots []mountRoot, whole bool, err error) {
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
	return roots, false, nil
}

// pidfdGetMntNamespace is PIDFD_GET_MNT_NAMESPACE, _IO(0xFF, 3) (Linux
// 6.11): a namespace fd of the pidfd's process.
const pidfdGetMntNamespace = 0xFF03

// holdMountNS takes a reference to the mount namespace of a command's
// first process (mountChild), or returns -1. The last reference to a mount
// namespace tears it down, and that waits for an RCU grace period: ~0.1
// ms, but one to two milliseconds at the 90th percentile on a loaded
// machine. Held here, it is not the command's exit that drops it but
// releaseMountNS, off the path of Wait. Only a cost matter: without it the
// namespace simply dies with the tree.
func holdMountNS(pidfd int) int {
	fd, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(pidfd), pidfdGetMntNamespace, 0)
	if e != 0 {
		return -1
	}
	unix.CloseOnExec(int(fd))
	return int(fd)
}

// releaseMountNS drops the reference holdMountNS took, in the background.
func releaseMountNS(fd int) {
	if fd >= 0 {
		go unix.Close(fd)
	}
}

// commandMountNS is the inode of the mount namespace a just-started
// command runs in when the sandbox made it one, else 0. The process is
// not reaped yet, so pid still names it.
func (s *Sandbox) commandMountNS(pid int) uint64 {
	if s.mountNS == mountNone {
		return 0
	}
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/ns/mnt", pid), &st) != nil {
		return 0
	}
	return st.Ino
}
