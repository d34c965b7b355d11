// Package sandbox confines the commands and tool handlers an agent runs:
// the workspace is the only writable place, secrets outside it are
// unreadable, the network is off unless the policy allows it, and nothing a
// command starts outlives it.
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
// A Go process cannot confine a goroutine — Landlock and seccomp apply to
// threads and the runtime moves goroutines between them — so confined code
// always runs in a child process. Commands start through a small cgo spawn
// path (a vfork-style clone, sandbox/internal/spawn) from a locked
// "spawner" thread that has loaded the main seccomp program once; the
// child inherits it. In the child: signal handlers reset; for unprivileged
// users a user namespace (and a PID namespace); a private mount namespace,
// read-only but the read-write roots, whose root is a skeleton of the
// grants (below; as root the spawner thread makes it once); setsid;
// rlimits; every capability dropped, even when started as root;
// no_new_privs; Landlock; the small per-child seccomp program last; then
// execve. The order, and why each step is where it is, is the spawn
// path's safety argument (internal/spawn's doc.go and spawn_linux.c). A
// failure before exec reaches the parent as (step, errno) and becomes a
// SpawnError naming the step.
//
// Custom Go tool handlers run in a confined re-execution of the program
// started through the same path (see tools.ServeConfinedCall): the program
// is confined before its first instruction.
//
// The seccomp programs are compiled by libseccomp at `go generate` time
// for every shape New can ask for, embedded (internal/seccomp/programs.bin) and
// looked up by a hash of every input of their compile; another shape is
// compiled at run time. TestPrecompiledSeccompPrograms requires each
// stored program to equal a fresh compile, so a rule changed without
// `go generate ./sandbox` fails the tests rather than ship the old one
// (internal/seccomp). `lite-agent sandbox run` is this path too:
// there is no second implementation of it.
//
// # What each layer stops
//
// Landlock (the highest ABI the kernel has): file access — system paths
// read and execute, workspace, TMPDIR and read-write paths read-write,
// nothing else, no device nodes; TCP bind/connect in network mode none;
// with ABI 6+, abstract unix sockets and signals scoped to the sandbox.
//
// Read-only mounts (internal/spawn: mountns_linux.go, la_mount_setup in
// spawn_linux.c):
// Landlock has no right for metadata, so chmod, chown (to oneself) and
// utimensat would pass on any file the user owns — as root, root's files
// anywhere. In the command's private mount namespace every mount is
// read-only (/proc, /sys and /dev too: device nodes are still written
// through a read-only mount, ptys are made by devpts itself) except clones
// of the read-write roots (workspace, TMPDIR, read-write paths), which keep
// the mount flags they have outside; those calls fail with EROFS elsewhere
// (TestMountNSMetadata; through the CLI, TestSandboxRunConfines).
// Each root is reached by a walk that follows no symlink and must end on
// the inode recorded at New, or the spawn fails. Root: each spawner thread
// unshares CLONE_NEWNS once, so no command pays for a namespace.
// Unprivileged users (and root when it must write a PID namespace's
// pid_max): CLONE_NEWNS with the child's user namespace, set up in the
// child; the supervisor holds the namespace while the command runs so that
// its teardown (an RCU grace period) is not on the exit path. From a
// Sandbox's second command on, an unprivileged user's namespace is made
// once (internal/spawn's Template: a holder process asleep in it) and each
// command starts in a copy of it, its user namespace nested in the
// template's (RLIMIT_NPROC still per command) and with a procfs of its own
// PID namespace: what commands share through it is what root's commands
// share through their spawner thread's namespace, made once from the
// roots and .git entries as they were (TestCommandsStartInNamespaceTemplate). Without user
// namespaces New fails closed (BestEffort: Missing says so). Nothing
// confined can undo it: no capabilities, and seccomp refuses every mount
// call (below). In every network mode: the notification server resolves
// unix socket paths in the child's root and accepts the sandbox's own
// mount namespace for it (every granted path bound at its own path).
//
// seccomp (libseccomp; denials return EPERM): ptrace, process_vm_*,
// mount and the whole mount API (mount, umount2, open_tree, open_tree_attr,
// move_mount, mount_setattr, fsopen/fsconfig/fsmount/fspick), pivot_root, chroot, unshare/setns and clone with
// namespace flags, clone3 (ENOSYS, so libc falls back to clone), bpf,
// perf_event_open, keyctl/add_key/request_key, userfaultfd, io_uring,
// kexec, module loading, ioctl TIOCSTI/TIOCLINUX (compared on the low 32
// bits), sockets other than AF_UNIX/AF_INET/AF_INET6, raw sockets, AF_UNIX
// datagram sockets, pidfd_getfd, and more (see internal/seccomp). Outside
// network mode unrestricted, also IP sockets other than TCP, UDP and MPTCP
// stream or datagram sockets (no SCTP, UDP-Lite, ping, ...), and the
// socket options that would send a socket's traffic elsewhere than its
// checked address: source routes (IP_OPTIONS, IPV6_RTHDR, ...) and a
// forced egress interface (SO_BINDTODEVICE, IP_UNICAST_IF, sticky
// IPV6_PKTINFO, ...; level and name compared on the low 32 bits), and
// SO_REUSEPORT, which would let a socket share the address of a user's own
// listener and take some of its clients. (UDP's SO_REUSEADDR shares an
// address too, across users, and the latest bind gets the datagrams: the
// notification server clears it on a datagram socket before binding, so
// such a bind fails with EADDRINUSE; TestUDPReuseAddrCannotTakeAService.)
// Only the
// native architecture is allowed: the i386 table through int 0x80 and x32
// kill the process.
//
// No privilege planting (seccomp, on register values, so race-free): no
// set-id mode through chmod, fchmod, fchmodat, fchmodat2, open/openat/
// creat with O_CREAT or O_TMPFILE, mknod/mknodat; no character or block
// device nodes; openat2, whose mode lives in memory, answers ENOSYS so
// that callers fall back to openat. The same rules are in every program:
// commands, custom Go handlers, root or not.
// A confined command therefore cannot leave a setuid copy of a shell for
// the next unconfined user or root's cron (TestEscapeSetID, the escape
// suite's setid-planting). Setting or removing extended attributes answers
// EOPNOTSUPP (TestEscapeXattr): a POSIX ACL is a mode Landlock does not
// govern. Not covered yet: a write through a shared writable mmap keeps an
// existing file's set-id bit (the kernel clears it on write(2), truncate
// and chown, not on a mapped write). Such a file can only pre-exist in a
// read-write root — a confined process can neither make one nor link one
// in from elsewhere — and the mapping can only change bytes within its
// present size; but a set-id file there that the confined user may write
// (as root: any root-owned one) can be given new contents with its bit.
// seccomp cannot tell which file a mapping is of, and refusing shared
// writable mappings would break linkers (Go's, lld, mold) and SQLite. The
// race-free fix is for the supervisor to perform write-side opens itself
// (SECCOMP_IOCTL_NOTIF_ADDFD, the emulating notification server of issue
// 12) and refuse them, on the descriptor it opened, for a file with
// S_ISUID, or S_ISGID with group execute.
//
// Pathname unix sockets, which Landlock does not check on connect: every
// connect is trapped by seccomp user notification; the notification
// server copies the address, resolves it as the child would
// (openat2 RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS in the calling thread's
// root), allows only sockets beneath the read-write roots, and connects
// the child's socket (taken with pidfd_getfd) itself — it never answers
// "continue", so the child cannot swap the address after the check.
// /proc: no path rule names a per-process entry (a rule on /proc/self
// made at New would name the supervisor's own directory); /proc/self
// works on the sandbox's own /proc (below), where no other process is
// even listed, so /proc/PID/cwd, root and environ traversal are refused.
//
// What ordinary tools expect of a machine: pseudo-terminals (in
// DefaultSystemPaths: /dev/ptmx and /dev/pts readable, writable and with
// their ioctls, while TIOCSTI, TIOCLINUX, TIOCSETD and TIOCCONS stay
// refused by seccomp; TestPseudoTerminalUsableTIOCSTIStillRefused) on a
// devpts instance of the sandbox's own (internal/spawn's devpts_linux.go):
// made detached
// at New, mounted over /dev/pts in every namespace the sandbox makes, its
// root the one Landlock rule that reaches a /dev/pts/N. The host's devpts
// holds the user's other terminals of the same uid, whose keystrokes a
// command could read: no rule ever names it, and covered, it has no path
// inside (TestHostPseudoTerminalsUnreachable, which shows the theft
// working with the host's devpts granted). Without a private mount
// namespace, or before Linux 6.15 (a detached mount cannot be cloned into
// another namespace), ptys are off and a note says so
// (TestPseudoTerminalsOffWithoutMountNS). With change capture, which
// makes every open for writing in the supervisor, /dev/ptmx and
// /dev/pts/N are opened there in the sandbox's instance (its device is
// the notification server's PtyDev), with the command's credentials and
// O_NOCTTY: a program that wants the pts as its controlling terminal
// takes it with TIOCSCTTY (login_tty, pty.spawn, creack/pty and script
// do), not by opening it as a session leader.
//
// /tmp (internal/spawn's tmpfs_linux.go, with the reasons): where the
// sandbox has a root skeleton, its /tmp is a tmpfs of the sandbox's own,
// writable, at most Limits.MemoryBytes, made detached at New and mounted
// in every namespace the sandbox makes: programs that write to /tmp
// whatever TMPDIR says (a JVM's java.io.tmpdir) work, nothing they write
// there is visible to the host or another sandbox, the sandbox's
// commands share it, and it is freed at Close (TestPrivateTmp). /dev/shm
// (POSIX shared memory and semaphores: Python's multiprocessing, sem_open),
// /var/tmp and /run (empty, as a container's: the host's holds its
// services' sockets) are directories of the same tmpfs, each mounted at
// its path, under the same bound (TestPrivateShmVarTmpRun). TMPDIR
// stays the host directory described under "Temporary directories",
// bound at its own path. Grants beneath /tmp are bound onto mount points
// in it that no command can move or remove (EBUSY, change capture
// answering the same for a mount root); a rename or link between it and
// another tree is EXDEV. Without a root skeleton (no mount namespace, no
// /proc of the sandbox's own) /tmp is the host's, not writable, and a
// note says so.
//
// /proc (internal/spawn's procfs_linux.go, with the reasons): where the
// sandbox has a
// mount namespace, /proc is a read-only tmpfs skeleton of its own whose
// root is the one Landlock rule for /proc: self, thread-self and mounts
// are symlinks into /proc/pid, a procfs instance with subset=pid (no
// /proc/sys, /proc/net, kallsyms, sysrq-trigger) and hidepid=ptraceable
// (with Landlock, no process outside the command's own domain is
// listed); the policy's global files (cpuinfo, meminfo, stat,
// filesystems) are the host's, bound in. Root's spawner threads share one
// procfs made at New; a command with a namespace of its own mounts one
// for its PID namespace. /proc/self/{status,maps,fd,...} work; /proc/N by
// number does not (TestProcSelfFiles, with another process's argv and
// environment shown readable unconfined). Without a mount namespace, or
// unprivileged without a PID namespace, the host's /proc stays with only
// the global files readable, and a note says so.
//
// The root (internal/spawn's rootfs_linux.go, with the reasons): where
// the sandbox has a
// mount namespace and a /proc of its own, a command's / is a read-only
// tmpfs skeleton, made once per Sandbox from the very rules the Landlock
// ruleset is built from: each granted path bound at its own canonical
// path (a clone of the namespace's mounts there, so read-only but the
// writable roots), the sandbox's /proc and /dev/pts, the symlinks met on
// the way to a granted path recreated (Debian's /bin, /lib64 -> usr/...),
// /dev/fd and /dev/std* linked into /proc/self, empty directories
// between. The workspace's parents, / and /tmp list only granted names,
// through one Landlock rule, READ_DIR on the skeleton's root by fd: a
// rule covers the hierarchy beneath it, and every directory grant
// already carries READ_DIR (the sandbox's devpts, whose grant did not,
// becomes listable: the names of this sandbox's own ptys). The switch is
// runc's pivot_root(".", ".") and a detached unmount of the old root, so
// nothing of the host's tree stays mounted in the namespace
// (TestParentsListNamesOnly, TestOldRootUnreachable, with the sibling
// secret shown listed and readable unconfined). Root's spawner thread
// switches once (it opens no path afterwards); other commands switch in
// the child. A program outside the grants is not there: the spawn's
// error says so (EACCES, as Landlock would). Without a mount namespace
// or a /proc of the sandbox's own, the host's / stays and the parents
// are not listable (a READ_DIR rule on a parent would let everything
// below it be listed, ~/.ssh's names included); a note says so. Not
// taken: a seccomp notification for every O_DIRECTORY open (seccomp
// cannot look at the path: ~30 µs each, 49 in a git status of a small
// repository).
//
// # Network modes
//
// The modes are ordered none < loopback < private < unrestricted
// (NetworkMode.Within, Narrower, Wider: the only ordering of them; a tool's
// declared network, tools.Network, is this type).
//
// none (default): nothing but the tree's own loopback servers (below).
// unrestricted: no network filter (connect is still trapped, for the unix
// socket rule). loopback (127.0.0.0/8, ::1) and private (plus 10/8,
// 172.16/12, 192.168/16, fc00::/7).
//
// # The notification server
//
// One seccomp user-notification server (sandbox/internal/notify) serves
// every network mode and change capture: one receive loop, one
// address-length bound, one way of naming the caller (a pidfd of the
// notifying thread, or of its thread group before Linux 6.9: a connect
// from any thread works), one path resolver (openChildPathAt, shared with
// capture), one AF_UNIX rule (notify.UnixPathsUnder of the read-write
// roots), and handlers for connect, bind, listen, addressed sendto,
// sendmsg and sendmmsg (the per-mode IP decision: notify's addr_linux.go,
// ownports_linux.go) and for the capture calls (notify's
// capture_linux.go). Its written safety argument is that package's doc.
// Under every mode but unrestricted the filter sends it each call that names an address; under unrestricted
// only connect. It copies the address and data from the child, checks the
// notification is still pending, takes the child's socket with
// pidfd_getfd, and performs the call itself on that socket with its own
// validated copy — TCP, UDP and MPTCP alike, before any packet leaves.
// Where a spawner thread is sealed (root with v1 cgroups: no clone3, no
// namespace flags) and capture is off, the thread's program carries the
// trapped calls and one server per thread serves every command the
// thread starts, so a command loads no program of its own and starts no
// server (spawn under none costs what it did with the connect-only
// supervisor this replaced); otherwise each command's child program has
// its listener and the command its server. Without seccomp user
// notification (Linux < 5.6) none refuses connect(2) outright and IP
// sockets altogether; the other modes fail closed. What is
// never trapped — write(2) or send() on a connected socket — can only reach
// the checked peer because seccomp refuses the re-routing socket options
// and other IP protocols (above). We chose this over
// a network namespace with only lo because a namespace has its own
// loopback: a tool declared "loopback" must reach the user's local
// services, and unprivileged user namespaces are restricted on some
// distributions.
//
// A wildcard bind (0.0.0.0, ::) in modes none, loopback and private — what
// node's listen(0), supertest and python's http.server make — is bound as
// asked, on the loopback device only (SO_BINDTODEVICE "lo", which seccomp
// refuses the command to change): the program sees the address it bound,
// the peers (a dual-stack socket's v4-mapped ones), the families and the
// dual-stack behaviour (::1 and 127.0.0.1 clients, IPV6_V6ONLY) it sees
// unconfined, and a packet from any other interface finds no socket
// (notify's TestWildcardListenerLocalOnly: a host in a network namespace
// reaches an unconfined wildcard listener, not the command's). A stream
// socket is kept to the device when it listens (also one never bound,
// which the kernel binds to the wildcard), a datagram socket when it
// binds. What a command can still tell: getsockopt(SO_BINDTODEVICE) says
// "lo", and a connection to this machine's non-loopback address is
// refused.
//
// # Network by domain
//
// With AllowDomains, lite-agent's domain proxy (internal/netproxy) runs
// in this process, outside every sandbox, on 127.0.0.1 and a port the
// kernel picks; New starts it and Close stops it. It resolves names
// itself, refuses a name that resolves to a loopback, private,
// link-local (metadata), multicast or other non-public address unless
// the grant is that literal IP[:PORT], lets deny entries win, checks
// every plain-HTTP request of a kept-alive connection and its Host
// header, answers a refusal with 403 and a body naming the grant that
// would allow it, and reports each connection to Policy.OnNetwork (see
// that package's doc). DomainSources says where each grant came from.
// With Policy.OnUnknownDomain (an interactive session) a host that no
// entry names is not refused at once: the proxy holds the connection and
// asks (DomainQuestion; once per host:port however many connections
// wait), and the answer admits that host:port once, the host for the
// sandbox's life, or refuses — a refusal is remembered for the proxy's
// life, and questions are budgeted (netproxy.QuestionBudget): past the
// budget a new host is refused without asking. Deny entries are never
// asked about, and the rebinding check still applies to an admitted
// name.
//
// Enforcement is the notification server's (notify's ownports_linux.go):
// under none, its extra destinations with domains are the proxy's exact
// address and port and the literal IP[:PORT] grants (below); the seccomp
// filter lets TCP/UDP sockets exist
// (with loopback's socket-type and re-routing rules), and Landlock still
// refuses every TCP port to the child itself, since the server performs
// the connect on its own copy of the socket. So a program that ignores
// HTTPS_PROXY, connects to an IP literal or sends a DNS query gets EPERM
// at once (LITE_AGENT_NETWORK in its environment says why); raw and
// packet sockets stay refused by seccomp. Under loopback and private the
// proxy is added to what the mode reaches; under unrestricted it is
// offered, and everything is reachable anyway. Every other live proxy of
// this process (another Sandbox's, on 127.0.0.1 like all of them) is
// refused in every mode but unrestricted: loopback would otherwise reach
// it, and with it that sandbox's grants and asker. We chose the supervisor
// over a network namespace bridged over a unix socket: it is already the
// one place that performs connects on validated copies, it needs no user
// namespace (restricted on some distributions), and the command keeps
// the machine's loopback for what its mode allows.
//
// Direct grants: a literal IP or IP:PORT in AllowDomains (an IP alone:
// every port), unless a DenyDomains entry covers it, is also a
// destination the server admits without the proxy, in every mode the
// proxy exists in — connect and addressed sends, TCP and UDP, from any
// thread. Clients go to a loopback mirror directly (NO_PROXY below names
// loopback, and Go's net/http never proxies it), so without this a
// granted local GOPROXY, Verdaccio or devpi was unreachable under none.
// The decision is the proxy's own (netproxy.Rules.Direct, the lookup
// Check makes for an IP literal), handed to the server as
// notify.Options.DirectGrant (withDomains), so the two cannot disagree.
// A name is never a direct grant: it would have to be resolved inside,
// and only the proxy checks what it resolves to. Such a connect is
// reported to OnNetwork when the grant is what admitted it (not where
// the mode reaches the address anyway): decision allow, the grant's
// source followed by " (direct)" for the rule, no byte counts (the bytes
// pass around the proxy); an addressed datagram is not reported (one
// event per datagram would flood the stream).
//
// The command's environment points every ecosystem at the proxy,
// overriding what it was given: HTTP_PROXY/HTTPS_PROXY (both cases),
// NO_PROXY=localhost,127.0.0.1,::1 (loopback stays direct: the command's
// own servers, and what loopback/private allow, which the proxy would
// refuse), npm_config_proxy/https_proxy/noproxy, YARN_HTTP(S)_PROXY,
// PIP_PROXY, CARGO_HTTP_PROXY, NODE_USE_ENV_PROXY=1, JAVA_TOOL_OPTIONS
// (-Dhttp(s).proxyHost/Port and nonProxyHosts, appended), and git's
// http.proxy through GIT_CONFIG_COUNT/KEY_n/VALUE_n (after the entries
// the command has). Sandbox.HTTPProxy gives the URL to in-process tools
// (web_fetch), so that they follow the same allowlist.
//
// Tests that open servers: in mode none (with or without domains), a
// command may bind loopback (and a wildcard, kept to loopback as above),
// listen, and connect or send to the loopback ports the sandbox's
// commands bound (a dev server left in the background by one is
// reachable from the next) — nothing else on loopback, so the user's
// local services stay unreachable, and no other address (no DNS).
// Landlock still refuses every TCP port to the child itself: the server
// binds and connects on its own copy of the socket. A port a command
// bound and released, then taken by something else, stays reachable
// while the sandbox lives (TestOwnListenersEveryMode).
//
// # Process lifetime and limits
//
// The tree is tracked by a cgroup (v1 pids/memory as here, or v2 with
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
// With Policy.CaptureChanges and Command.BeforeChange, the write-side
// calls are sent to the supervisor, which reports the workspace paths they
// are about to change and then makes each call itself, on what it
// resolved, handing back the result (notify's capture_linux.go and
// capture_emulate_linux.go): an open's descriptor is installed in the
// process (SECCOMP_IOCTL_NOTIF_ADDFD), O_TRUNC applied only once the
// pre-image of that very inode is recorded; unlink, rename, mkdir, link,
// symlink, truncate, the chmod family and bind are made on directory
// descriptors it resolved (openat2, RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS
// from the caller's root, cwd or dirfd). The process's own call never
// runs, so a second thread that rewrites the path, moves the cwd or swaps
// a symlink cannot get a change past it (TestCaptureRace). The calls run
// on a thread with the command's fsuid/fsgid/groups and no capabilities,
// and only in directories beneath the read-write roots (Landlock's write
// rule; a chmod elsewhere, which Landlock would let through, is refused
// with EACCES). It fails closed: a path it cannot resolve (a cwd deeper
// than PATH_MAX, an unreadable /proc entry, a path into /proc other than
// the caller's own fd, cwd and root entries) refuses the call with EPERM.
// O_TMPFILE opens and exit_group still continue: decided on registers,
// they change no named inode. Hard links: a workspace file cannot be
// linked to a name outside the workspace; a link inside reports its
// source as well; a write, truncate or chmod of a file with several links
// reports every workspace name of it (HardLinkNames, a bounded walk: past
// 200,000 entries the call is refused). A unix socket bound in the
// workspace is reported as a new path, so a rewind removes it.
//
// # The workspace's .git
//
// git runs code that a repository's own files name: .git/hooks/*, and
// config keys such as core.fsmonitor (run by every `git status`, which
// most shell prompts run in the directory), core.hooksPath,
// core.sshCommand, filters and aliases. A command that could write them
// would plant code the user's next git command runs outside the sandbox,
// with all of the user's rights. So, unless Policy.GitWritable:
//
//   - Existing .git entries are read-only. New finds, in the workspace
//     and each of Policy.ReadWritePaths (not the private TMPDIR), the
//     root's .git and the .git of each directory directly inside it; a
//     .git file (worktrees, submodules: "gitdir: PATH") is protected
//     itself, with the directory it names and that directory's
//     commondir when they lie beneath a writable root; and the root or a
//     directory directly inside it that is itself a git directory (a
//     HEAD file beside objects/ and refs/: a bare repository, which git
//     finds without any .git name) is protected whole (gitguard_linux.go).
//     In every private mount namespace the sandbox makes, each is bound
//     over itself read-only, after the writable roots and before the
//     root skeleton clones them, reached by the same symlink-free walk
//     that must end on the inode recorded at New. A write beneath one
//     fails with EROFS; the entry is a mount point in the command's
//     namespace, so `mv .git x && mkdir .git` and `rm -rf .git` fail
//     with EBUSY. git status, diff and log work (status skips its index
//     refresh when it cannot take the lock); commit fails with "Unable to
//     create .git/index.lock: Read-only file system". A .git replaced
//     outside since New fails the spawn, naming it (make a new Sandbox).
//   - No new repository, and no change in any .git: change capture
//     refuses, with EPERM, any call that makes or writes a name whose
//     last component is .git (any case) or HEAD (exactly: beside objects/
//     and refs/ it makes its directory a bare repository, `git init
//     --bare` or a hand-made layout whose config's core.fsmonitor the
//     user's next `git status` beneath it would run), or objects, refs
//     or commondir in a directory that already holds a HEAD (which they
//     would complete: notify.CompletesGitDir); and, with EROFS as
//     the read-only bind answers, any change whose path has a .git
//     component anywhere — a .git nested deeper than New looks, or made
//     after New (by the user's `git init`), is as read-only to commands
//     as a bound one. The calls: mkdir, open with O_CREAT or for
//     writing, truncate, the chmod family, mknod, symlink, link and
//     rename (either name: a file moved or hard-linked out of a .git is
//     a second way to write it; the other names of a multiply-linked file
//     opened for writing too), bind — judged on the path as resolved, so
//     a symlink followed into a .git or to a new .git is caught. Removals
//     (unlink, rmdir) are allowed: they plant nothing, and a bound .git
//     is a mount point (EBUSY). The one rule is notify.RefusedGitPath,
//     exported as RefusedGitPath for the file tools, which refuse the
//     same paths. In a sandbox made with CaptureChanges every command is
//     captured for this rule, a command without BeforeChange with a
//     no-op hook; the kernel
//     (the agent's commands and handlers) and `lite-agent sandbox run`
//     set CaptureChanges whenever .git is protected (~0.25 ms per
//     command: /bin/true through Run, 1.05 ms without, 1.29 ms with).
//
// Limits, each said in Enforcement().Notes: without a private mount
// namespace (BestEffort without the kernel support, or a read-write root
// that is / itself) existing .git entries are not protected; without
// CaptureChanges (a Go caller that does not ask for it; the kernel, the
// CLI and the MCP manager ask for it whenever .git is protected) new
// .git names are not refused — a command there can `git init` a
// directory, or make a .git where none exists, and write in a .git New did
// not bind; repositories nested deeper than one directory are not looked
// for at New (walking the whole tree would cost in proportion to the
// workspace: change capture covers them); at most 32 entries are bound.
//
// Private roots: the rule does not hold in the sandbox's TMPDIR (of any
// sandbox: the lite-agent-sandbox-* directories) and its private /tmp,
// where test suites make repositories (`git init` in Go's t.TempDir(),
// pytest's tmp_path). Nothing of such a repository may arrive where the
// person runs git — every other writable root: the workspace, a
// --allow-write directory, a toolchain's cache (notify's
// private_linux.go): a copy out makes .git or HEAD names, refused as
// above; a directory renamed out of a private root fails with EXDEV (mv
// and tar then copy it); a symbolic link made or moved outside the
// private roots whose target, walked as the host would, passes through
// one is refused (EPERM); a directory holding a relative link with ".."
// moved to another parent fails with EXDEV (its copy makes each link
// again, judged). Within a mount namespace each root is a mount of its
// own, so a rename or hard link between roots is EXDEV anyway; the rule
// is what holds without one. TestRepositoriesInPrivateRoots,
// TestPrivateRepositoryStaysPrivate (each attack shown working with
// GitWritable). In the workspace and the other writable roots a HEAD
// refused costs tools that keep bare repositories there (Go's module
// cache fetching straight from VCS, cargo's git checkouts or its git
// index protocol, whose `git init` writes a HEAD): they fail unless
// Policy.GitWritable (cargo with Debian's crates, a directory source,
// makes none). Policy.GitWritable restores the old behaviour: commands
// may commit, and may plant hooks.
//
// Each refusal of the rule is reported in ExitStatus.Refusals, with the
// other refusals the notification server makes by a rule (refusals.go:
// what it cannot see, and why).
//
// # Other writers
//
// With Command.ForeignChange as well, a process outside the command's tree
// that changes a path the command announced, while the command runs, is
// reported (foreign_linux.go): a fanotify group per command, inode marks on
// the directories of the announced paths, the writer's pidfd checked
// against the tree's session, cgroup or PID namespace. A writer must still
// exist when its event is read, so the capture program then also stops
// exit_group, and the supervisor reads the queued events before the
// process ends. A writer that cannot be identified (reaped after a signal,
// lost events) is reported too: that errs towards a conflict in a rewind,
// never towards discarding someone's edit. This needs a privileged
// fanotify listener (CAP_SYS_ADMIN): for anyone else the kernel reports
// pid 0 for other processes' events, so ForeignChange is never called and
// Enforcement().Notes says so. LITE_AGENT_FOREIGN_WRITERS=off in the
// supervisor's environment turns it off (to measure, or to show the old
// behaviour).
//
// # Writers across checkpoints
//
// A command that outlives a checkpoint (a background task, an MCP server)
// can write a file through a descriptor or a shared mapping it opened
// before the checkpoint was sealed, without another captured call. With
// Command.Writers (one Writers per session, NewWriters), the capture keeps
// every regular workspace file the command opens for writing in the
// session's registry (internal/notify/held_linux.go: an O_PATH descriptor
// per inode, dropped once no writable open file description of it is left
// anywhere, which a read lease tells; past 4096 files a further
// write-open fails with EMFILE), and Writers.Pause, which the checkpoint
// recorder calls before each seal, quiesces every command's capture (no
// captured call is half-made while the seal runs) and, when some file is
// still held, stops every process of every command with SIGSTOP until each
// thread is stopped or blocked where it changes nothing, and returns those
// files; resume continues exactly what it stopped (writers_linux.go).
// LITE_AGENT_HELD_WRITES=off in the supervisor's environment turns it off
// (to show the old behaviour).
//
// # Temporary directories
//
// A sandbox's TMPDIR is named lite-agent-sandbox-<pid>.<start>-<random>
// after the process that made it (start: its start time in /proc, which
// tells it from a later process with the same pid). The first New of a
// process (beside its first command; Close waits for it), and
// RemoveStaleTempDirs, remove those of owners that are gone: a session
// killed with SIGKILL leaves its temp dir only until the next start. Its
// cgroups are removed the same way by the next New (internal/cgroup's
// cleanStale).
//
// # Decide, then build
//
// New first decides, then builds. decide (plan_linux.go) is a pure
// function of the normalized policy and the host's facts (hostInfo,
// probe_linux.go: each probed once per process by trying it — a seccomp
// listener on a throwaway thread, pidfd_getfd on a real pidfd, /proc/self
// against getpid, a vfork'd child's unshare(CLONE_FILES), the namespaces
// and mounts a command would get); it returns the plan and the
// Enforcement the sandbox will report. The builder only carries the plan
// out, and what it finds it cannot make (a root skeleton whose grants
// cannot be laid out) only adds to Lost. Decide, Trial, `lite-agent
// sandbox check`, best effort and LevelContainer all read this one
// answer; plan_linux_test.go has a table of host profiles (root and
// unprivileged, Landlock ABIs, cgroup v2/v1/none, user notification
// present or refused, user namespaces allowed or refused, Docker's
// default profile) and tests build real sandboxes on this host with
// facts taken away (hostmask_linux_test.go).
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
// LevelFull (the default) is everything above. LevelContainer is for
// hosts where namespaces cannot be made — a Docker or Podman container
// with its default seccomp profile and capabilities, Ubuntu's or Debian's
// restriction of unprivileged user namespaces, a sandbox nested in
// another — and is only used when named: Landlock, seccomp (with user
// notification, network supervision and change capture where the host
// lets the server work), no capabilities, no_new_privs, rlimits and
// cgroups where writable, and no namespace. What it keeps fails closed as
// at LevelFull (no Landlock or seccomp, or a network mode that needs the
// server where it cannot run, is refused); what it gives up is in Lost:
// read-only mounts outside the roots (chmod outside them is still refused
// where change capture runs), a /proc, /tmp, ptys and root of its own,
// and where the host lacks what carries them the whole tree's kill and
// limits, signal isolation below Landlock ABI 6, and change capture
// (rewind of commands' changes, the .git name rule). Codex's Linux
// sandbox is Landlock with a seccomp network filter and no namespace;
// this level is that and more, and says what it is not.
//
// Where unshare(CLONE_FILES) is refused (Docker's profile refuses
// unshare outright) a child cannot hand its own listener to the parent
// alone: the spawner threads then carry the server's calls (sealed), and
// a captured command starts from a spawner thread of its own whose second
// program carries the capture calls, its listener made in this process.
//
// # Package layout
//
// This package is the portable surface: Policy, Command, New, Start and
// Run, Enforcement, Probe, Decide, Trial, SpawnError, and the files that
// implement them on Linux by deciding what a policy needs — plan_linux.go
// (the decision), sandbox_linux.go (New's builder, Start, the process
// tree's end), probe_linux.go (what the host offers), trial_linux.go, the
// policy's grants in the spawn path's terms (grants_linux.go: Landlock
// rules and rights, the /proc files), temp dirs (tmpdirs_linux.go), the writer watch
// (foreign_linux.go), a session's writers and their pause
// (writers_linux.go), the domain proxy's wiring (domains*.go), and the one
// way into each internal package (spawnpath_linux.go, notify_linux.go).
//
// sandbox/internal/spawn is the spawn path: the C pieces (spawn_linux.c's
// la_spawn and la_child, confine.h's la_confine, the mount namespace,
// devpts, /proc and root skeletons), their Go side, the spawner threads
// and the Landlock ruleset building. It is internal because it applies
// what this package decides and never decides itself: New hands it the
// rules, programs, roots and limits; spawnpath_linux.go turns its errors
// into SpawnError and its spawner threads into the ones the cgroup slots
// hold. Its doc.go carries the safety argument: what a spawn guarantees,
// in what order. The PID-namespace init is its own package,
// internal/spawn/pidinit (a C constructor): this package imports it
// explicitly, as runc's main imports nsenter, so every program linking
// the sandbox can be re-executed as a namespace's init. Still here, to
// move after it: the writer watch (foreign_linux.go).
//
// sandbox/internal/cgroup is the cgroup manager: where this process sits
// in each hierarchy (cgroup.Detect, read by probe_linux.go), and per
// Sandbox a cgroup.Manager that carries out the plan New decides
// (cgroup.Plan): the per-Sandbox directories, the pooled per-command v2
// directories (the child born in one: CLONE_INTO_CGROUP) and v1 slots
// (a spawner thread parked in the slot's directories, started by this
// package's callback, Sandbox.newSlotThread, and joined with
// cgroup.JoinV1, so that it does not import the spawn path), killing and
// awaiting a command's tree, what limit it hit, and
// the sweep of dead owners' directories. Its doc.go says why no spawn
// ever migrates a process.
//
// sandbox/internal/seccomp builds the seccomp programs (the main and the
// child program, per network mode and notified calls) and keeps their
// precompiled table (programs.bin, regenerated by `go generate ./sandbox`).
// New asks it for programs by shape (seccomp.MainSpec, seccomp.NotifySpec)
// and loads the bytes; the rules, and why each is there, are its own.
//
// sandbox/internal/notify is the seccomp user-notification server: every
// decision a confined tree's trapped calls get — AF_UNIX, IP per mode,
// the tree's own loopback addresses, change capture — with its one path
// resolver, its unit tests and the harness that drives a confined child
// without this package's spawn path. It is internal because its options
// are this package's to set: the only way in is notify_linux.go here,
// which starts a server per listener (notify.Start), maps NetworkMode and
// the policy onto notify.Options (internalMode: the one mapping of
// NetworkMode, used for the programs too), and makes a command's
// notify.Capture; the child program's capture calls come from
// notify.CaptureCalls (seccomp.WithCapture: the one list, read by the
// program and by the server). The end-to-end tests of every network mode
// and of capture stay here: they run through a Sandbox; the unit tests of
// each internal package are its own.
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
