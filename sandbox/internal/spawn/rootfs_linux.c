// The sandbox's root: a skeleton of what it grants (see rootfs_linux.go
// for why and what is in it).
//
// la_make_root_skeleton makes the skeleton once per Sandbox: a detached
// tmpfs, read-only once built, whose only nodes are the empty directories
// and files the granted trees are bound onto and the symlinks on the way
// to them. la_attach_root, in each private mount namespace the sandbox
// makes (after la_mount_setup has made it read-only but the writable
// roots, and attached the sandbox's /proc and devpts), clones it, binds
// the granted trees into the clone and makes it the root.
#define _GNU_SOURCE
#include "confine.h"
#include "mountapi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pivot_root
#define SYS_pivot_root 155
#endif
#define LA_MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#define LA_OPEN_TREE_CLOEXEC O_CLOEXEC
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

struct la_rskel_args {
	const struct la_skel_entry *e;
	int n;
	const char *inodes;
};

static int la_rskel_fn(void *arg)
{
	const struct la_rskel_args *a = arg;
	const char *const opts[][2] = { { "mode", "0755" }, { "size", "256k" }, { "nr_inodes", a->inodes } };
	// noexec, nosuid, nodev: the skeleton's own nodes are empty; the
	// trees bound into it keep their mounts' flags.
	int m = la_fs_fsmount("tmpfs", opts, 3, LA_MOUNT_ATTR_NOSUID | LA_MOUNT_ATTR_NODEV | LA_MOUNT_ATTR_NOEXEC);
	if (m < 0)
		return m;
	int e = 0;
	for (int i = 0; i < a->n && !e; i++) {
		// By the full relative path: the tmpfs is new, detached and
		// ours alone, and no entry lies beneath a link entry (planRoot
		// checks it), so no lookup here meets a symlink (an absolute
		// one would lead into our own root). One syscall per entry.
		const struct la_skel_entry *x = &a->e[i];
		int r;
		switch (x->kind) {
		case 'd':
			r = mkdirat(m, x->path, 0755);
			break;
		case 'f':
			r = mknodat(m, x->path, S_IFREG | 0644, 0);
			break;
		case 'l':
			r = symlinkat(x->target, m, x->path);
			break;
		default:
			errno = EINVAL;
			r = -1;
		}
		if (r < 0)
			e = errno;
	}
	return la_seal_skeleton(m, e);
}

int la_make_root_skeleton(int new_user, const char *uid_map, const char *gid_map,
			  const struct la_skel_entry *entries, int n)
{
	// nr_inodes: one per entry, and the root.
	char inodes[16];
	snprintf(inodes, sizeof inodes, "%d", n + 8);
	struct la_rskel_args a = { entries, n, inodes };
	if (!new_user)
		return la_rskel_fn(&a);
	return la_in_userns(la_rskel_fn, &a, uid_map, gid_map);
}

int la_attach_root(const struct la_ns_mounts *own, int *which)
{
	int skel = -1, old = -1, e = 0;
	*which = -1;
	// The old root, to unmount after the switch (by this fd: what "."
	// names after pivot_root is not promised).
	if ((old = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	// A clone of the skeleton (no mounts in it), stacked on the old /:
	// attached to the namespace, which pivot_root needs of a new root,
	// and reached through its fd only (paths still start at the old
	// root, which is what the binds below are taken from).
	skel = (int)syscall(SYS_open_tree, own->root_skel_fd, "", LA_OPEN_TREE_CLONE | LA_OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (skel < 0 || syscall(SYS_move_mount, skel, "", AT_FDCWD, "/", LA_MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		e = errno;
		goto out;
	}
	for (int i = 0; i < own->n_root_binds; i++) {
		const struct la_root_bind *b = &own->root_binds[i];
		// The tree as this namespace has it now (read-only, a writable
		// root writable), cloned by its canonical path; a host grant must
		// still be the inode Landlock's rule names (an intermediate
		// component turned symlink since New ends elsewhere: caught
		// here). Few syscalls per bind: this runs for every command
		// (~40 binds with the default system paths).
		int tree;
		switch (b->kind) {
		case LA_BIND_TMP:
			// The sandbox's own /tmp, /dev/shm or /var/tmp: a
			// directory of one superblock for all its namespaces,
			// made at New (tmpfs_linux.c), ours alone: no link on it.
			tree = (int)syscall(SYS_open_tree, own->tmp_fd, b->src,
					    LA_OPEN_TREE_CLONE | LA_OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
			break;
		case LA_BIND_SKEL:
			// A directory of the skeleton itself (read-only, nothing
			// mounted in the detached original), onto the private
			// /tmp's mount point of the same name.
			tree = (int)syscall(SYS_open_tree, own->root_skel_fd, b->path + 1,
					    LA_OPEN_TREE_CLONE | LA_OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
			break;
		default:
			tree = (int)syscall(SYS_open_tree, AT_FDCWD, b->path,
					    LA_OPEN_TREE_CLONE | LA_OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
		}
		struct stat st;
		if (tree >= 0 && fstat(tree, &st) < 0) {
			e = errno;
			close(tree);
			*which = i;
			goto out;
		}
		if (tree < 0 || S_ISLNK(st.st_mode) ||
		    ((b->kind == LA_BIND_RO || b->kind == LA_BIND_RW) &&
		     ((uint64_t)st.st_dev != b->dev || (uint64_t)st.st_ino != b->ino))) {
			e = tree < 0 ? errno : S_ISLNK(st.st_mode) ? ELOOP : ESTALE;
			if (tree >= 0)
				close(tree);
			// A read-only grant gone or replaced since New is left
			// out (its empty node stays): Landlock's rule is on the
			// old inode, so nothing there was granted anyway.
			if (b->kind == LA_BIND_RO)
				continue;
			*which = i;
			goto out;
		}
		// Onto the skeleton's own node at that path: the skeleton is
		// read-only and ours, its nodes on a bind's path are plain
		// directories (paths are canonical), and no bind lies beneath
		// another (rootfs_linux.go: finish) but what lies beneath the
		// private /tmp: on its way only the mount points la_make_tmp
		// made there, each a mount point in every namespace of the
		// sandbox, which no command can move or remove (EBUSY; change
		// capture answers the same), with the skeleton's own read-only
		// directories or a grant on them. So this resolution crosses no
		// symlink, only mounts of the sandbox's own.
		long rc = syscall(SYS_move_mount, tree, "", skel, b->path + 1, LA_MOVE_MOUNT_F_EMPTY_PATH);
		e = errno;
		close(tree);
		if (rc < 0) {
			*which = i;
			goto out;
		}
	}
	// The switch, as runc does it: from inside the new root,
	// pivot_root(".", ".") puts the old root on top of it; unmounting
	// that (detached: its trees may be busy) leaves nothing of the host's
	// tree in the namespace. The caller's root and cwd are the
	// skeleton's root (chdir below; la_child sets its cwd again).
	if (fchdir(skel) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || fchdir(old) < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
		e = errno;
		goto out;
	}
	e = 0;
out:
	if (skel >= 0)
		close(skel);
	close(old);
	return -e;
}
