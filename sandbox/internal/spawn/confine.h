// Child-side confinement of the sandbox (package spawn, Linux).
//
// Two callers share this code:
//   - la_spawn (spawn_linux.c) runs it in the vfork-style child of the Go
//     supervisor, right before execve;
//   - a re-executed Go child can run la_confine from a cgo constructor, before
//     the Go runtime starts any thread (the runc nsexec pattern). Landlock and
//     seccomp apply to the calling thread only (no TSYNC here), so it must be
//     called while the process has exactly one thread.
//
// Everything here is async-signal-safe: no allocation, no locks, no stdio.
// In the spawn path the child shares the parent's memory (CLONE_VM) and the
// parent thread is suspended (CLONE_VFORK) until execve or _exit.
#ifndef LITE_AGENT_CONFINE_H
#define LITE_AGENT_CONFINE_H

#include <stddef.h>
#include <stdint.h>

// Steps, in the order they run. A failure is reported as (step, errno).
enum la_step {
	LA_STEP_NONE = 0,
	LA_STEP_CLONE,        // parent: clone() itself
	LA_STEP_SIGNALS,      // reset inherited handlers to SIG_DFL
	LA_STEP_USERNS,       // write setgroups/uid_map/gid_map
	LA_STEP_PID_MAX,      // process limit of the new PID namespace
	LA_STEP_MOUNTNS,      // read-only mounts but the writable roots
	LA_STEP_SETSID,       // new session, no controlling terminal
	LA_STEP_CGROUP,       // join the command's cgroup (clone3 fallback only)
	LA_STEP_RLIMIT,       // RLIMIT_FSIZE/CORE/AS/NPROC
	LA_STEP_CAPS_BOUNDING,// PR_CAPBSET_DROP for every capability
	LA_STEP_SECUREBITS,   // lock securebits
	LA_STEP_CAPS_AMBIENT, // clear the ambient set
	LA_STEP_CAPSET,       // effective/permitted/inheritable = 0
	LA_STEP_NO_NEW_PRIVS, // PR_SET_NO_NEW_PRIVS
	LA_STEP_LANDLOCK,     // landlock_restrict_self
	LA_STEP_SECCOMP_NOTIFY, // child program (+ listener)
	LA_STEP_UNSHARE_FILES,// private fd table (after the listener is in the shared one)
	LA_STEP_SECCOMP,      // main filter
	LA_STEP_STDIO,        // dup2 of stdin/stdout/stderr
	LA_STEP_CLOSE_FDS,    // mark every other fd close-on-exec
	LA_STEP_CHDIR,        // working directory
	LA_STEP_EXEC,         // execve
	LA_STEP_TEMPLATE,     // entering the sandbox's namespace template (setns)
	LA_STEP_MAX
};

// la_confine_args is what la_confine applies. All pointers must stay valid
// until la_confine returns.
struct la_confine_args {
	int last_cap;          // /proc/sys/kernel/cap_last_cap
	int drop_bounding;     // 1: PR_CAPBSET_DROP every cap (needs CAP_SETPCAP)
	int lock_securebits;   // 1: set and lock securebits (needs CAP_SETPCAP)
	int ruleset_fd;        // Landlock ruleset fd; -1 = none (best effort)
	uint32_t landlock_flags; // landlock_restrict_self flags (0)
	const void *filter;    // struct sock_filter[]: main seccomp program
	uint16_t filter_len;   // number of instructions; 0 = none (inherited
	                       // from the spawner thread, or best effort)
	const void *child;     // struct sock_filter[]: child program (namespace
	uint16_t child_len;    // rules, notified calls); 0 = none
	int child_listener;    // 1: the child program notifies: load it with
	                       // SECCOMP_FILTER_FLAG_NEW_LISTENER
	// 1: the caller shares its fd table with its parent (CLONE_FILES), which
	// thereby receives the listener; after creating it, take a private copy
	// of the table and close the listener in it.
	int unshare_files;
};

// la_confine drops every capability, sets no_new_privs, enters the Landlock
// domain and loads the seccomp programs (the child program, then the main
// one), in that order (see spawn_linux.c for why). On success it returns 0
// and, when the child program notifies, stores its listener fd (O_CLOEXEC)
// in *listener — with unshare_files, a number valid only in the parent's
// table. A re-executed Go child passes both programs; the spawn path passes
// only the child program (the main one is inherited). On failure it returns
// -errno and stores the failed step in *step. Irreversible: call it only in a
// process (thread) that is to be confined.
int la_confine(const struct la_confine_args *a, int *listener, int *step);

// la_drop_bounding empties the calling thread's capability bounding set
// (needs CAP_SETPCAP): la_confine's first step, also run once by a spawner
// thread whose children inherit the result. 0 or -errno.
int la_drop_bounding(int last_cap);

// la_mount_root is one writable root of the private mount namespace: its
// canonical path (no symlinks) and the identity it must have, taken by the
// supervisor when it built the Landlock ruleset.
struct la_mount_root {
	const char *path;
	uint64_t dev, ino;
};

#define LA_MAX_MOUNT_ROOTS 64

// la_root_bind is one tree bound into the root skeleton at its own
// canonical path (rootfs_linux.go): a read-only grant (skipped when it is
// gone or no longer the inode recorded), a read-write root (must be it),
// or the sandbox's own /proc or /dev/pts (whatever is mounted there).
#define LA_BIND_RO 0
#define LA_BIND_RW 1
#define LA_BIND_OWN 2
#define LA_BIND_TMP 3  // the sandbox's private /tmp (tmpfs_linux.c), cloned from tmp_fd
#define LA_BIND_SKEL 4 // the skeleton's own directory at path, onto the private /tmp
struct la_root_bind {
	const char *path;
	uint64_t dev, ino;
	int kind;
	const char *src; // LA_BIND_TMP: the directory of tmp_fd cloned onto path
};

// la_skel_entry is one node of the root skeleton: 'd' a directory, 'f'
// an empty file, 'l' a symlink to target, 'T' (the private /tmp's only)
// a directory anyone may write, sticky (mode 1777); path relative,
// parents first.
struct la_skel_entry {
	const char *path;
	char kind;
	const char *target;
};

// la_ns_mounts is what a sandbox mounts of its own in every namespace it
// makes, after the read-only step: its devpts instance (devpts_linux.c)
// and its /proc (procfs_linux.c).
struct la_ns_mounts {
	int devpts_fd;      // devpts instance to clone onto /dev/pts, or -1
	int proc_skel_fd;   // /proc skeleton to clone onto /proc, or -1: the
	                    // host's /proc stays
	int proc_fd;        // with proc_skel_fd: the procfs instance to clone
	                    // onto /proc/pid, or -1: make one here, for the
	                    // caller's PID namespace
	const char *const *proc_files; // host /proc files bound into the
	int n_proc_files;              // skeleton ("cpuinfo", ...)
	int root_skel_fd;   // root skeleton to switch to (rootfs_linux.c),
	                    // or -1: the host's / stays
	int tmp_fd;         // with root_skel_fd: the private /tmp to clone
	                    // onto the skeleton's /tmp (LA_BIND_TMP), or -1
	const struct la_root_bind *root_binds; // trees bound into it,
	int n_root_binds;                       // parents first
	const struct la_mount_root *ro_binds;   // bound over themselves
	int n_ro_binds;                         // read-only after the
	                                        // writable roots: the
	                                        // workspace's .git
	                                        // (gitguard_linux.go)
};

// A failed read-only bind i is reported as *which = LA_RO_BIND_BASE + i.
#define LA_RO_BIND_BASE (2 * LA_MAX_MOUNT_ROOTS)

// la_mount_setup makes the caller's (fresh, private) mount namespace
// read-only except for the writable roots, which keep the mount flags they
// have outside (see spawn_linux.c), then mounts own (NULL: nothing).
// Async-signal-safe. On failure it returns -errno and stores the index of
// the root that failed in *which (-1: not a root's fault).
int la_mount_setup(const struct la_mount_root *roots, int n, const struct la_ns_mounts *own, int *which);

// la_thread_mountns gives the calling thread a mount namespace of its own
// (unshare CLONE_NEWNS, which needs CAP_SYS_ADMIN) and runs la_mount_setup
// in it: every child the thread vforks is born in it.
// *ns_ino is the new namespace's inode (taken before the root switch).
int la_thread_mountns(const struct la_mount_root *roots, int n, const struct la_ns_mounts *own, int *which,
		      uint64_t *ns_ino);

// la_make_root_skeleton creates the detached, read-only root skeleton
// (rootfs_linux.c) holding entries, or -errno.
int la_make_root_skeleton(int new_user, const char *uid_map, const char *gid_map,
			  const struct la_skel_entry *entries, int n);

// la_make_tmp creates the sandbox's detached, writable /tmp: a tmpfs of
// at most size bytes holding the directories and files entries name
// (mount points of the grants beneath /tmp, tmpfs_linux.c), or -errno.
int la_make_tmp(int new_user, const char *uid_map, const char *gid_map, const char *size,
		const struct la_skel_entry *entries, int n);

// la_attach_root makes own's root skeleton the caller's root, with
// own's binds in it (see rootfs_linux.c), or returns -errno and stores
// the failed bind's index in *which (-1: none's fault). Async-signal-safe.
int la_attach_root(const struct la_ns_mounts *own, int *which);

// la_make_devpts creates a detached devpts instance (devpts_linux.c) and
// returns its fsmount fd (O_CLOEXEC), or -errno: new_user 1 with the maps
// for an unprivileged user, who may mount one only in a user namespace.
int la_make_devpts(int new_user, const char *uid_map, const char *gid_map);

// la_in_userns runs fn(arg) in a throwaway user + mount namespace
// mapping only the caller (CLONE_VM|CLONE_VFORK|CLONE_FILES: an fd it
// returns is in the caller's table) and returns its result, or -errno.
int la_in_userns(int (*fn)(void *), void *arg, const char *uid_map, const char *gid_map);

// la_make_proc_skeleton creates the detached, read-only /proc skeleton
// (procfs_linux.c) with the files named (bind targets), or -errno.
int la_make_proc_skeleton(int new_user, const char *uid_map, const char *gid_map,
			  const char *const *files, int n);

// la_make_procfs creates a detached procfs instance of the caller's PID
// namespace (subset=pid, hidepid=ptraceable, read-only), or -errno.
int la_make_procfs(void);

// la_attach_proc mounts own's /proc (see struct la_ns_mounts), or
// returns -errno. Async-signal-safe.
int la_attach_proc(const struct la_ns_mounts *own);

// la_attach_devpts mounts a clone of the instance fd on /dev/pts (0 when
// there is no /dev/pts), or returns -errno. Async-signal-safe.
int la_attach_devpts(int fd);

// la_write_file writes data to path (open, one write, close): 0 or -1
// with errno set. Async-signal-safe.
int la_write_file(const char *path, const char *data);
// la_write_file_at is la_write_file with path relative to dir.
int la_write_file_at(int dir, const char *path, const char *data);

// la_probe_mountns reports whether a child can get a private mount
// namespace and la_mount_setup(no roots) works in it (0), or -errno:
// new_user 1 with the maps for an unprivileged user (CLONE_NEWUSER too),
// new_pid 1 in a PID namespace of its own (CLONE_NEWPID); own: mounting
// those works there too.
int la_probe_mountns(int new_user, int new_pid, const char *uid_map, const char *gid_map,
		     const struct la_ns_mounts *own);

// la_spawn_args describes one confined command for la_spawn.
struct la_spawn_args {
	const char *path;      // absolute program path
	char *const *argv;     // NULL-terminated
	char *const *envp;     // NULL-terminated
	const char *dir;       // working directory
	int stdio[3];          // fds to install as 0, 1, 2
	int cgroup_dir;        // v2 cgroup directory fd: the child is born in it
	                       // (clone3 CLONE_INTO_CGROUP); -1 = none
	int cgroup_procs;      // its cgroup.procs, written ("0") by the child
	                       // only where clone3 is unavailable; -1 = none
	const char *pid_max;   // with new_pid: written to the namespace's
	                       // /proc/sys/kernel/pid_max (NULL = leave it)
	struct { int resource; uint64_t cur, max; } rlimits[8];
	int n_rlimits;
	int status_fd;         // kept open across execve (the init's status
	                       // pipe, see pidinit's init_linux.c); -1 = none
	int no_clone3;         // use clone, not clone3 (the thread's seccomp
	                       // program refuses clone3)
	int new_pid;           // CLONE_NEWPID
	int new_user;          // CLONE_NEWUSER (unprivileged): maps below are written
	const char *uid_map;   // "uid uid 1"
	const char *gid_map;   // "gid gid 1"
	int new_ns;            // CLONE_NEWNS: the child runs la_mount_setup
	                       // on mount_roots (after the maps and pid_max)
	const struct la_mount_root *mount_roots;
	int n_mount_roots;
	int mount_failed_root; // set by the child: the root la_mount_setup
	                       // failed on, or -1
	const struct la_ns_mounts *own; // with new_ns: what the sandbox
	                       // mounts of its own there (NULL: nothing)
	int template_pidfd;    // with new_ns and new_user: the holder of the
	                       // sandbox's namespace template (template_linux.c);
	                       // the child's namespaces are made from it instead
	                       // of la_mount_setup; -1: none
	struct la_confine_args confine;

	int proc_dir;          // set by la_spawn: the parent's /proc, which the
	                       // child writes its maps and pid_max through; -1
	int parent_pid;        // set by la_spawn: our pid, for the child's check
	                       // that its parent still lives (PDEATHSIG)

	// Results, written by the child (shared memory) or by la_spawn.
	int cleared_sighand;   // set by la_spawn: clone3 reset the handlers
	int born_in_cgroup;    // set by la_spawn: CLONE_INTO_CGROUP was used
	int pid;
	int pidfd;
	int listener;          // seccomp listener fd in the parent's table, or -1
	int err_step;          // enum la_step; 0 = success
	int err_errno;
};

// la_spawn starts the command confined. It returns 0 when execve succeeded
// (pid, pidfd and listener are set); otherwise -1 with err_step/err_errno set.
// When the child was created but failed before execve it has exited: pid and
// pidfd are still set so the caller can reap it.
int la_spawn(struct la_spawn_args *a);

// struct la_template is a sandbox's namespace template: a process (the
// holder) asleep in a user, PID and mount namespace of its own, the mount
// namespace made by la_mount_setup as a command's would be
// (template_linux.c). release_w kept open keeps it; the stack is the
// holder's.
struct la_template {
	int pid, pidfd, release_w;
	void *stack;
	size_t stack_size;
};

// la_template_make starts the holder of a template for roots and own,
// mapping only the caller (uid_map, gid_map), and waits until its
// namespace is made: 0, or -errno with the failed root in *which as
// la_mount_setup gives it.
int la_template_make(struct la_template *t, const struct la_mount_root *roots, int n,
		     const struct la_ns_mounts *own, const char *uid_map, const char *gid_map, int *which);

// la_template_release ends the holder and frees what la_template_make
// made. Commands already started keep their namespaces.
void la_template_release(struct la_template *t);

// la_reset_handlers sets every signal's handler to SIG_DFL but those
// ignored (which stay ignored, as across execve): 0, or -1 with errno.
// Async-signal-safe.
int la_reset_handlers(void);

// la_landlock_abi returns the Landlock ABI version, or -errno.
int la_landlock_abi(void);

// la_probe_userns reports whether this user can create a user namespace
// with a PID namespace and map itself into it (0), or -errno.
int la_probe_userns(const char *uid_map, const char *gid_map);

// la_probe_pidns reports whether this process can clone a child into a
// new PID namespace without a user namespace (root), or -errno.
int la_probe_pidns(void);

// la_probe_unshare_files reports whether a child that shares this
// process's file table (CLONE_FILES) can take a private copy of it, as
// the spawn path's child does to drop its listener (0), or -errno.
int la_probe_unshare_files(void);

#endif
