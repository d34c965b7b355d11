// Package notify is the sandbox's seccomp user-notification server: the
// parent's half of every network mode and of change capture. It is the
// only code that answers a confined tree's seccomp notifications, so each
// decision it makes exists once:
//
//   - one receive loop (server_linux.go, poll_linux.go);
//   - one way of naming the caller: a pidfd of the notifying thread, or of
//     its thread group before Linux 6.9 (pidfdOfThread), so a call from
//     any thread of the tree is served;
//   - one path resolver, openChildPathAt: a path is resolved in the
//     caller's root with openat2(RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS),
//     relative to its cwd or dirfd, and the thread is re-checked after;
//     the AF_UNIX rule and every capture handler use it;
//   - one AF_UNIX rule (UnixPathsUnder) and one address bound;
//   - one IP decision per mode (addr_linux.go) and one set of the tree's
//     own loopback addresses (ownports_linux.go);
//   - the change-capture handlers (capture_linux.go,
//     capture_emulate_linux.go), which share the listener, and with them
//     the one rule of paths no command may change (RefusedGitPath,
//     names.go: a new or written name .git, any case, or HEAD, exactly,
//     which beside objects/ and refs/ makes a bare repository git finds
//     without a .git, refused with EPERM; any path with a .git component,
//     however deep or new, with EROFS; removals allowed, as they plant
//     nothing; all of it off with CaptureOptions.GitWritable). The
//     sandbox's file tools share it through sandbox.RefusedGitPath. It
//     does not hold in the private roots (TMPDIR, the private /tmp), and
//     nothing of a repository there may leave them (private_linux.go);
//   - one record of what a rule refused (refusals.go), for the
//     command's report.
//
// The package is internal to the sandbox: the sandbox builds the seccomp
// programs that send the calls here (sandbox/internal/seccomp; the capture
// calls come from CaptureCalls), starts a server for each listener with
// Start, and maps its policy onto Options. Nothing else in the sandbox
// looks inside. Its unit tests drive a real confined child without the
// sandbox's spawn path (harness_linux_test.go); the end-to-end tests of
// every network mode and of capture run through a Sandbox, in package
// sandbox.
//
// # API
//
//   - Start(listenerFD, pidfd, pid, Options) (stop, error): serve one
//     listener. Options.Mode (ModeNone ... ModeUnrestricted), Options.Unix
//     (the AF_UNIX rule: UnixPathsUnder), Options.Proxy (the domain
//     proxy's address), Options.DirectGrant and OnDirect (the literal
//     IP[:PORT] grants admitted without the proxy, and their report),
//     Options.OwnPorts (the loopback addresses a
//     sandbox's commands bound, a PortSet), Options.MountNS,
//     Options.RootDev (the sandbox's root skeleton) and Options.Capture.
//   - NewCapture(CaptureOptions): one command's change capture, with its
//     hook (called before a change, with the workspace paths it changes)
//     and its writer Watch; Capture.Quiesce holds its calls off while a
//     checkpoint is sealed.
//   - NewHeldFiles: a session's registry of the workspace files its
//     commands opened for writing (CaptureOptions.Held; Files at a seal),
//     and QuietCall, the calls a stopped tree may be blocked in
//     (held_linux.go).
//   - Errors: ErrUnsupported (this kernel or architecture cannot host the
//     server), ErrTooManyEntries (HardLinkNames past its bound).
//   - Within and HardLinkNames, the containment test and the hard-link
//     walk the sandbox shares with the server.
//
// # What the spawn path provides
//
// The confined child (or a sealed spawner thread, for all its children)
// loads a seccomp filter that answers SECCOMP_RET_USER_NOTIF for connect,
// bind, listen, sendto (with a destination: arg 4 != 0), sendmsg and
// sendmmsg of the native architecture — connect only in mode
// unrestricted — with SECCOMP_FILTER_FLAG_NEW_LISTENER and
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (see "Signals" below). The
// parent takes the listener with pidfd_getfd and calls
// Start(listenerFD, pidfd, pid, opts):
//
//   - listenerFD is the parent's copy of the listener. The supervisor owns
//     it from the call on, also when it returns an error, and closes it in
//     stop(). The child must close its own copy before it runs anything
//     untrusted: a child holding the listener could receive its own
//     notifications and answer CONTINUE to them.
//   - pidfd and pid name the direct child (-1 and 0 for a spawner
//     thread's listener, which serves many commands). The supervisor only
//     borrows pidfd (as a shortcut for notifications from that very task); the
//     caller closes it after stop() has returned. Notifications from any
//     other task of the tree (threads, forked children) are handled with a
//     pidfd the supervisor opens itself.
//   - stop() ends supervision: it wakes the loop, aborts operations still
//     in flight (a blocking connect is ended with shutdown(2) on the
//     socket; waits for buffer space are cancelled), waits for them,
//     closes the listener and returns. It is idempotent and returns
//     promptly. After it, the kernel answers the child's trapped calls
//     with ENOSYS: supervision fails closed (a process that outlived
//     its command cannot install a listener of its own to answer them
//     instead: the seccomp programs refuse one, internal/seccomp's
//     addNoListenerRule). Call it when the process tree
//     is gone (the loop also ends by itself then: the listener reports
//     POLLHUP when the filter's last task exits) or on teardown.
//
// # Safety argument
//
// The supervisor never answers SECCOMP_USER_NOTIF_FLAG_CONTINUE for a call
// whose effect depends on memory or on the file-descriptor table: the child
// may rewrite the sockaddr, the msghdr or the iovecs, and another thread may
// dup2 another socket onto the same descriptor number, between the check and
// the moment the kernel reads them again (seccomp_unotify(2), "Caveats").
// Instead, for every call it:
//
//  1. copies the arguments that live in memory (sockaddr, msghdr, iovec
//     array, control data, payload) from the calling thread with
//     process_vm_readv into its own buffers;
//  2. checks SECCOMP_IOCTL_NOTIF_ID_VALID *after* the reads: if the
//     notification is still pending, the thread was blocked in this very
//     system call all along, so the pid it read from was the right task
//     (no pid reuse) and the pidfd it opened refers to it;
//  3. takes the socket itself with pidfd_getfd and inspects that object
//     (family, type, O_NONBLOCK, source-route options) — whatever the
//     descriptor number means afterwards does not matter;
//  4. validates its own copy and, if allowed, performs the connect, bind,
//     listen or send on the duplicate with exactly the validated bytes. The
//     duplicate shares the open file description, so the child's socket is
//     the one that ends up connected, bound or sending;
//  5. answers the notification with the result (return value or -errno).
//
// The only CONTINUE answer is for sendto(fd, buf, len, flags, NULL, 0): the
// NULL destination is a register the child cannot change once trapped, and
// such a call is write(2) with flags — it can only reach the socket's
// connected peer, which was validated when it was connected, and write(2)
// itself is not (and cannot usefully be) filtered. The spawn path can skip
// the notification for it altogether (a seccomp rule on arg 4 == 0).
//
// # Signals and restarted calls
//
// The filter must be loaded with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
// (Linux 5.19; libseccomp 2.6 SetWaitKill, or the exported BPF loaded
// with seccomp(2) directly, as the sandbox's spawn_linux.c does) for sends
// to happen exactly once. Without it, a non-fatal signal reaching the child after we received
// a notification abandons it and the kernel restarts the call (SA_RESTART)
// or returns EINTR — after we may have sent the data. The supervisor
// mitigates: a result whose answer the kernel refused (ENOENT) is given,
// without doing it again, to the very next trapped call of that thread with
// the same syscall number and arguments (the restart, or the retry after
// EINTR), and every effect is preceded by an ID_VALID check. But one race
// cannot be seen from user space (measured by TestNetSupervisorRestartedSends
// under a signal storm): the target, woken by the signal, has already
// decided to restart when our NOTIF_SEND still succeeds, and the reply is
// dropped — a record is then sent twice. With WAIT_KILLABLE_RECV a received
// call can only be interrupted by a fatal signal, and that test sees no
// abandoned call at all. Its price: a supervised call in progress (a
// blocking connect) defers SIGINT/SIGTERM until it ends; SIGKILL works.
//
// # What is refused
//
// AF_INET/AF_INET6 (TCP, UDP, MPTCP alike — the protocol does
// not matter, the address does): connect and send to anything outside the
// mode's ranges fail with EPERM, bind with EACCES; a wildcard address,
// which would expose a listener on every interface, is bound as asked but
// on the loopback device only (keepOnLoopback: a datagram socket at bind,
// a stream socket at listen, one never bound included), so the program
// observes what it would outside and only local clients reach it.
// The domain proxy's address, the addresses Options.DirectGrant admits
// (the literal IP[:PORT] grants; no name ever reaches it), and in mode
// none the loopback addresses the tree bound (the whole socket type,
// address and port), are allowed too — one rule for connect and send,
// judgeDestination, after which another sandbox's live proxy is refused
// whatever admitted it (ownports_linux.go). A socket that carries IPv4 source routing
// (IP_OPTIONS LSRR/SSRR) or an IPv6 routing header (IPV6_RTHDR) is refused
// for connect and send with an address: the packet would go to the route's
// first hop. Ancillary data on inet sockets is allowed from a short list
// (UDP_SEGMENT, IP_TOS, IP_TTL, IPV6_TCLASS, IPV6_HOPLIMIT, IPV6_DONTFRAG,
// SO_TIMESTAMPING, SO_TXTIME, IP_PKTINFO/IPV6_PKTINFO without an interface
// and with an allowed source); anything else, IP_RETOPTS and IPV6_RTHDR
// included, fails with EPERM. MSG_ZEROCOPY fails with EOPNOTSUPP (the
// supervisor's buffer would be pinned after it is reused).
//
// AF_UNIX: operations that name an address go to Options.Unix
// (the sandbox passes UnixPathsUnder of the policy's read-write roots);
// without one they fail with EACCES, except autobind (bind with an empty
// name). See UnixRequest, UnixPathsUnder and
// the notes in handleUnixAddr. Other families are refused with EPERM.
//
// Sends are copied in chunks of 64 KiB, at most 1 MiB per call: a stream
// socket then gets a short count (as a signal would give), a datagram
// larger than 1 MiB fails with EMSGSIZE. A blocking socket is emulated by
// waiting for POLLOUT (honouring SO_SNDTIMEO), so the wait can be cancelled;
// a blocking connect is performed as such in its own goroutine.
//
// # What the spawn filter must do that the supervisor cannot
//
// Calls that are never trapped keep working on an already-validated socket:
// write(2), send() without address, splice. So a socket must not be able to
// change where its packets go after connect. Verified here: a UDP socket
// connected to an allowed private address, given IP_OPTIONS with a loose
// source route afterwards, sends with plain send()/write() to the route's
// first hop, a non-private address. The supervisor refuses such sockets
// only when it sees a call. So the main filter (sandbox/internal/seccomp's
// rules_linux.go, routingSockopts) denies, in every mode but
// unrestricted, the socket options that source-route (IP_OPTIONS, IPV6_RTHDR, IPV6_2292RTHDR,
// IPV6_2292PKTOPTIONS) or force an egress interface (SO_BINDTODEVICE,
// SO_BINDTOIFINDEX, IP_UNICAST_IF, IPV6_UNICAST_IF, sticky IPV6_PKTINFO:
// with one, a datagram "to 127.0.0.1" leaves through that interface), and
// lets AF_INET/AF_INET6 sockets exist only as stream or datagram sockets
// of protocol 0, TCP, UDP or MPTCP (inetTypesDenied, inetProtosDenied):
// SCTP, where the kernel has it, connects through
// setsockopt(SCTP_SOCKOPT_CONNECTX) with addresses in memory; ping
// sockets are not needed.
//
// # Cost
//
// Measured here (BenchmarkNet*, 2 vCPU VM, loopback): the round trip of a
// notification is ~18 µs; connect ~+10–25 µs over ~58 µs; a UDP sendto or
// sendmsg with an address ~+30–40 µs over ~3 µs. write(2) and send()
// without an address cost nothing (not trapped).
package notify
