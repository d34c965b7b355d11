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

	"golang.org/x/sys/unix"
)

// Template is a sandbox's namespace template, for an unprivileged user's
// commands (MountChild): a process of its own (the holder,
// template_linux.c) asleep in a user, PID and mount namespace whose mount
// namespace la_mount_setup made once, exactly as it makes a command's.
// A Request with a Template starts its command inside it
// (la_spawn_in_template): the command's user namespace is nested in the
// template's (RLIMIT_NPROC still counts per command), its PID namespace is
// its own, and its mount namespace a copy of the template's with a procfs
// of its own PID namespace. What a command no longer pays: the copy of
// the host's whole mount table, making every mount read-only, the binds
// of the root skeleton (~40), pivot_root and the detached unmount of the
// host's tree, whose RCU grace period load stretches to milliseconds
// (bench/nsshare.c: 669-845 µs -> 232-315 µs median a command).
//
// What commands share through it is what a Sandbox's commands share
// anyway, and what root's commands share through their spawner thread's
// namespace (MountThread): the mounts, made once from the roots and .git
// entries as they were then, the sandbox's devpts, /tmp and root. Nothing
// else: a command cannot change the template (its copy is its own; it has
// no capability in the template's user namespace, nor in its own after
// la_confine, and seccomp refuses every mount call and setns), cannot see
// the holder (another PID namespace) or another command's processes (its
// own procfs, hidepid=ptraceable), and its processes die with its PID
// namespace as before.
type Template struct {
	t C.struct_la_template
}

// NewTemplate starts the holder of a template of m's namespace for u
// (never root: root's commands share their spawner thread's namespace).
func NewTemplate(m *Mounts, u User) (*Template, error) {
	if m == nil || u.Root {
		return nil, fmt.Errorf("sandbox: internal: a namespace template is for an unprivileged user's mounts")
	}
	um := C.CString(fmt.Sprintf("%d %d 1", u.UID, u.UID))
	gm := C.CString(fmt.Sprintf("%d %d 1", u.GID, u.GID))
	defer C.free(unsafe.Pointer(um))
	defer C.free(unsafe.Pointer(gm))
	// The C struct lives in C memory: the holder's bookkeeping must not
	// move with Go's stack or heap.
	t := (*C.struct_la_template)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_la_template{}))))
	var which C.int
	if rc := int(C.la_template_make(t, m.ptr(), C.int(m.len()), m.ownPtr(), um, gm, &which)); rc < 0 {
		C.free(unsafe.Pointer(t))
		return nil, &Error{Context: "namespace template", Step: stepName(C.LA_STEP_MOUNTNS) + m.describe(int(which)), Errno: syscall.Errno(-rc)}
	}
	tp := &Template{t: *t}
	C.free(unsafe.Pointer(t))
	return tp, nil
}

// Close ends the holder; commands already started keep their
// namespaces. It must not run while a Request naming t is being spawned.
func (t *Template) Close() {
	if t != nil {
		C.la_template_release(&t.t)
	}
}

// Alive reports whether the holder still runs: a process of the same
// user outside the sandbox can kill it (a pkill of lite-agent's
// processes), and a command cannot enter a namespace nobody holds.
func (t *Template) Alive() bool {
	if t == nil || t.t.pidfd < 0 {
		return false
	}
	// A pidfd polls readable once its process has exited.
	fds := []unix.PollFd{{Fd: int32(t.t.pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}

// Pid is the holder's process ID (for tests: what the holder keeps open).
func (t *Template) Pid() int { return int(t.t.pid) }

func (t *Template) pidfd() C.int {
	if t == nil {
		return -1
	}
	return t.t.pidfd
}
