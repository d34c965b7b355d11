package sandbox

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Refusal is one call of a command that a rule of the sandbox refused (or
// narrowed): the .git rule, a change outside the writable roots, a network
// destination or bind address the mode refuses, a unix socket outside the
// writable roots, a hard link out of the workspace, a set-id file opened
// for writing, a set-id mode or a device node, a system call the seccomp
// rules refuse (ptrace, mount, namespaces, ...). ExitStatus.Refusals
// lists them, so that whoever ran the command can say what was refused,
// by which rule, and what would allow it (the bash tool's note:
// RefusalNote).
//
// What is not listed, because the kernel reports it to no one: a set-id
// mode and a refused system call where the command's seccomp programs
// have no listener (without change capture or a network supervisor: see
// Enforcement's notes) — EPERM from the filter itself; and, without
// change capture (Policy.CaptureChanges, which the CLI and the agent's
// tools set), a write outside the writable roots (Landlock's EACCES). A
// connection the domain proxy refuses is answered by the proxy itself,
// with a body naming the grant. A read outside the grants, a credential
// file hidden from commands included (Landlock's EACCES, or no such name
// in the sandbox's root), is not listed either: Sandbox.ReadRefusals
// finds those a failed command's own error lines name (rule "read").
type Refusal struct {
	// Rule is "git" (a new repository, or one leaving the private
	// roots), "git-write" (a change in an existing .git), "write",
	// "network", "unix-socket", "hard-link", "set-id" (a set-id file
	// opened for writing), "set-id-mode", "device-node", "syscall",
	// "temp-boundary", or "read" (a path outside the grants that a
	// failed command's output names: Sandbox.ReadRefusals).
	Rule string
	// Op is the call as the command made it ("mkdir", "open", "rename",
	// "connect", "send", "bind", ...; "read" for rule "read").
	Op string
	// Target is what the call named: a path as resolved, or an IP:PORT,
	// or a unix socket's path ("@name" for an abstract one).
	Target string
	// Why is the rule, in a few words.
	Why string
	// Allow names the flag (and policy file key) that would allow it, or
	// "" when nothing does.
	Allow string
}

// String is the refusal on one line: what, why, and what would allow it.
func (r Refusal) String() string {
	s := r.Op
	if r.Target != "" {
		s += " " + r.Target
	}
	s += ": " + r.Why
	if r.Allow != "" {
		s += "; " + r.Allow
	}
	return s
}

// explain fills in Why and Allow for a refusal of rule on op and target,
// under network mode.
func explain(rule, op, target string, mode NetworkMode) Refusal {
	r := Refusal{Rule: rule, Op: op, Target: target}
	switch rule {
	case "git":
		r.Why = "the sandbox's .git rule (a repository made here could run code in your own git; repositories may be made in $TMPDIR and /tmp, and not moved out)"
		r.Allow = `--git writable (git = "writable" in a policy file) lets commands write .git`
	case "git-write":
		r.Why = "the sandbox's .git rule (.git is read-only to commands: git status, diff and log work, committing is yours)"
		r.Allow = `--git writable (git = "writable" in a policy file) lets commands commit`
	case "write":
		r.Why = "outside the sandbox's writable paths"
		r.Allow = "--allow-write " + filepath.Dir(target) + " (write in a policy file's [sandbox] table) allows it"
	case "network":
		r.Why, r.Allow = explainNetwork(op, target, mode)
	case "unix-socket":
		r.Why = "unix sockets are reachable only beneath the sandbox's writable paths"
		if strings.HasPrefix(target, "@") {
			r.Why = "abstract unix sockets are not reachable from the sandbox"
		} else {
			r.Allow = "--allow-write " + filepath.Dir(target) + " makes the sockets there reachable"
		}
	case "hard-link":
		r.Why = "a workspace file may not get a name outside the workspace (a checkpoint could not restore its bytes)"
	case "set-id":
		r.Why = "a set-id file is never opened for writing in the sandbox"
	case "syscall":
		r.Why = syscallWhy(op) + "; the sandbox's seccomp rules refuse it"
		r.Allow = "no setting allows it inside the sandbox"
	case "set-id-mode":
		r.Why = "set-id modes are never given in the sandbox (a set-id file left behind runs with its owner's rights for whoever runs it next)"
		r.Allow = "no setting allows it; the same mode without u+s and g+s is allowed"
	case "device-node":
		r.Why = "device nodes are never made in the sandbox"
		r.Allow = "no setting allows it"
	case "temp-boundary":
		r.Why = "no hard link or rename between the sandbox's temporary directories (which commands write themselves) and the other writable roots, as between two file systems: mv and cp copy instead"
	default:
		r.Why = "refused by the sandbox"
	}
	return r
}

// syscallWhy says what a refused system call (the seccomp programs'
// refusal set) would have done.
func syscallWhy(op string) string {
	switch op {
	case "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_getfd":
		return "no process reads or controls another's memory or descriptors (strace, gdb and other debuggers)"
	case "clone", "unshare", "setns":
		return "no namespaces in the sandbox (unshare, bwrap, container tools): they would rearrange what its rules name"
	case "chroot", "pivot_root", "mount", "umount", "umount2", "move_mount", "open_tree", "open_tree_attr", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr":
		return "no mounts or chroot in the sandbox: they would rearrange what its rules name"
	case "open_by_handle_at", "name_to_handle_at":
		return "no file handles: they open files around the sandbox's path rules"
	case "io_uring_setup", "io_uring_enter", "io_uring_register":
		return "no io_uring: it makes system calls the sandbox's rules do not see (programs fall back to plain reads and writes)"
	case "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "kexec_load", "kexec_file_load",
		"init_module", "finit_module", "delete_module", "fanotify_init", "syslog":
		return "a kernel interface no build or test needs, closed as attack surface (BPF, profilers, keyrings, modules)"
	}
	return "system administration or legacy hardware access"
}

// explainNetwork says why mode refused op on target (an IP:PORT) and
// which setting reaches it.
func explainNetwork(op, target string, mode NetworkMode) (why, allow string) {
	if mode == "" {
		mode = NetworkNone
	}
	why = "network " + string(mode)
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return why, ""
	}
	ip := ap.Addr().Unmap()
	needs := NetworkUnrestricted
	switch {
	case ip.IsLoopback():
		needs = NetworkLoopback
		if op != "bind" && op != "listen" && mode == NetworkNone {
			why += " (only the sandbox's own servers on loopback)"
		}
	case ip.IsPrivate():
		needs = NetworkPrivate
	}
	if op != "bind" && op != "listen" && ap.Port() == 53 {
		// A name lookup: reaching the resolver would not reach the host
		// it names, whichever network mode allowed the resolver; the
		// domain proxy resolves the names it is granted, outside.
		allow = "--allow-domain HOST (allow_domains in a policy file) reaches a host by its name"
		if ip.IsLoopback() && mode == NetworkNone {
			allow += "; --network loopback reaches this resolver"
		}
		return why + " (no name is resolved in the sandbox)", allow
	}
	allow = "--network " + string(needs) + " (network in a policy file's [sandbox] table) reaches it"
	if op != "bind" && op != "listen" && needs == NetworkUnrestricted {
		allow = "--allow-domain " + target + " (or the host's name: allow_domains in a policy file) reaches it"
	}
	return why, allow
}

// RefusalNote is the one line a tool result carries after a command's
// own output when the sandbox refused something (more: refusals not
// listed): the first refusal of the most telling rule, and how many
// others there were. "" when there were none. A rule the sandbox
// recorded is more telling than a read the output names
// (Sandbox.ReadRefusals), which comes last. With failed false (the
// command succeeded), refusals a program works around on its own are
// left out: a change in an existing .git (git status's index refresh,
// which it skips when it cannot write), a refused system call (a program
// probing for io_uring or a user namespace, then doing without) and a
// file it looked for and went on without say nothing the model needs.
func RefusalNote(list []Refusal, more int, failed bool) string {
	if !failed {
		var loud []Refusal
		for _, r := range list {
			if r.Rule != "git-write" && r.Rule != "syscall" && r.Rule != "read" {
				loud = append(loud, r)
			}
		}
		if len(loud) == 0 {
			return ""
		}
		list = loud
	}
	if len(list) == 0 {
		return ""
	}
	first := list[0]
	for _, rule := range []string{"git", "git-write", "network", "unix-socket", "set-id", "set-id-mode", "device-node", "hard-link", "temp-boundary", "write", "syscall", "read"} {
		if i := indexRule(list, rule); i >= 0 {
			first = list[i]
			break
		}
	}
	note := "[lite-agent] the sandbox refused " + first.String()
	if n := len(list) - 1 + more; n > 0 {
		note += fmt.Sprintf(" (and %d other refusal%s)", n, plural(n))
	}
	return note
}

func indexRule(list []Refusal, rule string) int {
	for i, r := range list {
		if r.Rule == rule {
			return i
		}
	}
	return -1
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
