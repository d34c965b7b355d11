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

// /proc of the sandbox's own: /proc/self/status, stat, maps, fd/,
// mountinfo... are what runtimes and tools read of themselves.
//
// Why a mount and not a rule: a Landlock rule names an inode, and a
// process's /proc/PID directory does not exist before the process (a
// rule on /proc/self made at New names the supervisor's own directory),
// while a rule on the host's /proc root would grant every process's
// cmdline and environment that procfs itself lets the uid read. Rules
// are hierarchical, so what a rule covers must be harmless as a whole:
//
//   - /proc/pid is a procfs instance with subset=pid (only process
//     directories, self and thread-self: no /proc/sys, /proc/net,
//     kallsyms, sysrq-trigger) and hidepid=ptraceable: a process the
//     reader may not ptrace is absent. Landlock refuses ptrace to any
//     process outside the caller's domain, so only the command's own
//     tree is there (hidepid=invisible would not do: it shows everything
//     to a member of the instance's gid, 0 by default, root's group);
//   - /proc itself is a clone of the sandbox's skeleton, a read-only
//     tmpfs made at New holding pid/, the symlinks self, thread-self and
//     mounts into it, and the host's global files the policy names
//     (cpuinfo, meminfo, stat, filesystems: each bound onto an empty file
//     there). Its root is the one Landlock rule (read files, list
//     directories): Landlock's walk from /proc/pid/N/status reaches the
//     procfs root, skips the mount point, and arrives at the skeleton's
//     root. The skeleton is only ever mounted in the sandbox's
//     namespaces, so the rule reaches nothing else.
//
// Where the procfs instance comes from: it belongs to one PID namespace.
// Root's spawner threads (MountThread) share one made at New in the
// host's PID namespace (hidepid still hides all but the reader's own
// domain); a command with a namespace of its own (MountChild) makes one
// for its PID namespace in the child, before /proc is covered (an
// unprivileged user may mount a procfs only for a PID namespace its user
// namespace owns, and only while a full one is visible). /proc/self is
// always right; /proc/N by the pid the command knows itself by is not
// (N is under /proc/pid, and as root without a PID namespace of the
// command's own, that instance counts the host's pids).
//
// Without a private mount namespace, or an unprivileged user without a
// PID namespace, the host's /proc stays and only the policy's global
// files are readable, as before; a note says so.

// procProbe says whether this user's sandboxes can have a /proc of their
// own, by mounting one as they would: root with an instance made here,
// others making theirs in a PID namespace of their own.
var procProbe probeOnce

func probeProc(u User) error {
	own, _ := newMounts(nil)
	defer own.Free()
	skel, proc, err := makeProc(u, u.Root, []string{"cpuinfo"})
	if err != nil {
		return err
	}
	own.setProc(skel, proc, []string{"cpuinfo"})
	return probeMountNS(!u.Root, !u.Root, u.UID, u.GID, own)
}

// makeProc makes u's skeleton with files and, with shared, the procfs
// instance every namespace clones (else -1: each makes its own).
func makeProc(u User, shared bool, files []string) (skel, proc int, err error) {
	um := C.CString(fmt.Sprintf("%d %d 1", u.UID, u.UID))
	gm := C.CString(fmt.Sprintf("%d %d 1", u.GID, u.GID))
	defer C.free(unsafe.Pointer(um))
	defer C.free(unsafe.Pointer(gm))
	cf := make([]*C.char, len(files)+1)
	for i, f := range files {
		cf[i] = C.CString(f)
		defer C.free(unsafe.Pointer(cf[i]))
	}
	skel = int(C.la_make_proc_skeleton(cbool(!u.Root), um, gm, &cf[0], C.int(len(files))))
	if skel < 0 {
		return -1, -1, fmt.Errorf("making the /proc skeleton: %w", syscall.Errno(-skel))
	}
	proc = -1
	if shared {
		if proc = int(C.la_make_procfs()); proc < 0 {
			syscall.Close(skel)
			return -1, -1, fmt.Errorf("making a procfs instance: %w", syscall.Errno(-proc))
		}
	}
	return skel, proc, nil
}

// AddProc gives m (the sandbox's mounts, nil with MountNone) its /proc,
// with the host's global /proc files named (bound into the skeleton:
// "cpuinfo", ...), or says why the host's stays. ns is the sandbox's
// mount mode, newPID whether each command gets a PID namespace.
func (m *Mounts) AddProc(u User, ns MountMode, newPID bool, files []string) (off string) {
	switch {
	case ns == MountNone || m == nil:
		return "no private mount namespace to mount one in"
	case ns == MountChild && !newPID && !u.Root:
		return "no PID namespace of the command's own, the only one an unprivileged user may mount a procfs for"
	}
	if err := procProbe.do(func() error { return probeProc(u) }); err != nil {
		return "a procfs of the sandbox's own cannot be mounted here: " + err.Error()
	}
	skel, proc, err := makeProc(u, ns == MountThread, files)
	if err != nil {
		return err.Error()
	}
	m.setProc(skel, proc, files)
	return ""
}

// addProcRule grants the sandbox's /proc: its skeleton's root, by fd.
func addProcRule(rulesetFD int, handled uint64, skel int) error {
	return addFDRule(rulesetFD, handled, skel, Rule{"/proc (the sandbox's own)", llReadFile | llReadDir})
}
