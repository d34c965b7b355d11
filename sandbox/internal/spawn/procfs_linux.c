// A /proc of the sandbox's own (see procfs_linux.go for why this shape).
//
// In each namespace the sandbox makes, /proc becomes a clone of the
// sandbox's skeleton: a small read-only tmpfs made once per Sandbox, whose
// root is the one Landlock rule for everything under /proc. In it:
//   pid/         a procfs instance, subset=pid (process directories,
//                self and thread-self only: no /proc/sys, /proc/net,
//                kallsyms...) and hidepid=ptraceable (a process the reader
//                may not ptrace is not there at all: with Landlock, every
//                process outside the command's own domain);
//   self, thread-self, mounts: symlinks into pid/;
//   cpuinfo, meminfo...: the host's files, each bound onto an empty file
//                of the skeleton (the policy's /proc entries).
// Landlock's walk from a file of pid/ reaches the procfs root, then (a
// mount point is skipped) the skeleton's root, which the rule names.
#define _GNU_SOURCE
#include "confine.h"
#include "mountapi.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LA_MAX_PROC_FILES 16

int la_make_procfs(void)
{
	static const char *const opts[][2] = { { "subset", "pid" }, { "hidepid", "ptraceable" } };
	return la_fs_fsmount("proc", opts, 2,
			     LA_MOUNT_ATTR_RDONLY | LA_MOUNT_ATTR_NOSUID | LA_MOUNT_ATTR_NODEV | LA_MOUNT_ATTR_NOEXEC);
}

struct la_skel_args {
	const char *const *files;
	int n;
};

static int la_skel_fn(void *arg)
{
	const struct la_skel_args *a = arg;
	static const char *const opts[][2] = { { "mode", "0555" }, { "size", "64k" }, { "nr_inodes", "64" } };
	static const char *const links[][2] = {
		{ "self", "pid/self" }, { "thread-self", "pid/thread-self" }, { "mounts", "self/mounts" },
	};
	if (a->n > LA_MAX_PROC_FILES)
		return -E2BIG;
	int m = la_fs_fsmount("tmpfs", opts, 3, LA_MOUNT_ATTR_NOSUID | LA_MOUNT_ATTR_NODEV | LA_MOUNT_ATTR_NOEXEC);
	if (m < 0)
		return m;
	int e = 0;
	if (mkdirat(m, "pid", 0555) < 0)
		e = errno;
	for (unsigned i = 0; i < sizeof links / sizeof links[0] && !e; i++)
		if (symlinkat(links[i][1], m, links[i][0]) < 0)
			e = errno;
	for (int i = 0; i < a->n && !e; i++) {
		int f = openat(m, a->files[i], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
		if (f < 0)
			e = errno;
		else
			close(f);
	}
	return la_seal_skeleton(m, e);
}

int la_make_proc_skeleton(int new_user, const char *uid_map, const char *gid_map,
			  const char *const *files, int n)
{
	struct la_skel_args a = { files, n };
	if (!new_user)
		return la_skel_fn(&a);
	return la_in_userns(la_skel_fn, &a, uid_map, gid_map);
}

static int la_clone_mount(int fd)
{
	return (int)syscall(SYS_open_tree, fd, "", LA_OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH);
}

static int la_move(int from, const char *to)
{
	return (int)syscall(SYS_move_mount, from, "", AT_FDCWD, to, LA_MOVE_MOUNT_F_EMPTY_PATH);
}

int la_attach_proc(const struct la_ns_mounts *own)
{
	int binds[LA_MAX_PROC_FILES], nb = 0, proc = -1, skel = -1, e = 0;
	char path[64];
	if (own->n_proc_files > LA_MAX_PROC_FILES)
		return -E2BIG;
	// Everything taken before /proc is covered: the host's files (clones
	// of the read-only /proc mount, so read-only too) and, made here, a
	// procfs of this PID namespace (which the kernel allows a user
	// namespace only while a full procfs is visible in it).
	proc = own->proc_fd >= 0 ? la_clone_mount(own->proc_fd) : la_make_procfs();
	if (proc < 0) {
		e = own->proc_fd >= 0 ? errno : -proc;
		goto out;
	}
	for (; nb < own->n_proc_files; nb++) {
		size_t l = strlen(own->proc_files[nb]);
		if (l + 7 > sizeof path) {
			e = ENAMETOOLONG;
			goto out;
		}
		memcpy(path, "/proc/", 6);
		memcpy(path + 6, own->proc_files[nb], l + 1);
		binds[nb] = (int)syscall(SYS_open_tree, AT_FDCWD, path, LA_OPEN_TREE_CLONE | O_CLOEXEC);
		if (binds[nb] < 0) {
			e = errno;
			goto out;
		}
	}
	if ((skel = la_clone_mount(own->proc_skel_fd)) < 0 || la_move(skel, "/proc") < 0 ||
	    la_move(proc, "/proc/pid") < 0) {
		e = errno;
		goto out;
	}
	for (int i = 0; i < nb; i++) {
		memcpy(path, "/proc/", 6);
		memcpy(path + 6, own->proc_files[i], strlen(own->proc_files[i]) + 1);
		if (la_move(binds[i], path) < 0) {
			e = errno;
			goto out;
		}
	}
out:
	for (int i = 0; i < nb; i++)
		close(binds[i]);
	if (proc >= 0)
		close(proc);
	if (skel >= 0)
		close(skel);
	return -e;
}
