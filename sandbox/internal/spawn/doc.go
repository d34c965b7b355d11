// Package spawn is the sandbox's confined spawn path: it starts a command
// confined, from a locked spawner thread, through a small cgo vfork-style
// clone whose child confines itself and execs the command. It also makes
// the kernel objects that confinement is built from — the Landlock
// ruleset, the private read-only mount namespace and what the sandbox
// mounts of its own there (a devpts instance, a /proc, a root skeleton of
// the grants). It decides nothing about policy: which paths are granted
// and how, which seccomp programs load (sandbox/internal/seccomp), which
// cgroups a thread joins and how a command's tree ends are package
// sandbox's; this package applies them, in a fixed order, and reports
// which step failed.
//
// # What a spawn guarantees, in order
//
// A Go process cannot confine a goroutine — Landlock and seccomp apply to
// threads and the runtime moves goroutines between them — so confined code
// always runs in a child process. Commands start from a spawner thread
// (spawner_linux.go): a goroutine locked to its OS thread for good, which
// first runs the caller's join (v1 cgroups: a child is born in its parent
// thread's), then, as root (MountThread), makes its private read-only
// mount namespace once and switches to the root skeleton, then loads the
// main seccomp program once; every child inherits all three, and the rest
// of the Go process is untouched (seccomp and no_new_privs are per
// thread). The thread is never unlocked: when it ends, the runtime ends
// the thread with everything it carries.
//
// The child (la_child in spawn_linux.c, which says why each step is where
// it is), in this order:
//
//  1. signal handlers reset to SIG_DFL, all signals still blocked (no Go
//     handler can run on the child's stack);
//  2. unprivileged: a user namespace mapping only the caller (and a PID
//     namespace), its maps written through the parent's /proc — with a
//     Template (template_linux.go), nested in the template's user
//     namespace, which a first clone joins with setns before it clones
//     the child (la_spawn_in_template);
//  3. the PID namespace's pid_max, where that is the process limit;
//  4. MountChild: a private mount namespace, every mount read-only but the
//     read-write roots (la_mount_setup: each root reached by a walk that
//     follows no symlink and must end on the inode recorded at NewMounts,
//     or the spawn fails), then the sandbox's devpts and /proc, then the
//     root skeleton (pivot_root and a detached unmount of the old root) —
//     or, with a Template, a copy of the namespace its holder made so once,
//     with a procfs of the child's own PID namespace over the holder's;
//  5. setsid: no controlling terminal, so no TIOCSTI on it;
//  6. the cgroup: already born in it (v1: the thread's; v2: clone3
//     CLONE_INTO_CGROUP), joined by a write only without clone3;
//  7. rlimits (Request.Rlimits);
//  8. la_confine (confine.h): every capability dropped — bounding set,
//     securebits locked, ambient, effective, permitted, inheritable —
//     even as root (the bounding set already empty when the spawner
//     thread emptied its own, ThreadProgram.DropBounding, and the child
//     is born outside a new user namespace: it inherits it); no_new_privs; landlock_restrict_self on the ruleset
//     built in the parent; the child seccomp program (its listener, if it
//     notifies, created while the fd table is shared with the parent, then
//     a private copy of the table taken without it);
//  9. stdin/stdout/stderr, every other fd close-on-exec, the working
//     directory, signals unblocked, execve.
//
// The child shares the parent's memory (CLONE_VM) and the thread is
// suspended until execve or _exit (CLONE_VFORK): only async-signal-safe
// calls, no allocation, no locks. A failure is stored as (step, errno) in
// the shared arguments and the child exits 127; Spawn returns an *Error
// naming the step, which package sandbox turns into its SpawnError. Under
// the root skeleton a program outside the grants is not there at all:
// ExecError says so as Landlock would have (EACCES), naming the path.
//
// ConfineThread is la_confine for a process that confines itself (a
// re-executed Go child, before its runtime starts, or a test in a
// subprocess): Landlock and seccomp apply to the calling thread only.
//
// # The mounts of a sandbox
//
// Mounts (NewMounts, made once per Sandbox) holds the writable roots and
// their identities, and the fds of the sandbox's own instances, each made
// detached at New and cloned into every namespace the sandbox makes:
//
//   - AddDevpts: a devpts instance of the sandbox's own over /dev/pts, so
//     the host's ptys (the user's other terminals) have no path inside
//     (devpts_linux.go);
//   - AddProc: a /proc skeleton whose pid/ is a procfs instance with
//     subset=pid and hidepid=ptraceable (procfs_linux.go);
//   - AddRoot: a read-only tmpfs root holding only the granted paths, bound
//     at their own canonical paths, so the workspace's parents list only
//     granted names (rootfs_linux.go); made from the very rules
//     BuildRuleset is given, never a second copy of the grants; with it a
//     writable tmpfs of the sandbox's own whose directories are its /tmp,
//     /dev/shm, /var/tmp and /run (tmpfs_linux.go);
//   - AddRules: each instance's one Landlock rule, by fd (a rule on a path
//     would name the host's inode, which no access inside passes).
//
// Each Add says why it could not (a note for Enforcement): without a
// private mount namespace none of them exists, and the caller reports it.
//
// # The PID-namespace init
//
// Where the tree is a PID namespace, the command runs under an init: this
// program re-executed, stopped in a C constructor before the Go runtime
// (package pidinit). Package sandbox imports pidinit explicitly, as
// runc's main imports libcontainer/nsenter, so that every program linking
// the sandbox has it.
//
// # API
//
//   - StartSpawner(ThreadProgram, join, supervise) → *Spawner; Spawn(*Request)
//     → Result (pid, pidfd, listener) or *Error; Stop.
//   - Pieces (what a process confines itself with), NewCPieces (their C
//     copy, once per Sandbox), NewProgram (a child program in C memory),
//     ConfineThread.
//   - NewMounts → *Mounts: AddDevpts, AddProc, AddRoot, AddRules,
//     RootSkeleton, RootDevice (for the notification server), ExecError,
//     Free. MountMode (MountNone, MountThread, MountChild) says where the
//     namespace is made.
//   - Landlock: Rule, RO, RW, DevRW, Handled, BuildRuleset, LandlockABI.
//   - Template (NewTemplate, Close; Request.Template): an unprivileged
//     user's namespace made once per sandbox, which commands start in.
//   - Probes: ProbeNamespaces (every namespace, devpts and /proc with one
//     child), ProbeMountNS, ProbeUserNS, ProbePIDNS (AddDevpts and
//     AddProc probe their own instance once per process).
//     HoldMountNS/ReleaseMountNS keep a command's namespace off its exit
//     path.
//
// Its unit test here is the root skeleton's plan (TestPlanRoot); the
// tests of what a spawn does run through a Sandbox, in package sandbox
// (many again as uid 65534, TestAsUnprivilegedUser), since every step is
// only observable from a confined command, and la_confine on its own is
// TestConfineThreadInSubprocess there (it needs a Sandbox's pieces).
package spawn
