// The sandbox's private /tmp (see tmpfs_linux.go for why and what is in
// it).
//
// la_make_tmp makes it once per Sandbox: a detached tmpfs, writable,
// holding the mount points of the grants that lie beneath /tmp (the
// workspace of a test, the sandbox's TMPDIR). la_attach_root clones it
// onto the root skeleton's /tmp in every namespace the sandbox makes
// (LA_BIND_TMP), before the grants beneath it are bound onto those
// mount points.
#define _GNU_SOURCE
#include "confine.h"
#include "mountapi.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

struct la_tmp_args {
	const char *size;
	const struct la_skel_entry *e;
	int n;
};

static int la_tmp_fn(void *arg)
{
	const struct la_tmp_args *a = arg;
	const char *const opts[][2] = { { "mode", "1777" }, { "size", a->size } };
	// nosuid, nodev: nothing set-id or a device on it (seccomp refuses
	// making either anyway). Executable, as a /tmp is: a JVM or a test
	// harness extracts native libraries there and maps them.
	int m = la_fs_fsmount("tmpfs", opts, 2, LA_MOUNT_ATTR_NOSUID | LA_MOUNT_ATTR_NODEV);
	if (m < 0)
		return m;
	int e = 0;
	for (int i = 0; i < a->n && !e; i++) {
		// By the full relative path, as la_rskel_fn does: the tmpfs is
		// new, detached and ours alone until this returns.
		const struct la_skel_entry *x = &a->e[i];
		int r;
		switch (x->kind) {
		case 'd':
			r = mkdirat(m, x->path, 0755);
			break;
		case 'T':
			// /tmp, /dev/shm, /var/tmp: anyone's, sticky, as
			// the host's are (the mode given to mkdirat is
			// narrowed by the umask: set it after).
			r = mkdirat(m, x->path, 0700);
			if (r == 0)
				r = fchmodat(m, x->path, 01777, 0);
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
	if (e) {
		close(m);
		return -e;
	}
	return m;
}

int la_make_tmp(int new_user, const char *uid_map, const char *gid_map, const char *size,
		const struct la_skel_entry *entries, int n)
{
	struct la_tmp_args a = { size, entries, n };
	if (!new_user)
		return la_tmp_fn(&a);
	return la_in_userns(la_tmp_fn, &a, uid_map, gid_map);
}
