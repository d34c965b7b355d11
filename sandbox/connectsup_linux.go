package sandbox

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The connect supervisor: why it exists.
//
// Landlock (through ABI 7) does not check connect(2) on pathname unix
// sockets: a confined process can reach /var/run/docker.sock, an ssh-agent
// or the user's D-Bus as long as it can name the path, because Landlock
// never checks path traversal, only what is opened. seccomp cannot read the
// address either (it is in memory). So in network modes none and
// unrestricted every connect(2) of the tree stops in the kernel
// (SECCOMP_RET_USER_NOTIF) and this supervisor decides:
//
//   - AF_UNIX pathname: allowed only beneath a read-write root of the policy
//     (workspace, ReadWritePaths, the temp dir), judged on the socket file
//     the path resolves to now; abstract names are refused (EPERM) — Landlock
//     scoping would limit them to the sandbox, but this supervisor is not
//     inside the Landlock domain and must not connect on the tree's behalf;
//   - AF_INET/AF_INET6: refused in mode none (no such socket can even be
//     made there), made as asked in mode unrestricted;
//   - anything else: handed to the kernel on the supervisor's copy of the
//     socket (it can only fail or disconnect).
//
// The supervisor never answers "continue" (SECCOMP_USER_NOTIF_FLAG_CONTINUE):
// the process could swap the address or the fd after the check. It copies
// the address once, takes its own reference to the very socket with
// pidfd_getfd(2), and performs the connect itself on that reference —
// through /proc/self/fd/N of an O_PATH descriptor of the socket file it
// checked, so the inode connected to is the inode judged. The process's own
// connect never runs; it gets the result.
//
// In loopback/private mode connect(2) goes to the network supervisor
// (netSupervisor) instead, which must apply the same AF_UNIX rule.

// seccompNotif and seccompNotifResp are struct seccomp_notif and
// struct seccomp_notif_resp (include/uapi/linux/seccomp.h).
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

type connectSup struct {
	file  *os.File
	rc    syscall.RawConn
	mode  NetworkMode
	roots []string // canonical read-write roots
	once  sync.Once
	// capture, if set, answers the change-capture calls that share the
	// listener (capture_linux.go).
	capture *capturer
}

// startConnectSup serves the notifications of listener (whose ownership
// passes to it) until stop is called.
func startConnectSup(listener int, mode NetworkMode, roots []string, capture *capturer) (stop func(), err error) {
	// Non-blocking so that the runtime's poller watches the fd: no thread
	// is parked per command. RECV itself ignores O_NONBLOCK, so it is only
	// called once poll says a notification is pending.
	if err := unix.SetNonblock(listener, true); err != nil {
		unix.Close(listener)
		return nil, err
	}
	f := os.NewFile(uintptr(listener), "seccomp-listener")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	s := &connectSup{file: f, rc: rc, mode: mode, roots: roots, capture: capture}
	go s.loop()
	return s.stop, nil
}

// stop closes the listener: the loop returns at its next wake-up (the
// poller reports the close), handlers still running get an error when they
// answer. Nothing is waited for: once the tree is gone there is nobody left
// to answer, and the kernel answers ENOSYS to any call that arrives after.
func (s *connectSup) stop() {
	s.once.Do(func() { s.file.Close() })
}

func (s *connectSup) loop() {
	// A TCP connect in mode unrestricted may block for minutes: one
	// goroutine per notification. Capture calls are answered in order,
	// here.
	defer s.capture.close() // its calls came from this loop only
	serveListener(s.rc, func(req seccompNotif) {
		if s.capture.handles(req.Data.Nr) {
			s.capture.answer(&req, s.rc) // answers itself
			return
		}
		go s.handle(req)
	})
}

// serveListener receives the notifications of a seccomp listener and
// passes each to handle, until the listener is closed or every process of
// its filter is gone.
func serveListener(rc syscall.RawConn, handle func(seccompNotif)) {
	for {
		var req seccompNotif
		var recvErr error
		hup := false
		err := rc.Read(func(fd uintptr) bool {
			ready, gone := pollListener(fd)
			if gone {
				// POLLHUP: every process of the filter is gone.
				hup = true
				return true
			}
			if !ready {
				return false // wait for the poller
			}
			req = seccompNotif{}
			_, _, e := unix.Syscall(unix.SYS_IOCTL, fd, unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req)))
			if e != 0 {
				recvErr = e
			}
			return true
		})
		if err != nil || hup {
			return // closed by stop, or nothing left to serve
		}
		if recvErr != nil {
			// ENOENT: the process was killed or interrupted before we
			// read the notification. Anything else: try again.
			continue
		}
		handle(req)
	}
}

func (s *connectSup) handle(req seccompNotif) {
	s.respond(req.ID, 0, s.decide(&req))
}

func (s *connectSup) respond(id uint64, flags uint32, errno syscall.Errno) {
	resp := seccompNotifResp{ID: id, Flags: flags}
	if errno != 0 {
		resp.Error = -int32(errno)
	}
	s.rc.Control(func(fd uintptr) {
		// ENOENT: the process is gone or its syscall was interrupted.
		unix.Syscall(unix.SYS_IOCTL, fd, unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
	})
}

// idValid reports whether notification id is still pending: then its
// process is alive and blocked, so req.Pid still names it (a pid cannot be
// recycled while its process lives).
func (s *connectSup) idValid(id uint64) bool {
	var e syscall.Errno
	s.rc.Control(func(fd uintptr) {
		_, _, e = unix.Syscall(unix.SYS_IOCTL, fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	})
	return e == 0
}

// decide performs (or refuses) the connect and returns the errno for the
// process (0: success).
func (s *connectSup) decide(req *seccompNotif) syscall.Errno {
	if int64(req.Data.Nr) != unix.SYS_CONNECT {
		return unix.ENOSYS
	}
	sockfd := int(int32(req.Data.Args[0]))
	addrPtr := uintptr(req.Data.Args[1])
	addrLen := int(uint32(req.Data.Args[2]))
	if addrLen < 2 || addrLen > int(unsafe.Sizeof(unix.RawSockaddrAny{})) {
		return unix.EINVAL
	}
	pid := int(req.Pid)

	// Pin the process first, then read what it asked, then check the
	// notification is still pending: everything read came from the process
	// that made the call.
	pidfd, err := pidfdOfThread(pid) // req.Pid is the calling thread
	if err != nil {
		return unix.EPERM
	}
	defer unix.Close(pidfd)
	addr := make([]byte, addrLen)
	if n, err := unix.ProcessVMReadv(pid,
		[]unix.Iovec{{Base: &addr[0], Len: uint64(addrLen)}},
		[]unix.RemoteIovec{{Base: addrPtr, Len: addrLen}}, 0); err != nil || n != addrLen {
		if errors.Is(err, unix.EFAULT) {
			return unix.EFAULT
		}
		return unix.EPERM
	}
	family := *(*uint16)(unsafe.Pointer(&addr[0]))
	var cwd int = -1
	if family == unix.AF_UNIX {
		// Relative socket paths resolve against the caller's cwd.
		if cwd, err = unix.Open("/proc/"+strconv.Itoa(pid)+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return unix.EPERM
		}
		defer unix.Close(cwd)
	}
	if !s.idValid(req.ID) {
		return unix.EPERM // gone; nobody reads the answer
	}
	sock, err := unix.PidfdGetfd(pidfd, sockfd, 0)
	if err != nil {
		return csErrno(err, unix.EBADF)
	}
	defer unix.Close(sock)

	switch family {
	case unix.AF_UNIX:
		return s.connectUnix(sock, cwd, addr)
	case unix.AF_INET, unix.AF_INET6:
		if s.mode != NetworkUnrestricted {
			return unix.EPERM
		}
	}
	return rawConnect(sock, addr)
}

func (s *connectSup) connectUnix(sock, cwd int, addr []byte) syscall.Errno {
	if dom, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil {
		return csErrno(err, unix.ENOTSOCK)
	} else if dom != unix.AF_UNIX {
		return unix.EAFNOSUPPORT
	}
	path := addr[2:]
	if len(path) == 0 {
		return unix.EINVAL
	}
	if path[0] == 0 {
		return unix.EPERM // abstract: see the comment at the top
	}
	if i := bytes.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	// Resolve as the kernel would for the caller (symlinks followed), and
	// keep the result open: it is what gets connected.
	obj, err := unix.Openat(cwd, string(path), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return csErrno(err, unix.ENOENT)
	}
	defer unix.Close(obj)
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		return unix.ECONNREFUSED
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return unix.ECONNREFUSED // what connect(2) says for a non-socket
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
	if err != nil {
		return unix.EACCES
	}
	allowed := false
	for _, r := range s.roots {
		if within(real, r) {
			allowed = true
			break
		}
	}
	if !allowed {
		return unix.EACCES
	}
	var sa unix.RawSockaddrUnix
	sa.Family = unix.AF_UNIX
	p := "/proc/self/fd/" + strconv.Itoa(obj)
	for i := 0; i < len(p); i++ {
		sa.Path[i] = int8(p[i])
	}
	n := 2 + len(p) + 1
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(unsafe.Pointer(&sa)), uintptr(n))
	return e
}

func rawConnect(sock int, addr []byte) syscall.Errno {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(unsafe.Pointer(&addr[0])), uintptr(len(addr)))
	return e
}

func csErrno(err error, def syscall.Errno) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return def
}
