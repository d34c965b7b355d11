package seccomp

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// The seccomp programs are compiled once per policy by libseccomp, in the
// supervisor, and exported as classic BPF. There are two:
//
//   - the main program (Main): everything a confined process may
//     never do. It is loaded once on each spawner thread
//     (sandbox/internal/spawn's spawner_linux.go) and every child
//     vfork'd from that thread inherits it: attaching a
//     program of a few hundred instructions costs 100-300 µs (the kernel
//     converts, JIT-compiles and emulates it to fill its action cache),
//     which per spawn would be more than the rest of the confinement;
//   - the child program (Child): what the spawner thread itself
//     must still be able to do — clone3, clone/unshare with namespace flags
//     — and the calls sent to a supervisor (SECCOMP_RET_USER_NOTIF). It is
//     small and loaded by each child, with SECCOMP_FILTER_FLAG_NEW_LISTENER
//     when it notifies. Loading even a small program costs a child 50-150
//     µs, so where the spawner thread needs neither clone3 nor namespace
//     flags (v1 cgroup slots: the common case as root), it is "sealed": its
//     main program carries these rules too, and the notification server's
//     calls with one listener (and one server) for the thread — unless
//     change capture needs a listener per command.
//
// Default action: allow. Denials return EPERM (clone3 and openat2: ENOSYS,
// so that libc falls back to clone and openat, whose arguments a filter
// can see). Only the native
// architecture is in the programs: a syscall made through another table —
// the i386 one via `int 0x80`, or x32 numbers — matches no architecture
// and libseccomp's bad-architecture action kills the process. That is
// essential: every rule below is keyed on native syscall numbers, and the
// i386 numbers are different (i386's 102 is socketcall, x86-64's is
// getuid).

// deniedSyscalls are refused with EPERM whatever their arguments. Each is
// either a way around Landlock (ptrace and process_vm_* into processes the
// Landlock scope does not cover are already refused; mount/chroot/
// pivot_root/namespaces rearrange what paths mean; io_uring performs
// syscalls seccomp does not see; open_by_handle_at opens by inode, skipping
// path checks), kernel attack surface that no build tool needs (bpf,
// perf_event_open, userfaultfd, keyctl, module loading, kexec), or
// administrative calls that need capabilities we dropped anyway — denied
// here too, as a second wall.
var deniedSyscalls = []string{
	// other processes' memory and file descriptors
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_getfd",
	// root (the mount calls and pivot_root: mountSyscalls)
	"chroot",
	// namespaces: clone, unshare and setns are with the mount calls
	// (namespaceRefusals)
	// kernel attack surface
	"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	// file handles bypass path-based checks
	"open_by_handle_at", "name_to_handle_at",
	// system administration
	"acct", "swapon", "swapoff", "reboot", "settimeofday", "clock_settime", "clock_adjtime",
	"stime", "sethostname", "setdomainname", "quotactl", "quotactl_fd", "lookup_dcookie",
	"vhangup", "syslog", "fanotify_init", "uselib",
	// legacy x86 and raw I/O
	"vm86", "vm86old", "iopl", "ioperm", "modify_ldt",
	// NUMA page moves of other processes
	"migrate_pages", "move_pages",
}

// mountSyscalls change the mount table or a mount's flags: every call of
// the old and the new mount API. They are with the namespace rules (the
// child program, or a sealed thread's main program) because the spawn
// path's child itself makes its private read-only mount namespace
// (la_mount_setup) before it loads the child program. Refused, a confined
// process can neither clear a read-only flag nor mount anything over the
// read-only tree.
var mountSyscalls = []string{
	"mount", "umount", "umount2", "move_mount", "open_tree", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr",
	// The spawn path's child switches to the sandbox's root with it
	// (la_attach_root).
	"pivot_root",
}

// mountSyscallNumbers are mount calls newer than this libseccomp's tables,
// by number (the same on every architecture since 5.1's unified numbers).
var mountSyscallNumbers = []libseccomp.ScmpSyscall{
	467, // open_tree_attr (6.15): open_tree with mount attributes
}

// Namespace flags of clone(2)/unshare(2). CLONE_NEWTIME shares its bit with
// clone's exit-signal byte, so it is only checked for unshare.
var cloneNewFlags = []uint64{
	unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC,
	unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
}

// Dangerous personality(2) flags: they re-enable legacy behaviour
// (executable data, a mapping at address 0, the old memory layout).
var personalityDenied = []uint64{
	0x0400000, // READ_IMPLIES_EXEC
	0x0100000, // MMAP_PAGE_ZERO
	0x0200000, // ADDR_COMPAT_LAYOUT
	0x8000000, // ADDR_LIMIT_3GB
	0x0800000, // ADDR_LIMIT_32BIT
}

const sockTypeMask = 0xf // SOCK_TYPE_MASK: type without SOCK_NONBLOCK|SOCK_CLOEXEC

// MainSpec says which network rules the main filter carries.
type MainSpec struct {
	// Network is the mode whose socket rules the program carries (the
	// sandbox may pass a wider one than the policy's where the
	// notification server narrows it: none served as loopback).
	Network notify.Mode
	// DenyConnect refuses connect(2) outright: the fallback when no
	// server can check unix socket paths (no user notification).
	DenyConnect bool
	// Sealed: the spawner thread needs neither clone3 nor namespace
	// flags, so the child program's rules go into the main program too,
	// and with them Notify's calls (one listener per spawner thread).
	Sealed bool
	Notify NotifySpec
	// RefusalsInChild: every child of the thread loads a child program
	// that carries the refusal set (ChildSpec.Refusals), so this one
	// leaves it out — a refusal answered EPERM here would outrank the
	// child's notification (the kernel takes the most restrictive action
	// of all the programs).
	RefusalsInChild bool
}

// compileMainFilter compiles the policy's main seccomp program
// (Main: the precompiled copy, cache_linux.go).
func compileMainFilter(spec MainSpec) ([]byte, error) {
	if spec.Network > notify.ModeUnrestricted {
		// An unknown mode would get no network rules at all: refuse it.
		return nil, fmt.Errorf("seccomp: unknown network mode %v", spec.Network)
	}
	f, err := newFilter()
	if err != nil {
		return nil, err
	}
	defer f.Release()
	// libseccomp's default linear layout, not its binary tree (SetOptimize
	// 2): the tree compiles 2.5x slower (0.7 ms) and makes the kernel's
	// one-time action-cache emulation no cheaper to matter, while the
	// syscalls that reach the program at run time at all are the few with
	// argument rules (the cache answers "allow" for the rest).
	eperm := libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM))
	b := ruleBuilder{f: f}

	// The refusal set (refusal_linux.go): sent to the listener when this
	// program has one, in a child program when every child of the
	// thread loads one that carries it (RefusalsInChild).
	refuse := eperm
	if spec.Sealed && !spec.Notify.Empty() {
		refuse = libseccomp.ActNotify
	}
	if !spec.RefusalsInChild {
		addRefusals(&b, otherRefusals(), refuse)
	}
	// Terminal injection: TIOCSTI pushes bytes into a terminal's input (the
	// caller's shell would run them), TIOCLINUX can do the same on a
	// virtual console, TIOCSETD changes line discipline (kernel attack
	// surface), TIOCCONS redirects the console. The kernel compares the
	// request as a 32-bit int, so compare only the low 32 bits: a request
	// with junk in the high half must still match.
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD, unix.TIOCCONS} {
		b.add("ioctl", eperm, cond(1, libseccomp.CompareMaskedEqual, 0xffffffff, req))
	}

	b.add("openat2", libseccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS)))
	addXattrRules(&b)

	// Socket families: only AF_UNIX, AF_INET and AF_INET6 exist in here.
	// Netlink, packet, vsock, AF_ALG, bluetooth, ... are kernel attack
	// surface or ways to see and send raw traffic. The comparison is on
	// the full 64-bit argument: a value with high bits set is > AF_INET6
	// and denied, which errs on the safe side.
	// Allowed: 1, 2, 10. Denied: 0, 3, 4-7, 8-9, and above 10.
	b.add("socket", eperm, cond(0, libseccomp.CompareEqual, unix.AF_UNSPEC))
	b.add("socket", eperm, cond(0, libseccomp.CompareEqual, 3))
	b.add("socket", eperm, cond(0, libseccomp.CompareMaskedEqual, ^uint64(3), 4))
	b.add("socket", eperm, cond(0, libseccomp.CompareMaskedEqual, ^uint64(1), 8))
	b.add("socket", eperm, cond(0, libseccomp.CompareGreater, unix.AF_INET6))
	// Raw and legacy packet sockets (also reachable as AF_INET+SOCK_PACKET).
	b.add("socket", eperm, cond(1, libseccomp.CompareMaskedEqual, sockTypeMask, unix.SOCK_RAW))
	b.add("socket", eperm, cond(1, libseccomp.CompareMaskedEqual, sockTypeMask, unix.SOCK_PACKET))
	// AF_UNIX datagram sockets can send to any pathname socket with
	// sendto/sendmsg, without connect (e.g. /dev/log, journald, another
	// user's daemon). Stream and seqpacket sockets can reach a peer only
	// through connect(2), which is supervised. So: no unix datagrams.
	b.add("socket", eperm,
		cond(0, libseccomp.CompareEqual, unix.AF_UNIX),
		cond(1, libseccomp.CompareMaskedEqual, sockTypeMask, unix.SOCK_DGRAM))
	// socketpair only makes AF_UNIX pairs; a datagram pair has the same
	// sendto-anywhere property.
	b.add("socketpair", eperm, cond(0, libseccomp.CompareNotEqual, unix.AF_UNIX))
	b.add("socketpair", eperm, cond(1, libseccomp.CompareMaskedEqual, sockTypeMask, unix.SOCK_DGRAM))

	if spec.DenyConnect {
		b.add("connect", eperm)
	}
	if spec.Sealed {
		addClone3Rule(&b)
		if !spec.RefusalsInChild {
			addRefusals(&b, namespaceRefusals(), refuse)
		}
		addNotifyRules(&b, spec.Notify)
		if !spec.Notify.Empty() {
			addNoListenerRule(&b) // the chain's listener is this program's
		}
	}
	switch spec.Network {
	case notify.ModeNone:
		// No IP sockets at all: TCP, UDP, MPTCP, ICMP alike.
		b.add("socket", eperm, cond(0, libseccomp.CompareEqual, unix.AF_INET))
		b.add("socket", eperm, cond(0, libseccomp.CompareEqual, unix.AF_INET6))
	}
	switch spec.Network {
	case notify.ModeLoopback, notify.ModePrivate:
		// What the network supervisor relies on: see routingSockopts.
		addInetSocketRules(&b)
		addRoutingSockoptRules(&b)
	case notify.ModeNone:
		// No IP socket can be made (above: the socket rules would add
		// nothing to that), but one could arrive over a unix socket from
		// outside: a second wall, cheap.
		addRoutingSockoptRules(&b)
	}

	// personality: querying (0xffffffff) and the harmless personas stay
	// allowed; the flags above are refused. A query has every bit set, so
	// each rule requires bit 31 (used by no flag) clear. A value with bit 31
	// set and a flag gets through — catching it needs 31 more rules — but
	// these flags only weaken the confined program's own memory protections
	// (mmap_min_addr still refuses page 0 without CAP_SYS_RAWIO).
	for _, fl := range personalityDenied {
		b.add("personality", eperm, cond(0, libseccomp.CompareMaskedEqual, fl|0x80000000, fl))
	}
	if b.err != nil {
		return nil, b.err
	}
	return exportBPF(f)
}

// No privilege planting: a confined process must not leave behind a file
// that gives whoever runs it next more than it had. A setuid-root copy of
// python3 made by a command running as root (capabilities dropped, but
// still the owner of what it creates) runs as root for the next
// unconfined user or root's cron; run unprivileged, the same bit plants a
// setuid-as-the-user binary. So every way a file gets a mode is refused
// (EPERM) when the mode has S_ISUID or S_ISGID, and device nodes are
// refused outright (Landlock has no MAKE_CHAR/MAKE_BLOCK right for us
// either; here it is also a rule on registers, for every mode).
//
// The mode is a register value, so these are race-free seccomp rules: the
// change capture (internal/notify) answers CONTINUE and could not enforce
// anything a process can change in its memory. Where the refusal set goes
// to the notification server (refusal_linux.go), the server refuses them
// from the same register values the notification carries (Refused),
// before change capture sees the call. Each rule tests one bit of
// one argument (libseccomp ANDs the conditions of one rule and compares an
// argument once per rule); only the low bits are looked at, and the kernel
// reads mode as an unsigned int, so junk in the upper half changes nothing.
//
//   - chmod, fchmod, fchmodat, fchmodat2 (452 on x86-64; the i386 table,
//     where it has the same number, kills the process anyway);
//   - open, openat, creat: the mode argument counts only when the call can
//     create (O_CREAT, or __O_TMPFILE — a file later named by linkat), so
//     the flags are a condition too: open(O_RDONLY) with junk in the mode
//     register stays allowed;
//   - mknod, mknodat: set-id bits, and S_IFCHR/S_IFBLK (no device nodes);
//   - openat2 passes flags and mode in memory (struct open_how), where no
//     filter can look: it answers ENOSYS, as for clone3, and callers fall
//     back to openat (glibc 2.36 never calls it for open/openat; Go 1.26's
//     os package and os.Root do not call it at all; systemd and others
//     treat ENOSYS as "older kernel").
//
// Not a mode, but the same kind of planting: file capabilities
// (security.capability xattrs) need CAP_SETFCAP, dropped in every mode.
const (
	oTmpfileBit = 0o20000000 // __O_TMPFILE (O_TMPFILE also sets O_DIRECTORY)
)

// modeCalls: where each call has its mode and, for open-like calls, its
// flags (-1: the call always applies its mode).
var modeCalls = []struct {
	name      string
	modeArg   uint
	flagArg   int
	mknodLike bool
}{
	{"chmod", 1, -1, false}, {"fchmod", 1, -1, false},
	{"fchmodat", 2, -1, false}, {"fchmodat2", 2, -1, false},
	{"creat", 1, -1, false}, {"open", 2, 1, false}, {"openat", 3, 2, false},
	{"mknod", 1, -1, true}, {"mknodat", 2, -1, true},
}

// Extended attributes: Landlock has no right for them, so without this a
// confined process could set a POSIX ACL — which is a mode — on any file
// it owns anywhere (system.posix_acl_access: an ACL granting another user
// rwx on the user's ~/.ssh key, or turning a workspace file's mode to 0000
// behind the recorder's back, since checkpoints restore modes, not ACLs),
// or a default ACL on a directory that later files inherit. Setting and
// removing xattrs answers EOPNOTSUPP, what a filesystem without xattrs
// says, which cp -a, tar and rsync take in their stride; reading them
// stays allowed. setxattrat and removexattrat (Linux 6.13: 463 and 466 on
// x86-64) are added by number where libseccomp does not know them yet.
var xattrSetCalls = []string{"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr"}

// xattrAtCalls are the *xattrat calls by number, on x86-64.
var xattrAtCalls = map[string]int{"setxattrat": 463, "removexattrat": 466}

func addXattrRules(b *ruleBuilder) {
	notsup := libseccomp.ActErrno.SetReturnCode(int16(unix.EOPNOTSUPP))
	for _, name := range xattrSetCalls {
		b.add(name, notsup)
	}
	for name, nr := range xattrAtCalls {
		if _, err := libseccomp.GetSyscallFromName(name); err == nil {
			b.add(name, notsup)
			continue
		}
		if runtime.GOARCH != "amd64" || b.err != nil {
			continue // other tables: by name only, once libseccomp knows them
		}
		if err := b.f.AddRule(libseccomp.ScmpSyscall(nr), notsup); err != nil {
			b.err = fmt.Errorf("seccomp: rule for %s (%d): %w", name, nr, err)
		}
	}
}

// The network rules of modes loopback and private (addInetSocketRules,
// addRoutingSockoptRules; mode none gets the latter too).
//
// The network supervisor (internal/notify) sees connect, bind, listen,
// sendto with an address, sendmsg and sendmmsg, and checks the address
// each names. It never sees what carries no address: write(2), send(),
// sendto(..., NULL, 0), splice, sendfile on a connected socket, which go to
// the peer validated at connect. So two things must be impossible, and
// only this program can make them so:
//
//   - a socket whose protocol takes its destination from somewhere else
//     than connect/sendto/sendmsg (inetTypesDenied, inetProtosDenied);
//   - a socket option that sends a connected socket's traffic somewhere
//     else than its peer (routingSockopts).

// maskedValue is a CompareMaskedEqual operand: arg & mask == value.
type maskedValue struct{ mask, value uint64 }

// inetTypesDenied: AF_INET/AF_INET6 sockets are SOCK_STREAM (1) or
// SOCK_DGRAM (2), nothing else — matched on type & SOCK_TYPE_MASK, so
// SOCK_NONBLOCK/SOCK_CLOEXEC do not matter, and on the low bits only (the
// kernel reads an int, and these masks look at nothing else). Denied:
// 0, 3 (SOCK_RAW: refused for every family above too), 4-7 (SOCK_RDM,
// SOCK_SEQPACKET, SOCK_DCCP, ...), 8-15 (SOCK_PACKET, ...). The type
// matters, not only the protocol: the kernel resolves protocol 0 to the
// first protocol registered for the type, and for SOCK_SEQPACKET that is
// SCTP wherever the sctp module is loaded.
var inetTypesDenied = []maskedValue{
	{0xf, 0},
	{0xf, 3},
	{0xc, 4},
	{0x8, 8},
}

// inetProtocolMax: protocols above it are denied by a CompareGreater rule
// on the whole 64-bit register. That rule also refuses every value with
// junk in the upper 32 bits (which the kernel would ignore: it reads an
// int), so the masked rules below only ever decide values below 2^32 with
// clean upper halves: whatever the kernel reads, it reads what they judged.
// (Junk over an allowed protocol is refused too: the safe side, and no
// libc or Go call passes any.)
const inetProtocolMax = unix.IPPROTO_MPTCP // 262

// inetProtosDenied, with the rule above, denies every AF_INET/AF_INET6
// protocol except 0 (the type's default: TCP for stream, UDP for datagram
// sockets), IPPROTO_TCP (6), IPPROTO_UDP (17) and IPPROTO_MPTCP (262).
// Refused with them: SCTP (132), which connects through
// setsockopt(SCTP_SOCKOPT_CONNECTX) with the addresses in memory and sends
// to any address of an association — nothing the supervisor sees;
// UDP-Lite (136), DCCP (33), L2TP, SMC (256) and whatever else a kernel
// may grow, none of which the supervisor was written for; and ICMP (1)
// and ICMPv6 (58) datagram ("ping") sockets, which no tool in here needs.
// Refusing them here also means a confined process cannot make the kernel
// load a protocol module (socket() of an unknown protocol asks modprobe
// for net-pf-N-proto-P): less kernel code within its reach.
//
// libseccomp compares an argument once per rule and has no "not in", so
// the complement is written as bit patterns — the set bits of 6 (110), 17
// (1 0001) and 262 (1 0000 0110) — each rule matching only values that
// are not allowed. TestInetProtocolRules checks every value up to 2^20
// and the ones with junk in the upper half.
var inetProtosDenied = []maskedValue{
	{0x08, 0x08},   // bit 3: 8-15, 24-31, ...: no allowed value has it
	{0x20, 0x20},   // bit 5
	{0x40, 0x40},   // bit 6
	{0x80, 0x80},   // bit 7
	{0x11, 0x01},   // bit 0 without bit 4: 1, 3, 5, 7, 257, 259, 261
	{0x11, 0x10},   // bit 4 without bit 0: 16, 18, 20, 22
	{0x06, 0x02},   // bit 1 without bit 2: 2, 3, 18, 19, 258, 259
	{0x06, 0x04},   // bit 2 without bit 1: 4, 5, 20, 21, 260, 261
	{0x14, 0x14},   // bits 2 and 4: 20-23
	{0x104, 0x100}, // bit 8 without bit 2: 256-259
}

// routingSockopts are the setsockopt(level, optname) pairs refused outside
// mode unrestricted: each can make an already-validated socket's traffic
// leave for somewhere its address does not say. Level and name are ints
// for the kernel: compared on the low 32 bits only, so junk in the upper
// half of the register does not get past (the kernel would ignore it).
//
// Source routes: the packet goes to the route's first hop, with the
// validated address only as the last entry of the route (the supervisor's
// author verified a UDP socket connected to an allowed 10.x host sending
// with write(2) to the first hop of a loose source route).
//
//   - IP_OPTIONS: LSRR/SSRR. Denied whatever the option bytes carry (the
//     filter cannot read them, and record-route or timestamps are of no
//     use to a build). Linux 6.18 (measured here) already wants
//     CAP_NET_RAW for a source route; the filter does not count on it;
//   - IPV6_RTHDR: a routing header (type 4, segment routing, is accepted
//     from anyone); IPV6_2292PKTOPTIONS sets the same sticky routing header
//     (and pktinfo, below) from a cmsg buffer; IPV6_2292RTHDR as a
//     setsockopt only asks to receive routing headers, denied anyway:
//     nothing needs the RFC 2292 API and its name is the routing header's.
//
// A forced egress interface: the route lookup then uses that interface
// and, finding no route through it, the kernel assumes the destination is
// on its link. Measured here (veth to a network namespace): with
// SO_BINDTODEVICE or IP_UNICAST_IF on a non-loopback interface, a UDP
// datagram and a TCP SYN addressed to 127.0.0.1 leave through that
// interface (an ARP query for 127.0.0.1 goes out; whoever on the link
// answers it receives the packets). The supervisor validated 127.0.0.1 and
// makes these very calls on the same socket: loopback mode would reach the
// local network. IPv6 answered ENETUNREACH for ::1 there, denied alike.
//
//   - SO_BINDTODEVICE, SO_BINDTOIFINDEX (unprivileged since Linux 5.7 on
//     an unbound socket), IP_UNICAST_IF, IPV6_UNICAST_IF (never needed a
//     capability), IPV6_PKTINFO as a setsockopt (RFC 3542 sticky option:
//     interface and source of every later send).
//
// Second wall, the kernel wants a capability (dropped in every mode):
// SO_MARK (CAP_NET_ADMIN or CAP_NET_RAW; policy routing by mark picks
// another table, hence another next hop), IP_XFRM_POLICY/IP_IPSEC_POLICY
// and the IPv6 ones (CAP_NET_ADMIN; a per-socket tunnel-mode IPsec policy
// sends everything to the tunnel endpoint).
//
// Not refused, and why:
//
//   - IP_PKTINFO: as a setsockopt only asks to receive the ancillary data;
//     the sending form is a control message of sendmsg, which the
//     supervisor sees and checks (no interface, an allowed source);
//   - IPV6_RECVPKTINFO, IP_RECVOPTS, IP_RETOPTS (IP_RECVRETOPTS): receive
//     flags only;
//   - IP_MULTICAST_IF, IPV6_MULTICAST_IF: only for multicast destinations,
//     which no filtered mode allows (the supervisor refuses 224/4 and
//     ff00::/8);
//   - IP_TRANSPARENT, IPV6_TRANSPARENT, IP_FREEBIND: source addresses and
//     bind, not destinations (and TRANSPARENT wants CAP_NET_RAW or
//     CAP_NET_ADMIN); bind is supervised;
//   - SO_DONTROUTE, MSG_DONTROUTE: restrict the route to the link, never
//     change the destination address;
//   - IPV6_ADDRFORM: turns an IPv6 socket connected to a v4-mapped address
//     into an IPv4 one connected to the same address;
//   - IPV6_HOPOPTS, IPV6_DSTOPTS, IPV6_RTHDRDSTOPTS: options along the
//     path, not the path (and they want CAP_NET_RAW);
//   - TCP_REPAIR (CAP_NET_ADMIN), TCP_FASTOPEN_CONNECT (the SYN goes to
//     the address connect(2) gave, which was supervised).
//
// Not a route but the same harm in the other direction, refused with
// them: SO_REUSEPORT. A socket with it binds the very address a listener
// of the same uid with it holds (the user's own service: the sandbox runs
// as the user), and the kernel then hands it a share of that service's
// connections and datagrams — the user's clients talk to the sandbox (a
// security review hijacked a client's bytes under none and loopback;
// TestReusePortRefused). A build or test server does not need it.
var routingSockopts = []struct{ level, name uint64 }{
	{unix.SOL_SOCKET, unix.SO_REUSEPORT},
	{unix.IPPROTO_IP, unix.IP_OPTIONS},
	{unix.IPPROTO_IPV6, unix.IPV6_RTHDR},
	{unix.IPPROTO_IPV6, unix.IPV6_2292RTHDR},
	{unix.IPPROTO_IPV6, unix.IPV6_2292PKTOPTIONS},
	{unix.SOL_SOCKET, unix.SO_BINDTODEVICE},
	{unix.SOL_SOCKET, unix.SO_BINDTOIFINDEX},
	{unix.IPPROTO_IP, unix.IP_UNICAST_IF},
	{unix.IPPROTO_IPV6, unix.IPV6_UNICAST_IF},
	{unix.IPPROTO_IPV6, unix.IPV6_PKTINFO},
	{unix.SOL_SOCKET, unix.SO_MARK},
	{unix.IPPROTO_IP, unix.IP_XFRM_POLICY},
	{unix.IPPROTO_IP, unix.IP_IPSEC_POLICY},
	{unix.IPPROTO_IPV6, unix.IPV6_XFRM_POLICY},
	{unix.IPPROTO_IPV6, unix.IPV6_IPSEC_POLICY},
}

// addInetSocketRules refuses AF_INET/AF_INET6 sockets of other types or
// protocols (inetTypesDenied, inetProtosDenied).
func addInetSocketRules(b *ruleBuilder) {
	eperm := libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM))
	// One condition for both families: AF_INET is 2 (0b0010), AF_INET6 10
	// (0b1010), and they are the only 64-bit values v with v &^ 8 == 2.
	// The family is compared on the whole register: a value with junk in
	// the upper half is above AF_INET6 and refused by Main's
	// family rules, so this sees every socket the kernel would make as
	// AF_INET or AF_INET6. (Half the rules of one per family: libseccomp's
	// compile time, paid by New, grows with them.)
	isInet := cond(0, libseccomp.CompareMaskedEqual, ^uint64(8), unix.AF_INET)
	for _, t := range inetTypesDenied {
		b.add("socket", eperm, isInet, cond(1, libseccomp.CompareMaskedEqual, t.mask, t.value))
	}
	b.add("socket", eperm, isInet, cond(2, libseccomp.CompareGreater, inetProtocolMax))
	for _, p := range inetProtosDenied {
		b.add("socket", eperm, isInet, cond(2, libseccomp.CompareMaskedEqual, p.mask, p.value))
	}
}

// addRoutingSockoptRules refuses the socket options of routingSockopts.
func addRoutingSockoptRules(b *ruleBuilder) {
	eperm := libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM))
	for _, o := range routingSockopts {
		b.add("setsockopt", eperm,
			cond(1, libseccomp.CompareMaskedEqual, 0xffffffff, o.level),
			cond(2, libseccomp.CompareMaskedEqual, 0xffffffff, o.name))
	}
}

// NotifySpec lists the syscalls sent to a supervisor (SECCOMP_RET_USER_NOTIF).
type NotifySpec struct {
	calls []notifyCall
}

// Has reports whether the spec notifies the call name.
func (n NotifySpec) Has(name string) bool {
	for _, c := range n.calls {
		if c.name == name {
			return true
		}
	}
	return false
}

// Empty reports whether the spec notifies nothing: a program without a
// listener.
func (n NotifySpec) Empty() bool { return len(n.calls) == 0 }

type notifyCall struct {
	name  string
	conds []libseccomp.ScmpCondition
}

// ConnectOnly: what mode unrestricted sends the notification server
// (internal/notify): every connect(2), for the AF_UNIX rule; IP
// destinations are all allowed there, so nothing else needs it.
var ConnectOnly = NotifySpec{calls: []notifyCall{{name: "connect"}}}

// NetSupervised: the network supervisor decides every address a socket
// could reach: connect, bind, listen, sendto with a destination (without
// one it is write(2) to the already-checked peer), sendmsg/sendmmsg
// (msg_name lives in memory the filter cannot read, so all of them).
var NetSupervised = NotifySpec{calls: []notifyCall{
	{name: "connect"},
	{name: "bind"},
	// listen on an unbound TCP socket binds it to the wildcard address;
	// the supervisor binds it to loopback first.
	{name: "listen"},
	{name: "sendto", conds: []libseccomp.ScmpCondition{cond(4, libseccomp.CompareNotEqual, 0)}},
	{name: "sendmsg"},
	{name: "sendmmsg"},
}}

// WithCapture adds the capture calls (notify.CaptureCalls) to a child
// program's notifications. They share its listener: the kernel allows one
// listener per process's filter chain, so the server of the policy's
// network mode receives them and hands them to the command's
// notify.Capture.
//
// With exits, exit_group is notified too (the sandbox's foreign_linux.go
// says why).
func WithCapture(n NotifySpec, exits bool) NotifySpec {
	out := NotifySpec{calls: append([]notifyCall(nil), n.calls...)}
	for _, c := range notify.CaptureCalls {
		if c.Name == "bind" && n.Has("bind") {
			continue // the network rules': the server reports binds itself
		}
		if c.Name == "exit_group" && !exits {
			continue
		}
		if c.FlagArg == 0 {
			out.calls = append(out.calls, notifyCall{name: c.Name})
			continue
		}
		// libseccomp compares an argument once per rule: one rule per flag.
		for _, fl := range notify.OpenWriteFlags {
			out.calls = append(out.calls, notifyCall{name: c.Name,
				conds: []libseccomp.ScmpCondition{cond(c.FlagArg, libseccomp.CompareMaskedEqual, fl, fl)}})
		}
	}
	return out
}

// ChildSpec says what the program each child loads itself carries.
type ChildSpec struct {
	// Namespaces: the namespace and mount rules (namespaceRefusals) and
	// clone3's ENOSYS, which the spawner thread's own program cannot
	// carry when the thread must make namespaces itself.
	Namespaces bool
	// Refusals: the whole refusal set (the namespace rules included),
	// left out of the thread's program (MainSpec.RefusalsInChild), sent
	// to the notification server with Notify's calls when there are any
	// (refusal_linux.go). Without it, the namespace rules answer EPERM
	// themselves, for a listener whose server does not know the set
	// (confinement's re-executed children).
	Refusals bool
	// Notify: the calls sent to the notification server.
	Notify NotifySpec
}

// compileChildFilter compiles the program each child loads itself (Child:
// the precompiled copy).
func compileChildFilter(spec ChildSpec) ([]byte, error) {
	f, err := newFilter()
	if err != nil {
		return nil, err
	}
	defer f.Release()
	if err := f.SetOptimize(2); err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	b := ruleBuilder{f: f}
	refuse := libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM))
	if spec.Refusals && !spec.Notify.Empty() {
		refuse = libseccomp.ActNotify
	}
	if spec.Namespaces || spec.Refusals {
		addClone3Rule(&b)
		addRefusals(&b, namespaceRefusals(), refuse)
	}
	if spec.Refusals {
		addRefusals(&b, otherRefusals(), refuse)
	}
	addNotifyRules(&b, spec.Notify)
	if !spec.Notify.Empty() {
		addNoListenerRule(&b) // the chain's listener is this program's
	}
	if b.err != nil {
		return nil, b.err
	}
	return exportBPF(f)
}

// addNoListenerRule refuses a confined process a seccomp listener of its
// own: seccomp(SECCOMP_SET_MODE_FILTER) with
// SECCOMP_FILTER_FLAG_NEW_LISTENER. While the sandbox's listener lives
// the kernel refuses a second one in the chain anyway (EBUSY); once it is
// gone — a process that outlived its command where the tree cannot be
// killed, after its server stopped — a filter of the process's own with a
// listener would get the calls this chain notifies (the refusal set, the
// network calls, change capture's) before they fail ENOSYS, the kernel
// keeping the newest filter's answer among equal actions, and it could
// answer CONTINUE to each. A filter without a listener stays allowed
// (programs sandbox themselves). The rule goes in the program loaded last
// in a chain that has a listener: every child program with one, and a
// sealed thread's that notifies (nothing is loaded after it); not a
// thread's main program that a child program with a listener follows;
// and not where no program listens (the refusals are EPERM there, which
// no filter of the process's own outranks). op and
// flags are unsigned ints: their low 32 bits are compared.
func addNoListenerRule(b *ruleBuilder) {
	b.add("seccomp", libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM)),
		cond(0, libseccomp.CompareMaskedEqual, 0xffffffff, unix.SECCOMP_SET_MODE_FILTER),
		cond(1, libseccomp.CompareMaskedEqual, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER))
}

// addClone3Rule: clone3 passes its flags in memory, where a filter cannot
// look: it answers "not implemented" (not a refusal to name), so that
// glibc and others fall back to clone, whose flags the namespace rules
// see.
func addClone3Rule(b *ruleBuilder) {
	b.add("clone3", libseccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS)))
}

func addNotifyRules(b *ruleBuilder, n NotifySpec) {
	for _, c := range n.calls {
		b.add(c.name, libseccomp.ActNotify, c.conds...)
	}
}

// newFilter starts a program of either kind: allow by default, and kill
// the whole process, not just the thread, on a foreign syscall table (a
// multi-threaded program must not carry on half-dead; see the file
// comment for why every other architecture is foreign). The caller
// releases it.
func newFilter() (*libseccomp.ScmpFilter, error) {
	f, err := libseccomp.NewFilter(libseccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	if err := f.SetBadArchAction(libseccomp.ActKillProcess); err != nil {
		f.Release()
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	return f, nil
}

type ruleBuilder struct {
	f   *libseccomp.ScmpFilter
	err error
}

// add adds one rule. A syscall this architecture does not have (vm86 on
// x86-64, say) is skipped: libseccomp cannot resolve it and there is
// nothing to deny.
func (b *ruleBuilder) add(name string, act libseccomp.ScmpAction, conds ...libseccomp.ScmpCondition) {
	if b.err != nil {
		return
	}
	nr, err := libseccomp.GetSyscallFromName(name)
	if err != nil {
		return
	}
	if len(conds) == 0 {
		err = b.f.AddRule(nr, act)
	} else {
		err = b.f.AddRuleConditional(nr, act, conds)
	}
	if err != nil {
		b.err = fmt.Errorf("seccomp: rule for %s: %w", name, err)
	}
}

// addNumber adds a rule for a syscall this libseccomp has no name for.
func (b *ruleBuilder) addNumber(nr libseccomp.ScmpSyscall, act libseccomp.ScmpAction) {
	if b.err != nil {
		return
	}
	if err := b.f.AddRule(nr, act); err != nil {
		b.err = fmt.Errorf("seccomp: rule for syscall %d: %w", int(nr), err)
	}
}

func cond(arg uint, op libseccomp.ScmpCompareOp, vals ...uint64) libseccomp.ScmpCondition {
	c, err := libseccomp.MakeCondition(arg, op, vals...)
	if err != nil {
		// Only reachable with a bad literal above: a programming error.
		panic(err)
	}
	return c
}

// exportBPF returns the compiled program's bytes (struct sock_filter[]).
// libseccomp 2.5 exports only to a file descriptor: use a memfd.
func exportBPF(f *libseccomp.ScmpFilter) ([]byte, error) {
	fd, err := unix.MemfdCreate("lite-agent-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd: %w", err)
	}
	file := os.NewFile(uintptr(fd), "seccomp-bpf")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	prog, err := io.ReadAll(file)
	if err != nil {
		return nil, err
	}
	if len(prog) == 0 || len(prog)%8 != 0 || len(prog)/8 > 4096 {
		return nil, fmt.Errorf("seccomp: exported program has %d bytes", len(prog))
	}
	return prog, nil
}
