package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A spawner is a dedicated OS thread that starts confined commands.
//
// Two things that cost milliseconds or hundreds of microseconds when done
// per spawn are done once per thread instead, because a vfork'd child
// inherits both from the thread that forks it:
//
//   - the main seccomp program: attaching it costs 100-300 µs (conversion,
//     JIT, the kernel's action-cache emulation); the thread attaches it once
//     and every child is born with it. seccomp programs and no_new_privs
//     are per thread, so the rest of the Go process is untouched;
//   - v1 cgroups (slots, see cgroup_linux.go): in v1 a single thread can
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
type spawner struct {
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

// threadProgram is what a spawner thread loads.
type threadProgram struct {
	bpf      []byte // nil: none
	notifies bool   // load with SECCOMP_FILTER_FLAG_NEW_LISTENER
	// mounts, when set: the thread first makes its private read-only
	// mount namespace with these writable roots (mountns_linux.go).
	mounts *cMountRoots
	// dropBounding: the thread empties its own capability bounding set
	// (capabilities 0 to lastCap), once, and every child it starts
	// outside a new user namespace inherits the empty set (clone copies
	// the thread's credentials), so the child does not repeat the 41
	// PR_CAPBSET_DROP calls (~65 µs per spawn, measured). The thread
	// never executes anything, so its empty bounding set takes nothing
	// from it: its effective capabilities (namespace and mount set-up)
	// are untouched. A child in a new user namespace gets a full set
	// there and still drops it itself (confinePieces.DropBounding).
	dropBounding bool
	lastCap      int
}

type spawnCall struct {
	req  *spawnRequest
	res  spawnResult
	err  error
	done chan struct{}
}

// startSpawner starts a spawner thread that joins the v1 cgroup
// directories dirs (may be none) and loads prog. supervise, if the program
// notifies, is started on the listener and stopped with the spawner.
func startSpawner(prog threadProgram, dirs []string, supervise func(listener int, mountNS uint64) (func(), error)) (*spawner, error) {
	sp := &spawner{calls: make(chan *spawnCall), done: make(chan struct{}), listener: -1, exited: -1}
	ready := make(chan error, 1)
	go sp.loop(prog, dirs, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	if sp.listener >= 0 {
		stop, err := supervise(sp.listener, sp.mountNS)
		if err != nil {
			sp.stop()
			return nil, err
		}
		sp.stopSup = stop
	}
	return sp, nil
}

func (sp *spawner) loop(prog threadProgram, dirs []string, ready chan<- error) {
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
			sp.loop(prog, dirs, ready)
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
	if sp.listener, sp.mountNS, err = prepareSpawnerThread(prog, dirs); err != nil {
		if sp.exited >= 0 { // startSpawner fails: no stop will close it
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

func prepareSpawnerThread(prog threadProgram, dirs []string) (listener int, mountNS uint64, err error) {
	for _, d := range dirs {
		// "tasks" moves this thread only; cgroup.procs would move the
		// whole Go process. "0" (the writing thread) rather than our tid:
		// a thread moving itself is the one migration the kernel does
		// without its global threadgroup rwsem (cgroup_procs_write_start),
		// whose write lock waits for an RCU grace period — 0.04 ms
		// instead of 5-15 ms here.
		if err := writeFile(filepath.Join(d, "tasks"), "0"); err != nil {
			return -1, 0, fmt.Errorf("sandbox: cgroup: moving the spawner thread into %s: %w", d, err)
		}
	}
	// The read-only mount namespace after the cgroup joins (cgroupfs is
	// read-only in it) and before the program, which refuses the mount
	// calls once sealed. The thread is never unlocked, so no goroutine
	// but this one ever runs in the namespace. With a root skeleton
	// (rootfs_linux.go) the thread's own root is switched too: from here
	// on it opens no path (spawn works on fds and C memory).
	if prog.mounts != nil {
		if mountNS, err = threadMountNS(prog.mounts); err != nil {
			return -1, 0, fmt.Errorf("sandbox: spawner thread: %w", err)
		}
	}
	if prog.dropBounding {
		if err := dropBoundingSet(prog.lastCap); err != nil {
			return -1, 0, fmt.Errorf("sandbox: spawner thread: dropping the capability bounding set: %w", err)
		}
	}
	if len(prog.bpf) == 0 {
		return -1, mountNS, nil
	}
	// no_new_privs first: the kernel requires it (or CAP_SYS_ADMIN) to
	// attach a program, and the children need it anyway.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, 0, fmt.Errorf("sandbox: spawner thread: no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{
		Len:    uint16(len(prog.bpf) / 8),
		Filter: (*unix.SockFilter)(unsafe.Pointer(&prog.bpf[0])),
	}
	// No SECCOMP_FILTER_FLAG_TSYNC: this thread only. With a listener: the
	// thread's children share one (the thread itself never makes the
	// notified calls); it is created O_CLOEXEC, and the spawn path marks
	// every fd but 0-2 close-on-exec anyway, so no command inherits it.
	flags := uintptr(0)
	if prog.notifies {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if e == unix.EINVAL && flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0 {
		flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV // before 5.19
		r, _, e = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	}
	runtime.KeepAlive(prog.bpf)
	if e != 0 {
		return -1, 0, fmt.Errorf("sandbox: spawner thread: loading the seccomp filter: %w", e)
	}
	if prog.notifies {
		return int(r), mountNS, nil
	}
	return -1, mountNS, nil
}

// spawn starts r from the spawner's thread.
func (sp *spawner) spawn(r *spawnRequest) (spawnResult, error) {
	c := &spawnCall{req: r, done: make(chan struct{})}
	sp.calls <- c
	<-c.done
	// Here, not on the thread: its root may be the sandbox's, where the
	// host's paths are not (execError stats one).
	var se *SpawnError
	if errors.As(c.err, &se) && se.Step == stepNames[stepExec] {
		r.mounts.execError(r.path, se)
	}
	return c.res, c.err
}

// stop ends the thread once it is idle, then its supervisor.
func (sp *spawner) stop() {
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
