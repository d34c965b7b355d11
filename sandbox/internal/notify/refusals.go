package notify

import (
	"slices"
	"sync"
)

// Refusals the server makes by a rule of the sandbox's, recorded so that
// whoever ran the command can say what was refused and why (the sandbox's
// ExitStatus.Refusals; the bash tool's note). A refusal the command gets
// from the kernel on its own (a file that is not there, a port in use) is
// not one: only calls a rule of ours turned away are recorded.
//
// What this server cannot see is not recorded: Landlock's refusals (a
// read outside the grants) are decided in the kernel and reported to no
// one, and so are seccomp's where the programs have no listener to send
// their refusal set to (Options.Refused).

// RefusalRule names the rule that refused a call.
type RefusalRule string

const (
	// RuleGit: the .git rule's refusal of a new repository (a .git or
	// HEAD name, objects/ or refs/ beside a HEAD: RefusedGitPath), and of
	// a repository moved or linked out of a private root
	// (private_linux.go).
	RuleGit RefusalRule = "git"
	// RuleGitWrite: the .git rule's refusal of a change beneath an
	// existing .git (EROFS): a commit, or git's own opportunistic index
	// refresh in `git status`.
	RuleGitWrite RefusalRule = "git-write"
	// RuleWrite: a change outside the read-write roots (Landlock's write
	// rule, which change capture keeps).
	RuleWrite RefusalRule = "write"
	// RuleNetwork: an IP destination or bind address the mode refuses.
	RuleNetwork RefusalRule = "network"
	// RuleUnixSocket: a pathname or abstract unix socket outside the
	// read-write roots.
	RuleUnixSocket RefusalRule = "unix-socket"
	// RuleHardLink: a workspace file linked to a name outside the
	// workspace (capture's rule (a)).
	RuleHardLink RefusalRule = "hard-link"
	// RuleSetID: a set-id file opened for writing.
	RuleSetID RefusalRule = "set-id"
	// RuleTempBoundary: a hard link or rename between the sandbox's
	// temporary directories, which commands write themselves, and the
	// other roots (own_linux.go).
	RuleTempBoundary RefusalRule = "temp-boundary"
	// RuleSyscall: a system call the seccomp programs refuse whatever
	// its arguments (ptrace, bpf, mount, setns, ...), or clone/unshare
	// with a namespace flag (Options.Refused).
	RuleSyscall RefusalRule = "syscall"
	// RuleSetIDMode: a set-id mode given by chmod, or by open, creat or
	// mknod to the file they create.
	RuleSetIDMode RefusalRule = "set-id-mode"
	// RuleDeviceNode: mknod of a character or block device.
	RuleDeviceNode RefusalRule = "device-node"
)

// Refusal is one call refused by a rule.
type Refusal struct {
	Rule RefusalRule
	// Op is the call as the command made it: "mkdir", "open", "rename",
	// "connect", "send", "bind", "listen"...
	Op string
	// Target is what the call named: a path as resolved, or an address
	// (IP:PORT, a unix socket's path).
	Target string
}

// maxRefusals bounds what one log keeps: a program retrying a refused
// call in a loop must not grow the supervisor's memory.
const maxRefusals = 32

// RefusalLog collects the refusals of one command (or, for a sealed
// spawner thread's server, of the one command its slot runs at a time).
// Distinct refusals are kept in the order they came, up to maxRefusals;
// the rest are counted. Safe for concurrent use; a nil log records
// nothing.
type RefusalLog struct {
	mu      sync.Mutex
	list    []Refusal
	dropped int
}

// add records r, once.
func (l *RefusalLog) add(r Refusal) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Contains(l.list, r) {
		return
	}
	if len(l.list) >= maxRefusals {
		l.dropped++
		return
	}
	l.list = append(l.list, r)
}

// Take returns what was recorded (and how many more distinct refusals
// were not kept) and empties the log.
func (l *RefusalLog) Take() (list []Refusal, dropped int) {
	if l == nil {
		return nil, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	list, dropped = l.list, l.dropped
	l.list, l.dropped = nil, 0
	return list, dropped
}
