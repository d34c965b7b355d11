// restrict runs a command under the restrictions lite-agent meets in
// containers and nested sandboxes, each with the errno the real
// environment gives. Restrictions, comma-separated:
//
//   notify    a filter with a listener is installed first (as an outer
//             sandbox's), so the command's own listener gets EBUSY
//   pidfd     pidfd_getfd fails EPERM (Docker's default seccomp profile
//             without CAP_SYS_PTRACE)
//   ns        unshare and clone with namespace flags fail EPERM, clone3
//             ENOSYS (no namespaces can be made; unshare(CLONE_FILES)
//             still works): Debian's unprivileged_userns_clone=0, and
//             with "user" Ubuntu 24.04's restriction as unprivileged
//             code meets it
//   docker    Docker's and Podman's default profile and capabilities for
//             a container's root: its seccomp rules that matter here
//             (unshare refused outright, setns, clone namespace flags,
//             clone3 ENOSYS, the mount API, pidfd_getfd, kcmp,
//             fanotify_init, bpf, keyctl: EPERM), the capability set
//             Docker gives (no CAP_SYS_ADMIN, CAP_SYS_PTRACE, ...), and a
//             read-only cgroupfs (in a mount namespace of its own, made
//             before the rules, as the runtime makes the container's)
//   nocgroup  only the read-only cgroupfs (no writable cgroup at all)
//   user      after the rest, become uid/gid 65534 (an unprivileged user
//             in the container)
//
// usage: restrict RESTRICTIONS -- CMD ARGS...
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

struct mount_attr_compat {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

static int load(scmp_filter_ctx ctx, const char *what)
{
	int rc = seccomp_load(ctx);
	if (rc < 0) {
		fprintf(stderr, "restrict: loading %s: %s\n", what, strerror(-rc));
		return -1;
	}
	return 0;
}

// Docker's default capabilities (moby's oci/caps/defaults.go).
static const int docker_caps[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FSETID, CAP_FOWNER, CAP_MKNOD, CAP_NET_RAW,
	CAP_SETGID, CAP_SETUID, CAP_SETFCAP, CAP_SETPCAP, CAP_NET_BIND_SERVICE,
	CAP_SYS_CHROOT, CAP_KILL, CAP_AUDIT_WRITE,
};

static int docker_cap(int c)
{
	for (size_t i = 0; i < sizeof docker_caps / sizeof docker_caps[0]; i++)
		if (docker_caps[i] == c)
			return 1;
	return 0;
}

// drop_caps leaves the process Docker's capabilities: the bounding set
// (what an exec as root gets) and the effective, permitted and
// inheritable sets.
static int drop_caps(void)
{
	for (int c = 0; c <= 63; c++)
		if (!docker_cap(c) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL) {
			perror("restrict: PR_CAPBSET_DROP");
			return -1;
		}
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	for (size_t i = 0; i < sizeof docker_caps / sizeof docker_caps[0]; i++) {
		int c = docker_caps[i];
		data[c / 32].effective |= 1u << (c % 32);
		data[c / 32].permitted |= 1u << (c % 32);
	}
	if (syscall(SYS_capset, &hdr, data) < 0) {
		perror("restrict: capset");
		return -1;
	}
	return 0;
}

// readonly_cgroups makes /sys/fs/cgroup and every mount beneath it
// read-only in a mount namespace of this process's own, as a container
// runtime mounts it: no cgroup is writable.
static int readonly_cgroups(void)
{
	if (unshare(CLONE_NEWNS) < 0) {
		perror("restrict: unshare(CLONE_NEWNS)");
		return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		perror("restrict: making / private");
		return -1;
	}
	struct mount_attr_compat attr = { MOUNT_ATTR_RDONLY, 0, 0, 0 };
	if (syscall(SYS_mount_setattr, -100 /* AT_FDCWD */, "/sys/fs/cgroup", AT_RECURSIVE, &attr, sizeof attr) < 0) {
		perror("restrict: mount_setattr(/sys/fs/cgroup, RDONLY)");
		return -1;
	}
	return 0;
}

static int deny(scmp_filter_ctx ctx, int err, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; // not on this architecture
	if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0) < 0) {
		fprintf(stderr, "restrict: rule for %s\n", name);
		return -1;
	}
	return 0;
}

static const int ns_flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};

// deny_clone_flags: clone with a namespace flag fails EPERM; clone3,
// whose flags are in memory out of a filter's reach, ENOSYS (callers
// fall back to clone).
static int deny_clone_flags(scmp_filter_ctx ctx)
{
	if (deny(ctx, ENOSYS, "clone3") < 0)
		return -1;
	for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i])) < 0)
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fprintf(stderr, "usage: restrict notify,pidfd,ns,docker,nocgroup,user -- CMD ARGS...\n");
		return 2;
	}
	const char *what = argv[1];
	int docker = strstr(what, "docker") != NULL;
	if ((docker || strstr(what, "nocgroup")) && readonly_cgroups() < 0)
		return 1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("restrict: no_new_privs");
		return 1;
	}
	if (strstr(what, "notify")) {
		// A listener for a call nothing makes; its fd is closed, so the
		// call would fail ENOSYS, but the filter keeps its listener.
		scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
		if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(acct), 0) < 0 || load(ctx, "listener") < 0)
			return 1;
		// The listener lives while its fd is open (closing it detaches
		// it): a holder process keeps it, as an outer supervisor would,
		// and dies with the command.
		int fd = seccomp_notify_fd(ctx);
		pid_t holder = fork();
		if (holder < 0) {
			perror("restrict: fork");
			return 1;
		}
		if (holder == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		close(fd);
		seccomp_release(ctx);
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return 1;
	if ((strstr(what, "pidfd") || docker) && deny(ctx, EPERM, "pidfd_getfd") < 0)
		return 1;
	if (strstr(what, "ns")) {
		// unshare of CLONE_FILES and the like still works here.
		if (deny_clone_flags(ctx) < 0 || deny(ctx, EPERM, "setns") < 0)
			return 1;
		for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++)
			if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i])) < 0)
				return 1;
	}
	if (docker) {
		// What the default profile refuses without CAP_SYS_ADMIN and
		// CAP_SYS_PTRACE (moby's profiles/seccomp/default.json): unshare
		// at all, the mount API, and the rest lite-agent might touch.
		static const char *denied[] = {
			"unshare", "setns", "mount", "umount2", "pivot_root", "mount_setattr", "open_tree",
			"move_mount", "fsopen", "fsmount", "fsconfig", "fspick", "kcmp", "process_madvise",
			"fanotify_init", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
			"quotactl", "syslog", "acct", "reboot", "init_module", "finit_module", "delete_module",
		};
		if (deny_clone_flags(ctx) < 0)
			return 1;
		for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++)
			if (deny(ctx, EPERM, denied[i]) < 0)
				return 1;
		if (drop_caps() < 0)
			return 1;
	}
	if (load(ctx, "restrictions") < 0)
		return 1;
	if (strstr(what, "user")) {
		gid_t g = 65534;
		if (setgroups(1, &g) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0) {
			perror("restrict: becoming uid 65534");
			return 1;
		}
	}
	execvp(argv[3], argv + 3);
	perror("restrict: exec");
	return 127;
}
