//go:build linux

package notify

// The server: its loop, and the handlers of the network calls. What it
// guarantees and why it is safe is in doc.go.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Start starts a server on listenerFD: a seccomp user-notification
// listener, already in this process's descriptor table. The server owns
// it from the call on, also when Start fails, and closes it in stop.
// pidfd and pid name the command's main process — borrowed, valid until
// stop returns, never closed by the server — or are -1 and 0 for a
// spawner thread's listener, which serves every command that thread
// starts. stop ends supervision (see "Lifetime" in doc.go); it is
// idempotent.
func Start(listenerFD, pidfd, pid int, opts Options) (stop func(), err error) {
	s, err := startNetSupervisor(listenerFD, pidfd, pid, opts)
	if err != nil {
		return nil, err
	}
	return s.Stop, nil
}

// Options configures one server.
type Options struct {
	// Mode decides AF_INET/AF_INET6 destinations. ModeNone refuses
	// them all but the tree's own loopback ports (and Proxy);
	// ModeUnrestricted allows them all (the filter then sends connect
	// only, for the AF_UNIX rule).
	Mode Mode
	// Unix decides AF_UNIX operations that name an address. nil refuses
	// them (EACCES), except autobind. Called from several goroutines.
	Unix func(UnixRequest) bool
	// Logf, if set, receives internal failures (never the child's
	// refused calls, which are normal).
	Logf func(format string, args ...any)
	// Capture, if set, answers the change-capture calls that share the
	// listener (capture_linux.go). One command's: it is closed when the
	// server stops.
	Capture *Capture
	// Proxy, if valid, is the domain proxy's address: connects to exactly
	// it are allowed whatever the mode (ownports_linux.go).
	Proxy netip.AddrPort
	// DirectGrant, if set, is asked about an IP destination that the
	// mode refuses and that is not Proxy or one of OwnPorts (connect, and
	// sendto/sendmsg/sendmmsg with an address, any socket type): ok
	// admits it, and rule names the grant. The sandbox passes the domain
	// proxy's literal IP[:PORT] grants (netproxy.Rules.Direct), so that a
	// client that goes around the proxy to a granted loopback mirror — as
	// NO_PROXY tells it to, and as Go always does for loopback — reaches
	// it. It is given the address and port the server will connect to,
	// never a name. Called from several goroutines; must not block.
	DirectGrant func(ap netip.AddrPort) (rule string, ok bool)
	// OnDirect, if set, is told of each connect(2) that DirectGrant
	// admitted, before it is performed (the bytes of such a connection
	// pass around the proxy and are not counted). Datagrams sent with an
	// address are not reported: one event per datagram would flood the
	// stream. Called from several goroutines; must not block.
	OnDirect func(ap netip.AddrPort, rule string)
	// OwnPorts, in mode none, is where bound loopback addresses are
	// recorded and looked up (the Sandbox's set, shared by its
	// commands); nil: this server's own.
	OwnPorts *PortSet
	// MountNS is the inode of the mount namespace the sandbox made for
	// the command, or 0. Its mounts are the server's own, bound at their
	// own paths (onto themselves, or into the sandbox's root skeleton)
	// and made read-only, so a path beneath the read-write roots resolves
	// to the same file in both: sameRoot accepts it.
	MountNS uint64
	// RootDev is the device of the sandbox's root skeleton (the
	// command's / there: sandbox/internal/spawn/rootfs_linux.go), or 0: change capture
	// names the skeleton's directories by their path (skeletonPath).
	RootDev uint64
	// TmpDev is the device of the sandbox's private /tmp
	// (sandbox/internal/spawn/tmpfs_linux.go), or 0: change capture
	// names its files by their path from the command's root (tmpPath).
	TmpDev uint64
	// PtyDev is the device of the sandbox's devpts instance, or 0:
	// change capture opens /dev/ptmx and /dev/pts/N there for a command
	// (ptyPath).
	PtyDev uint64
	// Refusals, if set, records the calls a rule refused (network
	// destinations, unix sockets, Capture's, and Refused's), for the
	// command's report (refusals.go).
	Refusals *RefusalLog
	// Refused says whether a call is one of the seccomp programs'
	// refusal set (sandbox/internal/seccomp's Refused), which a program
	// with a listener sends here instead of answering EPERM itself. Such
	// a call is answered EPERM and recorded before anything else looks
	// at it. Required: a set-id mode arrives on calls change capture
	// also receives and would perform.
	Refused func(nr int32, args [6]uint64) (Refusal, bool)
}

// Layout of include/uapi/linux/seccomp.h on 64-bit architectures.
const (
	notifSize     = 80 // struct seccomp_notif: id, pid, flags, seccomp_data
	notifRespSize = 24 // struct seccomp_notif_resp: id, val, error, flags
	pidfdThread   = unix.O_EXCL
	uioMaxIOV     = 1024
	maxCallCopy   = 1 << 20  // payload copied per call
	copyChunk     = 64 << 10 // payload copied per step
	maxControl    = 64 << 10
	maxInflight   = 256
	maxBigBufs    = 16  // datagram buffers over copyChunk held at once (≤ 16 MiB)
	sockaddrMax   = 128 // sizeof(struct sockaddr_storage)
	msghdrSize    = 56
	mmsghdrSize   = 64
	waitSlice     = 50 * time.Millisecond

	// SECCOMP_IOCTL_NOTIF_SET_FLAGS = _IOW('!', 4, __u64), Linux 6.6.
	seccompIoctlNotifSetFlags = 0x40082104
)

// seccompNotif and seccompNotifResp are struct seccomp_notif and
// struct seccomp_notif_resp (include/uapi/linux/seccomp.h), as change
// capture (capture_emulate_linux.go) takes and answers a call the loop
// received.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  struct {
		Nr   int32
		Arch uint32
		IP   uint64
		Args [6]uint64
	}
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// netSupervisorRun is one running supervisor.
type netSupervisorRun struct {
	opts      Options
	file      *os.File // the listener; watched by the runtime poller unless Capture is set
	rc        syscall.RawConn
	pid       int // the direct child
	pidfd     int // borrowed; -1 if none
	arch      uint32
	recvSize  int // kernel's sizeof(struct seccomp_notif)
	respSize  int
	stopFD    int // eventfd: readable once stop() was called
	stopCh    chan struct{}
	loopDone  chan struct{}
	sem       chan struct{}
	bigBufs   chan struct{}
	wg        sync.WaitGroup
	stopping  atomic.Bool
	stopOnce  sync.Once
	closeOnce sync.Once

	// stats count notifications received, answers the kernel refused
	// (abandoned calls) and results given again to a restarted call.
	stats struct{ received, abandoned, replayed atomic.Int64 }

	mu       sync.Mutex
	threads  map[uint32]*threadState
	blocking map[int]struct{} // dups in a blocking connect, shut down by stop
	ownPorts PortSet          // mode none, without opts.OwnPorts: loopback ports the tree bound
}

// threadState tracks the calls of one target thread. A thread is in at
// most one system call at a time, so a new notification from it means any
// earlier one was abandoned (signal).
type threadState struct {
	seq      uint64
	inflight *netCall
	last     *doneRecord
}

// doneRecord is the result of a call that took effect but whose answer
// the kernel refused (the call had been abandoned).
type doneRecord struct {
	seq    uint64
	nr     int32
	args   [6]uint64
	val    int64
	errno  unix.Errno
	expiry time.Time
}

// startNetSupervisor starts supervising listenerFD (see the file comment
// for the contract). It owns listenerFD even when it fails.
func startNetSupervisor(listenerFD, pidfd, pid int, opts Options) (run *netSupervisorRun, err error) {
	defer func() {
		if err != nil && listenerFD >= 0 {
			unix.Close(listenerFD)
		}
	}()
	switch opts.Mode {
	case ModeNone, ModeLoopback, ModePrivate, ModeUnrestricted:
	default:
		return nil, fmt.Errorf("sandbox: network supervisor: unknown mode %v", opts.Mode)
	}
	if opts.Refused == nil {
		return nil, errors.New("sandbox: network supervisor: Options.Refused is required (the seccomp programs' refusal set)")
	}
	// pid 0: a spawner thread's listener, shared by its commands (no
	// direct child to take a shortcut for).
	if listenerFD < 0 || pid < 0 {
		return nil, fmt.Errorf("sandbox: network supervisor: bad listener fd %d or pid %d", listenerFD, pid)
	}
	if link, lerr := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", listenerFD)); lerr != nil || link != "anon_inode:seccomp notify" {
		return nil, fmt.Errorf("sandbox: network supervisor: fd %d is not a seccomp listener (%q, %v)", listenerFD, link, lerr)
	}
	arch, ok := nativeAuditArch()
	if !ok {
		return nil, fmt.Errorf("%w: network supervisor: architecture %s", ErrUnsupported, runtime.GOARCH)
	}
	sizes, err := notifSizes()
	if err != nil {
		return nil, err
	}
	stopFD, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("sandbox: network supervisor: eventfd: %w", err)
	}
	if pidfd < 0 {
		pidfd = -1
	}
	// Linux 6.6+: wake the target on the supervisor's CPU when answering
	// (and the supervisor on the target's when notifying): a ping-pong
	// between two tasks, cheaper than a cross-CPU wakeup. Older kernels
	// refuse the ioctl; it is only an optimization.
	unix.Syscall(unix.SYS_IOCTL, uintptr(listenerFD), seccompIoctlNotifSetFlags, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	// Without change capture, the runtime's poller watches the listener,
	// so the loop parks like any goroutine waiting for a socket: a
	// blocking poll(2) would keep its P, and the goroutines it starts
	// would wait for sysmon to hand that P over (tens of µs to ms per
	// call). With change capture the loop answers the calls itself, on
	// its own thread (credWorker), and waits in poll(2) there
	// (waitInPoll); the poller must then not watch the listener at all:
	// the kernel wakes every waiter of the listener twice per call
	// (EPOLLIN when the call is queued, EPOLLOUT when it is received),
	// and each wake-up of the runtime's netpoll thread, which finds
	// nothing to run, cost a third of a captured call's CPU
	// (bench/capture_opens.c; BENCHMARKS.md). A descriptor left blocking is not
	// added to the poller by os.NewFile. NOTIF_RECV ignores O_NONBLOCK
	// either way; it is only called when poll says a notification
	// waits.
	pollable := opts.Capture == nil
	if err := unix.SetNonblock(listenerFD, pollable); err != nil {
		unix.Close(stopFD)
		return nil, fmt.Errorf("sandbox: network supervisor: %w", err)
	}
	file := os.NewFile(uintptr(listenerFD), "seccomp-listener")
	listenerFD = -1 // the file owns it now
	rc, err := file.SyscallConn()
	if err == nil && pollable {
		err = file.SetReadDeadline(time.Time{}) // fails unless the poller has it
	}
	if err != nil {
		file.Close()
		unix.Close(stopFD)
		return nil, fmt.Errorf("sandbox: network supervisor: listener: %w", err)
	}
	run = &netSupervisorRun{
		opts:     opts,
		file:     file,
		rc:       rc,
		pid:      pid,
		pidfd:    pidfd,
		arch:     arch,
		recvSize: int(sizes.notif),
		respSize: int(sizes.resp),
		stopFD:   stopFD,
		stopCh:   make(chan struct{}),
		loopDone: make(chan struct{}),
		sem:      make(chan struct{}, maxInflight),
		bigBufs:  make(chan struct{}, maxBigBufs),
		threads:  map[uint32]*threadState{},
		blocking: map[int]struct{}{},
	}
	if opts.Capture != nil {
		// Before the loop: its first call resolves in this namespace.
		opts.Capture.mountNS = opts.MountNS
		opts.Capture.rootDev = opts.RootDev
		opts.Capture.tmpDev = opts.TmpDev
		opts.Capture.ptyDev = opts.PtyDev
		opts.Capture.refusals = opts.Refusals
	}
	go run.loop()
	return run, nil
}

// notifSizes asks the kernel, once, how many bytes it writes of struct
// seccomp_notif and reads of the response: if a future kernel grows them,
// our buffers must grow too.
var notifSizes = sync.OnceValues(func() (sizes struct{ notif, resp, data uint16 }, err error) {
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sizes))); e != 0 {
		return sizes, fmt.Errorf("%w: network supervisor: SECCOMP_GET_NOTIF_SIZES: %v", ErrUnsupported, e)
	}
	if sizes.notif < notifSize || sizes.resp < notifRespSize {
		return sizes, fmt.Errorf("%w: network supervisor: unexpected seccomp_notif sizes %+v", ErrUnsupported, sizes)
	}
	return sizes, nil
})

func nativeAuditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	case "riscv64":
		return unix.AUDIT_ARCH_RISCV64, true
	case "ppc64le":
		return unix.AUDIT_ARCH_PPC64LE, true
	case "s390x":
		return unix.AUDIT_ARCH_S390X, true
	case "loong64":
		return unix.AUDIT_ARCH_LOONGARCH64, true
	}
	return 0, false
}

// waitInPoll waits in poll(2) until the listener has a notification
// (then recv receives it), may be finished (read looks again and says
// so), or Stop was called (the stop eventfd is readable; the loop then
// sees s.stopping).
func (s *netSupervisorRun) waitInPoll(fd uintptr, recv, read func(uintptr) bool) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(s.stopFD), Events: unix.POLLIN}}
	for !s.stopping.Load() {
		pfd[0].Revents, pfd[1].Revents = 0, 0
		n, err := unix.Poll(pfd, -1)
		if err != nil || n == 0 {
			if err == unix.EINTR || err == unix.EAGAIN || err == unix.ENOMEM {
				continue // transient (pollListener)
			}
			read(fd) // the listener is unusable: pollListener says so
			return
		}
		if pfd[1].Revents != 0 {
			return
		}
		if pfd[0].Revents&unix.POLLIN != 0 {
			recv(fd)
			return
		}
		if pfd[0].Revents != 0 && read(fd) {
			return // received, or finished
		}
		// POLLERR alone: an interrupted look (pollListener); ask again.
	}
}

// Stop ends supervision (see the file comment). Safe to call many times
// and from any goroutine.
func (s *netSupervisorRun) Stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopping.Store(true)
		s.mu.Unlock()
		close(s.stopCh)
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(s.stopFD, one[:])
		s.file.SetReadDeadline(time.Now()) // wakes a loop parked in the poller (the eventfd wakes one in poll(2))
		<-s.loopDone
		workers := make(chan struct{})
		go func() { s.wg.Wait(); close(workers) }()
		for {
			// A blocking connect cannot be interrupted from outside but
			// by shutdown(2), which ends it (and the connection attempt:
			// supervision is ending, so is the sandbox). Repeat it: a
			// worker may have been about to enter connect the first time.
			s.mu.Lock()
			for fd := range s.blocking {
				unix.Shutdown(fd, unix.SHUT_RDWR)
			}
			s.mu.Unlock()
			select {
			case <-workers:
				s.closeListener()
				unix.Close(s.stopFD)
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// Done is closed when the receive loop has ended (stop, or the last task
// using the filter is gone).
func (s *netSupervisorRun) Done() <-chan struct{} { return s.loopDone }

// closeListener closes the listener. The descriptor itself is released
// only when no RawConn call is using it, so a late answer cannot reach a
// reused descriptor number.
func (s *netSupervisorRun) closeListener() {
	s.closeOnce.Do(func() { s.file.Close() })
}

// abort is the loop's way out on an internal failure: once the workers
// are done, close the listener, so the child's trapped calls fail with
// ENOSYS instead of hanging.
func (s *netSupervisorRun) abort() {
	go func() {
		s.wg.Wait()
		s.closeListener()
	}()
}

func (s *netSupervisorRun) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// loop receives notifications until stop or until no task uses the filter
// any more, and hands each to a goroutine: a blocking connect must not
// hold up the others.
func (s *netSupervisorRun) loop() {
	defer close(s.loopDone)
	defer s.opts.Capture.close() // its calls came from this loop only
	defer func() {
		if r := recover(); r != nil {
			s.logf("sandbox: network supervisor loop panic: %v\n%s", r, debug.Stack())
			s.abort()
		}
	}()
	buf := make([]byte, s.recvSize)
	// Made once, not per call: a captured call allocates nothing here.
	var got, hup bool
	var recvErr syscall.Errno
	// recv receives the notification waiting: RECV does not block then
	// (and a single reader cannot lose the race for it). The kernel
	// wants a zeroed buffer.
	recv := func(fd uintptr) bool {
		clear(buf)
		_, _, recvErr = unix.Syscall(unix.SYS_IOCTL, fd, uintptr(unix.SECCOMP_IOCTL_NOTIF_RECV), uintptr(unsafe.Pointer(&buf[0])))
		got = recvErr == 0
		return true
	}
	read := func(fd uintptr) bool {
		ready, gone := pollListener(fd)
		if gone {
			hup = true // POLLHUP: the filter's last task is gone
			return true
		}
		if !ready {
			return false // park until the poller says it is readable
		}
		return recv(fd)
	}
	waitCaptured := func(fd uintptr) { s.waitInPoll(fd, recv, read) }
	lastYield := time.Now()
	for {
		if s.opts.Capture != nil && time.Since(lastYield) >= captureYieldEvery {
			// See captureYieldEvery.
			runtime.Gosched()
			lastYield = time.Now()
		}
		got, hup, recvErr = false, false, 0
		var err error
		switch {
		case s.opts.Capture != nil:
			// Not in the poller (startNetSupervisor): the loop waits in
			// poll(2) itself, on the listener and the stop eventfd. Once
			// it holds the capture's thread (credWorker), parked by the
			// poller it would also be woken by another thread and
			// handed back to its own, a second wake-up for every call.
			err = s.rc.Control(waitCaptured)
		default:
			if h := TestHooks.PollerErr; h != nil {
				err = h()
			}
			if err == nil {
				err = s.rc.Read(read)
			}
		}
		if err != nil && !errors.Is(err, os.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
			// The runtime's poller met the interrupted look that
			// pollListener describes (EPOLLERR alone) and reports the
			// listener "not pollable" until its next event, which may
			// be a call we have not received. Look ourselves, a
			// bounded wait at a time, until the poller is back.
			err = s.rc.Control(func(fd uintptr) {
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(s.stopFD), Events: unix.POLLIN}}
				unix.Poll(pfd, 10)
				read(fd)
			})
		}
		if err != nil || s.stopping.Load() || hup {
			return // stop (deadline), closed, or nothing left to serve
		}
		if !got {
			if recvErr == 0 || recvErr == unix.ENOENT || recvErr == unix.EINTR {
				continue // nothing yet, or the target went away before we read it
			}
			s.logf("sandbox: network supervisor: NOTIF_RECV: %v", recvErr)
			s.abort()
			return
		}
		s.stats.received.Add(1)
		var req seccompNotif
		req.ID = binary.NativeEndian.Uint64(buf[0:])
		req.Pid = binary.NativeEndian.Uint32(buf[8:])
		req.Data.Nr = int32(binary.NativeEndian.Uint32(buf[16:]))
		req.Data.Arch = binary.NativeEndian.Uint32(buf[20:])
		for i := range req.Data.Args {
			req.Data.Args[i] = binary.NativeEndian.Uint64(buf[32+8*i:])
		}
		if req.Data.Arch == s.arch {
			if r, ok := s.opts.Refused(req.Data.Nr, req.Data.Args); ok {
				// The refusal set (Options.Refused): answered here,
				// whatever else receives this call.
				s.opts.Refusals.add(r)
				if err := s.respond(req.ID, 0, unix.EPERM, 0); err != nil {
					s.stats.abandoned.Add(1)
				}
				continue
			}
		}
		if s.opts.Capture.handles(req.Data.Nr) && req.Data.Arch == s.arch {
			// A change-capture call sharing the listener: answered here,
			// in the order received (capture_linux.go).
			s.opts.Capture.answer(&req, s.rc) // answers itself
			continue
		}
		c := &netCall{s: s, pidfd: -1, dup: -1, done: make(chan struct{})}
		c.id, c.tid, c.nr, c.arch, c.args = req.ID, req.Pid, req.Data.Nr, req.Data.Arch, req.Data.Args
		select {
		case s.sem <- struct{}{}:
		case <-s.stopCh:
			return
		}
		// Register in receive order: a restart must find the call it
		// repeats already registered, whichever goroutine runs first.
		c.register()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.sem }()
			c.run()
		}()
	}
}

// captureYieldEvery bounds how long the capture loop runs without
// passing through the scheduler. The loop is always running or in a
// system call, never parked, so the runtime's count of its scheduling
// rounds stands still; once it has stood for 10 ms, sysmon takes the
// loop's P at every one of its ticks (every 20 µs) while the loop waits in
// poll(2), and each answer then starts by taking a P back and waking
// sysmon: on SQLite's suite a third of the supervisor's CPU was sysmon,
// and a tenth the slow return from poll. A yield every few milliseconds
// (two thread wake-ups, the loop's thread being locked) keeps the count
// moving, so sysmon leaves the P alone and falls back asleep.
const captureYieldEvery = 5 * time.Millisecond

// listenerIoctl makes ioctl req on the listener fd, again for as long as
// it fails with EINTR. The kernel takes the filter's lock interruptibly
// for SEND, ID_VALID and ADDFD and answers EINTR, not a restart, when a
// signal is pending on our thread while a process of the tree holds the
// lock (it does, briefly, for every call it makes): on a loaded machine,
// with the runtime signalling its threads, an answer given once was
// lost so, and its process waited forever (TestCaptureStress). Nothing
// was done then, so asking again is safe; an ADDFD interrupted after it
// was queued is restarted by the kernel itself, or has taken effect.
func listenerIoctl(fd, req uintptr, arg unsafe.Pointer) (uintptr, syscall.Errno) {
	for {
		if h := TestHooks.ListenerIoctl; h != nil {
			if e := h(req); e == unix.EINTR {
				continue
			} else if e != 0 {
				return 0, e
			}
		}
		r, _, e := unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(arg))
		if e != unix.EINTR {
			return r, e
		}
	}
}

// respond answers one notification. It returns the kernel's error: ENOENT
// when the call was abandoned (signal, or the task died).
func (s *netSupervisorRun) respond(id uint64, val int64, errno unix.Errno, flags uint32) error {
	buf := make([]byte, s.respSize)
	binary.NativeEndian.PutUint64(buf[0:], id)
	binary.NativeEndian.PutUint64(buf[8:], uint64(val))
	binary.NativeEndian.PutUint32(buf[16:], uint32(-int32(errno)))
	binary.NativeEndian.PutUint32(buf[20:], flags)
	var e syscall.Errno
	if err := s.rc.Control(func(fd uintptr) {
		_, e = listenerIoctl(fd, uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND), unsafe.Pointer(&buf[0]))
	}); err != nil {
		return err
	}
	if e != 0 {
		return e
	}
	return nil
}

// idValid says whether notification id is still pending.
func (s *netSupervisorRun) idValid(id uint64) bool {
	e := syscall.Errno(1)
	s.rc.Control(func(fd uintptr) {
		_, e = listenerIoctl(fd, uintptr(unix.SECCOMP_IOCTL_NOTIF_ID_VALID), unsafe.Pointer(&id))
	})
	return e == 0
}

// errAbandoned is returned inside a call when the notification is no
// longer pending: there is nobody to answer.
var errAbandoned = errors.New("notification abandoned")

// errStopping is returned inside a call when stop() interrupted it.
var errStopping = errors.New("supervisor stopping")

// netCall is one notification being handled.
type netCall struct {
	s     *netSupervisorRun
	id    uint64
	tid   uint32
	nr    int32
	arch  uint32
	args  [6]uint64
	seq   uint64
	prev  *netCall // the thread's previous call, still in flight at receipt
	pidfd int      // pidfd of the target (thread pidfd when available)
	ownFD bool     // whether pidfd is ours to close
	dup   int      // the target's socket, taken with pidfd_getfd
	sock  sockInfo
	// fresh: the notification was confirmed after every read so far; the
	// first send may use the pre-read payload without confirming again.
	fresh bool
	// pathFDs are O_PATH descriptors of unix socket files named by the
	// call, closed when it is done.
	pathFDs []int

	effect     bool // the call reached the kernel (something may have happened)
	superseded atomic.Bool
	done       chan struct{}
}

// sockInfo is what the supervisor learns from the socket itself.
type sockInfo struct {
	family, typ int
	nonblock    bool
}

// outcome is the answer to give.
type outcome struct {
	val      int64
	errno    unix.Errno
	cont     bool // SECCOMP_USER_NOTIF_FLAG_CONTINUE (sendto without address only)
	sigpipe  bool // raise SIGPIPE in the target after answering (EPIPE without MSG_NOSIGNAL)
	abandon  bool // do not answer: the notification is gone
	noRecord bool // do not remember for a restart (no effect took place)
}

func fail(errno unix.Errno) outcome { return outcome{val: -1, errno: errno, noRecord: true} }

// run handles the call from start to answer. Nothing in here may take the
// parent down: a panic becomes EPERM for the child.
func (c *netCall) run() {
	s := c.s
	var out outcome
	defer func() {
		if r := recover(); r != nil {
			s.logf("sandbox: network supervisor: panic handling syscall %d: %v\n%s", c.nr, r, debug.Stack())
			out = fail(unix.EPERM)
		}
		c.finish(out)
	}()
	if c.arch != s.arch {
		// Another ABI (i386 via int 0x80, …) has other numbers and
		// struct layouts; the spawn filter should kill it before it
		// gets here.
		out = fail(unix.ENOSYS)
		return
	}
	if cached, ok := c.begin(); ok {
		// If this answer is refused too (another signal), remember it
		// again for the next restart.
		c.effect = true
		out = cached
		return
	}
	out = c.dispatch()
}

// register records the call in its thread's state, in the order the
// notifications were received (called by the loop).
func (c *netCall) register() {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.threads) > 4096 {
		s.sweepThreads()
	}
	st := s.threads[c.tid]
	if st == nil {
		st = &threadState{}
		s.threads[c.tid] = st
	}
	st.seq++
	c.seq = st.seq
	c.prev = st.inflight
	st.inflight = c
	if p := c.prev; p != nil && !c.mustWaitFor(p) {
		// Not a repeat and cannot send any more: let it finish on its
		// own, but its result is not this thread's to replay.
		p.superseded.Store(true)
	}
}

// mustWaitFor says whether the call must wait for the earlier, abandoned
// call p of its thread: if p can still send (data must not be reordered)
// or if this call may be p's restart. A connect that is not repeated need
// not be waited for.
func (c *netCall) mustWaitFor(p *netCall) bool {
	return p.nr == c.nr && p.args == c.args || isSendCall(p.nr)
}

// begin waits for the thread's abandoned previous call if needed. If this
// call repeats, immediately, one the kernel abandoned after it took effect,
// it returns that result instead of doing it twice.
func (c *netCall) begin() (outcome, bool) {
	s := c.s
	if p := c.prev; p != nil {
		c.prev = nil
		if c.mustWaitFor(p) {
			<-p.done
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.threads[c.tid]
	if st == nil {
		return outcome{}, false
	}
	rec := st.last
	st.last = nil
	if rec != nil && rec.seq+1 == c.seq && rec.nr == c.nr && rec.args == c.args && time.Now().Before(rec.expiry) {
		s.stats.replayed.Add(1)
		return outcome{val: rec.val, errno: rec.errno}, true
	}
	return outcome{}, false
}

// sweepThreads forgets threads with nothing in flight and an expired
// record (threads that died right after an abandoned call). s.mu is held.
func (s *netSupervisorRun) sweepThreads() {
	now := time.Now()
	for tid, st := range s.threads {
		if st.inflight == nil && (st.last == nil || now.After(st.last.expiry)) {
			delete(s.threads, tid)
		}
	}
}

func isSendCall(nr int32) bool {
	return nr == unix.SYS_SENDTO || nr == unix.SYS_SENDMSG || nr == unix.SYS_SENDMMSG
}

// finish answers, remembers a result the kernel refused, and releases
// resources.
func (c *netCall) finish(out outcome) {
	s := c.s
	var rerr error
	if !out.abandon {
		var flags uint32
		val, errno := out.val, out.errno
		if out.cont {
			flags, val, errno = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE, 0, 0
		}
		if errno != 0 {
			val = 0
		}
		rerr = s.respond(c.id, val, errno, flags)
		if out.sigpipe && rerr == nil && c.pidfd >= 0 {
			// The kernel raises SIGPIPE on EPIPE unless MSG_NOSIGNAL;
			// our own send used MSG_NOSIGNAL, so raise it here.
			unix.PidfdSendSignal(c.pidfd, unix.SIGPIPE, nil, 0)
		}
	}
	if rerr != nil || out.abandon {
		s.stats.abandoned.Add(1)
	}
	s.mu.Lock()
	if st := s.threads[c.tid]; st != nil {
		if (rerr != nil || out.abandon) && c.effect && !out.noRecord && !out.cont && !c.superseded.Load() {
			st.last = &doneRecord{seq: c.seq, nr: c.nr, args: c.args, val: out.val, errno: out.errno, expiry: time.Now().Add(10 * time.Second)}
		}
		if st.inflight == c {
			st.inflight = nil
			if st.last == nil {
				delete(s.threads, c.tid)
			}
		}
	}
	s.mu.Unlock()
	if c.dup >= 0 {
		unix.Close(c.dup)
	}
	for _, fd := range c.pathFDs {
		unix.Close(fd)
	}
	if c.ownFD && c.pidfd >= 0 {
		unix.Close(c.pidfd)
	}
	close(c.done)
}

// dispatch performs the call.
func (c *netCall) dispatch() outcome {
	switch c.nr {
	case unix.SYS_SENDTO:
		if c.args[4] == 0 {
			// No destination (see the file comment): the kernel can only
			// use the socket's validated peer.
			return outcome{cont: true, noRecord: true}
		}
		return c.handleSendto()
	case unix.SYS_CONNECT:
		return c.handleConnect()
	case unix.SYS_BIND:
		return c.handleBind()
	case unix.SYS_LISTEN:
		return c.handleListen()
	case unix.SYS_SENDMSG:
		return c.handleSendmsg()
	case unix.SYS_SENDMMSG:
		return c.handleSendmmsg()
	}
	return fail(unix.EPERM)
}

// openTarget opens a pidfd for the calling thread.
func (c *netCall) openTarget() unix.Errno {
	if c.pidfd >= 0 {
		return 0
	}
	if int(c.tid) == c.s.pid && c.s.pidfd >= 0 {
		c.pidfd = c.s.pidfd
		return 0
	}
	if c.tid == 0 {
		return unix.EPERM // target in a pid namespace we cannot see
	}
	fd, err := pidfdOfThread(int(c.tid))
	if err != nil {
		return errnoOf(err, unix.ESRCH)
	}
	c.pidfd, c.ownFD = fd, true
	return 0
}

// pidfdOfThread opens a pidfd through which the descriptors of thread tid
// can be taken (pidfd_getfd). A seccomp notification names the calling
// thread, which is not the thread-group leader when a program connects
// from a thread of its own (Go's resolver and dialer, libuv's pool): a
// plain pidfd_open(tid, 0) is EINVAL for such a thread. Every supervisor
// opens its target here, so the rule lives once.
func pidfdOfThread(tid int) (int, error) {
	fd, err := unix.PidfdOpen(tid, pidfdThread)
	if err == unix.EINVAL {
		// Before Linux 6.9 only thread-group leaders have pidfds. The
		// fd table is the group's unless the thread unshared it.
		tgid, terr := tgidOf(tid)
		if terr != nil {
			return -1, unix.ESRCH
		}
		fd, err = unix.PidfdOpen(tgid, 0)
	}
	return fd, err
}

func tgidOf(tid int) (int, error) {
	v, ok := statusField(tid, "Tgid")
	if !ok {
		return 0, errors.New("no Tgid")
	}
	return strconv.Atoi(v)
}

func splitLines(b []byte) []string {
	var out []string
	start := 0
	for i, ch := range b {
		if ch == '\n' {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return append(out, string(b[start:]))
}

func errnoOf(err error, def unix.Errno) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return def
}

// memRead is one range to copy from the calling thread.
type memRead struct {
	addr uint64
	buf  []byte
}

// readMem copies len(buf) bytes at addr from the calling thread.
func (c *netCall) readMem(addr uint64, buf []byte) unix.Errno {
	return c.readVec(memRead{addr, buf})
}

// readVec copies several ranges from the calling thread with one
// process_vm_readv. A short read is EFAULT, as the kernel's copy_from_user
// would be.
func (c *netCall) readVec(reads ...memRead) unix.Errno {
	local := make([]unix.Iovec, 0, len(reads))
	remote := make([]unix.RemoteIovec, 0, len(reads))
	total := 0
	for _, r := range reads {
		if len(r.buf) == 0 {
			continue
		}
		if r.addr == 0 || r.addr+uint64(len(r.buf)) < r.addr {
			return unix.EFAULT
		}
		iov := unix.Iovec{Base: &r.buf[0]}
		iov.SetLen(len(r.buf))
		local = append(local, iov)
		remote = append(remote, unix.RemoteIovec{Base: uintptr(r.addr), Len: len(r.buf)})
		total += len(r.buf)
	}
	if total == 0 {
		return 0
	}
	n, err := unix.ProcessVMReadv(int(c.tid), local, remote, 0)
	switch {
	case err == unix.ESRCH || err == unix.EPERM:
		return err.(unix.Errno)
	case err != nil || n != total:
		return unix.EFAULT
	}
	return 0
}

// writeMem copies buf to the calling thread (sendmmsg's msg_len).
func (c *netCall) writeMem(addr uint64, buf []byte) {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	unix.ProcessVMWritev(int(c.tid), local, remote, 0)
}

// confirm checks that the notification is still pending. Call it after
// reading the target's memory and before every effect.
func (c *netCall) confirm() error {
	if c.s.stopping.Load() {
		return errStopping
	}
	if !c.s.idValid(c.id) {
		return errAbandoned
	}
	return nil
}

// takeSocket duplicates the target's descriptor fd and learns what it is.
func (c *netCall) takeSocket(fd int32) unix.Errno {
	if fd < 0 {
		return unix.EBADF
	}
	dup, err := unix.PidfdGetfd(c.pidfd, int(fd), 0)
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	c.dup = dup
	if c.sock.family, err = unix.GetsockoptInt(dup, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil {
		return errnoOf(err, unix.ENOTSOCK)
	}
	if c.sock.typ, err = unix.GetsockoptInt(dup, unix.SOL_SOCKET, unix.SO_TYPE); err != nil {
		return errnoOf(err, unix.ENOTSOCK)
	}
	fl, err := unix.FcntlInt(uintptr(dup), unix.F_GETFL, 0)
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	c.sock.nonblock = fl&unix.O_NONBLOCK != 0
	return 0
}

// prepare opens the target, confirms the notification (after the reads the
// caller has done) and takes the socket.
func (c *netCall) prepare() (outcome, bool) {
	if e := c.openTarget(); e != 0 {
		return fail(e), false
	}
	if err := c.confirm(); err != nil {
		return c.stopped(err, 0), false
	}
	c.fresh = true
	if e := c.takeSocket(int32(c.args[0])); e != 0 {
		return fail(e), false
	}
	return outcome{}, true
}

// stopped turns errAbandoned/errStopping into an outcome; val is what the
// call achieved before (bytes or messages sent), for a restart to get.
func (c *netCall) stopped(err error, val int64) outcome {
	if err == errStopping {
		// Supervision ends: the sandbox is going away. What was sent
		// is reported, like a send cut short by a signal.
		if val > 0 {
			return outcome{val: val}
		}
		return fail(unix.EPERM)
	}
	return outcome{abandon: true, val: val, noRecord: !c.effect}
}

// readSockaddr reads an address argument of connect/bind/sendto.
func (c *netCall) readSockaddr(ptr uint64, lenArg uint64) ([]byte, unix.Errno) {
	n := int32(lenArg)
	if n < 0 || n > sockaddrMax {
		return nil, unix.EINVAL
	}
	sa := make([]byte, n)
	if e := c.readMem(ptr, sa); e != 0 {
		return nil, e
	}
	return sa, 0
}

// sourceRouted reports whether the socket carries IPv4 source routing or an
// IPv6 routing header (set with setsockopt before the call).
func sourceRouted(fd, family int) bool {
	var opts [40]byte
	n, err := getsockoptBytes(fd, unix.IPPROTO_IP, unix.IP_OPTIONS, opts[:])
	if err == nil && hasSourceRoute(opts[:n]) {
		return true
	}
	if err != nil && err != unix.ENOPROTOOPT && err != unix.EOPNOTSUPP {
		return true // cannot tell: refuse
	}
	if family == unix.AF_INET6 {
		var rt [8]byte
		n, err := getsockoptBytes(fd, unix.IPPROTO_IPV6, unix.IPV6_RTHDR, rt[:])
		if err == nil && n > 0 {
			return true
		}
		if err != nil && err != unix.ENOPROTOOPT && err != unix.EOPNOTSUPP {
			return true
		}
	}
	return false
}

func getsockoptBytes(fd, level, opt int, buf []byte) (int, error) {
	l := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return int(l), nil
}

func isInet(family int) bool { return family == unix.AF_INET || family == unix.AF_INET6 }

// handleConnect: connect(fd, addr, addrlen).
func (c *netCall) handleConnect() outcome {
	sa, e := c.readSockaddr(c.args[1], c.args[2])
	if e != 0 {
		return fail(e)
	}
	if out, ok := c.prepare(); !ok {
		return out
	}
	switch {
	case isInet(c.sock.family):
		v, errno, grant := c.s.judgeDestination(judgeInetConnect, sa, c.sock.typ)
		switch v {
		case verdictDeny:
			return c.refuse(RuleNetwork, "connect", sa, errno)
		case verdictInvalid:
			return fail(errno)
		case verdictAllow:
			// A source route reaches the route's first hop, not sa: of
			// no consequence where every address is allowed anyway.
			if c.s.opts.Mode != ModeUnrestricted && sourceRouted(c.dup, c.sock.family) {
				return fail(unix.EPERM)
			}
			if f := c.s.opts.OnDirect; grant != "" && f != nil {
				ap, _ := sockaddrAddrPort(sa)
				f(ap, grant)
			}
		}
		return c.doConnect(sa)
	case c.sock.family == unix.AF_UNIX:
		return c.handleUnixAddr("connect", sa, func(addr []byte) outcome { return c.doConnect(addr) })
	}
	return fail(unix.EPERM)
}

// refuse records a refusal of an IP address by rule and fails with
// errno.
func (c *netCall) refuse(rule RefusalRule, op string, sa []byte, errno unix.Errno) outcome {
	if ap, ok := sockaddrAddrPort(sa); ok {
		c.s.opts.Refusals.add(Refusal{rule, op, ap.String()})
	}
	return fail(errno)
}

// doConnect performs connect on the duplicate. A blocking socket blocks
// here, in this call's goroutine, exactly as the child would have; stop()
// ends it with shutdown(2).
func (c *netCall) doConnect(sa []byte) outcome {
	if err := c.confirm(); err != nil {
		return c.stopped(err, 0)
	}
	if !c.sock.nonblock {
		if !c.registerBlocking() {
			return fail(unix.EPERM)
		}
		defer c.unregisterBlocking()
	}
	c.effect = true
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(c.dup), sockaddrPtr(sa), uintptr(len(sa)))
	runtime.KeepAlive(sa)
	if e != 0 {
		return outcome{val: -1, errno: e}
	}
	return outcome{}
}

func (c *netCall) registerBlocking() bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.stopping.Load() {
		return false
	}
	c.s.blocking[c.dup] = struct{}{}
	return true
}

func (c *netCall) unregisterBlocking() {
	c.s.mu.Lock()
	delete(c.s.blocking, c.dup)
	c.s.mu.Unlock()
}

func sockaddrPtr(sa []byte) uintptr {
	if len(sa) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&sa[0]))
}

// handleBind: bind(fd, addr, addrlen).
func (c *netCall) handleBind() outcome {
	sa, e := c.readSockaddr(c.args[1], c.args[2])
	if e != 0 {
		return fail(e)
	}
	if out, ok := c.prepare(); !ok {
		return out
	}
	switch {
	case isInet(c.sock.family):
		if c.s.opts.Mode != ModeUnrestricted && isWildcard(sa) {
			// A wildcard is bound as asked, so that the program sees
			// the address, family and dual-stack behaviour it would
			// outside; what it may receive is kept to the loopback
			// device (keepOnLoopback says why and when).
			if c.sock.typ == unix.SOCK_DGRAM {
				if out, ok := c.keepOnLoopback(); !ok {
					return out
				}
			}
		} else if v, errno := c.s.judgeBind(sa); v == verdictDeny {
			return c.refuse(RuleNetwork, "bind", sa, errno)
		} else if v != verdictAllow {
			return fail(errno)
		}
		if out, ok := c.dropUDPReuseAddr(); !ok {
			return out
		}
		out := c.doBind(sa)
		if out.errno == 0 && !out.abandon {
			c.s.recordBind(c.dup, c.sock.typ)
		}
		return out
	case c.sock.family == unix.AF_UNIX:
		if len(sa) == 2 && binary.NativeEndian.Uint16(sa) == unix.AF_UNIX {
			return c.doBind(sa) // autobind: a fresh abstract name
		}
		return c.handleUnixAddr("bind", sa, nil)
	}
	return fail(unix.EPERM)
}

// dropUDPReuseAddr clears SO_REUSEADDR on a datagram socket about to be
// bound (every mode but unrestricted). On UDP the option lets a second
// socket bind an address and port that another socket with the option
// already holds — whoever owns it, no uid check — and the latest bind
// receives the datagrams: a command could take a user's local UDP
// service's queries (a DNS stub, say). Without it such a bind fails with
// EADDRINUSE, as it would for any taken port; the command's own UDP
// servers bind as before. (TCP's SO_REUSEADDR never shares a listener;
// SO_REUSEPORT, which would, is refused outright.)
func (c *netCall) dropUDPReuseAddr() (outcome, bool) {
	if c.sock.typ != unix.SOCK_DGRAM || c.s.opts.Mode == ModeUnrestricted {
		return outcome{}, true
	}
	v, err := unix.GetsockoptInt(c.dup, unix.SOL_SOCKET, unix.SO_REUSEADDR)
	if err != nil || v == 0 {
		return outcome{}, true
	}
	if err := c.confirm(); err != nil {
		return c.stopped(err, 0), false
	}
	c.effect = true
	if err := unix.SetsockoptInt(c.dup, unix.SOL_SOCKET, unix.SO_REUSEADDR, 0); err != nil {
		return fail(unix.EPERM), false
	}
	return outcome{}, true
}

func (c *netCall) doBind(sa []byte) outcome {
	if err := c.confirm(); err != nil {
		return c.stopped(err, 0)
	}
	c.effect = true
	_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(c.dup), sockaddrPtr(sa), uintptr(len(sa)))
	runtime.KeepAlive(sa)
	if e != 0 {
		return outcome{val: -1, errno: e}
	}
	return outcome{}
}

// handleListen: listen(fd, backlog). A socket bound to a wildcard, or
// never bound (the kernel then binds the wildcard), listens on the
// loopback device only (keepOnLoopback); one bound to an address listens
// where its mode lets it bind.
func (c *netCall) handleListen() outcome {
	if out, ok := c.prepare(); !ok {
		return out
	}
	backlog := int(int32(c.args[1]))
	unbound := false
	if isInet(c.sock.family) && c.s.opts.Mode != ModeUnrestricted {
		sa, err := unix.Getsockname(c.dup)
		if err != nil {
			return fail(errnoOf(err, unix.EINVAL))
		}
		var ip netip.Addr
		var port int
		switch a := sa.(type) {
		case *unix.SockaddrInet4:
			ip, port = addr4(a.Addr), a.Port
		case *unix.SockaddrInet6:
			ip, port = addr16(a.Addr), a.Port
		default:
			return fail(unix.EPERM)
		}
		switch {
		case ip.Unmap().IsUnspecified():
			if out, ok := c.keepOnLoopback(); !ok {
				return out
			}
			unbound = port == 0
		case !c.s.bindAllowed(ip):
			c.s.opts.Refusals.add(Refusal{RuleNetwork, "listen", netip.AddrPortFrom(ip.Unmap(), uint16(port)).String()})
			return fail(unix.EACCES)
		}
	}
	if err := c.confirm(); err != nil {
		return c.stopped(err, 0)
	}
	c.effect = true
	if err := unix.Listen(c.dup, backlog); err != nil {
		return outcome{val: -1, errno: errnoOf(err, unix.EINVAL)}
	}
	if unbound {
		c.s.recordBind(c.dup, c.sock.typ) // the port the kernel chose
	}
	return outcome{}
}

// keepOnLoopback binds the socket to the loopback device
// (SO_BINDTODEVICE "lo"), before a wildcard bind of a datagram socket and
// before listen on a wildcard-bound or unbound stream socket, in every
// mode but unrestricted.
//
// Why not another address: a program that binds 0.0.0.0 or :: observes
// what it bound — getsockname, a dual-stack socket's v4-mapped peers, a
// client of ::1 reaching a socket bound to :: — and test suites compare
// those (Express's req.ip, Node's server.address()). Bound to the
// wildcard on the loopback device, the socket is what it would be outside
// for every local client, while a packet that arrived on any other
// interface (another host, a container's veth) finds no socket: the
// kernel matches a socket bound to a device only against packets of that
// device (TestWildcardListenerLocalOnly). Loopback carries only this
// network namespace's own traffic, so who can reach the socket is who
// could reach 127.0.0.1, as for a socket bound there: the one difference allowed.
// The command cannot undo it: seccomp refuses SO_BINDTODEVICE and
// SO_BINDTOIFINDEX to it in every mode but unrestricted (routingSockopts
// in sandbox/internal/seccomp). A stream socket is bound to the device
// only when it listens: until then it can only connect, and a client that
// binds the wildcard before connecting (to choose its port) reaches, in
// private mode, the private hosts it would reach without the bind.
// What a command can tell: getsockopt(SO_BINDTODEVICE) says "lo", and a
// connection to a non-loopback address of this machine (its eth0 address)
// is refused where outside it would reach the wildcard listener.
func (c *netCall) keepOnLoopback() (outcome, bool) {
	if dev, err := unix.GetsockoptString(c.dup, unix.SOL_SOCKET, unix.SO_BINDTODEVICE); err == nil && dev == "lo" {
		// Already (a second listen): setting it again would need
		// CAP_NET_RAW.
		return outcome{}, true
	}
	if err := c.confirm(); err != nil {
		return c.stopped(err, 0), false
	}
	c.effect = true
	if err := unix.SetsockoptString(c.dup, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, "lo"); err != nil {
		return fail(unix.EPERM), false
	}
	return outcome{}, true
}

// handleSendto: sendto(fd, buf, len, flags, dest, addrlen) with dest != NULL.
func (c *netCall) handleSendto() outcome {
	nameLen := int32(c.args[5])
	if nameLen < 0 || nameLen > sockaddrMax {
		return fail(unix.EINVAL)
	}
	m := &outMsg{name: make([]byte, nameLen), segs: []remoteSeg{{c.args[1], clampRW(c.args[2])}}}
	m.total = m.segs[0].len
	// The address and the start of the payload in one read, confirmed once.
	m.pre = preBuf(min(m.total, copyChunk))
	defer m.release()
	if e := c.readVec(memRead{c.args[4], m.name}, memRead{c.args[1], m.pre}); e != 0 {
		return fail(e)
	}
	if out, ok := c.prepare(); !ok {
		return out
	}
	flags := uint32(c.args[3])
	out, name, ok := c.checkName(m.name)
	if !ok {
		return out
	}
	m.name = name
	n, out := c.sendOne(m, flags)
	if out.errno != 0 || out.abandon {
		return out
	}
	return outcome{val: int64(n)}
}

// clampRW applies the kernel's MAX_RW_COUNT to a length.
func clampRW(n uint64) uint64 {
	const maxRW = 0x7ffff000
	if n > maxRW {
		return maxRW
	}
	return n
}

// checkName validates a destination given to a send call and returns the
// bytes to hand to the kernel (for AF_UNIX pathnames, a path the supervisor
// resolved itself).
func (c *netCall) checkName(sa []byte) (outcome, []byte, bool) {
	if len(sa) == 0 {
		return outcome{}, nil, true
	}
	switch {
	case isInet(c.sock.family):
		v, errno, _ := c.s.judgeDestination(judgeInetSend, sa, c.sock.typ)
		switch v {
		case verdictDeny:
			return c.refuse(RuleNetwork, "send", sa, errno), nil, false
		case verdictInvalid:
			return fail(errno), nil, false
		case verdictAllow:
			if sourceRouted(c.dup, c.sock.family) {
				return fail(unix.EPERM), nil, false
			}
		}
		return outcome{}, sa, true
	case c.sock.family == unix.AF_UNIX:
		var name []byte
		out := c.handleUnixAddr("send", sa, func(addr []byte) outcome {
			name = addr
			return outcome{}
		})
		if out.errno != 0 || out.abandon {
			return out, nil, false
		}
		return outcome{}, name, true
	}
	return fail(unix.EPERM), nil, false
}

// remoteSeg is a range of the target's memory.
type remoteSeg struct{ addr, len uint64 }

// outMsg is one message to send, with the payload still in the target.
type outMsg struct {
	name    []byte
	control []byte
	segs    []remoteSeg
	total   uint64
	fds     []int  // descriptors taken for SCM_RIGHTS, closed after
	pre     []byte // the payload's first bytes, read with the rest
}

func (m *outMsg) closeFDs() {
	for _, fd := range m.fds {
		unix.Close(fd)
	}
	m.fds = nil
}

// release returns the pre-read buffer to the pool.
func (m *outMsg) release() {
	if cap(m.pre) == copyChunk {
		p := m.pre[:copyChunk]
		chunkPool.Put(&p)
	}
	m.pre = nil
}

// preBuf returns a buffer for n (<= copyChunk) pre-read bytes.
func preBuf(n uint64) []byte {
	if n <= 4096 {
		return make([]byte, n)
	}
	return (*chunkPool.Get().(*[]byte))[:n]
}

// readPayload copies [off, off+len(buf)) of the message payload.
func (c *netCall) readPayload(m *outMsg, off uint64, buf []byte) unix.Errno {
	want := uint64(len(buf))
	var pos uint64
	for _, s := range m.segs {
		if want == 0 {
			break
		}
		if off >= pos+s.len {
			pos += s.len
			continue
		}
		start := off - pos
		n := min(s.len-start, want)
		if e := c.readMem(s.addr+start, buf[:n]); e != 0 {
			return e
		}
		buf = buf[n:]
		want -= n
		off += n
		pos += s.len
	}
	return 0
}

var chunkPool = sync.Pool{New: func() any { b := make([]byte, copyChunk); return &b }}

// sendOne sends one message on the duplicate, emulating the socket's
// blocking mode, and returns the byte count. For a stream it sends up to
// maxCallCopy bytes in chunks, confirming the notification before each; a
// datagram is sent whole or not at all. On abandonment the outcome carries
// what was sent, for a restart to get.
func (c *netCall) sendOne(m *outMsg, flags uint32) (int, outcome) {
	defer m.closeFDs()
	if flags&unix.MSG_ZEROCOPY != 0 {
		// The kernel would keep using our buffer after we reuse it.
		return 0, fail(unix.EOPNOTSUPP)
	}
	stream := c.sock.typ == unix.SOCK_STREAM
	total := m.total
	if total > maxCallCopy {
		if !stream {
			return 0, fail(unix.EMSGSIZE)
		}
		total = maxCallCopy // a short count, as a signal would give
	}
	blocking := !c.sock.nonblock && flags&unix.MSG_DONTWAIT == 0
	// Our send never blocks (so stop() and abandonment can end a wait)
	// and never raises SIGPIPE in the parent; both are emulated.
	sendFlags := int(flags | unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL)
	fastOpen := flags&unix.MSG_FASTOPEN != 0 && blocking
	if fastOpen {
		// TCP Fast Open connects as it sends: like connect, it is
		// performed blocking (and ended by stop() with shutdown).
		sendFlags &^= unix.MSG_DONTWAIT
	}
	// SO_SNDTIMEO bounds a blocking send: read it when we first wait.
	var deadline time.Time
	deadlineSet := false
	wait := func() error {
		if !deadlineSet {
			deadlineSet = true
			if tv, err := unix.GetsockoptTimeval(c.dup, unix.SOL_SOCKET, unix.SO_SNDTIMEO); err == nil && (tv.Sec != 0 || tv.Usec != 0) {
				deadline = time.Now().Add(time.Duration(tv.Nano()))
			}
		}
		return c.waitWritable(deadline)
	}

	var buf []byte
	switch {
	case uint64(len(m.pre)) >= total && !stream:
		buf = m.pre[:total] // the whole datagram was read with the rest
	case stream || total <= copyChunk:
		p := chunkPool.Get().(*[]byte)
		defer chunkPool.Put(p)
		buf = *p
		if !stream {
			buf = buf[:total]
		}
	default:
		// A datagram over 64 KiB (unix seqpacket) must be copied whole;
		// bound how many such buffers the parent holds at once.
		select {
		case c.s.bigBufs <- struct{}{}:
		case <-c.s.stopCh:
			return 0, fail(unix.EPERM)
		}
		defer func() { <-c.s.bigBufs }()
		buf = make([]byte, total)
	}

	var sent uint64
	var backoff time.Duration // grows while "writable" sockets still refuse
	for first := true; first || sent < total; {
		chunk := buf
		if stream {
			chunk = buf[:min(total-sent, uint64(len(buf)))]
		}
		// The payload's start was read with the address and confirmed
		// once (prepare); anything read later is confirmed before use.
		preread := sent == 0 && uint64(len(m.pre)) >= uint64(len(chunk))
		if preread {
			chunk = m.pre[:len(chunk)]
		} else if e := c.readPayload(m, sent, chunk); e != 0 {
			if sent > 0 {
				break
			}
			return 0, fail(e)
		}
		if !(preread && c.fresh) {
			if err := c.confirm(); err != nil {
				return int(sent), c.stopped(err, int64(sent))
			}
		}
		c.fresh = false
		var name, control []byte
		if first {
			name, control = m.name, m.control
		}
		if fastOpen && !c.registerBlocking() {
			return int(sent), fail(unix.EPERM)
		}
		n, errno := rawSendmsg(c.dup, name, chunk, control, sendFlags)
		if fastOpen {
			c.unregisterBlocking()
		}
		if errno == unix.EAGAIN && blocking && !fastOpen {
			if backoff > 0 {
				time.Sleep(backoff)
			}
			backoff = min(max(2*backoff, time.Millisecond), 50*time.Millisecond)
			if werr := wait(); werr != nil {
				if werr == errTimedOut {
					if sent > 0 {
						break
					}
					return 0, outcome{val: -1, errno: unix.EAGAIN}
				}
				return int(sent), c.stopped(werr, int64(sent))
			}
			continue
		}
		if errno != 0 {
			if sent > 0 {
				break // the kernel reports what was sent before the error
			}
			return 0, outcome{val: -1, errno: errno, sigpipe: errno == unix.EPIPE && flags&unix.MSG_NOSIGNAL == 0}
		}
		c.effect = true
		backoff = 0
		first = false
		sent += uint64(n)
		if !stream {
			break
		}
		if n < len(chunk) {
			if !blocking {
				break
			}
			// The buffer is full: wait for room, as a blocking send would.
			if werr := wait(); werr != nil {
				if werr == errTimedOut {
					break
				}
				return int(sent), c.stopped(werr, int64(sent))
			}
		}
	}
	return int(sent), outcome{}
}

var errTimedOut = errors.New("send timeout")

// waitWritable waits until the duplicate can take data, stop() is called,
// the deadline (SO_SNDTIMEO) passes or the notification is abandoned —
// checked every waitSlice, since the kernel does not tell us.
func (c *netCall) waitWritable(deadline time.Time) error {
	fds := []unix.PollFd{
		{Fd: int32(c.dup), Events: unix.POLLOUT},
		{Fd: int32(c.s.stopFD), Events: unix.POLLIN},
	}
	for {
		slice := waitSlice
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return errTimedOut
			}
			slice = min(slice, left)
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		n, err := unix.Poll(fds, int(slice/time.Millisecond)+1)
		if err != nil && err != unix.EINTR {
			return errStopping
		}
		if fds[1].Revents != 0 || c.s.stopping.Load() {
			return errStopping
		}
		if c.superseded.Load() || !c.s.idValid(c.id) {
			return errAbandoned
		}
		if n > 0 && fds[0].Revents != 0 {
			return nil // writable, or an error the next send reports
		}
	}
}

// rawSendmsg sends one message built from the supervisor's own copies.
func rawSendmsg(fd int, name, data, control []byte, flags int) (int, unix.Errno) {
	var msg unix.Msghdr
	var iov unix.Iovec
	if len(data) > 0 {
		iov.Base = &data[0]
		iov.SetLen(len(data))
		msg.Iov = &iov
		msg.SetIovlen(1)
	}
	if len(name) > 0 {
		msg.Name = &name[0]
		msg.Namelen = uint32(len(name))
	}
	if len(control) > 0 {
		msg.Control = &control[0]
		msg.SetControllen(len(control))
	}
	r, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
	runtime.KeepAlive(data)
	runtime.KeepAlive(name)
	runtime.KeepAlive(control)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// parseMsghdr reads and checks a struct msghdr (and its name, iovec array
// and control data) at addr, following ___sys_sendmsg's rules.
func (c *netCall) parseMsghdr(addr uint64) (*outMsg, unix.Errno) {
	var hdr [msghdrSize]byte
	if e := c.readMem(addr, hdr[:]); e != 0 {
		return nil, e
	}
	namePtr := binary.NativeEndian.Uint64(hdr[0:])
	nameLen := int32(binary.NativeEndian.Uint32(hdr[8:]))
	iovPtr := binary.NativeEndian.Uint64(hdr[16:])
	iovLen := binary.NativeEndian.Uint64(hdr[24:])
	ctlPtr := binary.NativeEndian.Uint64(hdr[32:])
	ctlLen := binary.NativeEndian.Uint64(hdr[40:])

	m := &outMsg{}
	if nameLen < 0 {
		return nil, unix.EINVAL
	}
	if namePtr != 0 && nameLen > 0 {
		// The kernel truncates an over-long name to sockaddr_storage;
		// a NULL name or a zero length means "no name".
		m.name = make([]byte, min(int(nameLen), sockaddrMax))
	}
	if iovLen > uioMaxIOV {
		return nil, unix.EMSGSIZE
	}
	if ctlLen > maxControl {
		return nil, unix.ENOBUFS
	}
	raw := make([]byte, iovLen*16)
	if ctlLen > 0 {
		m.control = make([]byte, ctlLen)
	}
	if e := c.readVec(memRead{namePtr, m.name}, memRead{iovPtr, raw}, memRead{ctlPtr, m.control}); e != 0 {
		return nil, e
	}
	var total uint64
	for i := uint64(0); i < iovLen; i++ {
		base := binary.NativeEndian.Uint64(raw[16*i:])
		l := binary.NativeEndian.Uint64(raw[16*i+8:])
		if int64(l) < 0 {
			return nil, unix.EINVAL
		}
		l = min(l, clampRW(total+l)-total) // MAX_RW_COUNT over the whole vector
		if l > 0 {
			m.segs = append(m.segs, remoteSeg{base, l})
		}
		total += l
	}
	m.total = total
	m.pre = preBuf(min(total, copyChunk))
	if e := c.readPayload(m, 0, m.pre); e != 0 {
		m.release()
		return nil, e
	}
	return m, 0
}

// handleSendmsg: sendmsg(fd, msg, flags).
func (c *netCall) handleSendmsg() outcome {
	m, e := c.parseMsghdr(c.args[1])
	if e != 0 {
		return fail(e)
	}
	defer m.release()
	if out, ok := c.prepare(); !ok {
		return out
	}
	n, out := c.sendMsg(m, uint32(c.args[2]))
	if out.errno != 0 || out.abandon {
		return out
	}
	return outcome{val: int64(n)}
}

// sendMsg validates the name and control data of a parsed message and
// sends it.
func (c *netCall) sendMsg(m *outMsg, flags uint32) (int, outcome) {
	out, name, ok := c.checkName(m.name)
	if !ok {
		m.closeFDs()
		return 0, out
	}
	m.name = name
	if len(m.control) > 0 {
		ctl, errno := c.checkControl(m)
		if errno != 0 {
			m.closeFDs()
			return 0, fail(errno)
		}
		m.control = ctl
	}
	return c.sendOne(m, flags)
}

// handleSendmmsg: sendmmsg(fd, msgvec, vlen, flags). Messages are read
// and sent one at a time, like the kernel does; the first failure ends the
// batch and is reported only if nothing was sent.
func (c *netCall) handleSendmmsg() outcome {
	vec := c.args[1]
	vlen := min(uint32(c.args[2]), uioMaxIOV)
	flags := uint32(c.args[3])
	if vlen == 0 {
		if out, ok := c.prepare(); !ok {
			return out
		}
		return outcome{}
	}
	var sent int64
	for i := uint32(0); i < vlen; i++ {
		at := vec + uint64(i)*mmsghdrSize
		m, e := c.parseMsghdr(at)
		if e == 0 && i == 0 {
			if out, ok := c.prepare(); !ok {
				return out
			}
		}
		if e != 0 {
			if sent > 0 {
				break
			}
			return fail(e)
		}
		n, out := c.sendMsg(m, flags)
		m.release()
		if out.abandon {
			// What a restart of this batch should be told.
			if n > 0 {
				c.putMsgLen(at, n)
				sent++
			}
			out.val = sent
			return out
		}
		if out.errno != 0 {
			if sent > 0 {
				break
			}
			return out
		}
		c.putMsgLen(at, n)
		sent++
	}
	return outcome{val: sent}
}

// putMsgLen stores a message's byte count in its mmsghdr, as the kernel
// does. A failure to write is ignored (the kernel would not undo the send
// either).
func (c *netCall) putMsgLen(at uint64, n int) {
	var l [4]byte
	binary.NativeEndian.PutUint32(l[:], uint32(n))
	c.writeMem(at+msghdrSize, l[:])
}

// checkControl validates ancillary data and rebuilds it from what was
// validated, so the kernel parses exactly that.
func (c *netCall) checkControl(m *outMsg) ([]byte, unix.Errno) {
	var out []byte
	ctl := m.control
	const hdr = unix.SizeofCmsghdr
	for len(ctl) >= hdr {
		l := binary.NativeEndian.Uint64(ctl[0:])
		level := int32(binary.NativeEndian.Uint32(ctl[8:]))
		typ := int32(binary.NativeEndian.Uint32(ctl[12:]))
		if l < hdr || l > uint64(len(ctl)) {
			return nil, unix.EINVAL
		}
		data := ctl[hdr:l]
		var add []byte
		switch {
		case isInet(c.sock.family):
			if !c.inetCmsgAllowed(level, typ, data) {
				return nil, unix.EPERM
			}
			add = data
		case c.sock.family == unix.AF_UNIX && level != unix.SOL_SOCKET:
			// The kernel ignores other levels on unix sockets; drop them.
			add = nil
		case c.sock.family == unix.AF_UNIX:
			switch typ {
			case unix.SCM_RIGHTS:
				if len(data)%4 != 0 || len(data)/4 > 253 {
					return nil, unix.EINVAL
				}
				add = make([]byte, len(data))
				for i := 0; i < len(data); i += 4 {
					fd, err := unix.PidfdGetfd(c.pidfd, int(int32(binary.NativeEndian.Uint32(data[i:]))), 0)
					if err != nil {
						return nil, unix.EBADF
					}
					m.fds = append(m.fds, fd)
					binary.NativeEndian.PutUint32(add[i:], uint32(fd))
				}
			case unix.SCM_CREDENTIALS:
				// The kernel would check the claimed credentials
				// against the supervisor, not the child.
				return nil, unix.EPERM
			default:
				return nil, unix.EINVAL
			}
		default:
			return nil, unix.EPERM
		}
		if add != nil || level == unix.SOL_SOCKET || isInet(c.sock.family) {
			out = appendCmsg(out, level, typ, add)
		}
		step := cmsgAlign(l)
		if step >= uint64(len(ctl)) {
			break
		}
		ctl = ctl[step:]
	}
	return out, 0
}

func cmsgAlign(l uint64) uint64 { return (l + 7) &^ 7 }

func appendCmsg(b []byte, level, typ int32, data []byte) []byte {
	start := len(b)
	l := unix.SizeofCmsghdr + len(data)
	b = append(b, make([]byte, cmsgAlign(uint64(l)))...)
	binary.NativeEndian.PutUint64(b[start:], uint64(l))
	binary.NativeEndian.PutUint32(b[start+8:], uint32(level))
	binary.NativeEndian.PutUint32(b[start+12:], uint32(typ))
	copy(b[start+unix.SizeofCmsghdr:], data)
	return b
}

// inetCmsgAllowed is the allowlist of ancillary data on inet sockets.
// Everything that can change where a packet goes (IP_RETOPTS source routes,
// IPV6_RTHDR, IPV6_NEXTHOP, an output interface in *_PKTINFO) is out.
func (c *netCall) inetCmsgAllowed(level, typ int32, data []byte) bool {
	switch level {
	case unix.SOL_UDP:
		return typ == unix.UDP_SEGMENT
	case unix.SOL_IP:
		switch typ {
		case unix.IP_TOS, unix.IP_TTL:
			return true
		case unix.IP_PKTINFO: // struct in_pktinfo {ifindex; spec_dst; addr}
			if len(data) < 12 || binary.NativeEndian.Uint32(data) != 0 {
				return false
			}
			src := [4]byte(data[4:8])
			return src == [4]byte{} || c.s.bindAllowed(addr4(src))
		}
	case unix.SOL_IPV6:
		switch typ {
		case unix.IPV6_TCLASS, unix.IPV6_HOPLIMIT, unix.IPV6_DONTFRAG:
			return true
		case unix.IPV6_PKTINFO: // struct in6_pktinfo {addr; ifindex}
			if len(data) < 20 || binary.NativeEndian.Uint32(data[16:]) != 0 {
				return false
			}
			src := [16]byte(data[:16])
			return src == [16]byte{} || c.s.bindAllowed(addr16(src))
		}
	case unix.SOL_SOCKET:
		return typ == unix.SO_TIMESTAMPING || typ == unix.SO_TXTIME
	}
	return false
}

// handleUnixAddr decides and performs an AF_UNIX operation that names an
// address. For connect and send, do is called with the address to hand to
// the kernel; for bind, the bind happens here.
//
// Why not simply let AF_UNIX through: a CONTINUE answer is unsafe even
// here — between our look at descriptor N and the kernel's, another thread
// can dup2 an inet socket onto N and rewrite the address. And performing
// the call in the supervisor changes who makes it:
//   - a pathname is resolved here, in the calling thread's root and
//     working directory (/proc/TID/root, /proc/TID/cwd), refusing /proc
//     magic links (RESOLVE_NO_MAGICLINKS: "/proc/self/fd/N" would name
//     the supervisor's descriptors). The socket inode is opened O_PATH and
//     the kernel is given "/proc/self/fd/<that fd>", so the inode decided
//     on is the inode connected to, whatever the child renames meanwhile;
//   - the supervisor's credentials, not the child's, are what the server
//     sees (SO_PEERCRED, SCM_CREDENTIALS with SO_PASSCRED) and what the
//     socket file's permission is checked against — so Unix must only
//     allow sockets the child may use anyway (its workspace);
//   - Landlock's abstract-socket scoping does not apply to the supervisor:
//     an abstract connect performed here escapes it. Refuse the abstract
//     namespace unless the policy really means it.
//   - bind of a pathname creates the socket file: it is done on a thread
//     of its own that unshares its fs_struct, enters the resolved parent
//     directory and takes the child's umask, so the file is made there and
//     nowhere else (the child's Landlock rules do not apply to it: Unix
//     decides). getsockname() then reports the base name only.
func (c *netCall) handleUnixAddr(op string, sa []byte, do func([]byte) outcome) outcome {
	if len(sa) < 2 {
		return fail(unix.EINVAL)
	}
	fam := binary.NativeEndian.Uint16(sa)
	if fam == unix.AF_UNSPEC && op == "connect" && do != nil {
		return do(sa) // dissolve a datagram association
	}
	if fam != unix.AF_UNIX || len(sa) <= 2 {
		return fail(unix.EINVAL)
	}
	path := sa[2:]
	req := UnixRequest{Op: op}
	if path[0] == 0 {
		req.Abstract = true
		req.Name = string(path[1:])
		if c.s.opts.Unix == nil || !c.s.opts.Unix(req) {
			c.s.opts.Refusals.add(Refusal{RuleUnixSocket, op, "@" + req.Name})
			return fail(unix.EPERM) // what Landlock's scoping answers
		}
		if op == "bind" {
			return c.doBind(sa)
		}
		return do(sa)
	}
	if i := indexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	req.Name = string(path)
	if c.s.opts.Unix == nil {
		return fail(unix.EACCES)
	}
	if op == "bind" {
		return c.unixBindPath(req)
	}
	fd, e := c.openChildPath(req.Name, false)
	if e != 0 {
		return fail(e)
	}
	// The kernel resolves "/proc/self/fd/<fd>" when the call is made,
	// which for a send is later: keep fd open until the call is done.
	c.pathFDs = append(c.pathFDs, fd)
	req.Path, _ = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if !c.s.opts.Unix(req) {
		c.s.opts.Refusals.add(Refusal{RuleUnixSocket, op, req.Path})
		return fail(unix.EACCES)
	}
	return do(unixSockaddr(fmt.Sprintf("/proc/self/fd/%d", fd)))
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func unixSockaddr(path string) []byte {
	sa := make([]byte, 2+len(path)+1)
	binary.NativeEndian.PutUint16(sa, unix.AF_UNIX)
	copy(sa[2:], path)
	return sa
}

// openChildPath opens path (O_PATH) as the calling thread would resolve
// it. With parent, it opens the directory that would hold the last
// component and returns that component too.
func (c *netCall) openChildPath(path string, parent bool) (int, unix.Errno) {
	return openChildPathAt(int(c.tid), c.s.opts.MountNS, atFDCWD, path, parent, c.confirm)
}

// openChildPathAt opens path (O_PATH) as thread tid would resolve it
// relative to its descriptor dirfd (atFDCWD: its working directory): the
// one resolver of the child's paths, shared by this supervisor and change
// capture (capture_emulate_linux.go). With parent, path must name a
// directory. confirm is called once the base is open: the tid may have
// been reused before, so nothing opened is trusted unless it succeeds.
func openChildPathAt(tid int, mountNS uint64, dirfd int32, path string, parent bool, confirm func() error) (int, unix.Errno) {
	if path == "" {
		return -1, unix.ENOENT
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	proc := "/proc/" + strconv.Itoa(tid)
	base := proc + "/cwd"
	if dirfd != atFDCWD {
		base = proc + "/fd/" + strconv.Itoa(int(dirfd))
	}
	if parent {
		how.Flags |= unix.O_DIRECTORY
	}
	if path[0] == '/' {
		// Absolute: inside the thread's root (RESOLVE_IN_ROOT also
		// keeps absolute symlinks and ".." within it).
		base = proc + "/root"
		how.Resolve |= unix.RESOLVE_IN_ROOT
	}
	dir, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if dirfd != atFDCWD && path[0] != '/' {
			// Not a directory, or no such descriptor: what the
			// kernel would answer the thread.
			if errors.Is(err, unix.ENOENT) {
				return -1, unix.EBADF
			}
			return -1, errnoOf(err, unix.EACCES)
		}
		return -1, unix.EACCES
	}
	defer unix.Close(dir)
	if err := confirm(); err != nil {
		// The tid may have been reused: do not trust what we opened.
		return -1, unix.EACCES
	}
	if path[0] != '/' {
		// A relative path that only descends from the base, through no
		// symlink and no "..", names the same file whatever the
		// thread's root and mount namespace: the mounts it crosses are
		// those of the base, the thread's own cwd or descriptor. Most
		// relative paths are such (a build's "out/x.o", a shell's
		// "> f"); any other is resolved below, as the thread would.
		fast := how
		fast.Resolve |= unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS
		fd, err := unix.Openat2(dir, path, &fast)
		switch {
		case err == nil:
			return fd, 0
		case !errors.Is(err, unix.EXDEV) && !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.EAGAIN):
			// Met before any symlink or "..": what the thread meets.
			return -1, errnoOf(err, unix.ENOENT)
		}
		if !sameRoot(tid, mountNS) {
			// Relative with another root: our resolution of absolute
			// symlinks would differ from the child's.
			return -1, unix.EACCES
		}
	}
	// The sandbox's own namespace with its skeleton root: resolved from
	// our root, an absolute symlink the command planted would be
	// followed through the host's tree (and say whether an ungranted
	// file exists). Such a path is resolved inside the thread's root.
	if path[0] != '/' && !rootIsOurs(tid) {
		if fd, errno, named := openRelativeInRoot(tid, dir, path, &how); named {
			return fd, errno
		}
		// The base has no name inside the root (a removed directory,
		// one deeper than PATH_MAX, or renamed meanwhile): resolve from
		// the base itself, where ".." and relative links walk the
		// thread's own mounts as they do for it, but refuse symlinks
		// (ELOOP), since an absolute one would be followed through our
		// root.
		how.Resolve |= unix.RESOLVE_NO_SYMLINKS
	}
	fd, err := unix.Openat2(dir, path, &how)
	if err != nil {
		return -1, errnoOf(err, unix.ENOENT)
	}
	return fd, 0
}

// rootIsOurs says whether thread tid's root is the supervisor's own.
func rootIsOurs(tid int) bool {
	var a, b unix.Stat_t
	return unix.Stat(fmt.Sprintf("/proc/%d/root", tid), &a) == nil && unix.Stat("/", &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// openRelativeInRoot opens a relative path as thread tid resolves it
// from dir (its cwd or a descriptor's directory, opened and confirmed)
// when its root is not ours: dir's path inside the thread's namespace
// (what readlink says of it: the path from that namespace's root) is
// opened inside the thread's root and must be dir itself (not a name
// since renamed onto another directory); then that path joined with path
// is opened the same way, so that "..", and absolute symlinks, stay
// within the thread's root as they do for the thread. named is false
// when dir has no such name (removed, deeper than PATH_MAX, renamed).
func openRelativeInRoot(tid, dir int, path string, how *unix.OpenHow) (fd int, errno unix.Errno, named bool) {
	prefix, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dir))
	if err != nil || !filepath.IsAbs(prefix) {
		return -1, 0, false
	}
	var want, got unix.Stat_t
	if err := unix.Fstat(dir, &want); err != nil {
		return -1, 0, false
	}
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", tid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, unix.EACCES, true
	}
	defer unix.Close(root)
	in := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	pfd, err := unix.Openat2(root, prefix, &in)
	if err != nil {
		return -1, 0, false
	}
	err = unix.Fstat(pfd, &got)
	unix.Close(pfd)
	if err != nil || got.Dev != want.Dev || got.Ino != want.Ino {
		return -1, 0, false
	}
	h := *how
	h.Resolve |= unix.RESOLVE_IN_ROOT
	fd, err = unix.Openat2(root, prefix+"/"+path, &h)
	if err != nil {
		return -1, errnoOf(err, unix.ENOENT), true
	}
	return fd, 0, true
}

// sameRoot says whether thread tid has the supervisor's root and mount
// namespace, or the sandbox's own copy of it (mountNS, its inode; 0: none
// made). A mount made on the host after that copy is the one place the
// two could differ; what is opened is still checked beneath the
// read-write roots, so the difference could only refuse, never widen.
// Shared by the network supervisor and change capture.
func sameRoot(tid int, mountNS uint64) bool {
	var a, b unix.Stat_t
	// In the sandbox's own namespace the root may be its skeleton
	// (sandbox/internal/spawn/rootfs_linux.go): every granted path is bound there at
	// its host path; a relative path is then resolved inside the
	// thread's root (openRelativeInRoot), an absolute one always is.
	if mountNS != 0 && unix.Stat(fmt.Sprintf("/proc/%d/ns/mnt", tid), &a) == nil && a.Ino == mountNS {
		return true
	}
	if unix.Stat(fmt.Sprintf("/proc/%d/root", tid), &a) != nil || unix.Stat("/", &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		return false
	}
	if unix.Stat(fmt.Sprintf("/proc/%d/ns/mnt", tid), &a) != nil || unix.Stat("/proc/self/ns/mnt", &b) != nil {
		return false
	}
	return a.Ino == b.Ino || (mountNS != 0 && a.Ino == mountNS)
}

// unixBindPath binds the socket to a pathname (see handleUnixAddr).
func (c *netCall) unixBindPath(req UnixRequest) outcome {
	dirPath, baseName := splitPath(req.Name)
	if baseName == "" || baseName == "." || baseName == ".." || len(baseName) > 107 {
		return fail(unix.EINVAL)
	}
	dir, e := c.openChildPath(dirPath, true)
	if e != 0 {
		return fail(e)
	}
	defer unix.Close(dir)
	resolved, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dir))
	req.Path = resolved + "/" + baseName
	if resolved == "/" {
		req.Path = "/" + baseName
	}
	if !c.s.opts.Unix(req) {
		c.s.opts.Refusals.add(Refusal{RuleUnixSocket, "bind", req.Path})
		return fail(unix.EACCES)
	}
	// Change capture: the socket file is a new path in the workspace,
	// which a rewind removes (capture_linux.go).
	if e := c.s.opts.Capture.beforeBind(req.Path); e != 0 {
		return fail(e)
	}
	umask := childUmask(int(c.tid))
	if err := c.confirm(); err != nil {
		return c.stopped(err, 0)
	}
	c.effect = true
	errc := make(chan unix.Errno, 1)
	go func() {
		// This thread's fs_struct is changed below, so the thread must
		// never run other goroutines: it is not unlocked and exits with
		// this goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- errnoOf(err, unix.EPERM)
			return
		}
		if err := unix.Fchdir(dir); err != nil {
			errc <- errnoOf(err, unix.EACCES)
			return
		}
		unix.Umask(umask)
		sa := unixSockaddr(baseName)
		_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(c.dup), sockaddrPtr(sa), uintptr(len(sa)))
		runtime.KeepAlive(sa)
		errc <- e
	}()
	if e := <-errc; e != 0 {
		return outcome{val: -1, errno: e}
	}
	return outcome{}
}

func splitPath(p string) (dir, base string) {
	i := len(p) - 1
	for i >= 0 && p[i] != '/' {
		i--
	}
	dir, base = p[:i+1], p[i+1:]
	if dir == "" {
		dir = "."
	}
	return dir, base
}

// childUmask is thread tid's umask (0o077 when it cannot be read).
func childUmask(tid int) int {
	if v, ok := statusField(tid, "Umask"); ok {
		if m, err := strconv.ParseUint(v, 8, 32); err == nil {
			return int(m)
		}
	}
	return 0o077
}

// statusField is the value of field in /proc/TID/status, one of the
// first lines (Umask, Tgid, Pid...). Read with one read(2) into a buffer
// of the stack: a captured creation asks for the umask each time, and
// the kernel writes the whole file for every open of it.
func statusField(tid int, field string) (string, bool) {
	var buf [1024]byte
	fd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return "", false
	}
	b := buf[:n]
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		// The command's name is the first line, escaped: no newline
		// in it starts another field.
		if k, v, ok := bytes.Cut(line, []byte{':'}); ok && string(k) == field {
			return string(bytes.TrimSpace(v)), true
		}
	}
	return "", false
}

func inet4Sockaddr(a [4]byte) []byte {
	sa := make([]byte, unix.SizeofSockaddrInet4)
	binary.NativeEndian.PutUint16(sa, unix.AF_INET)
	copy(sa[4:], a[:])
	return sa
}

func inet6Sockaddr(a [16]byte) []byte {
	sa := make([]byte, unix.SizeofSockaddrInet6)
	binary.NativeEndian.PutUint16(sa, unix.AF_INET6)
	copy(sa[8:], a[:])
	return sa
}
