// The namespace template of a sandbox, for an unprivileged user (see
// template_linux.go for why and when): a process, the holder, asleep in
// a user, PID and mount namespace of its own whose mount namespace
// la_mount_setup made exactly as it makes a command's — every mount
// read-only but the writable roots, the .git entries bound read-only, the
// sandbox's devpts, /proc skeleton and root of granted paths, the host's
// tree detached. Commands are then started inside it (la_spawn_in_template,
// spawn_linux.c) instead of each making all of it again.
//
// The holder shares the caller's memory (CLONE_VM: no copy of the Go
// process's page tables, nothing to copy-on-write) on a stack of its own,
// runs only the code below, and keeps nothing of the caller's but the
// read end of the release pipe: it closes every other descriptor it was
// born with, 0 to 2 included, once the namespace is made, and exits when
// the pipe's last write end closes — la_template_release, or the
// caller's own exit, kill -9 included. Its signal handlers are reset and
// every signal it can block stays blocked: SIGKILL and SIGSTOP reach it,
// and glibc's own setxid signal, whose handler ignores senders outside
// this process. Commands cannot send it any (their PID namespaces are
// siblings of its own, or Landlock scopes their signals).
#define _GNU_SOURCE
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define LA_HOLDER_STACK (128 * 1024)

struct la_holder_args {
	const struct la_mount_root *roots;
	int n;
	const struct la_ns_mounts *own;
	const char *uid_map, *gid_map;
	int proc_dir, ready_w, release_r;
	int err, which; // results, written before ready_w is
};

static int la_holder(void *arg)
{
	struct la_holder_args *h = arg;
	int r = 0, which = -1;
	if (la_reset_handlers() < 0)
		r = -errno;
	// The maps through the caller's /proc (see la_child for why not ours).
	else if (la_write_file_at(h->proc_dir, "self/setgroups", "deny") < 0 ||
		 la_write_file_at(h->proc_dir, "self/uid_map", h->uid_map) < 0 ||
		 la_write_file_at(h->proc_dir, "self/gid_map", h->gid_map) < 0)
		r = -(errno ? errno : EPERM);
	else
		r = la_mount_setup(h->roots, h->n, h->own, &which);
	int release = h->release_r, ready = h->ready_w;
	h->err = r;
	h->which = which;
	// After this write the caller may free h: nothing of it is read again.
	while (write(ready, "x", 1) < 0 && errno == EINTR)
		;
	if (r < 0)
		syscall(SYS_exit, 0);
	// Nothing of the caller's stays open here but the release pipe — not
	// its standard descriptors either: a program that closes its stdout
	// to tell a reader it is done must not find the holder keeping it.
	if (release > 0)
		syscall(SYS_close_range, 0U, (unsigned)release - 1, 0U);
	syscall(SYS_close_range, (unsigned)release + 1, ~0U, 0U);
	char c;
	while (syscall(SYS_read, release, &c, 1) != 0) {
		// 0: every write end is closed. Signals are blocked, so nothing
		// but an error returns early; wait again.
	}
	syscall(SYS_exit, 0);
	return 0;
}

int la_template_make(struct la_template *t, const struct la_mount_root *roots, int n,
		     const struct la_ns_mounts *own, const char *uid_map, const char *gid_map, int *which)
{
	memset(t, 0, sizeof *t);
	t->pid = -1;
	t->pidfd = -1;
	t->release_w = -1;
	*which = -1;
	int ready[2] = { -1, -1 }, release[2] = { -1, -1 }, proc_dir = -1, e = 0;
	long page = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, LA_HOLDER_STACK + page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	mprotect(m, page, PROT_NONE); // guard page below the stack
	t->stack = m;
	t->stack_size = LA_HOLDER_STACK + page;
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(release, O_CLOEXEC) < 0 ||
	    (proc_dir = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		e = errno;
		goto fail;
	}
	struct la_holder_args h = { roots, n, own, uid_map, gid_map, proc_dir, ready[1], release[0], 0, -1 };
	char *top = (char *)(((uintptr_t)(m + page + LA_HOLDER_STACK)) & ~(uintptr_t)15);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int pid = clone(la_holder, top, CLONE_VM | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_PIDFD | SIGCHLD,
			&h, &t->pidfd);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		goto fail;
	t->pid = pid;
	close(ready[1]);
	ready[1] = -1;
	close(release[0]);
	release[0] = -1;
	char c;
	ssize_t got;
	while ((got = read(ready[0], &c, 1)) < 0 && errno == EINTR)
		;
	if (got != 1) {
		e = got < 0 ? errno : ECHILD; // it died before saying
		goto fail;
	}
	if (h.err < 0) {
		e = -h.err;
		*which = h.which;
		goto fail;
	}
	close(ready[0]);
	close(proc_dir);
	t->release_w = release[1];
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (release[i] >= 0)
			close(release[i]);
	}
	if (proc_dir >= 0)
		close(proc_dir);
	t->release_w = -1;
	la_template_release(t);
	return -(e ? e : EIO);
}

void la_template_release(struct la_template *t)
{
	if (t->release_w >= 0) {
		close(t->release_w);
		t->release_w = -1;
	}
	if (t->pid > 0) {
		// It exits as soon as the release pipe is closed (above, or
		// already: la_template_make's failure path).
		while (waitpid(t->pid, NULL, __WALL) < 0 && errno == EINTR)
			;
		t->pid = -1;
	}
	if (t->pidfd >= 0) {
		close(t->pidfd);
		t->pidfd = -1;
	}
	if (t->stack) {
		munmap(t->stack, t->stack_size);
		t->stack = NULL;
	}
}
