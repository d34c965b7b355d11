package seccomp

import (
	"fmt"
	"sync"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// The refusal set: the EPERM rules whose refusal a person or a model may
// need named — what a debugger (ptrace), a container or mount tool
// (namespaces, mount), `chmod u+s` or a profiler meets. A program with a
// listener whose server knows the set (ChildSpec.Refusals, or a sealed
// thread's main program) sends these calls to it (SECCOMP_RET_USER_NOTIF)
// instead of answering EPERM itself; the notification server answers EPERM all the
// same and records the refusal (Refused, the server's Options.Refused),
// so that the command's result says what was refused and why. A program
// without a listener answers EPERM itself. The refusal is the same
// either way: only who answers differs, and a listener that is gone
// answers ENOSYS, still a refusal.
//
// The kernel runs every program of a process and takes the most
// restrictive action, EPERM outranking a notification: so the set is in
// exactly one program of a child's chain, the thread's main program or
// the child program (MainSpec.RefusalsInChild, ChildSpec.Refusals).
//
// Not in the set, still answered by the filter itself: clone3 and openat2
// (ENOSYS, so that callers fall back to calls a filter can read: not a
// refusal to name), the socket, ioctl, personality and routing rules
// (the network supervisor names what a command's connections meet), and
// extended attributes (EOPNOTSUPP, which cp -a and tar take in their
// stride).

// refusal is one rule of the set: a call (by name, or by number where
// this libseccomp has no name for it) and the argument tests that must
// all hold — one libseccomp rule.
type refusal struct {
	name string
	nr   libseccomp.ScmpSyscall // when name is ""
	args []maskedArg
	rule notify.RefusalRule
	// detail is the refusal's target in the record: the flag or mode
	// that made it one ("" names the call alone). A mode is filled in
	// from the call's argument (modeArg).
	detail  string
	modeArg int // -1: none
}

// maskedArg holds when args[arg] & mask == value (the full 64 bits, as
// libseccomp compares them).
type maskedArg struct {
	arg         uint
	mask, value uint64
}

// otherRefusals: the calls refused outright (deniedSyscalls), set-id
// modes and device nodes (modeCalls). Always in one program of the chain.
func otherRefusals() []refusal {
	var rs []refusal
	for _, name := range deniedSyscalls {
		rs = append(rs, refusal{name: name, rule: notify.RuleSyscall, modeArg: -1})
	}
	for _, c := range modeCalls {
		for _, bit := range []uint64{unix.S_ISUID, unix.S_ISGID} {
			m := maskedArg{c.modeArg, bit, bit}
			if c.flagArg < 0 {
				rs = append(rs, refusal{name: c.name, args: []maskedArg{m}, rule: notify.RuleSetIDMode, modeArg: int(c.modeArg)})
				continue
			}
			for _, fl := range []uint64{unix.O_CREAT, oTmpfileBit} {
				rs = append(rs, refusal{name: c.name, args: []maskedArg{{uint(c.flagArg), fl, fl}, m}, rule: notify.RuleSetIDMode, modeArg: int(c.modeArg)})
			}
		}
		if c.mknodLike {
			for _, typ := range []uint64{unix.S_IFCHR, unix.S_IFBLK} {
				rs = append(rs, refusal{name: c.name, args: []maskedArg{{c.modeArg, unix.S_IFMT, typ}}, rule: notify.RuleDeviceNode, modeArg: int(c.modeArg)})
			}
		}
	}
	return rs
}

// namespaceRefusals: namespaces (a new user namespace would hand the
// process every capability inside it, and with them mount, pivot_root
// and friends on its own mounts; the others rearrange what it sees),
// joining another process's (setns), and the mount calls. In the child
// program, or with a sealed thread's: the spawner thread itself may need
// to make namespaces. unshare without a namespace flag (CLONE_FILES,
// CLONE_FS) stays allowed: the spawn path itself needs
// unshare(CLONE_FILES) right after the child program is loaded; and the
// spawn path joins the sandbox's namespace template (setns) and makes
// its mount namespace before it loads this program.
func namespaceRefusals() []refusal {
	var rs []refusal
	// One rule per flag: libseccomp compares an argument once per rule.
	// CLONE_NEWTIME shares its bit with clone's exit-signal byte, so it
	// is only checked for unshare.
	for _, fl := range cloneNewFlags {
		for _, name := range []string{"clone", "unshare"} {
			rs = append(rs, refusal{name: name, args: []maskedArg{{0, fl, fl}}, rule: notify.RuleSyscall, detail: cloneFlagNames[fl], modeArg: -1})
		}
	}
	rs = append(rs, refusal{name: "unshare", args: []maskedArg{{0, unix.CLONE_NEWTIME, unix.CLONE_NEWTIME}}, rule: notify.RuleSyscall, detail: "CLONE_NEWTIME", modeArg: -1})
	rs = append(rs, refusal{name: "setns", rule: notify.RuleSyscall, modeArg: -1})
	for _, name := range mountSyscalls {
		rs = append(rs, refusal{name: name, rule: notify.RuleSyscall, modeArg: -1})
	}
	for _, nr := range mountSyscallNumbers {
		if name, err := nr.GetName(); err == nil && name != "" {
			rs = append(rs, refusal{name: name, rule: notify.RuleSyscall, modeArg: -1}) // known by name after all
			continue
		}
		rs = append(rs, refusal{nr: nr, rule: notify.RuleSyscall, modeArg: -1})
	}
	return rs
}

var cloneFlagNames = map[uint64]string{
	unix.CLONE_NEWNS: "CLONE_NEWNS", unix.CLONE_NEWCGROUP: "CLONE_NEWCGROUP", unix.CLONE_NEWUTS: "CLONE_NEWUTS",
	unix.CLONE_NEWIPC: "CLONE_NEWIPC", unix.CLONE_NEWUSER: "CLONE_NEWUSER", unix.CLONE_NEWPID: "CLONE_NEWPID",
	unix.CLONE_NEWNET: "CLONE_NEWNET",
}

// addRefusals adds rs with action act (EPERM, or a notification).
func addRefusals(b *ruleBuilder, rs []refusal, act libseccomp.ScmpAction) {
	for _, r := range rs {
		conds := make([]libseccomp.ScmpCondition, len(r.args))
		for i, a := range r.args {
			conds[i] = cond(a.arg, libseccomp.CompareMaskedEqual, a.mask, a.value)
		}
		if r.name == "" {
			b.addNumber(r.nr, act)
			continue
		}
		b.add(r.name, act, conds...)
	}
}

// refusalsByNr is the set by this architecture's numbers, for Refused: a
// call this libseccomp cannot name has no rule either (ruleBuilder.add
// skips it).
var refusalsByNr = sync.OnceValue(func() map[int32][]refusal {
	m := map[int32][]refusal{}
	for _, r := range append(otherRefusals(), namespaceRefusals()...) {
		nr := r.nr
		if r.name != "" {
			var err error
			// A negative number is libseccomp's pseudo-number for a
			// call this architecture does not have: no rule either.
			if nr, err = libseccomp.GetSyscallFromName(r.name); err != nil || nr < 0 {
				continue
			}
		} else {
			r.name = fmt.Sprintf("syscall %d", int(nr))
		}
		m[int32(nr)] = append(m[int32(nr)], r)
	}
	return m
})

// Refused reports whether a call notified with number nr and args is one
// of the refusal set (the same tests its seccomp rules make, from the
// same table), and the record of it. The notification server answers such
// a call EPERM before anything else looks at it: set-id modes arrive on
// calls change capture also receives (chmod, open), which it would
// otherwise perform.
func Refused(nr int32, args [6]uint64) (notify.Refusal, bool) {
	for _, r := range refusalsByNr()[nr] {
		if !r.matches(args) {
			continue
		}
		target := r.detail
		if r.modeArg >= 0 {
			target = fmt.Sprintf("mode %#o", args[r.modeArg]&0o177777)
		}
		return notify.Refusal{Rule: r.rule, Op: r.name, Target: target}, true
	}
	return notify.Refusal{}, false
}

func (r refusal) matches(args [6]uint64) bool {
	for _, a := range r.args {
		if args[a.arg]&a.mask != a.value {
			return false
		}
	}
	return true
}
