// Package sandbox confines the commands and tool handlers an agent runs:
// the workspace is the only writable place, secrets outside it are
// unreadable, the network is off unless the policy allows it, and nothing a
// command starts outlives it.
//
// This comment is the contract a caller relies on. How each layer works
// and why it is built that way is docs/sandbox-internals.md; the safety
// arguments of the spawn path and of the notification server are the
// doc.go files of sandbox/internal/spawn and sandbox/internal/notify.
//
// # Policy
//
// A Policy names the workspace (read-write, the working directory), extra
// read-only and read-write paths, the read-only system paths a toolchain
// needs (chosen narrowly: /usr, /lib*, /bin, selected /etc files — not all of
// /etc, not /root, not $HOME), a private TMPDIR, the network mode, the
// environment allowlist (secret-looking variables never pass unless given
// explicitly) and limits. New builds the kernel rules for a policy once;
// Run and Start use them for every command.
//
// # The confined child
//
// Confined code always runs in a child process: Landlock and seccomp
// apply to threads, and the Go runtime moves goroutines between them.
// Commands start through the spawn path (sandbox/internal/spawn) from a
// locked spawner thread. In the child, in this order: signal handlers
// reset; for unprivileged users a user namespace (and a PID namespace); a
// private mount namespace, read-only but the read-write roots, whose root
// is a skeleton of the grants; setsid; rlimits; every capability dropped,
// even when started as root; no_new_privs; Landlock; the per-child seccomp
// program last; then execve. A failure before exec is a *SpawnError
// naming the step. Custom Go tool handlers run in a confined re-execution
// of the program started through the same path (confined.Serve),
// confined before its first instruction. `lite-agent sandbox run` is this
// path too: there is no second implementation of it.
//
// From a Sandbox's second command on, an unprivileged user's namespace is
// made once (internal/spawn's Template: a holder process asleep in it) and
// each command starts in a copy of it, its user namespace nested in the
// template's (RLIMIT_NPROC still per command) and with a procfs of its own
// PID namespace: what commands share through it is what root's commands
// share through their spawner thread's namespace, made once from the roots
// and .git entries as they were (TestCommandsStartInNamespaceTemplate).
//
// The seccomp programs are precompiled for every shape New can ask for
// (sandbox/internal/seccomp/programs.bin) and looked up by a hash of every
// input of their compile; another shape is compiled at run time. `go
// generate ./sandbox` regenerates them, and TestPrecompiledSeccompPrograms
// fails when a rule changed without it.
//
// # What a confined process cannot do
//
// At LevelFull, in every network mode, as root and as an unprivileged
// user, a confined process cannot:
//
//   - read outside the system paths, the read-only paths and the
//     read-write roots, nor write outside the read-write roots (the
//     workspace, TMPDIR, Policy.ReadWritePaths) — Landlock; nor list a
//     name outside the grants: its / is a read-only skeleton of them,
//     /tmp a tmpfs of the sandbox's own, /proc its own processes only,
//     /dev/pts a devpts instance of its own;
//   - change a file's mode, owner or times outside the read-write roots
//     (read-only mounts: EROFS);
//   - trace, mount, make namespaces, load BPF, use io_uring, keyrings,
//     userfaultfd, raw, packet or netlink sockets, TIOCSTI or TIOCLINUX,
//     or another architecture's system call table — seccomp, EPERM
//     (clone3 and openat2 answer ENOSYS so that libc falls back);
//   - make a set-id file or a device node, or set extended attributes
//     (seccomp, decided on register values, so race-free). Where a
//     notification server serves the sandbox, these calls and the ones
//     above (bar the ENOSYS fallbacks, sockets, terminals and foreign
//     tables) are sent to it, which answers EPERM all the same and
//     lists each in ExitStatus.Refusals (rules "syscall", "set-id-mode",
//     "device-node"), so that whoever ran the command learns what was
//     refused;
//   - connect to a pathname unix socket outside the read-write roots: the
//     notification server resolves the path as the child would and
//     performs the connect itself;
//   - reach an address its network mode does not allow (below), or steer
//     a socket elsewhere than its checked address (source routes, a
//     forced egress interface, SO_REUSEPORT: refused outside
//     unrestricted);
//   - signal, or connect to an abstract socket of, a process outside its
//     sandbox (Landlock ABI 6+ scoping; below it, a PID namespace);
//   - outlive its command (below).
//
// What the host cannot carry is never silently dropped: see "Fail closed,
// and what is lost".
//
// # Network modes
//
// The modes are ordered none < loopback < private < unrestricted
// (NetworkMode.Within, Narrower, Wider: the only ordering of them; a tool's
// declared network, tools.Network, is this type). none (default): nothing
// but the sandbox's own loopback servers — a command may bind loopback (a
// wildcard bind is kept to the loopback device), listen, and connect or
// send to the loopback ports the sandbox's commands bound; no other
// address, no DNS. loopback: 127.0.0.0/8 and ::1. private: loopback plus
// 10/8, 172.16/12, 192.168/16, fc00::/7. unrestricted: no network filter
// (connect is still trapped, for the unix socket rule). Outside
// unrestricted, every call that names an address is performed by the
// notification server on its own validated copy of the address, TCP, UDP
// and MPTCP alike; without seccomp user notification, none refuses IP
// sockets outright and the other modes fail closed.
//
// With AllowDomains, lite-agent's domain proxy (internal/netproxy) runs in
// this process on 127.0.0.1; New starts it and Close stops it. Commands
// reach it (and only it, beyond what their mode reaches) through
// HTTP_PROXY, HTTPS_PROXY and each ecosystem's proxy setting, which the
// command's environment points at it; Sandbox.HTTPProxy gives its URL to
// in-process tools. DenyDomains wins. A name that resolves to a loopback,
// private, link-local or other non-public address is refused unless the
// grant is that literal IP[:PORT], which the notification server also
// admits directly. Policy.OnNetwork hears of every connection the proxy
// decides; Policy.OnUnknownDomain, when set, is asked about a host no
// entry names (once per host and port, within netproxy's question
// budget); DomainSources says where each grant came from. Every other
// live proxy of this process is refused to the sandbox's commands in
// every mode but unrestricted.
//
// # Process lifetime and limits
//
// The tree is tracked by a cgroup (v1 pids/memory, or v2 with
// CLONE_INTO_CGROUP) or, for users without a writable cgroup, a PID
// namespace. Timeout, cancellation and Kill end the whole tree, including
// processes that setsid or double-fork; Wait returns when the tree is gone.
// The process limit is pids.max (it also stops a fork bomb started by root,
// for whom RLIMIT_NPROC does nothing), or RLIMIT_NPROC inside a fresh user
// namespace, or the namespace's pid_max. Memory: memory cgroup, else
// RLIMIT_AS per process. File size: RLIMIT_FSIZE. Output beyond
// Limits.OutputBytes is dropped and reported.
//
// # Change capture
//
// With Policy.CaptureChanges and Command.BeforeChange, every write-side
// call of the command (open for writing, creat, truncate, unlink, rmdir,
// mkdir, mknod, rename, link, symlink, the chmod family, bind of a
// pathname socket) reports the workspace paths it is about to change to
// BeforeChange before it happens, and is then made by the supervisor
// itself on what it resolved, with the command's credentials and no
// capabilities, only beneath the read-write roots: a thread that rewrites
// the path, moves the working directory or swaps a symlink meanwhile
// cannot get a change past it. O_TRUNC is applied only once the pre-image
// of that very inode is recorded. It fails closed: a path it cannot
// resolve refuses the call with EPERM. A workspace file cannot be
// hard-linked to a name outside the workspace; a link inside reports its
// source too; a write, truncate or chmod of a file with several names
// reports every workspace name of it. A write-open of an existing set-id
// file is refused (EPERM).
//
// With Command.ForeignChange as well, a process outside the command's tree
// that changes a path the command announced, while it runs, is reported
// where the kernel says who wrote (a privileged fanotify listener);
// otherwise Enforcement().Notes says so. A writer that cannot be
// identified is reported too: a rewind then errs towards a conflict.
// LITE_AGENT_FOREIGN_WRITERS=off in the supervisor's environment turns
// it off.
//
// With Command.Writers (one Writers per session, NewWriters), the capture
// keeps every workspace file a command opens for writing in the session's
// registry until no writable open file description of it is left (past
// 4096 files a further write-open fails with EMFILE), and Writers.Pause,
// which the checkpoint recorder calls before each seal, quiesces every
// command's capture and, while some file is held, stops every process of
// every command until the seal has read those files; resume continues
// exactly what it stopped. LITE_AGENT_HELD_WRITES=off in the supervisor's
// environment turns it off.
//
// # The workspace's .git
//
// Unless Policy.GitWritable, existing .git entries are read-only to
// commands: the .git of the workspace and of each directory directly
// inside it, the same in each read-write path, the git directory a .git
// file names, and a bare repository there are bound over themselves
// read-only in every mount namespace the sandbox makes (a write fails
// with EROFS; moving or removing one with EBUSY). Under change capture,
// every command is also refused (EPERM) any call that makes or writes a
// name .git (any case) or HEAD, or objects, refs or commondir beside a
// HEAD, and (EROFS) any change beneath a .git, however deep or however
// new; removals are allowed. RefusedGitPath is that one rule, for the
// in-process file tools. The rule does not hold in the sandbox's TMPDIR
// and private /tmp, where test suites make repositories, and nothing of
// such a repository may leave them (copies are refused by name, renames
// out fail with EXDEV, links into them are refused). Each refusal of a
// rule is in ExitStatus.Refusals (RefusalNote makes the line). Without a
// private mount namespace, or without CaptureChanges, part of this does
// not hold, and Enforcement().Notes says which part.
//
// # Reads outside the grants
//
// No one is told of a read the grants do not cover: Landlock answers
// EACCES, the root skeleton has no such name (ENOENT), and the command
// says "No such file or directory" of a file that may exist. ReadRefusals
// takes a failed command's output and names, as Refusals of rule "read",
// the absolute paths its error lines report that no grant covers — a
// credential path (Policy.CredentialPatterns) named as one, a path in the
// sandbox's own /tmp as its own — decided as text against the grants,
// never by asking the host, so that the answer is the same whether the
// file exists outside or not. RefusalNote names one only when no rule
// the sandbox recorded was refused.
//
// # Temporary directories
//
// A sandbox's TMPDIR is named lite-agent-sandbox-<pid>.<start>-<random>
// after the process that made it (start: its start time in /proc, which
// tells it from a later process with the same pid). The first New of a
// process (beside its first command; Close waits for it) removes those of
// owners that are gone, unless the same user's temporary directory was
// swept in the last minute (a marker file's time: `sandbox run` in a loop
// does not read a large /tmp every time); RemoveStaleTempDirs (`lite-agent
// gc`) always does. A session killed with SIGKILL leaves its temp dir
// until the next start a minute after the last sweep. Its cgroups are
// removed by the next New.
//
// # Decide, then build
//
// New first decides, then builds. Its decision is a pure function of the
// normalized policy and the host's facts, each probed once per process by
// trying it (plan_linux.go, probe_linux.go); it returns the plan and the
// Enforcement the sandbox will report, and the builder only carries the
// plan out. Decide, Trial, `lite-agent sandbox check`, best effort and
// LevelContainer all read this one answer.
//
// # Fail closed, and what is lost
//
// When the host lacks something the policy's level needs, New refuses
// with a *RefusedError (wrapping ErrUnsupported) that names what is
// missing. BestEffort is an explicit choice; then Enforcement().Missing
// lists what was not enforced. Enforcement().Lost lists what the sandbox
// runs without either way — what its level gives up, and what the host
// cannot carry without it weakening confinement (the whole tree's memory
// bound without a memory cgroup; ptys, a /proc, /tmp or root of its own):
// a sandbox is fully enforced when both are empty. Trial runs one command
// that must write (captured, and restored from the pre-images it saw),
// must not read beside the workspace, must not reach a loopback listener
// and must leave no daemon behind; a session runs it before its first
// turn, and CheckWorkspace, which asks from inside whether commands may
// write a workspace this process may (root loses its DAC override
// inside). Policy.OnStartFailure tells the caller of every command the
// sandbox could not start. Probe reports what this kernel and this user
// offer.
//
// # Levels
//
// LevelFull (the default) is everything above. LevelContainer, only used
// when named, is for hosts where namespaces cannot be made (a Docker or
// Podman container with its default seccomp profile, a restriction of
// unprivileged user namespaces, a sandbox nested in another): Landlock,
// seccomp (with user notification, network supervision and change
// capture where the host lets the server work), no capabilities,
// no_new_privs, rlimits and cgroups where writable, and no namespace.
// What it keeps fails closed as at LevelFull; what it gives up is in
// Lost: read-only mounts outside the roots, a /proc, /tmp, ptys and root
// of its own, and where the host lacks what carries them the whole tree's
// kill and limits, signal isolation below Landlock ABI 6, and change
// capture.
//
// # Package layout
//
// This package is the portable surface — Policy, Command, New, Start and
// Run, Enforcement, Probe, Decide, Trial, SpawnError, Writers — and the
// Linux files that decide what a policy needs (plan_linux.go), build and
// run it (sandbox_linux.go), probe the host (probe_linux.go), and reach
// each internal package one way (spawnpath_linux.go, notify_linux.go).
// The internal packages carry out what this package decides and never
// decide themselves: sandbox/internal/spawn (the spawn path, with the
// PID-namespace init in sandbox/internal/spawn/pidinit),
// sandbox/internal/cgroup (the cgroup manager), sandbox/internal/seccomp
// (the programs and their precompiled table) and sandbox/internal/notify
// (the seccomp user-notification server: network modes, change capture).
//
// # Limits of this implementation
//
//   - The read-only mount namespace is a copy made when a spawner thread
//     (root) or a command (others) starts: a file system mounted outside
//     later is not visible to the commands of a spawner thread made
//     before it. The root skeleton is made at New: a granted path created
//     later is not in it (Landlock's rule needs it at New too), and one
//     replaced since is left out of it.
//   - A relative path the notification server resolves for a command
//     (a unix socket, an emulated open) is resolved inside the
//     command's root from its working directory's name there; from a
//     directory with no such name (removed, deeper than PATH_MAX) it is
//     resolved from the directory itself with symlinks refused (ELOOP),
//     so that none is followed through the host's root.
//   - Unprivileged users without a writable cgroup get per-process memory
//     limits (RLIMIT_AS) and no MemoryExceeded/ProcessLimitHit reports.
//   - Commands run at the same time under one Sandbox can see each
//     other's TMPDIRs.
//   - Unix servers reached through the notification server see the
//     agent's credentials, not the child's.
//   - A blocking connect still in progress when its command ends is
//     ended by the server's stop (shutdown(2)) for a command's own
//     server; a spawner thread's server lets it run to its timeout (the
//     caller is gone; a loopback connect is answered at once anyway).
//   - Change capture does not cover timestamps (utimensat is not
//     captured), nor writes through descriptors opened before it started.
//     An emulated open never gives the caller a controlling terminal
//     (O_NOCTTY), and a reopen through /proc/self/fd of a deleted file is
//     refused (EACCES). A pathname socket bound under capture reports its
//     base name to getsockname, as the network supervisor's binds do.
//   - A session's writers (Writers) tell a tree's processes by its cgroup
//     or PID namespace; without either (best effort), by its session,
//     which a process can leave (setsid): such a process is not stopped
//     while a held file is read. A file system that gives no leases (NFS)
//     cannot say that a file is no longer open for writing: its files
//     stay in the registry while any command runs, towards its bound.
//   - File capabilities (security.capability) are not refused by a rule
//     of ours: setting them needs CAP_SETFCAP, which is dropped.
//   - In the PID-namespace mode (users without a writable cgroup, or root
//     with Landlock ABI < 6) the namespace's first process is an init —
//     this program re-executed (/proc/self/exe, stopped in a C constructor
//     before the Go runtime, internal/spawn/pidinit) — which forks the command as
//     PID 2, reaps orphans and reports the command's wait status. So the
//     command keeps the usual signal semantics (`kill $$`, SIGPIPE,
//     SIGXFSZ; TestPIDNamespaceInit), at ~1 ms more per spawn (/bin/true
//     from a 20 MB test binary: 2.0 ms against 1.0 ms as PID 1), and the
//     init counts as one of Limits.Processes. The confined command may
//     execute the agent's binary too (Landlock must let the first process
//     execute it); it holds no secret and runs confined like any program.
package sandbox

// The precompiled seccomp programs (internal/seccomp/programs.bin; see
// its cache_linux.go) are regenerated from here, so that
// `go generate ./sandbox` stays the one command.
//go:generate go test -run ^TestPrecompiledSeccompPrograms$ ./internal/seccomp -update-seccomp
