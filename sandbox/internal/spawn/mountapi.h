// The new mount API (fsopen/fsconfig/fsmount, open_tree, move_mount,
// mount_setattr) as the sandbox uses it: devpts_linux.c, procfs_linux.c,
// rootfs_linux.c and spawn_linux.c. Prefixed names (LA_*): glibc's
// <sys/mount.h> may define the kernel's names as enum members, which a
// macro would break.
#ifndef LA_MOUNTAPI_H
#define LA_MOUNTAPI_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define LA_FSOPEN_CLOEXEC 0x00000001
#define LA_FSCONFIG_SET_STRING 1
#define LA_FSCONFIG_CMD_CREATE 6
#define LA_FSMOUNT_CLOEXEC 0x00000001
#define LA_MOUNT_ATTR_RDONLY 0x00000001
#define LA_MOUNT_ATTR_NOSUID 0x00000002
#define LA_MOUNT_ATTR_NODEV 0x00000004
#define LA_MOUNT_ATTR_NOEXEC 0x00000008
#define LA_OPEN_TREE_CLONE 1
#define LA_MOVE_MOUNT_F_EMPTY_PATH 0x00000004

// struct mount_attr (mount_setattr(2)).
struct la_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

// la_fs_fsmount makes a detached mount of a new fstype superblock with
// the options given (pairs), mounted with attrs. -errno on failure.
static inline int la_fs_fsmount(const char *fstype, const char *const (*opts)[2], int n, unsigned attrs)
{
	int fs = (int)syscall(SYS_fsopen, fstype, LA_FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	int e = 0;
	for (int i = 0; i < n && !e; i++)
		if (syscall(SYS_fsconfig, fs, LA_FSCONFIG_SET_STRING, opts[i][0], opts[i][1], 0) < 0)
			e = errno;
	if (!e && syscall(SYS_fsconfig, fs, LA_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		e = errno;
	int m = -1;
	if (!e && (m = (int)syscall(SYS_fsmount, fs, LA_FSMOUNT_CLOEXEC, attrs)) < 0)
		e = errno;
	close(fs);
	return e ? -e : m;
}

// la_seal_skeleton ends the making of a skeleton tmpfs m whose filling
// returned e (0 or an errno): made read-only (in every clone of it) and
// returned, or closed and -errno.
static inline int la_seal_skeleton(int m, int e)
{
	if (!e) {
		struct la_mount_attr attr = { 0 };
		attr.attr_set = LA_MOUNT_ATTR_RDONLY;
		if (syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
			e = errno;
	}
	if (e) {
		close(m);
		return -e;
	}
	return m;
}

#endif
