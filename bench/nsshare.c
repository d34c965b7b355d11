// What an unprivileged command's namespaces cost, made per command as the
// spawn path makes them (spawn_linux.c: la_child, la_mount_setup,
// rootfs_linux.c) against a template made once per session and entered
// per command. 400 iterations of each, alternated; medians and p90 of the
// wall time from the first clone to the command's end (it exits at once).
//
//   per command: clone(NEWUSER|NEWPID|NEWNS) -> maps -> every mount
//     read-only -> a tmpfs skeleton with NBINDS binds of host directories
//     -> a procfs of the command's PID namespace -> pivot_root + detached
//     unmount of the old root -> exit
//   template:    once: a holder made exactly so (its own procfs), asleep;
//     per command: vfork -> setns(holder, USER|MNT) -> clone(NEWUSER|
//     NEWPID|NEWNS|CLONE_PARENT), a copy of the small tree -> maps -> a
//     procfs of the command's PID namespace over the holder's -> exit
//
//   cc -O1 -o /tmp/nsshare bench/nsshare.c
//   setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/nsshare
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/mount.h>

#define N 400
#define NBINDS 40

static char um[64], gm[64];
static int proc_dir = -1;
static int wr(int dir, const char *p, const char *d)
{
	int fd = openat(dir, p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int n = write(fd, d, strlen(d));
	close(fd);
	return n < 0 ? -1 : 0;
}
static int maps(void)
{
	return wr(proc_dir, "self/setgroups", "deny") | wr(proc_dir, "self/uid_map", um) | wr(proc_dir, "self/gid_map", gm);
}
static int fsm(const char *t, const char *o[][2], int n, int at)
{
	int fs = syscall(SYS_fsopen, t, FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, o[i][0], o[i][1], 0) < 0)
			return -1;
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, 0, 0, 0) < 0)
		return -1;
	int m = syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, at);
	close(fs);
	return m;
}
// The directories bound into the skeleton: the first NBINDS of /usr/lib's
// and /etc's subdirectories (any host directories do).
static char binds[NBINDS][256];
static int nbinds;
static void pick_binds(void)
{
	const char *parents[] = { "/usr/lib", "/usr/share", "/etc" };
	for (int p = 0; p < 3 && nbinds < NBINDS; p++) {
		char cmd[300];
		snprintf(cmd, sizeof cmd, "find %s -mindepth 1 -maxdepth 1 -type d 2>/dev/null", parents[p]);
		FILE *f = popen(cmd, "r");
		while (f && nbinds < NBINDS && fgets(binds[nbinds], 256, f)) {
			binds[nbinds][strcspn(binds[nbinds], "\n")] = 0;
			nbinds++;
		}
		if (f)
			pclose(f);
	}
}

// setup makes the namespace a command gets: what la_mount_setup and
// la_attach_root do, in the calling process (in its new namespaces).
static int setup(void)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return 1;
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof ro) < 0)
		return 2;
	const char *so[][2] = { { "mode", "0755" } };
	int skel = fsm("tmpfs", so, 1, 0);
	if (skel < 0)
		return 3;
	for (int i = 0; i < nbinds; i++) {
		char p[260];
		snprintf(p, sizeof p, "%s", binds[i] + 1);
		for (char *s = p; (s = strchr(s, '/')); s++) {
			*s = 0;
			mkdirat(skel, p, 0755);
			*s = '/';
		}
		mkdirat(skel, p, 0755);
	}
	mkdirat(skel, "proc", 0555);
	mkdirat(skel, "proc/pid", 0555);
	int old = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int t = syscall(SYS_open_tree, skel, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (t < 0 || syscall(SYS_move_mount, t, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return 4;
	for (int i = 0; i < nbinds; i++) {
		int b = syscall(SYS_open_tree, AT_FDCWD, binds[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (b < 0 || syscall(SYS_move_mount, b, "", t, binds[i] + 1, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return 5;
		close(b);
	}
	// A procfs of this PID namespace, mounted while the host's is visible.
	const char *po[][2] = { { "subset", "pid" }, { "hidepid", "ptraceable" } };
	int pr = fsm("proc", po, 2, MOUNT_ATTR_RDONLY);
	if (pr < 0 || syscall(SYS_move_mount, pr, "", t, "proc/pid", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return 6;
	if (fchdir(t) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || fchdir(old) < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return 7;
	close(t), close(pr), close(old), close(skel);
	return 0;
}

static char *stack(void)
{
	char *m = mmap(NULL, 1 << 17, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	return m + (1 << 17);
}

static int per_command(void *arg)
{
	(void)arg;
	if (maps() < 0)
		_exit(10);
	_exit(setup());
}

static int release_fd[2], ready_fd[2];
static int holder(void *arg)
{
	(void)arg;
	close(release_fd[1]); // its copy: the parent's close is the release
	int r = maps() < 0 ? 10 : setup();
	write(ready_fd[1], &r, sizeof r);
	char c;
	read(release_fd[0], &c, 1);
	syscall(SYS_exit, 0);
	return 0;
}

static int holder_pidfd = -1, c_pid;
static int command_in_template(void *arg)
{
	(void)arg;
	if (maps() < 0)
		_exit(10);
	// Its own procfs over the holder's (which makes it allowed: a procfs
	// is visible in this copy of the namespace).
	const char *po[][2] = { { "subset", "pid" }, { "hidepid", "ptraceable" } };
	int pr = fsm("proc", po, 2, MOUNT_ATTR_RDONLY);
	if (pr < 0 || syscall(SYS_move_mount, pr, "", AT_FDCWD, "/proc/pid", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		_exit(11);
	_exit(0);
}
static char *cstack;
static int enter(void *arg)
{
	(void)arg;
	if (syscall(SYS_setns, holder_pidfd, CLONE_NEWUSER | CLONE_NEWNS) < 0)
		syscall(SYS_exit, 20);
	c_pid = clone(command_in_template, cstack, CLONE_VM | CLONE_VFORK | CLONE_PARENT | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS, NULL);
	syscall(SYS_exit, c_pid < 0 ? 21 : 0);
	return 0;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmp(const void *a, const void *b)
{
	double x = *(double *)a, y = *(double *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	snprintf(um, sizeof um, "%d %d 1", getuid(), getuid());
	snprintf(gm, sizeof gm, "%d %d 1", getgid(), getgid());
	proc_dir = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	pick_binds();
	char *s1 = stack(), *s2 = stack();
	cstack = stack();
	pipe2(release_fd, O_CLOEXEC);
	pipe2(ready_fd, O_CLOEXEC);
	double t0 = now();
	int hpid = clone(holder, s2, CLONE_VM | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_PIDFD | SIGCHLD, NULL, &holder_pidfd);
	if (hpid < 0) {
		perror("clone holder");
		return 1;
	}
	int r = -1;
	read(ready_fd[0], &r, sizeof r);
	double made = now() - t0;
	if (r != 0) {
		fprintf(stderr, "holder setup failed: %d\n", r);
		return 1;
	}
	static double t[2][N];
	for (int i = 0; i < N; i++) {
		int st;
		double a = now();
		int p = clone(per_command, s1, CLONE_VM | CLONE_VFORK | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, NULL);
		waitpid(p, &st, __WALL);
		t[0][i] = now() - a;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "per command failed: %d\n", WEXITSTATUS(st));
			return 1;
		}
		a = now();
		p = clone(enter, s1, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
		waitpid(p, &st, __WALL);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "enter failed: %d (%s)\n", WEXITSTATUS(st), strerror(errno));
			return 1;
		}
		waitpid(c_pid, &st, __WALL);
		t[1][i] = now() - a;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "command in template failed: %d\n", WEXITSTATUS(st));
			return 1;
		}
	}
	const char *nm[] = { "per command", "template" };
	printf("%d binds; the template made once in %.0f us\n", nbinds, made);
	for (int e = 0; e < 2; e++) {
		qsort(t[e], N, sizeof(double), cmp);
		printf("%-12s median %5.0f us  p90 %5.0f us\n", nm[e], t[e][N / 2], t[e][N * 9 / 10]);
	}
	fflush(stdout);
	close(release_fd[1]);
	waitpid(hpid, NULL, __WALL);
	return 0;
}
