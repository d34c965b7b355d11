package spawn

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock access rights (linux/landlock.h), by the ABI that introduced them.
const (
	llExecute           = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llWriteFile         = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llReadFile          = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llReadDir           = unix.LANDLOCK_ACCESS_FS_READ_DIR
	llRemoveDir         = unix.LANDLOCK_ACCESS_FS_REMOVE_DIR
	llRemoveFile        = unix.LANDLOCK_ACCESS_FS_REMOVE_FILE
	llMakeChar          = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR
	llMakeDir           = unix.LANDLOCK_ACCESS_FS_MAKE_DIR
	llMakeReg           = unix.LANDLOCK_ACCESS_FS_MAKE_REG
	llMakeSock          = unix.LANDLOCK_ACCESS_FS_MAKE_SOCK
	llMakeFifo          = unix.LANDLOCK_ACCESS_FS_MAKE_FIFO
	llMakeBlock         = unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	llMakeSym           = unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	llRefer             = unix.LANDLOCK_ACCESS_FS_REFER     // ABI 2
	llTruncate          = unix.LANDLOCK_ACCESS_FS_TRUNCATE  // ABI 3
	llIoctlDev          = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV // ABI 5
	llBindTCP           = unix.LANDLOCK_ACCESS_NET_BIND_TCP // ABI 4
	llConnectTCP        = unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	llScopeAbstractUnix = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET // ABI 6
	llScopeSignal       = unix.LANDLOCK_SCOPE_SIGNAL

	llFileOnly = llExecute | llWriteFile | llReadFile | llTruncate | llIoctlDev

	// RO, read-only (and executable): system paths, Policy.ReadOnlyPaths.
	RO = llExecute | llReadFile | llReadDir
	// RW, read-write: the workspace, the temp dir, Policy.ReadWritePaths.
	// Everything except creating device nodes (which also needs
	// CAP_MKNOD, gone anyway).
	RW = RO | llWriteFile | llRemoveDir | llRemoveFile | llMakeDir | llMakeReg |
		llMakeSock | llMakeFifo | llMakeSym | llRefer | llTruncate | llIoctlDev
	// DevRW: the data sinks and sources of /dev a shell redirects to and
	// from.
	DevRW = llReadFile | llWriteFile
	// Pseudo-terminals: /dev/ptmx and the /dev/pts entries need their
	// ioctls (TIOCGPTN, TIOCSPTLCK, TCGETS, TIOCSWINSZ...) as well. The
	// ioctls that act on another terminal's input or the console
	// (TIOCSTI, TIOCLINUX, TIOCSETD, TIOCCONS) stay refused by seccomp.
	llPty = llReadFile | llWriteFile | llIoctlDev
)

// handledFS is every file right the given ABI knows: all of them are
// handled, so whatever no rule grants is denied.
func handledFS(abi int) uint64 {
	h := uint64(llExecute | llWriteFile | llReadFile | llReadDir | llRemoveDir | llRemoveFile |
		llMakeChar | llMakeDir | llMakeReg | llMakeSock | llMakeFifo | llMakeBlock | llMakeSym)
	if abi >= 2 {
		h |= llRefer
	}
	if abi >= 3 {
		h |= llTruncate
	}
	if abi >= 5 {
		h |= llIoctlDev
	}
	return h
}

// Rule is one path_beneath rule before it is opened: a path and the
// rights it grants (RO, RW, DevRW; rights the ABI lacks are dropped, and
// directory rights on a file).
type Rule struct {
	Path   string
	Access uint64
}

// Handled returns what a ruleset for this ABI handles (and so denies
// unless a rule allows it); denyTCP: every TCP bind and connect too (the
// sandbox decides when, by network mode).
func Handled(abi int, denyTCP bool) unix.LandlockRulesetAttr {
	attr := unix.LandlockRulesetAttr{Access_fs: handledFS(abi)}
	if abi >= 4 && denyTCP {
		attr.Access_net = llBindTCP | llConnectTCP
	}
	// Scoping (ABI 6): no connecting to abstract unix sockets and no
	// signals to processes outside this sandbox's domain.
	if abi >= 6 {
		attr.Scoped = llScopeAbstractUnix | llScopeSignal
	}
	return attr
}

// BuildRuleset creates the Landlock ruleset once per policy, handling
// attr and granting rules. The fd is O_CLOEXEC; children receive it
// through the spawn arguments (Pieces.RulesetFD).
func BuildRuleset(attr unix.LandlockRulesetAttr, rules []Rule) (int, error) {
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(int(fd))
		}
	}()
	for _, r := range rules {
		if err := addPathRule(int(fd), attr.Access_fs, r); err != nil {
			return -1, err
		}
	}
	ok = true
	return int(fd), nil
}

func addPathRule(rulesetFD int, handled uint64, r Rule) error {
	// O_PATH follows symlinks: the rule lands on what the path names now
	// (/bin -> usr/bin, /etc/resolv.conf -> /run/...), which is what the
	// child will reach through it.
	pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock: opening %s: %w", r.Path, err)
	}
	defer unix.Close(pfd)
	return addFDRule(rulesetFD, handled, pfd, r)
}

// addFDRule adds the rule r on the open file pfd, which r.Path names (in
// errors only: a detached mount has no path).
func addFDRule(rulesetFD int, handled uint64, pfd int, r Rule) error {
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("landlock: stat %s: %w", r.Path, err)
	}
	acc := r.Access & handled
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		// Directory rights on a file are EINVAL.
		acc &= llFileOnly
	}
	if acc == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: acc, Parent_fd: int32(pfd)}
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD),
		unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return fmt.Errorf("landlock: rule for %s: %w", r.Path, e)
	}
	return nil
}

// AddRules adds to the ruleset the rules of what m mounts of its own, by
// fd: its devpts instance (addPtyRules), its /proc skeleton (addProcRule),
// its root skeleton (addRootRule) and its private tmpfs (addTmpRules,
// read-write with tmpWritable, else read-only), each when it has one. m
// may be nil. A read-write rule on the tmpfs also grants every
// read-write root mounted beneath /tmp, so a process whose roots must
// stay read-only to it leaves the tmpfs's writes to its supervisor.
func (m *Mounts) AddRules(rulesetFD int, handled uint64, tmpWritable bool) error {
	if fd := m.devpts(); fd >= 0 {
		if err := addPtyRules(rulesetFD, handled, fd); err != nil {
			return err
		}
	}
	if fd := m.procSkeleton(); fd >= 0 {
		if err := addProcRule(rulesetFD, handled, fd); err != nil {
			return err
		}
	}
	if fd := m.RootSkeleton(); fd >= 0 {
		if err := addRootRule(rulesetFD, handled, fd); err != nil {
			return err
		}
	}
	if m != nil && m.own.tmp_fd >= 0 {
		access := uint64(RO)
		if tmpWritable {
			access = RW
		}
		if err := addTmpRules(rulesetFD, handled, int(m.own.tmp_fd), access); err != nil {
			return err
		}
	}
	return nil
}
