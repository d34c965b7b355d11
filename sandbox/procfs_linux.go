package sandbox

/*
#include <stdlib.h>
#include "confine.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
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
// Root's spawner threads (mountThread) share one made at New in the
// host's PID namespace (hidepid still hides all but the reader's own
// domain); a command with a namespace of its own (mountChild) makes one
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

// procFiles are the host's global /proc files a policy names among its
// system paths ("/proc/cpuinfo" -> "cpuinfo"), those that exist: the
// skeleton gets them bound in.
func procFiles(systemPaths []string) []string {
	var files []string
	for _, p := range systemPaths {
		name, ok := strings.CutPrefix(p, "/proc/")
		if !ok || name == "" || strings.Contains(name, "/") || procSelfLike(p) {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			files = append(files, name)
		}
	}
	return files
}

// wantsProc: the policy names /proc/self (DefaultSystemPaths does).
func wantsProc(systemPaths []string) bool {
	for _, p := range systemPaths {
		if p == "/proc/self" || p == "/proc/thread-self" {
			return true
		}
	}
	return false
}

// procProbe says whether this user's sandboxes can have a /proc of their
// own, by mounting one as they would: root with an instance made here,
// others making theirs in a PID namespace of their own.
var procProbe = sync.OnceValue(func() error {
	h := host()
	own, _ := newCMountRoots(nil)
	defer own.free()
	skel, proc, err := makeProc(h.root, []string{"cpuinfo"})
	if err != nil {
		return err
	}
	own.setProc(skel, proc, []string{"cpuinfo"})
	return probeMountNS(!h.root, !h.root, h.uid, h.gid, own)
})

// makeProc makes the skeleton with files and, with shared, the procfs
// instance every namespace clones (else -1: each makes its own).
func makeProc(shared bool, files []string) (skel, proc int, err error) {
	h := host()
	um := C.CString(fmt.Sprintf("%d %d 1", h.uid, h.uid))
	gm := C.CString(fmt.Sprintf("%d %d 1", h.gid, h.gid))
	defer C.free(unsafe.Pointer(um))
	defer C.free(unsafe.Pointer(gm))
	cf := make([]*C.char, len(files)+1)
	for i, f := range files {
		cf[i] = C.CString(f)
		defer C.free(unsafe.Pointer(cf[i]))
	}
	skel = int(C.la_make_proc_skeleton(cbool(!h.root), um, gm, &cf[0], C.int(len(files))))
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

// sandboxProc gives mounts (the sandbox's, non-nil) its /proc, or says
// why the host's stays. ns is the sandbox's mount mode, newPID whether
// each command gets a PID namespace, root whether we are.
func sandboxProc(mounts *cMountRoots, ns mountMode, newPID, root bool, systemPaths []string) (off string) {
	switch {
	case !wantsProc(systemPaths):
		return ""
	case ns == mountNone || mounts == nil:
		return "no private mount namespace to mount one in"
	case ns == mountChild && !newPID && !root:
		return "no PID namespace of the command's own, the only one an unprivileged user may mount a procfs for"
	}
	if err := procProbe(); err != nil {
		return "a procfs of the sandbox's own cannot be mounted here: " + err.Error()
	}
	files := procFiles(systemPaths)
	skel, proc, err := makeProc(ns == mountThread, files)
	if err != nil {
		return err.Error()
	}
	mounts.setProc(skel, proc, files)
	return ""
}

// addProcRule grants the sandbox's /proc: its skeleton's root, by fd.
func addProcRule(rulesetFD int, handled uint64, skel int) error {
	return addFDRule(rulesetFD, handled, skel, llRule{"/proc (the sandbox's own)", llReadFile | llReadDir})
}
