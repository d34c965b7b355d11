// restrict runs a command under the restrictions lite-agent meets in
// containers and nested sandboxes, each with the errno the real
// environment gives:
//
//   notify  a filter with a listener is installed first (as an outer
//           sandbox's), so the command's own listener gets EBUSY
//   pidfd   pidfd_getfd fails EPERM (Docker's default seccomp profile
//           without CAP_SYS_PTRACE)
//   ns      unshare and clone with namespace flags fail EPERM, clone3
//           ENOSYS (no namespaces can be made)
//
// usage: restrict notify,pidfd,ns -- CMD ARGS...
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int load(scmp_filter_ctx ctx, const char *what) {
	int rc = seccomp_load(ctx);
	if (rc < 0) {
		fprintf(stderr, "restrict: loading %s: %s\n", what, strerror(-rc));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fprintf(stderr, "usage: restrict notify,pidfd,ns -- CMD ARGS...\n");
		return 2;
	}
	const char *what = argv[1];
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
	if (strstr(what, "pidfd") && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(pidfd_getfd), 0) < 0)
		return 1;
	if (strstr(what, "ns")) {
		// As Docker's default profile: clone3 ENOSYS (its flags are in
		// memory, out of a filter's reach), so callers fall back to clone,
		// whose namespace flags fail EPERM, as unshare's do (unshare of
		// CLONE_FILES and the like still works).
		static const int flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) < 0 ||
		    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 0) < 0)
			return 1;
		for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
			if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flags[i], flags[i])) < 0 ||
			    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flags[i], flags[i])) < 0)
				return 1;
	}
	if (load(ctx, "restrictions") < 0)
		return 1;
	execvp(argv[3], argv + 3);
	perror("restrict: exec");
	return 127;
}
