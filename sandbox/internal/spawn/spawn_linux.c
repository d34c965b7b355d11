// The confined spawn path of the sandbox (package spawn): a vfork-style
// clone whose child confines itself and execs the command. See confine.h.
//
// Why C and not syscall.ForkExec: the child must run landlock_restrict_self,
// capset and seccomp(2) between fork and exec, which the Go runtime's
// forkAndExecInChild cannot be told to do. Re-executing the Go binary first
// costs a runtime start-up (~2 ms); this path costs about what a plain
// vfork+exec costs.
//
// The child, in order (la_child):
//   signals  handlers reset to SIG_DFL (clone3 CLONE_CLEAR_SIGHAND, or a
//            sigaction loop), all still blocked;
//   userns   (unprivileged only) map our own uid/gid: the namespace gives
//            the PID namespace and a per-sandbox RLIMIT_NPROC;
//   pid_max  (PID namespace without pids cgroup) the namespace's process cap;
//   mountns  (unprivileged, and root with pid_max) a private mount namespace,
//            read-only but the writable roots (la_mount_setup; root's
//            spawner threads make theirs once, see spawner_linux.go);
//   setsid   no controlling terminal: TIOCSTI/TIOCSCTTY have nothing to hit;
//   cgroup   already born in it (v1: the spawner thread's; v2: clone3
//            CLONE_INTO_CGROUP); only the clone() fallback joins by write;
//   rlimits  FSIZE, CORE=0, AS (no memory cgroup), NPROC (user namespace);
//   la_confine: capabilities (bounding, securebits, ambient, capset 0),
//            no_new_privs, landlock_restrict_self, seccomp (child program,
//            the main one being inherited from the spawner thread);
//   stdio    dup2 onto 0-2; every other fd close-on-exec (close_range);
//   chdir, unblock signals, execve.
// Any failure is stored as (step, errno) in the shared struct and the child
// exits 127; la_spawn turns it into an error naming the step.
//
// Rules for everything that runs in the child (la_child, la_confine):
//   - the child shares the parent's memory (CLONE_VM) and the parent thread
//     is suspended until execve or _exit (CLONE_VFORK): only async-signal-
//     safe calls, no malloc, no locks, no stdio; results go to the shared
//     struct la_spawn_args;
//   - all signals are blocked from before clone until just before execve,
//     and inherited handlers (the Go runtime's) are reset to SIG_DFL first,
//     so that no Go signal handler can ever run on the child's stack.
#define _GNU_SOURCE
#include "confine.h"
#include "mountapi.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif

#define LA_FAIL(s) do { *step = (s); return -errno; } while (0)

int la_drop_bounding(int last_cap)
{
	for (int c = 0; c <= last_cap; c++) {
		// EINVAL: a capability this kernel does not know.
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	}
	return 0;
}

int la_confine(const struct la_confine_args *a, int *listener, int *step)
{
	*listener = -1;
	*step = LA_STEP_NONE;

	// 1. Capabilities, while we still hold CAP_SETPCAP (root, or the owner
	// of a fresh user namespace). The bounding set first: it is what stops
	// a uid-0 process from regaining capabilities at execve, and dropping it
	// needs CAP_SETPCAP in the effective set, which capset below removes.
	// Without CAP_SETPCAP (a plain unprivileged user) the bounding set stays
	// full, which is harmless: permitted/effective are already empty and
	// no_new_privs makes setuid and file capabilities inert at execve.
	if (a->drop_bounding) {
		int r = la_drop_bounding(a->last_cap);
		if (r < 0) {
			errno = -r;
			LA_FAIL(LA_STEP_CAPS_BOUNDING);
		}
	}
	// Securebits: uid 0 gets no capabilities from execve (NOROOT), ambient
	// capabilities can never be raised again, and keep-caps stays off; all
	// locked so that nothing later in the process can undo them.
	if (a->lock_securebits) {
		unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
			SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
			SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
		if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
			LA_FAIL(LA_STEP_SECUREBITS);
	}
	// Ambient capabilities survive execve of unprivileged programs: clear
	// them (EINVAL only on kernels older than 4.3, which have none).
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		LA_FAIL(LA_STEP_CAPS_AMBIENT);
	// Effective, permitted and inheritable to zero — also for root: root
	// with capabilities can read /proc/PID/environ of processes outside the
	// sandbox, bypass DAC on files Landlock allows, and so on.
	{
		struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct data[2];
		memset(data, 0, sizeof data);
		if (syscall(SYS_capset, &hdr, data) < 0)
			LA_FAIL(LA_STEP_CAPSET);
	}

	// 2. no_new_privs: execve can no longer grant privileges (setuid bits,
	// file capabilities), and it is the precondition for an unprivileged
	// landlock_restrict_self and seccomp filter. Capabilities are gone, so
	// from here on the kernel would refuse both without it.
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		LA_FAIL(LA_STEP_NO_NEW_PRIVS);

	// 3. Landlock: the ruleset was built once, in the parent, for this
	// policy; entering it is one syscall. Before seccomp, so that the
	// filter need not allow landlock_restrict_self (it does anyway: nesting
	// a domain only ever restricts more).
	if (a->ruleset_fd >= 0 &&
	    syscall(SYS_landlock_restrict_self, a->ruleset_fd, a->landlock_flags) < 0)
		LA_FAIL(LA_STEP_LANDLOCK);

	// 4. seccomp. First the child program (namespace rules, and the calls
	// sent to a supervisor, whose listener it needs); then, last, the main
	// program — in the spawn path it is already there, inherited from the
	// spawner thread. Loading order does not change what wins: the kernel
	// runs every program and takes the most restrictive action (KILL >
	// ERRNO > USER_NOTIF > ALLOW); the two programs never give different
	// actions of equal rank to one syscall.
	if (a->child_len) {
		struct sock_fprog prog = { a->child_len, (struct sock_filter *)a->child };
		long fd;
		if (a->child_listener) {
			// WAIT_KILLABLE_RECV (5.19+): once the supervisor has received
			// a call, only a fatal signal abandons it, so a call the
			// supervisor has already performed is never restarted behind
			// its back. Older kernels say EINVAL: load without it.
			fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				     SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
			if (fd < 0 && errno == EINVAL)
				fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
					     SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
		} else {
			fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
		}
		if (fd < 0)
			LA_FAIL(LA_STEP_SECCOMP_NOTIFY);
		if (a->child_listener) {
			*listener = (int)fd;  // created O_CLOEXEC by the kernel
			if (a->unshare_files) {
				// The fd table is still shared with the parent
				// (CLONE_FILES), so the listener now also exists in the
				// parent's table. Take a private copy of the table and
				// drop the listener from it: the confined program never
				// holds its own listener (it could answer its own
				// notifications). The child program allows unshare
				// without namespace flags for this.
				if (unshare(CLONE_FILES) < 0)
					LA_FAIL(LA_STEP_UNSHARE_FILES);
				close((int)fd);
			}
		}
	}
	if (a->filter_len) {
		struct sock_fprog prog = { a->filter_len, (struct sock_filter *)a->filter };
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			LA_FAIL(LA_STEP_SECCOMP);
	}
	return 0;
}

// Read-only mounts (issue 11: Landlock has no right for metadata).
//
// Landlock decides reads and writes of file contents, but chmod, chown (to
// oneself), utimensat and the like pass for any file the process owns —
// as root, every root-owned file on the system. A read-only mount refuses
// all of them (EROFS) whatever the caller owns, so a confined command gets
// a private mount namespace in which every mount is read-only except the
// writable roots (workspace, TMPDIR, read-write paths), which keep the
// flags they have outside.
//
// In order:
//   1. MS_REC|MS_PRIVATE on /: nothing done below propagates back to the
//      caller's namespace (a copy of a shared / would share its peer
//      groups), and nothing mounted outside later appears here writable;
//   2. each writable root is cloned (open_tree OPEN_TREE_CLONE|
//      AT_RECURSIVE) while its mounts still have their own flags, so that
//      a submount the user made read-only stays so and a writable one
//      stays writable, as Landlock lets it be written;
//   3. every mount is made read-only (mount_setattr AT_RECURSIVE) —
//      /proc, /sys and /dev included: a device node is still written
//      through a read-only mount (/dev/null, /dev/tty), a pty is
//      allocated by devpts itself, and nothing Landlock grants writes
//      elsewhere; chmod of a root-owned /sys or generic /proc entry is
//      refused;
//   4. the clones are attached over their roots (a root beneath another
//      is dropped: the outer clone holds it with its own flags already).
// Each root is reached by a walk that follows no symlink and must end on
// the (device, inode) the supervisor recorded when it built the Landlock
// ruleset: a path changed since then fails the spawn (ESTALE), it never
// makes another directory writable by mount.
//
// What keeps the flags: the confined process has no capability (in its
// user namespace either) and seccomp refuses mount, umount, mount_setattr,
// open_tree, move_mount, fsopen/fsmount/fsconfig/fspick, pivot_root and
// namespace flags; a nested user namespace, were it possible, would
// inherit these read-only flags locked.
static int la_open_root(const struct la_mount_root *r)
{
	const char *p = r->path;
	if (p[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char comp[256];
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t n = (size_t)(e - p);
		if (n == 0)
			break;
		if (n >= sizeof comp || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			close(fd);
			errno = n >= sizeof comp ? ENAMETOOLONG : EINVAL;
			return -1;
		}
		memcpy(comp, p, n);
		comp[n] = 0;
		// O_NOFOLLOW|O_PATH opens a symlink itself: the next step from
		// it fails with ENOTDIR, the last one is caught by S_ISLNK.
		int next = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		int e2 = errno;
		close(fd);
		if (next < 0) {
			errno = e2;
			return -1;
		}
		fd = next;
		p = e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e2 = errno;
		close(fd);
		errno = e2;
		return -1;
	}
	if (S_ISLNK(st.st_mode) || (uint64_t)st.st_dev != r->dev || (uint64_t)st.st_ino != r->ino) {
		close(fd);
		errno = S_ISLNK(st.st_mode) ? ELOOP : ESTALE;
		return -1;
	}
	return fd;
}

// la_bind_readonly binds each of own's ro_binds (the workspace's .git
// entries: see gitguard_linux.go for why) over itself, read-only, after
// the writable roots are attached: a write beneath it fails with EROFS,
// and the entry, a mount point in this namespace now, cannot be renamed
// or removed (EBUSY), so `mv .git x && mkdir .git` finds nothing to move.
// Each is reached by la_open_root's walk, which follows no symlink and
// must end on the (device, inode) recorded at New: a .git replaced since
// then fails the spawn (ESTALE) rather than leave the new one writable
// or protect a path the walk did not check. The clone is recursive (a
// submount in .git stays, read-only too) and made read-only while still
// detached, so no moment exists where it is attached writable.
static int la_bind_readonly(const struct la_ns_mounts *own, int *which)
{
	for (int i = 0; own && i < own->n_ro_binds; i++) {
		int fd = la_open_root(&own->ro_binds[i]);
		if (fd < 0) {
			*which = LA_RO_BIND_BASE + i;
			return -errno;
		}
		struct la_mount_attr attr;
		memset(&attr, 0, sizeof attr);
		attr.attr_set = MOUNT_ATTR_RDONLY;
		long t = syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
		int e = errno;
		if (t >= 0 && syscall(SYS_mount_setattr, (int)t, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) == 0 &&
		    syscall(SYS_move_mount, (int)t, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == 0)
			e = 0;
		else if (t >= 0)
			e = errno;
		if (t >= 0)
			close((int)t);
		close(fd);
		if (e) {
			*which = LA_RO_BIND_BASE + i;
			return -e;
		}
	}
	return 0;
}

// la_beneath reports whether path p is q or beneath it.
static int la_beneath(const char *p, const char *q)
{
	size_t n = strlen(q);
	return strncmp(p, q, n) == 0 && (p[n] == 0 || p[n] == '/');
}

int la_mount_setup(const struct la_mount_root *roots, int n, const struct la_ns_mounts *own, int *which)
{
	int order[LA_MAX_MOUNT_ROOTS], trees[LA_MAX_MOUNT_ROOTS];
	int kept = 0, made = 0, e = 0;
	*which = -1;
	if (n < 0 || n > LA_MAX_MOUNT_ROOTS)
		return -E2BIG;
	// Parents before children (shorter first), and a root equal to or
	// beneath a kept one dropped: the outer clone holds it already, with
	// its own mount flags.
	for (int i = 0; i < n; i++) {
		int skip = 0;
		for (int j = 0; j < n && !skip; j++) {
			if (j == i || !la_beneath(roots[i].path, roots[j].path))
				continue;
			// i is beneath j; of two equal paths the first is kept.
			skip = strlen(roots[i].path) != strlen(roots[j].path) || j < i;
		}
		if (skip)
			continue;
		int k = kept++;
		while (k > 0 && strlen(roots[order[k - 1]].path) > strlen(roots[i].path)) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = i;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	for (; made < kept; made++) {
		int fd = la_open_root(&roots[order[made]]);
		if (fd < 0) {
			e = errno;
			*which = order[made];
			goto out;
		}
		long t = syscall(SYS_open_tree, fd, "",
				 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
		e = errno;
		close(fd);
		if (t < 0) {
			*which = order[made];
			goto out;
		}
		trees[made] = (int)t;
	}
	{
		struct la_mount_attr attr;
		memset(&attr, 0, sizeof attr);
		attr.attr_set = MOUNT_ATTR_RDONLY;
		if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof attr) < 0) {
			e = errno;
			goto out;
		}
	}
	for (int i = 0; i < kept; i++) {
		// Walked again, after the read-only step: the walk must end on
		// the mount now at that place.
		int fd = la_open_root(&roots[order[i]]);
		if (fd < 0) {
			e = errno;
			*which = order[i];
			goto out;
		}
		long rc = syscall(SYS_move_mount, trees[i], "", fd, "",
				  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
		e = errno;
		close(fd);
		if (rc < 0) {
			*which = order[i];
			goto out;
		}
	}
	// The workspace's .git, read-only over itself, before anything
	// clones the writable roots (la_attach_root takes it along).
	if ((e = -la_bind_readonly(own, which)) != 0)
		goto out;
	// The sandbox's own devpts over the host's (devpts_linux.c) and its
	// /proc (procfs_linux.c), last: after the read-only step, which would
	// make the devpts read-only too, and with nothing mounted above them.
	if (own && own->devpts_fd >= 0 && (e = -la_attach_devpts(own->devpts_fd)) != 0)
		goto out;
	if (own && own->proc_skel_fd >= 0 && (e = -la_attach_proc(own)) != 0)
		goto out;
	// Then the root of granted paths (rootfs_linux.c), cloned from the
	// namespace as made above, flags and all; last, it leaves nothing of
	// the host's tree mounted.
	if (own && own->root_skel_fd >= 0) {
		int b = -1;
		if ((e = -la_attach_root(own, &b)) != 0) {
			if (b >= 0)
				*which = LA_MAX_MOUNT_ROOTS + b;
			goto out;
		}
	}
	e = 0;
out:
	for (int i = 0; i < made; i++)
		close(trees[i]);
	return -e;
}

int la_thread_mountns(const struct la_mount_root *roots, int n, const struct la_ns_mounts *own, int *which,
		      uint64_t *ns_ino)
{
	*which = -1;
	*ns_ino = 0;
	// CLONE_NEWNS implies CLONE_FS: this thread gets its own root and
	// cwd, copied; the process's other threads keep theirs.
	if (unshare(CLONE_NEWNS) < 0)
		return -errno;
	// The namespace's identity, while the host's /proc is still the
	// thread's (after a root switch it may have none).
	struct stat st;
	if (stat("/proc/thread-self/ns/mnt", &st) == 0)
		*ns_ino = (uint64_t)st.st_ino;
	return la_mount_setup(roots, n, own, which);
}

int la_write_file(const char *path, const char *data)
{
	return la_write_file_at(AT_FDCWD, path, data);
}

int la_write_file_at(int dir, const char *path, const char *data)
{
	int fd = openat(dir, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = strlen(data);
	ssize_t w = write(fd, data, n);
	int e = errno;
	close(fd);
	if (w != (ssize_t)n) {
		errno = w < 0 ? e : EIO;
		return -1;
	}
	return 0;
}

#define LA_CHILD_FAIL(s) do { a->err_step = (s); a->err_errno = errno; goto fail; } while (0)

// la_child_exit ends the vfork'd child by SYS_exit, not glibc's _exit
// (exit_group): the change-capture program notifies exit_group, and its
// listener reaches the parent only when the clone returns, which is when
// this child execs or exits. A child that failed after loading that
// program and left by exit_group would wait for an answer no one can
// give, holding the parent in clone: a command that does not exist
// (`sandbox run -- ./no-such-program`) hung for good. The child is one
// thread, so SYS_exit ends the process.
static void __attribute__((noreturn)) la_child_exit(int code)
{
	for (;;)
		syscall(SYS_exit, code);
}

int la_reset_handlers(void)
{
	for (int sig = 1; sig < _NSIG; sig++) {
		struct sigaction dfl, old;
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		if (sigaction(sig, &dfl, &old) < 0)  // EINVAL: libc-internal
			continue;
		if (old.sa_handler == SIG_IGN && sigaction(sig, &old, NULL) < 0)
			return -1;
	}
	return 0;
}

// la_template_proc gives a command entering the sandbox's namespace
// template (its copy of it, CLONE_NEWNS) a procfs of its own PID
// namespace, over the holder's at /proc/pid: /proc/self and /proc/N are
// then the command's as in a namespace made for it. The kernel allows it
// because a procfs (the holder's) is visible in the copy. Async-signal-
// safe.
static int la_template_proc(const struct la_ns_mounts *own)
{
	if (!own || own->proc_skel_fd < 0)
		return 0; // no /proc of the sandbox's own: nothing there to cover
	int proc = la_make_procfs();
	if (proc < 0)
		return proc;
	long rc = syscall(SYS_move_mount, proc, "", AT_FDCWD, "/proc/pid", MOVE_MOUNT_F_EMPTY_PATH);
	int e = errno;
	close(proc);
	return rc < 0 ? -e : 0;
}

static int la_child(void *arg)
{
	struct la_spawn_args *a = arg;
	int step = 0, listener = -1;

	// Inherited handlers point into the Go runtime, which must never run
	// here; reset them (ignored signals stay ignored, as with exec). clone3
	// did it already (CLONE_CLEAR_SIGHAND). Signals are still blocked, so
	// nothing can arrive in between. One call per signal: set SIG_DFL and
	// get the old action; put SIG_IGN back where it was.
	if (!a->cleared_sighand && la_reset_handlers() < 0)
		LA_CHILD_FAIL(LA_STEP_SIGNALS);

	// A fresh user namespace (unprivileged users: it carries the PID
	// namespace and a per-sandbox RLIMIT_NPROC count). Map only ourselves:
	// the one mapping an unprivileged process may write for itself.
	//
	// These writes, and pid_max's below, go through the parent's /proc
	// (a->proc_dir), not our copy of it: a file open for writing holds
	// write access on its mount until its last reference goes, and a
	// concurrent spawn's clone or execve copying the shared descriptor
	// table can hold that reference past our close. On our copy that
	// made mount_setattr(MOUNT_ATTR_RDONLY) in la_mount_setup fail with
	// EBUSY; the parent's mount is never made read-only.
	if (a->new_user) {
		if (la_write_file_at(a->proc_dir, "self/setgroups", "deny") < 0 ||
		    la_write_file_at(a->proc_dir, "self/uid_map", a->uid_map) < 0 ||
		    la_write_file_at(a->proc_dir, "self/gid_map", a->gid_map) < 0)
			LA_CHILD_FAIL(LA_STEP_USERNS);
	}

	// Process limit without a pids cgroup: a PID namespace has its own
	// pid_max (Linux 6.14+); no more than pid_max-1 processes and threads
	// can exist in it. Written by PID 1 while it still has CAP_SYS_ADMIN
	// over the namespace; the parent only asks for it on kernels that
	// have per-namespace pid_max (elsewhere the value is global).
	if (a->new_pid && a->pid_max && la_write_file_at(a->proc_dir, "sys/kernel/pid_max", a->pid_max) < 0)
		LA_CHILD_FAIL(LA_STEP_PID_MAX);

	// The private mount namespace (CLONE_NEWNS), read-only but the
	// writable roots. After pid_max: /proc is read-only from here on. With
	// capabilities (root, or ours in the user namespace) and before
	// la_confine, whose child program refuses every mount call.
	if (a->new_ns) {
		// In the sandbox's template (la_spawn_in_template): a copy of a
		// namespace la_mount_setup made once, with a /proc of its own.
		int r = a->template_pidfd >= 0 ? la_template_proc(a->own) :
			la_mount_setup(a->mount_roots, a->n_mount_roots, a->own, &a->mount_failed_root);
		if (r < 0) {
			errno = -r;
			LA_CHILD_FAIL(LA_STEP_MOUNTNS);
		}
	}

	// New session: no controlling terminal, so TIOCSTI/TIOCSCTTY on an
	// inherited terminal fd fail even before seccomp looks at them, and the
	// caller's job control (kill -PGID) does not reach us by accident.
	// Die with the thread that started us, even when the agent is killed
	// outright (SIGKILL leaves it no chance to clean up). The parent may
	// already be gone: then go now. (In a new PID namespace the parent is
	// outside it and getppid() says 0; PID 1's death ends the namespace.)
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		LA_CHILD_FAIL(LA_STEP_SETSID);
	if (!a->new_pid && getppid() != a->parent_pid)
		la_child_exit(127);

	if (setsid() < 0)
		LA_CHILD_FAIL(LA_STEP_SETSID);

	// Without clone3 the child was not born in its v2 cgroup: join it now,
	// before it runs anything ("0" is the writing process). This is a
	// migration, which can cost milliseconds (see la_spawn).
	if (!a->born_in_cgroup && a->cgroup_procs >= 0) {
		if (write(a->cgroup_procs, "0", 1) != 1)
			LA_CHILD_FAIL(LA_STEP_CGROUP);
	}

	// Resource limits. Lowering needs no privilege; the parent never asks
	// for more than the current hard limit.
	for (int i = 0; i < a->n_rlimits; i++) {
		struct rlimit64 rl = { a->rlimits[i].cur, a->rlimits[i].max };
		if (setrlimit64(a->rlimits[i].resource, &rl) < 0)
			LA_CHILD_FAIL(LA_STEP_RLIMIT);
	}

	if (la_confine(&a->confine, &listener, &step) < 0) {
		// A listener created before the failure is in the parent's table:
		// publish it so that the parent closes it.
		a->listener = listener;
		a->err_step = step;
		a->err_errno = errno;
		goto fail;
	}

	// The listener's number in the parent's table, through shared memory.
	a->listener = listener;

	// Standard streams. Sources below 3 are first moved out of the way
	// (dup2(fd, fd) would keep a close-on-exec flag); dup2 clears it on the
	// target.
	{
		int src[3];
		for (int i = 0; i < 3; i++) {
			src[i] = a->stdio[i];
			if (src[i] < 3) {
				src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
				if (src[i] < 0)
					LA_CHILD_FAIL(LA_STEP_STDIO);
			}
		}
		for (int i = 0; i < 3; i++) {
			if (dup2(src[i], i) < 0)
				LA_CHILD_FAIL(LA_STEP_STDIO);
		}
	}
	// Every other descriptor closes at execve, including ones the parent
	// process inherited without O_CLOEXEC from whoever started it: nothing
	// but stdin/stdout/stderr crosses into the sandbox.
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0 &&
	    errno != ENOSYS && errno != EINVAL)
		LA_CHILD_FAIL(LA_STEP_CLOSE_FDS);
	// Except the init's status pipe, when the program is the init.
	if (a->status_fd >= 0 && fcntl(a->status_fd, F_SETFD, 0) < 0)
		LA_CHILD_FAIL(LA_STEP_CLOSE_FDS);

	if (chdir(a->dir) < 0)
		LA_CHILD_FAIL(LA_STEP_CHDIR);

	{
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	execve(a->path, a->argv, a->envp);
	a->err_step = LA_STEP_EXEC;
	a->err_errno = errno;
fail:
	la_child_exit(127);
}

// One child stack per OS thread, made once: mmap/munmap on every spawn
// would cost TLB shootdowns across the Go process's threads.
#define LA_STACK_SIZE (128 * 1024)
static __thread char *la_stack;

static __thread char *la_stack2; // the command's, under la_enter (below)

static char *la_new_stack(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, LA_STACK_SIZE + page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	mprotect(m, page, PROT_NONE);  // guard page below the stack
	return m + page;
}

static char *la_stack_base(void)
{
	if (!la_stack)
		la_stack = la_new_stack();
	return la_stack;
}

#ifndef CLONE_CLEAR_SIGHAND
#define CLONE_CLEAR_SIGHAND 0x100000000ULL
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif

// struct clone_args, version 2 (Linux 5.7).
struct la_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack,
		 stack_size, tls, set_tid, set_tid_size, cgroup;
};

// 1 once clone3 is known to be refused (an outer seccomp policy such as
// Docker's answers ENOSYS): use clone from then on.
static int la_no_clone3;

#if defined(__x86_64__)
// la_clone3 runs clone3 with a new stack: the child starts on it right
// after the syscall instruction, where no C code can follow, so the call
// and the child's first steps are assembly. fn and arg travel in r12/r13,
// which the child inherits; it calls fn(arg) and exits with its result
// (fn never returns: it execs or _exits).
static long la_clone3(struct la_clone_args *ca, int (*fn)(void *), void *arg)
{
	long ret;
	register void *r12 __asm__("r12") = (void *)fn;
	register void *r13 __asm__("r13") = arg;
	__asm__ volatile(
		"syscall\n\t"
		"test %%rax, %%rax\n\t"
		"jnz 1f\n\t"
		"xor %%ebp, %%ebp\n\t"
		"mov %%r13, %%rdi\n\t"
		"call *%%r12\n\t"
		"mov %%eax, %%edi\n\t"
		"mov $60, %%eax\n\t"  // SYS_exit
		"syscall\n\t"
		"hlt\n\t"
		"1:\n\t"
		: "=a"(ret)
		: "0"((long)SYS_clone3), "D"(ca), "S"(sizeof *ca), "r"(r12), "r"(r13)
		: "rcx", "r11", "memory");
	return ret;
}
#define LA_HAVE_CLONE3 1
#endif

// The spawn into the sandbox's namespace template (template_linux.c),
// for an unprivileged user: the command's user, PID and mount namespaces
// are made inside the template's user namespace, the mount namespace as a
// copy of the template's, instead of from the host's tree. Two clones:
//
//   la_enter (CLONE_VM|CLONE_VFORK, no namespace) joins the template's
//     user and mount namespaces (setns on the holder's pidfd, which a
//     threaded process cannot do) and clones the command's first process
//     (la_child) with CLONE_PARENT: its parent is the spawner thread, as
//     in la_spawn, which waits for it, and its PDEATHSIG is that thread's;
//   la_child then runs as in la_spawn, its private mount namespace a copy
//     of the template's (every mount already read-only but the writable
//     roots, the sandbox's devpts, /proc skeleton and root) with a procfs
//     of its own PID namespace (la_template_proc); its user namespace is
//     nested in the template's and maps the same uid, so RLIMIT_NPROC
//     still counts per command.
// la_enter exits once la_child has exec'd or failed (CLONE_VFORK); the
// result and la_child's pid come back through the shared arguments, and
// the pidfd is taken here (pidfd_open of a child of ours, not reaped).
static int la_enter(void *arg)
{
	struct la_spawn_args *a = arg;
	if (!a->cleared_sighand && la_reset_handlers() < 0) {
		a->err_step = LA_STEP_SIGNALS;
		a->err_errno = errno;
		la_child_exit(127);
	}
	a->cleared_sighand = 1; // la_child inherits the handlers reset
	if (syscall(SYS_setns, a->template_pidfd, CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		a->err_step = LA_STEP_TEMPLATE;
		a->err_errno = errno;
		la_child_exit(127);
	}
	char *top = (char *)(((uintptr_t)(la_stack2 + LA_STACK_SIZE)) & ~(uintptr_t)15);
	int flags = CLONE_VM | CLONE_VFORK | CLONE_PARENT | CLONE_NEWUSER | CLONE_NEWNS;
	if (a->new_pid)
		flags |= CLONE_NEWPID;
	if (a->confine.child_listener)
		flags |= CLONE_FILES; // la_enter shares the parent's table then too
	long pid = clone(la_child, top, flags, a);
	if (pid < 0) {
		a->err_step = LA_STEP_CLONE;
		a->err_errno = errno;
		la_child_exit(127);
	}
	a->pid = (int)pid;
	la_child_exit(0);
}

static int la_spawn_in_template(struct la_spawn_args *a)
{
	char *base = la_stack_base();
	if (!la_stack2)
		la_stack2 = la_new_stack();
	if (!base || !la_stack2) {
		a->err_step = LA_STEP_CLONE;
		a->err_errno = ENOMEM;
		return -1;
	}
	char *top = (char *)(((uintptr_t)(base + LA_STACK_SIZE)) & ~(uintptr_t)15);
	uint64_t flags = CLONE_VM | CLONE_VFORK;
	if (a->confine.child_listener) {
		flags |= CLONE_FILES;
		a->confine.unshare_files = 1;
	}
	int proc_dir = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proc_dir < 0) {
		a->err_step = LA_STEP_USERNS;
		a->err_errno = errno;
		return -1;
	}
	a->proc_dir = proc_dir;

	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	long enter = -1;
	int e = 0;
#ifdef LA_HAVE_CLONE3
	if (!a->no_clone3 && !__atomic_load_n(&la_no_clone3, __ATOMIC_RELAXED)) {
		struct la_clone_args ca;
		memset(&ca, 0, sizeof ca);
		ca.flags = flags | CLONE_CLEAR_SIGHAND;
		ca.exit_signal = SIGCHLD;
		ca.stack = (uint64_t)(uintptr_t)base;
		ca.stack_size = (uint64_t)(top - base);
		if (a->cgroup_dir >= 0) {
			ca.flags |= CLONE_INTO_CGROUP;
			ca.cgroup = (uint64_t)a->cgroup_dir;
		}
		a->cleared_sighand = 1;
		a->born_in_cgroup = a->cgroup_dir >= 0;
		enter = la_clone3(&ca, la_enter, a);
		if (enter < 0) {
			e = (int)-enter;
			if (e == ENOSYS || e == E2BIG || e == EINVAL)
				__atomic_store_n(&la_no_clone3, 1, __ATOMIC_RELAXED);
		}
	}
#endif
	if (enter < 0) {
		a->cleared_sighand = 0;
		a->born_in_cgroup = 0;
		enter = clone(la_enter, top, (int)flags | SIGCHLD, a);
		e = errno;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(proc_dir);
	a->proc_dir = -1;
	if (enter < 0) {
		a->err_step = LA_STEP_CLONE;
		a->err_errno = e;
		return -1;
	}
	// la_enter has exited (CLONE_VFORK): reap it.
	while (waitpid((pid_t)enter, NULL, __WALL) < 0 && errno == EINTR)
		;
	if (a->pid > 0) {
		a->pidfd = (int)syscall(SYS_pidfd_open, a->pid, 0);
		if (a->pidfd < 0 && a->err_step == LA_STEP_NONE) {
			// Started, but no handle to wait for it with: end it.
			e = errno;
			kill(a->pid, SIGKILL);
			while (waitpid(a->pid, NULL, __WALL) < 0 && errno == EINTR)
				;
			a->err_step = LA_STEP_CLONE;
			a->err_errno = e;
		}
	}
	if (a->err_step != LA_STEP_NONE) {
		if (a->listener >= 0) {
			close(a->listener);
			a->listener = -1;
		}
		if (a->pid > 0 && a->pidfd < 0) {
			while (waitpid(a->pid, NULL, __WALL) < 0 && errno == EINTR)
				;
			a->pid = -1;
		}
		return -1;
	}
	return 0;
}

int la_spawn(struct la_spawn_args *a)
{
	a->pid = -1;
	a->pidfd = -1;
	a->parent_pid = getpid();
	a->listener = -1;
	a->err_step = LA_STEP_NONE;
	a->err_errno = 0;
	a->cleared_sighand = 0;
	a->born_in_cgroup = 0;
	a->mount_failed_root = -1;
	a->proc_dir = -1;
	if (a->new_ns && a->new_user && a->template_pidfd >= 0)
		return la_spawn_in_template(a);

	char *base = la_stack_base();
	if (!base) {
		a->err_step = LA_STEP_CLONE;
		a->err_errno = ENOMEM;
		return -1;
	}
	// Stacks grow down on every architecture Go supports on Linux.
	char *top = (char *)(((uintptr_t)(base + LA_STACK_SIZE)) & ~(uintptr_t)15);

	// CLONE_VM|CLONE_VFORK: no page-table copy, the parent thread sleeps
	// until execve. CLONE_PIDFD: a race-free handle for waiting and killing.
	// CLONE_FILES only when a listener must reach us (see la_confine).
	uint64_t flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD;
	if (a->confine.child_listener) {
		flags |= CLONE_FILES;
		a->confine.unshare_files = 1;
	}
	if (a->new_pid)
		flags |= CLONE_NEWPID;
	if (a->new_user)
		flags |= CLONE_NEWUSER;
	if (a->new_ns)
		flags |= CLONE_NEWNS;

	// The /proc the child writes its maps and pid_max through (la_child).
	int proc_dir = -1;
	if (a->new_user || (a->new_pid && a->pid_max)) {
		proc_dir = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (proc_dir < 0) {
			a->err_step = a->new_user ? LA_STEP_USERNS : LA_STEP_PID_MAX;
			a->err_errno = errno;
			return -1;
		}
		a->proc_dir = proc_dir;
	}

	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int pidfd = -1;
	long pid = -1;
	int e = 0;
#ifdef LA_HAVE_CLONE3
	if (!a->no_clone3 && !__atomic_load_n(&la_no_clone3, __ATOMIC_RELAXED)) {
		// clone3: the child is born in its v2 cgroup (CLONE_INTO_CGROUP
		// takes the cgroup locks for reading only; writing cgroup.procs
		// takes the global threadgroup rwsem for writing, which waits for
		// an RCU grace period: milliseconds) and with every handler
		// already reset (CLONE_CLEAR_SIGHAND).
		struct la_clone_args ca;
		memset(&ca, 0, sizeof ca);
		ca.flags = flags | CLONE_CLEAR_SIGHAND;
		ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
		ca.exit_signal = SIGCHLD;
		ca.stack = (uint64_t)(uintptr_t)base;
		ca.stack_size = (uint64_t)(top - base);
		if (a->cgroup_dir >= 0) {
			ca.flags |= CLONE_INTO_CGROUP;
			ca.cgroup = (uint64_t)a->cgroup_dir;
		}
		a->cleared_sighand = 1;
		a->born_in_cgroup = a->cgroup_dir >= 0;
		pid = la_clone3(&ca, la_child, a);
		if (pid < 0) {
			e = (int)-pid;
			if (e == ENOSYS || e == E2BIG || e == EINVAL)
				__atomic_store_n(&la_no_clone3, 1, __ATOMIC_RELAXED);
			else if (e != EPERM)  // EPERM: maybe a seccomp policy; try clone
				goto done;
		}
	}
#endif
	if (pid < 0) {
		a->cleared_sighand = 0;
		a->born_in_cgroup = 0;
		pid = clone(la_child, top, (int)flags | SIGCHLD, a, &pidfd);
		e = errno;
	}
#ifdef LA_HAVE_CLONE3
done:
#endif
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (proc_dir >= 0) {
		close(proc_dir);
		a->proc_dir = -1;
	}

	if (pid < 0) {
		a->err_step = LA_STEP_CLONE;
		a->err_errno = e;
		return -1;
	}
	a->pid = (int)pid;
	a->pidfd = pidfd;
	if (a->err_step != LA_STEP_NONE) {
		// The child failed and exited. A listener it created lives on in
		// our table (CLONE_FILES): close it.
		if (a->listener >= 0) {
			close(a->listener);
			a->listener = -1;
		}
		return -1;
	}
	return 0;
}

int la_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return v < 0 ? -errno : (int)v;
}

struct la_probe_args {
	const char *uid_map, *gid_map;
	int err;
};

static int la_probe_child(void *arg)
{
	struct la_probe_args *p = arg;
	if (la_write_file("/proc/self/setgroups", "deny") < 0 ||
	    la_write_file("/proc/self/uid_map", p->uid_map) < 0 ||
	    la_write_file("/proc/self/gid_map", p->gid_map) < 0)
		p->err = errno ? errno : EPERM;
	_exit(0);
}

int la_probe_userns(const char *uid_map, const char *gid_map)
{
	struct la_probe_args p = { uid_map, gid_map, 0 };
	char *base = la_stack_base();
	if (!base)
		return -ENOMEM;
	char *top = (char *)(((uintptr_t)(base + LA_STACK_SIZE)) & ~(uintptr_t)15);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(la_probe_child, top,
			  CLONE_VM | CLONE_VFORK | CLONE_NEWUSER | CLONE_NEWPID | SIGCHLD, &p);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return -e;
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	return p.err ? -p.err : 0;
}

static int la_probe_pidns_child(void *arg)
{
	(void)arg;
	_exit(0);
}

int la_probe_pidns(void)
{
	char *base = la_stack_base();
	if (!base)
		return -ENOMEM;
	char *top = (char *)(((uintptr_t)(base + LA_STACK_SIZE)) & ~(uintptr_t)15);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(la_probe_pidns_child, top, CLONE_VM | CLONE_VFORK | CLONE_NEWPID | SIGCHLD, NULL);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return -e;
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	return 0;
}

static int la_probe_unshare_files_child(void *arg)
{
	int *err = arg;
	if (unshare(CLONE_FILES) < 0)
		*err = errno;
	_exit(0);
}

int la_probe_unshare_files(void)
{
	int err = 0;
	char *base = la_stack_base();
	if (!base)
		return -ENOMEM;
	char *top = (char *)(((uintptr_t)(base + LA_STACK_SIZE)) & ~(uintptr_t)15);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(la_probe_unshare_files_child, top, CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, &err);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return -e;
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	return -err;
}

struct la_probe_ns_args {
	int new_user;
	const char *uid_map, *gid_map;
	const struct la_ns_mounts *own;
	int err;
};

static int la_probe_ns_child(void *arg)
{
	struct la_probe_ns_args *p = arg;
	int which;
	if (p->new_user &&
	    (la_write_file("/proc/self/setgroups", "deny") < 0 ||
	     la_write_file("/proc/self/uid_map", p->uid_map) < 0 ||
	     la_write_file("/proc/self/gid_map", p->gid_map) < 0)) {
		p->err = errno ? errno : EPERM;
		_exit(0);
	}
	int r = la_mount_setup(NULL, 0, p->own, &which);
	if (r < 0)
		p->err = -r;
	_exit(0);
}

int la_probe_mountns(int new_user, int new_pid, const char *uid_map, const char *gid_map,
		     const struct la_ns_mounts *own)
{
	struct la_probe_ns_args p = { new_user, uid_map, gid_map, own, 0 };
	char *base = la_stack_base();
	if (!base)
		return -ENOMEM;
	char *top = (char *)(((uintptr_t)(base + LA_STACK_SIZE)) & ~(uintptr_t)15);
	int flags = CLONE_VM | CLONE_VFORK | CLONE_NEWNS | SIGCHLD;
	if (new_user)
		flags |= CLONE_NEWUSER;
	if (new_pid)
		flags |= CLONE_NEWPID;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(la_probe_ns_child, top, flags, &p);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return -e;
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	return p.err ? -p.err : 0;
}
