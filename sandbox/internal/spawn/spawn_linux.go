package spawn

/*
#cgo CFLAGS: -O2 -Wall -Wno-unused-result
#include <stdlib.h>
#include <string.h>
#include "confine.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pieces are what a process needs to confine itself: the Landlock
// ruleset fd, the compiled seccomp programs and how to drop capabilities.
// The spawn path gives them to la_confine in the vfork'd child (the main
// program is already on the spawner thread); a re-executed Go child (custom
// tool handlers) can receive them and call la_confine from a cgo
// constructor, before its runtime starts, with both programs.
type Pieces struct {
	RulesetFD      int    // -1: no Landlock (best effort only)
	MainBPF        []byte // struct sock_filter[]; nil: no seccomp (best effort only)
	ChildBPF       []byte // namespace rules + notified calls; nil: none
	ChildNotifies  bool   // ChildBPF has SECCOMP_RET_USER_NOTIF rules
	LastCap        int
	DropBounding   bool
	LockSecurebits bool
}

// CPieces is the part of Pieces every spawn passes, copied into C
// memory once per Sandbox so that spawns neither copy nor pin Go memory.
type CPieces struct {
	rulesetFD      int
	child          unsafe.Pointer
	childN         int
	childNotifies  bool
	lastCap        int
	dropBounding   bool
	lockSecurebits bool
}

func NewCPieces(p Pieces) *CPieces {
	c := &CPieces{rulesetFD: p.RulesetFD, lastCap: p.LastCap, childNotifies: p.ChildNotifies,
		dropBounding: p.DropBounding, lockSecurebits: p.LockSecurebits}
	if len(p.ChildBPF) > 0 {
		c.child, c.childN = C.CBytes(p.ChildBPF), len(p.ChildBPF)/8
	}
	return c
}

// Free releases the C copy.
func (c *CPieces) Free() {
	if c.child != nil {
		C.free(c.child)
		c.child = nil
	}
}

// Request is one confined command, ready to start.
type Request struct {
	Path  string
	Argv  []string
	Envp  []string
	Dir   string
	Stdio [3]int
	// v2 cgroup the child is born in (directory fd, and its cgroup.procs
	// for kernels without clone3); -1 when none. v1 cgroups need nothing
	// here: the spawner thread already sits in them.
	CgroupDir   int
	CgroupProcs int
	Rlimits     []Rlimit
	NewPID      bool
	NewUser     bool
	UIDMap      string
	GIDMap      string
	// Mounts, with NewNS: the child makes a private mount namespace,
	// read-only but these roots (la_mount_setup).
	NewNS  bool
	Mounts *Mounts
	// Template, with NewNS and NewUser: the namespaces are made from the
	// sandbox's namespace template instead (template_linux.go).
	Template *Template
	Pieces   *CPieces
	PidMax   string // with NewPID: the namespace's pid_max, or ""
	NoClone3 bool   // the spawner thread's program refuses clone3: use clone
	// InitFD is the init's status pipe (pidinit), kept open across the
	// execve of the init; 0: the program is the command itself.
	InitFD int
	// Child, when set, replaces Pieces' child program (the one with change
	// capture, for commands that ask for it).
	Child *Program
}

// Program is a seccomp program in C memory.
type Program struct {
	insns    unsafe.Pointer
	n        int
	notifies bool
}

// NewProgram copies bpf into C memory, so that spawns neither copy nor
// pin Go memory; free releases it.
func NewProgram(bpf []byte, notifies bool) *Program {
	return &Program{insns: C.CBytes(bpf), n: len(bpf) / 8, notifies: notifies}
}

// Free releases the C copy (nil: nothing).
func (c *Program) Free() {
	if c != nil && c.insns != nil {
		C.free(c.insns)
		c.insns = nil
	}
}

// Rlimit is one resource limit the child sets on itself.
type Rlimit struct {
	Resource int
	Cur, Max uint64
}

// Result is a started command: its pid, a pidfd of it (the caller's to
// close), and the seccomp listener of its child program in the caller's
// fd table (the caller's to serve or close), or -1.
type Result struct {
	Pid, Pidfd, Listener int
}

// stepNames name the steps of la_spawn (enum la_step).
var stepNames = [...]string{
	C.LA_STEP_NONE:           "none",
	C.LA_STEP_CLONE:          "clone",
	C.LA_STEP_SIGNALS:        "resetting signal handlers",
	C.LA_STEP_USERNS:         "mapping the user namespace",
	C.LA_STEP_PID_MAX:        "setting the PID namespace's pid_max",
	C.LA_STEP_MOUNTNS:        "making the mounts outside the read-write roots read-only",
	C.LA_STEP_SETSID:         "setsid",
	C.LA_STEP_CGROUP:         "joining the cgroup",
	C.LA_STEP_RLIMIT:         "setting resource limits",
	C.LA_STEP_CAPS_BOUNDING:  "dropping the capability bounding set",
	C.LA_STEP_SECUREBITS:     "locking securebits",
	C.LA_STEP_CAPS_AMBIENT:   "clearing ambient capabilities",
	C.LA_STEP_CAPSET:         "dropping capabilities",
	C.LA_STEP_NO_NEW_PRIVS:   "setting no_new_privs",
	C.LA_STEP_LANDLOCK:       "entering the Landlock domain",
	C.LA_STEP_SECCOMP:        "loading the seccomp filter",
	C.LA_STEP_SECCOMP_NOTIFY: "loading the child seccomp filter",
	C.LA_STEP_UNSHARE_FILES:  "unsharing the file table",
	C.LA_STEP_STDIO:          "setting up stdin/stdout/stderr",
	C.LA_STEP_CLOSE_FDS:      "closing inherited file descriptors",
	C.LA_STEP_CHDIR:          "changing to the working directory",
	C.LA_STEP_EXEC:           "executing the command",
	C.LA_STEP_TEMPLATE:       "entering the sandbox's namespace template",
}

// Error says which step of starting a confined command failed. Package
// sandbox turns it into its public SpawnError (Context becomes a prefix).
type Error struct {
	// Context names what was being started when it was not a command
	// ("spawner thread"), or "".
	Context string
	Step    string
	Errno   syscall.Errno
}

func (e *Error) Error() string {
	if e.Context != "" {
		return fmt.Sprintf("sandbox: %s: sandbox: %s: %v", e.Context, e.Step, e.Errno)
	}
	return fmt.Sprintf("sandbox: %s: %v", e.Step, e.Errno)
}

func (e *Error) Unwrap() error { return e.Errno }

// spawn runs la_spawn. On error the child, if one was created, has exited
// and has been reaped.
func spawn(r *Request) (Result, error) {
	// One C allocation holds the argument struct, the argv/envp arrays and
	// every string, so a spawn costs one malloc and one free.
	strs := make([]string, 0, len(r.Argv)+len(r.Envp)+4)
	strs = append(strs, r.Path, r.Dir, r.UIDMap, r.GIDMap, r.PidMax)
	strs = append(strs, r.Argv...)
	strs = append(strs, r.Envp...)
	ptrSize := int(unsafe.Sizeof(uintptr(0)))
	structSize := int(unsafe.Sizeof(C.struct_la_spawn_args{}))
	structSize = (structSize + 15) &^ 15
	size := structSize + (len(r.Argv)+1+len(r.Envp)+1)*ptrSize
	for _, s := range strs {
		size += len(s) + 1
	}
	mem := C.malloc(C.size_t(size))
	if mem == nil {
		return Result{}, errors.New("sandbox: out of memory")
	}
	defer C.free(mem)
	buf := unsafe.Slice((*byte)(mem), size)
	clear(buf[:structSize])
	a := (*C.struct_la_spawn_args)(mem)
	argv := unsafe.Slice((**C.char)(unsafe.Pointer(&buf[structSize])), len(r.Argv)+1)
	envp := unsafe.Slice((**C.char)(unsafe.Pointer(&buf[structSize+(len(r.Argv)+1)*ptrSize])), len(r.Envp)+1)
	off := structSize + (len(r.Argv)+1+len(r.Envp)+1)*ptrSize
	put := func(s string) *C.char {
		p := (*C.char)(unsafe.Pointer(&buf[off]))
		copy(buf[off:], s)
		buf[off+len(s)] = 0
		off += len(s) + 1
		return p
	}
	a.path = put(r.Path)
	a.dir = put(r.Dir)
	a.uid_map = put(r.UIDMap)
	a.gid_map = put(r.GIDMap)
	a.pid_max = put(r.PidMax)
	if r.PidMax == "" {
		a.pid_max = nil
	}
	for i, s := range r.Argv {
		argv[i] = put(s)
	}
	argv[len(r.Argv)] = nil
	for i, s := range r.Envp {
		envp[i] = put(s)
	}
	envp[len(r.Envp)] = nil
	a.argv = &argv[0]
	a.envp = &envp[0]
	for i := range 3 {
		a.stdio[i] = C.int(r.Stdio[i])
	}
	if len(r.Rlimits) > len(a.rlimits) {
		return Result{}, errors.New("sandbox: internal: too many rlimits")
	}
	a.cgroup_dir = C.int(r.CgroupDir)
	a.cgroup_procs = C.int(r.CgroupProcs)
	for i, rl := range r.Rlimits {
		a.rlimits[i].resource = C.int(rl.Resource)
		a.rlimits[i].cur = C.uint64_t(rl.Cur)
		a.rlimits[i].max = C.uint64_t(rl.Max)
	}
	a.n_rlimits = C.int(len(r.Rlimits))
	a.no_clone3 = cbool(r.NoClone3)
	a.status_fd = -1
	if r.InitFD > 0 {
		a.status_fd = C.int(r.InitFD)
	}
	a.new_pid = cbool(r.NewPID)
	a.new_user = cbool(r.NewUser)
	a.template_pidfd = r.Template.pidfd()
	if r.NewNS {
		a.new_ns = 1
		a.mount_roots, a.n_mount_roots = r.Mounts.ptr(), C.int(r.Mounts.len())
		a.own = r.Mounts.ownPtr()
	}
	p := r.Pieces
	a.confine.last_cap = C.int(p.lastCap)
	a.confine.drop_bounding = cbool(p.dropBounding)
	a.confine.lock_securebits = cbool(p.lockSecurebits)
	a.confine.ruleset_fd = C.int(p.rulesetFD)
	// The main program comes with the spawner thread: filter_len 0.
	a.confine.child = p.child
	a.confine.child_len = C.uint16_t(p.childN)
	a.confine.child_listener = cbool(p.childNotifies)
	if c := r.Child; c != nil {
		a.confine.child = c.insns
		a.confine.child_len = C.uint16_t(c.n)
		a.confine.child_listener = cbool(c.notifies)
	}

	rc := C.la_spawn(a)
	res := Result{Pid: int(a.pid), Pidfd: int(a.pidfd), Listener: int(a.listener)}
	if rc == 0 {
		return res, nil
	}
	err := &Error{Step: stepName(int(a.err_step)), Errno: syscall.Errno(a.err_errno)}
	if a.err_step == C.LA_STEP_MOUNTNS {
		err.Step += r.Mounts.describe(int(a.mount_failed_root))
	}
	if res.Pidfd >= 0 {
		// The child exited (status 127) before or at execve: reap it.
		for unix.Waitid(unix.P_PIDFD, res.Pidfd, nil, unix.WEXITED, nil) == unix.EINTR {
		}
		syscall.Close(res.Pidfd)
	}
	return Result{}, err
}

func stepName(s int) string {
	if s >= 0 && s < len(stepNames) && stepNames[s] != "" {
		return stepNames[s]
	}
	return fmt.Sprintf("step %d", s)
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// mountRoot is a writable root of the private mount namespace: its
// canonical path and the identity the walk in la_mount_setup must find.
type mountRoot struct {
	path     string
	dev, ino uint64
}

// Mounts is what every private mount namespace of one sandbox gets,
// made once per Sandbox (nil: none): its writable roots (a struct
// la_mount_root[] in C memory) and what the sandbox mounts of its own
// there (struct la_ns_mounts, also in C memory: its devpts instance, its
// /proc and its root skeleton, devpts_linux.go, procfs_linux.go and
// rootfs_linux.go), whose fds it owns. Free releases it all.
type Mounts struct {
	arr   unsafe.Pointer
	n     int
	paths []string
	roots []mountRoot // the identities recorded at New (rootfs_linux.go)
	own   *C.struct_la_ns_mounts
	// bindPaths name the root skeleton's binds, for errors (setRoot);
	// rootDev is the skeleton's device (0: none).
	bindPaths []string
	rootDev   uint64
	// tmpDev is the private /tmp's device (0: none, tmpfs_linux.go).
	tmpDev uint64
	// roPaths name the read-only binds (setReadOnlyBinds), for errors.
	roPaths []string
}

func newMounts(roots []mountRoot) (*Mounts, error) {
	if len(roots) > C.LA_MAX_MOUNT_ROOTS {
		return nil, fmt.Errorf("sandbox: %d read-write roots (at most %d)", len(roots), C.LA_MAX_MOUNT_ROOTS)
	}
	c := &Mounts{n: len(roots), roots: roots}
	c.own = (*C.struct_la_ns_mounts)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_la_ns_mounts{}))))
	c.own.devpts_fd, c.own.proc_skel_fd, c.own.proc_fd, c.own.root_skel_fd = -1, -1, -1, -1
	c.own.tmp_fd = -1
	if len(roots) == 0 {
		return c, nil
	}
	size := C.size_t(unsafe.Sizeof(C.struct_la_mount_root{})) * C.size_t(len(roots))
	c.arr = C.calloc(1, size)
	arr := unsafe.Slice((*C.struct_la_mount_root)(c.arr), len(roots))
	for i, r := range roots {
		arr[i].path = C.CString(r.path)
		arr[i].dev = C.uint64_t(r.dev)
		arr[i].ino = C.uint64_t(r.ino)
		c.paths = append(c.paths, r.path)
	}
	return c, nil
}

func (c *Mounts) ptr() *C.struct_la_mount_root {
	if c == nil || c.arr == nil {
		return nil
	}
	return (*C.struct_la_mount_root)(c.arr)
}

func (c *Mounts) len() int {
	if c == nil {
		return 0
	}
	return c.n
}

// describe names root i for an error ("" when none is to blame).
func (c *Mounts) describe(i int) string {
	if d := c.describeReadOnlyBind(i); d != "" {
		return d
	}
	if c != nil && i >= C.LA_MAX_MOUNT_ROOTS && i-C.LA_MAX_MOUNT_ROOTS < len(c.bindPaths) {
		return fmt.Sprintf(" (binding %s into the sandbox's root: changed since the sandbox was made?)", c.bindPaths[i-C.LA_MAX_MOUNT_ROOTS])
	}
	if c == nil || i < 0 || i >= len(c.paths) {
		return ""
	}
	return fmt.Sprintf(" (read-write root %s: changed since the sandbox was made?)", c.paths[i])
}

// ownPtr is what the sandbox mounts of its own (NULL for nil).
func (c *Mounts) ownPtr() *C.struct_la_ns_mounts {
	if c == nil {
		return nil
	}
	return c.own
}

// devpts is the sandbox's devpts instance, or -1.
func (c *Mounts) devpts() int {
	if c == nil {
		return -1
	}
	return int(c.own.devpts_fd)
}

// setDevpts hands c the sandbox's devpts instance.
func (c *Mounts) setDevpts(fd int) { c.own.devpts_fd = C.int(fd) }

// procSkeleton is the sandbox's /proc skeleton, or -1.
func (c *Mounts) procSkeleton() int {
	if c == nil {
		return -1
	}
	return int(c.own.proc_skel_fd)
}

// setProc hands c the sandbox's /proc: its skeleton, the procfs instance
// to clone (-1: each namespace makes its own) and the host files bound in.
func (c *Mounts) setProc(skel, proc int, files []string) {
	c.own.proc_skel_fd, c.own.proc_fd = C.int(skel), C.int(proc)
	if len(files) == 0 {
		return
	}
	arr := (**C.char)(C.calloc(C.size_t(len(files)), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	for i, f := range files {
		unsafe.Slice(arr, len(files))[i] = C.CString(f)
	}
	c.own.proc_files, c.own.n_proc_files = arr, C.int(len(files))
}

// Free closes the instances' fds and releases the C memory (nil: nothing).
func (c *Mounts) Free() {
	if c == nil {
		return
	}
	if o := c.own; o != nil {
		c.freeRoot()
		c.freeReadOnlyBinds()
		// Each is a detached mount tree whose last close unmounts it in
		// the closing thread (a tmpfs's teardown frees every entry of
		// the skeleton): closed side by side, on as many threads.
		var wg sync.WaitGroup
		for _, fd := range []C.int{o.devpts_fd, o.proc_skel_fd, o.proc_fd, o.root_skel_fd, o.tmp_fd} {
			if fd >= 0 {
				wg.Go(func() { syscall.Close(int(fd)) })
			}
		}
		wg.Wait()
		if n := int(o.n_proc_files); n > 0 {
			for _, f := range unsafe.Slice(o.proc_files, n) {
				C.free(unsafe.Pointer(f))
			}
			C.free(unsafe.Pointer(o.proc_files))
		}
		C.free(unsafe.Pointer(o))
		c.own = nil
	}
	if c.arr == nil {
		return
	}
	for _, r := range unsafe.Slice((*C.struct_la_mount_root)(c.arr), c.n) {
		C.free(unsafe.Pointer(r.path))
	}
	C.free(c.arr)
	c.arr = nil
}

// threadMountNS gives the calling (locked, spawner) thread its private,
// read-only mount namespace, and returns the namespace's inode; see
// la_thread_mountns.
func threadMountNS(c *Mounts) (uint64, error) {
	var which C.int
	var ino C.uint64_t
	if rc := int(C.la_thread_mountns(c.ptr(), C.int(c.len()), c.ownPtr(), &which, &ino)); rc < 0 {
		return 0, &Error{Context: "spawner thread", Step: stepName(C.LA_STEP_MOUNTNS) + c.describe(int(which)), Errno: syscall.Errno(-rc)}
	}
	return uint64(ino), nil
}

// ProbeMountNS reports whether a child of u can get the private
// read-only mount namespace: as root directly, else in a user namespace of
// its own mapping only u's uid and gid.
func ProbeMountNS(u User) error {
	return probeMountNS(!u.Root, false, u.UID, u.GID, nil)
}

// probeMountNS is ProbeMountNS for newUser (a user namespace) and, with
// own (nil: nothing), mounting what it names there too, newPID in a PID
// namespace of the child's own.
func probeMountNS(newUser, newPID bool, uid, gid int, own *Mounts) error {
	um := C.CString(fmt.Sprintf("%d %d 1", uid, uid))
	gm := C.CString(fmt.Sprintf("%d %d 1", gid, gid))
	defer C.free(unsafe.Pointer(um))
	defer C.free(unsafe.Pointer(gm))
	if rc := int(C.la_probe_mountns(cbool(newUser), cbool(newPID), um, gm, own.ownPtr())); rc < 0 {
		return syscall.Errno(-rc)
	}
	return nil
}

// LandlockABI returns the kernel's Landlock ABI version (0: none).
func LandlockABI() (int, error) {
	v := int(C.la_landlock_abi())
	if v < 0 {
		return 0, syscall.Errno(-v)
	}
	return v, nil
}

// ProbeUserNS reports whether this user can make a user+PID namespace and
// map itself into it.
func ProbeUserNS(uid, gid int) error {
	um := C.CString(fmt.Sprintf("%d %d 1", uid, uid))
	gm := C.CString(fmt.Sprintf("%d %d 1", gid, gid))
	defer C.free(unsafe.Pointer(um))
	defer C.free(unsafe.Pointer(gm))
	if rc := int(C.la_probe_userns(um, gm)); rc < 0 {
		return syscall.Errno(-rc)
	}
	return nil
}

// ProbePIDNS reports whether this process can start a child in a new PID
// namespace without a user namespace (root; a container's default seccomp
// profile refuses the clone flag).
func ProbePIDNS() error {
	if rc := int(C.la_probe_pidns()); rc < 0 {
		return syscall.Errno(-rc)
	}
	return nil
}

// ProbeUnshareFiles reports whether a child sharing this process's file
// table can take a private copy of it (unshare(CLONE_FILES)), tried in
// a vfork'd child as the spawn path's child does: on a thread of this
// process the private copy would hold every descriptor open at the time
// for as long as the thread lives, and the runtime keeps its main thread.
func ProbeUnshareFiles() error {
	if rc := int(C.la_probe_unshare_files()); rc < 0 {
		return syscall.Errno(-rc)
	}
	return nil
}

// ProbeDevpts reports whether u's sandboxes can have a devpts instance of
// their own (AddDevpts), probed once per process.
func ProbeDevpts(u User) error {
	return devptsProbe.do(func() error { return probeDevpts(u) })
}

// ProbeProc reports whether u's sandboxes can have a /proc of their own
// (AddProc), probed once per process.
func ProbeProc(u User) error {
	return procProbe.do(func() error { return probeProc(u) })
}

// ConfineThread applies p to the calling OS thread, irreversibly: Landlock
// and seccomp apply to one thread (no TSYNC), so the caller must have locked
// it (runtime.LockOSThread) and must never unlock it, and only a process
// with one thread is wholly confined by it — the intended caller is a
// re-executed child before its runtime starts (then from C), or a test in a
// subprocess. It returns the seccomp listener (owned by the caller) when
// the child program notifies, else -1.
func ConfineThread(p Pieces) (int, error) {
	var a C.struct_la_confine_args
	a.last_cap = C.int(p.LastCap)
	a.drop_bounding = cbool(p.DropBounding)
	a.lock_securebits = cbool(p.LockSecurebits)
	a.ruleset_fd = C.int(p.RulesetFD)
	if len(p.MainBPF) > 0 {
		m := C.CBytes(p.MainBPF)
		defer C.free(m)
		a.filter, a.filter_len = m, C.uint16_t(len(p.MainBPF)/8)
	}
	if len(p.ChildBPF) > 0 {
		c := C.CBytes(p.ChildBPF)
		defer C.free(c)
		a.child, a.child_len = c, C.uint16_t(len(p.ChildBPF)/8)
		a.child_listener = cbool(p.ChildNotifies)
	}
	var listener, step C.int
	if rc := C.la_confine(&a, &listener, &step); rc < 0 {
		return -1, &Error{Step: stepName(int(step)), Errno: syscall.Errno(-rc)}
	}
	return int(listener), nil
}
