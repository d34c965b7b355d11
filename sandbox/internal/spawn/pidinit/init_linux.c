// The init of a sandbox's PID namespace.
//
// Where the process tree is a PID namespace (unprivileged users without a
// writable cgroup), the namespace's first process is its init, and the
// kernel gives an init special semantics: signals it has no handler for
// are dropped when they come from inside the namespace (`kill $$` does
// nothing, SIGPIPE and SIGXFSZ never arrive), and orphans become its
// children. A command must not be that process. So the confined first
// process execs this program — the agent's own binary, /proc/self/exe,
// stopped here in a constructor before the Go runtime starts — which forks
// the command (PID 2, with the usual semantics), reaps orphans, and reports
// the command's wait status to the agent through a pipe.
//
// It is already confined when it starts (capabilities, no_new_privs,
// Landlock, seccomp, rlimits but RLIMIT_AS were applied before the exec,
// and are inherited by the command). Its argv:
//
//   argv[0] LA_INIT_MARKER
//   argv[1] the status pipe's fd (write end)
//   argv[2] RLIMIT_AS for the command, in bytes, or "-" (applied after
//           this exec: the agent's binary maps more than a small limit)
//   argv[3] the command's path, argv[4...] its argv
//
// and its environment is the command's. Messages on the pipe, one line
// each: "S" once the command's execve succeeded, "E<errno>" when it failed,
// "X<wait status>" when the command ended. Then the init exits, and the
// kernel kills whatever is left in the namespace.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init.h"

static void la_init_report(int fd, char kind, long v)
{
	char buf[32];
	int n = kind == 'S' ? snprintf(buf, sizeof buf, "S\n") : snprintf(buf, sizeof buf, "%c%ld\n", kind, v);
	while (write(fd, buf, (size_t)n) < 0 && errno == EINTR)
		;
}

static void la_init_main(int argc, char **argv, char **envp)
{
	int status_fd = atoi(argv[1]);
	// Not dumpable: the command shares this process's Landlock domain and
	// uid, so it would pass the ptrace access check against it — see it
	// in the sandbox's /proc (hidepid=ptraceable) and open the status
	// pipe through /proc/pid/1/fd/N, forging its own exit status ("X0"
	// after a failure: a security review did). A non-dumpable process
	// needs CAP_SYS_PTRACE in its user namespace, which the command does
	// not have and the agent (the namespace's owner, or root) does, for
	// the /proc/PID/ns links it reads. The command's execve resets it.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		la_init_report(status_fd, 'E', errno);
		_exit(127);
	}
	// The command must not inherit the pipe.
	fcntl(status_fd, F_SETFD, FD_CLOEXEC);
	if (strcmp(argv[2], "-") != 0) {
		unsigned long long as = strtoull(argv[2], NULL, 10);
		struct rlimit rl = { as, as };
		if (setrlimit(RLIMIT_AS, &rl) < 0) {
			la_init_report(status_fd, 'E', errno);
			_exit(127);
		}
	}
	int errp[2];
	if (pipe2(errp, O_CLOEXEC) < 0) {
		la_init_report(status_fd, 'E', errno);
		_exit(127);
	}
	pid_t pid = fork();
	if (pid < 0) {
		la_init_report(status_fd, 'E', errno);
		_exit(127);
	}
	if (pid == 0) {
		execve(argv[3], argv + 4, envp);
		int e = errno;
		while (write(errp[1], &e, sizeof e) < 0 && errno == EINTR)
			;
		_exit(127);
	}
	close(errp[1]);
	int e = 0;
	ssize_t n;
	while ((n = read(errp[0], &e, sizeof e)) < 0 && errno == EINTR)
		;
	close(errp[0]);
	if (n == (ssize_t)sizeof e) {
		// The child exits 127 at once; the agent reaps us, the kernel it.
		la_init_report(status_fd, 'E', e);
		_exit(127);
	}
	la_init_report(status_fd, 'S', 0);
	(void)argc;
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, 0);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			_exit(127); // ECHILD: cannot happen while the command lives
		}
		if (w == pid) {
			la_init_report(status_fd, 'X', st);
			_exit(0);
		}
		// An orphan that ended: reaped, nothing to report.
	}
}

// Runs in every program that links package sandbox (which imports package
// pidinit for it), before the Go runtime; it returns at once unless this
// process is a sandbox init.
__attribute__((constructor)) static void la_init_check(int argc, char **argv, char **envp)
{
	if (argc >= 4 && argv && argv[0] && strcmp(argv[0], LA_INIT_MARKER) == 0)
		la_init_main(argc, argv, envp);
}
