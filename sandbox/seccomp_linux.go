package sandbox

import (
	"fmt"
	"io"
	"os"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// The seccomp programs are compiled once per policy by libseccomp, in the
// supervisor, and exported as classic BPF. There are two:
//
//   - the main program (buildMainFilter): everything a confined process may
//     never do. It is loaded once on each spawner thread (spawner_linux.go)
//     and every child vfork'd from that thread inherits it: attaching a
//     program of a few hundred instructions costs 100-300 µs (the kernel
//     converts, JIT-compiles and emulates it to fill its action cache),
//     which per spawn would be more than the rest of the confinement;
//   - the child program (buildChildFilter): what the spawner thread itself
//     must still be able to do — clone3, clone/unshare with namespace flags
//     — and the calls sent to a supervisor (SECCOMP_RET_USER_NOTIF). It is
//     small and loaded by each child, with SECCOMP_FILTER_FLAG_NEW_LISTENER
//     when it notifies. Loading even a small program costs a child 50-150
//     µs, so where the spawner thread needs neither clone3 nor namespace
//     flags (v1 cgroup slots: the common case as root), it is "sealed": its
//     main program carries these rules too, and the connect supervisor's
//     notification with one listener for the thread (the network
//     supervisor's contract is per command: it keeps a per-child program).
//
// Default action: allow. Denials return EPERM (clone3: ENOSYS, so that libc
// falls back to clone, whose flags a filter can see). Only the native
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
	// mount table and root
	"mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	// namespaces (clone, clone3 and unshare: in the child program)
	"setns",
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

// filterSpec says which network rules the main filter carries.
type filterSpec struct {
	network NetworkMode
	// denyConnect refuses connect(2) outright: the fallback when no
	// supervisor can check unix socket paths (no user notification).
	denyConnect bool
	// sealed: the spawner thread needs neither clone3 nor namespace flags,
	// so the child program's rules go into the main program too, and with
	// them notify's calls (one listener per spawner thread).
	sealed bool
	notify notifySpec
}

// buildMainFilter compiles the policy's main seccomp program.
func buildMainFilter(spec filterSpec) ([]byte, error) {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	defer f.Release()
	// Kill the whole process, not just the thread, on a foreign syscall
	// table: a multi-threaded program must not carry on half-dead.
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	// libseccomp's default linear layout, not its binary tree (SetOptimize
	// 2): the tree compiles 2.5x slower (0.7 ms) and makes the kernel's
	// one-time action-cache emulation no cheaper to matter, while the
	// syscalls that reach the program at run time at all are the few with
	// argument rules (the cache answers "allow" for the rest).
	eperm := seccomp.ActErrno.SetReturnCode(int16(unix.EPERM))
	b := ruleBuilder{f: f}

	for _, name := range deniedSyscalls {
		b.add(name, eperm)
	}
	// Terminal injection: TIOCSTI pushes bytes into a terminal's input (the
	// caller's shell would run them), TIOCLINUX can do the same on a
	// virtual console, TIOCSETD changes line discipline (kernel attack
	// surface), TIOCCONS redirects the console. The kernel compares the
	// request as a 32-bit int, so compare only the low 32 bits: a request
	// with junk in the high half must still match.
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD, unix.TIOCCONS} {
		b.add("ioctl", eperm, cond(1, seccomp.CompareMaskedEqual, 0xffffffff, req))
	}

	// Socket families: only AF_UNIX, AF_INET and AF_INET6 exist in here.
	// Netlink, packet, vsock, AF_ALG, bluetooth, ... are kernel attack
	// surface or ways to see and send raw traffic. The comparison is on
	// the full 64-bit argument: a value with high bits set is > AF_INET6
	// and denied, which errs on the safe side.
	// Allowed: 1, 2, 10. Denied: 0, 3, 4-7, 8-9, and above 10.
	b.add("socket", eperm, cond(0, seccomp.CompareEqual, unix.AF_UNSPEC))
	b.add("socket", eperm, cond(0, seccomp.CompareEqual, 3))
	b.add("socket", eperm, cond(0, seccomp.CompareMaskedEqual, ^uint64(3), 4))
	b.add("socket", eperm, cond(0, seccomp.CompareMaskedEqual, ^uint64(1), 8))
	b.add("socket", eperm, cond(0, seccomp.CompareGreater, unix.AF_INET6))
	// Raw and legacy packet sockets (also reachable as AF_INET+SOCK_PACKET).
	b.add("socket", eperm, cond(1, seccomp.CompareMaskedEqual, sockTypeMask, unix.SOCK_RAW))
	b.add("socket", eperm, cond(1, seccomp.CompareMaskedEqual, sockTypeMask, unix.SOCK_PACKET))
	// AF_UNIX datagram sockets can send to any pathname socket with
	// sendto/sendmsg, without connect (e.g. /dev/log, journald, another
	// user's daemon). Stream and seqpacket sockets can reach a peer only
	// through connect(2), which is supervised. So: no unix datagrams.
	b.add("socket", eperm,
		cond(0, seccomp.CompareEqual, unix.AF_UNIX),
		cond(1, seccomp.CompareMaskedEqual, sockTypeMask, unix.SOCK_DGRAM))
	// socketpair only makes AF_UNIX pairs; a datagram pair has the same
	// sendto-anywhere property.
	b.add("socketpair", eperm, cond(0, seccomp.CompareNotEqual, unix.AF_UNIX))
	b.add("socketpair", eperm, cond(1, seccomp.CompareMaskedEqual, sockTypeMask, unix.SOCK_DGRAM))

	if spec.denyConnect {
		b.add("connect", eperm)
	}
	if spec.sealed {
		addNamespaceRules(&b)
		addNotifyRules(&b, spec.notify)
	}
	switch spec.network {
	case NetworkNone, "":
		// No IP sockets at all: TCP, UDP, MPTCP, ICMP alike.
		b.add("socket", eperm, cond(0, seccomp.CompareEqual, unix.AF_INET))
		b.add("socket", eperm, cond(0, seccomp.CompareEqual, unix.AF_INET6))
	}

	// personality: querying (0xffffffff) and the harmless personas stay
	// allowed; the flags above are refused. A query has every bit set, so
	// each rule requires bit 31 (used by no flag) clear. A value with bit 31
	// set and a flag gets through — catching it needs 31 more rules — but
	// these flags only weaken the confined program's own memory protections
	// (mmap_min_addr still refuses page 0 without CAP_SYS_RAWIO).
	for _, fl := range personalityDenied {
		b.add("personality", eperm, cond(0, seccomp.CompareMaskedEqual, fl|0x80000000, fl))
	}
	if b.err != nil {
		return nil, b.err
	}
	return exportBPF(f)
}

// notifySpec lists the syscalls sent to a supervisor (SECCOMP_RET_USER_NOTIF).
type notifySpec struct {
	calls []notifyCall
}

type notifyCall struct {
	name  string
	conds []seccomp.ScmpCondition
}

// connectOnly: the supervisor of this package (connectsup_linux.go) sees
// every connect(2) and resolves AF_UNIX pathnames itself.
var connectOnly = notifySpec{calls: []notifyCall{{name: "connect"}}}

// netSupervised: the network supervisor decides every address a socket
// could reach: connect, bind, listen, sendto with a destination (without
// one it is write(2) to the already-checked peer), sendmsg/sendmmsg
// (msg_name lives in memory the filter cannot read, so all of them).
var netSupervised = notifySpec{calls: []notifyCall{
	{name: "connect"},
	{name: "bind"},
	// listen on an unbound TCP socket binds it to the wildcard address;
	// the supervisor binds it to loopback first.
	{name: "listen"},
	{name: "sendto", conds: []seccomp.ScmpCondition{cond(4, seccomp.CompareNotEqual, 0)}},
	{name: "sendmsg"},
	{name: "sendmmsg"},
}}

// buildChildFilter compiles the program each child loads itself: the
// namespace rules (the spawner thread must create PID and user namespaces,
// so they cannot be in the main program it carries) and, when a supervisor
// serves this policy, the calls sent to it.
func buildChildFilter(nsRules bool, notify notifySpec) ([]byte, error) {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	b := ruleBuilder{f: f}
	if nsRules {
		addNamespaceRules(&b)
	}
	addNotifyRules(&b, notify)
	if b.err != nil {
		return nil, b.err
	}
	return exportBPF(f)
}

// addNamespaceRules refuses clone3 and namespace flags.
func addNamespaceRules(b *ruleBuilder) {
	eperm := seccomp.ActErrno.SetReturnCode(int16(unix.EPERM))
	// clone3 passes its flags in memory, where a filter cannot look: refuse
	// it as "not implemented" so that glibc and others fall back to clone.
	b.add("clone3", seccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS)))
	// Namespaces: a new user namespace would hand the process every
	// capability inside it (and with them mount, pivot_root and friends on
	// its own mounts); the others rearrange what it sees. One rule per flag:
	// libseccomp compares an argument once per rule. unshare without a
	// namespace flag (CLONE_FILES, CLONE_FS) stays allowed: the spawn path
	// itself needs unshare(CLONE_FILES) right after the child program is
	// loaded.
	for _, fl := range cloneNewFlags {
		b.add("clone", eperm, cond(0, seccomp.CompareMaskedEqual, fl, fl))
		b.add("unshare", eperm, cond(0, seccomp.CompareMaskedEqual, fl, fl))
	}
	b.add("unshare", eperm, cond(0, seccomp.CompareMaskedEqual, unix.CLONE_NEWTIME, unix.CLONE_NEWTIME))
}

func addNotifyRules(b *ruleBuilder, notify notifySpec) {
	for _, c := range notify.calls {
		b.add(c.name, seccomp.ActNotify, c.conds...)
	}
}

type ruleBuilder struct {
	f   *seccomp.ScmpFilter
	err error
}

// add adds one rule. A syscall this architecture does not have (vm86 on
// x86-64, say) is skipped: libseccomp cannot resolve it and there is
// nothing to deny.
func (b *ruleBuilder) add(name string, act seccomp.ScmpAction, conds ...seccomp.ScmpCondition) {
	if b.err != nil {
		return
	}
	nr, err := seccomp.GetSyscallFromName(name)
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

func cond(arg uint, op seccomp.ScmpCompareOp, vals ...uint64) seccomp.ScmpCondition {
	c, err := seccomp.MakeCondition(arg, op, vals...)
	if err != nil {
		// Only reachable with a bad literal above: a programming error.
		panic(err)
	}
	return c
}

// exportBPF returns the compiled program's bytes (struct sock_filter[]).
// libseccomp 2.5 exports only to a file descriptor: use a memfd.
func exportBPF(f *seccomp.ScmpFilter) ([]byte, error) {
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
