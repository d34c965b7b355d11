// A devpts instance of the sandbox's own (see devpts_linux.go for why).
//
// la_make_devpts creates it once per Sandbox, detached (fsopen/fsmount:
// it is mounted nowhere, and nothing outside the sandbox ever walks into
// it); la_attach_devpts mounts a clone of it on /dev/pts in each private
// mount namespace the sandbox makes (a spawner thread's as root, each
// command's otherwise). Every clone is a mount of the one superblock, so
// the Landlock rule the supervisor adds on the instance's root, before any
// command exists, names the very directory the commands' ptys live in.
#define _GNU_SOURCE
#include "confine.h"
#include "mountapi.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>

// The instance: ptmx usable by anyone who can reach it (0666: the opener
// needs no group of the host's), each new pts 0620 and owned by its
// opener (no gid=: the tty group need not exist in a user namespace).
// max bounds what a sandbox can take of the machine-wide kernel.pty.max
// (4096 by default, of which pty.reserve is kept for the host's instance).
static int la_devpts_fsmount(void)
{
	static const char *const opts[][2] = {
		{ "ptmxmode", "0666" }, { "mode", "0620" }, { "max", "256" },
	};
	// nosuid, noexec: nothing on a devpts is a program anyway.
	return la_fs_fsmount("devpts", opts, 3, LA_MOUNT_ATTR_NOSUID | LA_MOUNT_ATTR_NOEXEC);
}

struct la_userns_args {
	int (*fn)(void *);
	void *arg;
	const char *uid_map, *gid_map;
	int ret;  // fn's result (an fd in the shared table) or -errno
};

// Runs in a fresh user + mount namespace (CLONE_VM|CLONE_VFORK|
// CLONE_FILES): the one place an unprivileged user may make a devpts or a
// tmpfs. A superblock made here keeps that user namespace alive after
// the child exits.
static int la_userns_child(void *arg)
{
	struct la_userns_args *p = arg;
	if (la_write_file("/proc/self/setgroups", "deny") < 0 ||
	    la_write_file("/proc/self/uid_map", p->uid_map) < 0 ||
	    la_write_file("/proc/self/gid_map", p->gid_map) < 0) {
		p->ret = errno ? -errno : -EPERM;
		_exit(0);
	}
	p->ret = p->fn(p->arg);
	_exit(0);
}

int la_in_userns(int (*fn)(void *), void *arg, const char *uid_map, const char *gid_map)
{
	struct la_userns_args p = { fn, arg, uid_map, gid_map, -EPERM };
	// Once per Sandbox: a stack of its own rather than the spawn path's.
	size_t size = 64 * 1024;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -ENOMEM;
	char *top = (char *)(((uintptr_t)(stack + size)) & ~(uintptr_t)15);
	// Signals blocked across the clone: the child shares our memory and
	// must never run a Go handler (it inherits the mask; it only makes
	// syscalls and exits).
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(la_userns_child, top,
			  CLONE_VM | CLONE_VFORK | CLONE_FILES | CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, &p);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		munmap(stack, size);
		return -e;
	}
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	munmap(stack, size);
	return p.ret;
}

static int la_devpts_fn(void *arg)
{
	(void)arg;
	return la_devpts_fsmount();
}

int la_make_devpts(int new_user, const char *uid_map, const char *gid_map)
{
	if (!new_user)
		return la_devpts_fsmount();  // root: in our own mount namespace
	return la_in_userns(la_devpts_fn, NULL, uid_map, gid_map);
}

int la_attach_devpts(int fd)
{
	// A new mount of the instance (a detached mount is cloned from any
	// namespace, Linux 6.15+; before, EINVAL, and the spawn fails: the
	// supervisor granted ptys only on this promise), then over the host's
	// devpts, hiding it: /dev/pts/N by path is now ours, and /dev/ptmx
	// allocates from the devpts mounted topmost beside it. Async-signal-
	// safe (the vfork child runs it).
	int t = (int)syscall(SYS_open_tree, fd, "", LA_OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH);
	if (t < 0)
		return -errno;
	int e = 0;
	if (syscall(SYS_move_mount, t, "", AT_FDCWD, "/dev/pts", LA_MOVE_MOUNT_F_EMPTY_PATH) < 0)
		e = errno;
	close(t);
	// No /dev/pts (a minimal container's /dev): no host devpts to hide,
	// and no pty either (ptmx finds no "pts" beside it).
	return e == ENOENT ? 0 : -e;
}
