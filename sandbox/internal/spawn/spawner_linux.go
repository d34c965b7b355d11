package spawn

/*
#include "confine.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Spawner is a dedicated OS thread that starts confined commands.
//
// Two things that cost milliseconds or hundreds of microseconds when done
// per spawn are done once per thread instead, because a vfork'd child
// inherits both from the thread that forks it:
//
//   - the main seccomp program: attaching it costs 100-300 µs (conversion,
//     JIT, the kernel's action-cache emulation); the thread attaches it once
//     and every child is born with it. seccomp programs and no_new_privs
//     are per thread, so the rest of the Go process is untouched;
//   - v1 cgroups (slots, see sandbox/internal/cgroup; joined by
//     StartSpawner's join, cgroup.JoinV1): in v1 a single thread can
//     join a cgroup, and a child is born in its parent thread's cgroups. The
//     thread's one migration (an RCU grace period: ~10 ms) buys every later
//     spawn a migration-free start.
//
// The goroutine locks its thread and never unlocks it: when the goroutine
// returns, the runtime ends the thread, and with it the program and the
// cgroup membership, which no other goroutine may ever run under. The Go
// runtime never creates new threads from a locked thread (it uses its
// template thread), so neither leaks into other threads.
//
// What the thread itself still does under the main program: futex, mmap,
// signal handling, clone/clone3 with CLONE_VM|CLONE_VFORK (and namespace
// flags: those rules live in the child program for that reason).
type Spawner struct {
	calls chan *spawnCall
	done  chan struct{}
	// listener is the seccomp listener of a sealed thread's program (its
	// children's notifications), or -1; stopSup stops its server.
	// mountNS is the inode of the thread's mount namespace, which its
	// children inherit (the server resolves their paths in it).
	listener int
	mountNS  uint64
	stopSup  func()
	// exited is a pidfd of the thread itself (PIDFD_THREAD, Linux 6.9+;
	// -1 without): readable once the thread has exited, and so has left
	// its cgroups, which stop waits for so that their directories can be
	// removed at once rather than after EBUSY and a sleep.
	exited int
}

// ThreadProgram is what a spawner thread loads.
type ThreadProgram struct {
	BPF      []byte // the main seccomp program; nil: none
	Notifies bool   // load BPF with SECCOMP_FILTER_FLAG_NEW_LISTENER
	// ListenerBPF, when set (and BPF does not notify), is a second
	// program loaded after BPF with SECCOMP_FILTER_FLAG_NEW_LISTENER:
	// the calls sent to a server, kept out of BPF where one filter
	// could not hold both (libseccomp refuses a notify rule beside an
	// errno rule on the same arguments; the kernel, across two
	// filters, takes the most restrictive answer, as for a child's two
	// programs). A chain holds one listener: BPF must not notify.
	ListenerBPF []byte
	// Mounts, when set (MountThread): the thread first makes its private
	// read-only mount namespace with these writable roots and what the
	// sandbox mounts of its own (mountns_linux.go).
	Mounts *Mounts
	// DropBounding: the thread empties its own capability bounding set
	// (capabilities 0 to LastCap, la_drop_bounding: la_confine's first
	// step), once, and every child it starts outside a new user namespace
	// inherits the empty set (clone copies the thread's credentials), so
	// the child does not repeat the 41 PR_CAPBSET_DROP calls (~65 µs per
	// spawn, measured). The thread never executes anything, so an empty
	// bounding set takes nothing from it: its effective capabilities
	// (namespace and mount set-up) are untouched. A child in a new user
	// namespace gets a full set there and still drops it itself
	// (Pieces.DropBounding).
	DropBounding bool
	LastCap      int
}

type spawnCall struct {
	req  *Request
	res  Result
	err  error
	done chan struct{}
}

// StartSpawner starts a spawner thread, which first runs join (nil:
// nothing; the caller's v1 cgroup joins, which must move this thread
// only), then makes its mount namespace and loads prog. supervise, if the
// program notifies, is started on the listener (with the inode of the
// thread's mount namespace, which its children inherit) and stopped with
// the Spawner.
func StartSpawner(prog ThreadProgram, join func() error, supervise func(listener int, mountNS uint64) (func(), error)) (*Spawner, error) {
	sp := &Spawner{calls: make(chan *spawnCall), done: make(chan struct{}), listener: -1, exited: -1}
	ready := make(chan error, 1)
	go sp.loop(prog, join, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	if sp.listener >= 0 {
		stop, err := supervise(sp.listener, sp.mountNS)
		if err != nil {
			sp.Stop()
			return nil, err
		}
		sp.stopSup = stop
	}
	return sp, nil
}

func (sp *Spawner) loop(prog ThreadProgram, join func() error, ready chan<- error) {
	runtime.LockOSThread() // never unlocked, except below: see the type's comment
	if unix.Gettid() == unix.Getpid() {
		// This is the process's main thread, which the runtime never ends
		// (it would be left carrying the program and the cgroups, and go
		// back to running ordinary goroutines). Hand over to a new
		// goroutine and give the thread back untouched — but only once
		// the new goroutine runs on another thread: while we hold this
		// one locked and wait, the scheduler must run it elsewhere.
		// Unlocking at once let the new goroutine be scheduled here
		// again (it is next in this P's run queue), over and over until
		// another thread stole it: 0.5-15 ms per spawner, measured.
		elsewhere := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(elsewhere)
			sp.loop(prog, join, ready)
		}()
		<-elsewhere
		runtime.UnlockOSThread()
		return
	}
	defer close(sp.done)
	if fd, err := unix.PidfdOpen(unix.Gettid(), unix.PIDFD_THREAD); err == nil {
		sp.exited = fd
	}
	var err error
	if sp.listener, sp.mountNS, err = prepareSpawnerThread(prog, join); err != nil {
		if sp.exited >= 0 { // StartSpawner fails: no Stop will close it
			unix.Close(sp.exited)
			sp.exited = -1
		}
		ready <- err
		return
	}
	var st unix.Stat_t
	if sp.mountNS == 0 && unix.Stat("/proc/thread-self/ns/mnt", &st) == nil {
		sp.mountNS = st.Ino
	}
	ready <- nil
	for c := range sp.calls {
		c.res, c.err = spawn(c.req)
		close(c.done)
	}
}

func prepareSpawnerThread(prog ThreadProgram, join func() error) (listener int, mountNS uint64, err error) {
	if join != nil {
		if err := join(); err != nil {
			return -1, 0, err
		}
	}
	// The read-only mount namespace after the cgroup joins (cgroupfs is
	// read-only in it) and before the program, which refuses the mount
	// calls once sealed. The thread is never unlocked, so no goroutine
	// but this one ever runs in the namespace. With a root skeleton
	// (rootfs_linux.go) the thread's own root is switched too: from here
	// on it opens no path (spawn works on fds and C memory).
	if prog.Mounts != nil {
		if mountNS, err = threadMountNS(prog.Mounts); err != nil {
			return -1, 0, err
		}
	}
	if prog.DropBounding {
		if rc := C.la_drop_bounding(C.int(prog.LastCap)); rc < 0 {
			return -1, 0, fmt.Errorf("sandbox: spawner thread: dropping the capability bounding set: %w", unix.Errno(-rc))
		}
	}
	if len(prog.BPF) == 0 {
		return -1, mountNS, nil
	}
	// no_new_privs first: the kernel requires it (or CAP_SYS_ADMIN) to
	// attach a program, and the children need it anyway.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, 0, fmt.Errorf("sandbox: spawner thread: no_new_privs: %w", err)
	}
	listener, err = loadThreadFilter(prog.BPF, prog.Notifies)
	if err != nil || len(prog.ListenerBPF) == 0 {
		return listener, mountNS, err
	}
	listener, err = loadThreadFilter(prog.ListenerBPF, true)
	return listener, mountNS, err
}

// loadThreadFilter attaches bpf to the calling thread, with a listener
// when notifies (returned; else -1).
func loadThreadFilter(bpf []byte, notifies bool) (int, error) {
	fprog := unix.SockFprog{
		Len:    uint16(len(bpf) / 8),
		Filter: (*unix.SockFilter)(unsafe.Pointer(&bpf[0])),
	}
	// No SECCOMP_FILTER_FLAG_TSYNC: this thread only. With a listener: the
	// thread's children share one (the thread itself never makes the
	// notified calls); it is created O_CLOEXEC, and the spawn path marks
	// every fd but 0-2 close-on-exec anyway, so no command inherits it.
	flags := uintptr(0)
	if notifies {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if e == unix.EINVAL && flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0 {
		flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV // before 5.19
		r, _, e = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	}
	runtime.KeepAlive(bpf)
	if e != 0 {
		return -1, fmt.Errorf("sandbox: spawner thread: loading the seccomp filter: %w", e)
	}
	if notifies {
		return int(r), nil
	}
	return -1, nil
}

// Spawn starts r from the spawner's thread. On error the child, if one
// was created, has exited and has been reaped; an *Error names the step.
func (sp *Spawner) Spawn(r *Request) (Result, error) {
	c := &spawnCall{req: r, done: make(chan struct{})}
	sp.calls <- c
	<-c.done
	// Here, not on the thread: its root may be the sandbox's, where the
	// host's paths are not (ExecError stats one).
	var se *Error
	if errors.As(c.err, &se) && se.Step == stepName(C.LA_STEP_EXEC) {
		return c.res, r.Mounts.ExecError(r.Path, se.Errno)
	}
	return c.res, c.err
}

// Supervised reports whether the thread's listener has its server
// (StartSpawner's supervise was started): a sealed thread's commands are
// served by it alone.
func (sp *Spawner) Supervised() bool { return sp.stopSup != nil }

// Stop ends the thread once it is idle, then its supervisor.
func (sp *Spawner) Stop() {
	close(sp.calls)
	<-sp.done
	// done is closed before the goroutine returns and the runtime ends
	// the thread; the thread's own pidfd says when that has happened.
	if sp.exited >= 0 {
		pfd := []unix.PollFd{{Fd: int32(sp.exited), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(pfd, 2000); err != unix.EINTR {
				break
			}
		}
		unix.Close(sp.exited)
		sp.exited = -1
	}
	if sp.stopSup != nil {
		sp.stopSup()
	} else if sp.listener >= 0 {
		unix.Close(sp.listener)
	}
}
