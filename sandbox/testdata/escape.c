// Attack probes for the sandbox tests. Each subcommand tries one thing and
// prints "ok" or the errno name, and exits 0 (the result is in the output),
// except i386, which the sandbox must kill.
//
//   escape SYSCALL [ARG]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

static int report(long r)
{
	if (r < 0)
		printf("%s\n", strerrorname_np(errno));
	else
		printf("ok\n");
	return 0;
}

static int child_fn(void *arg) { (void)arg; _exit(0); }

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *what = argv[1];
	const char *arg = argc > 2 ? argv[2] : "";
	long r = -1;

	if (!strcmp(what, "unshare-user"))
		return report(unshare(CLONE_NEWUSER));
	if (!strcmp(what, "unshare-net"))
		return report(unshare(CLONE_NEWNET));
	if (!strcmp(what, "clone-newuser")) {
		// Raw clone: glibc's fork would not pass the flag.
		static char stack[16384];
		r = clone(child_fn, stack + sizeof stack, CLONE_NEWUSER | SIGCHLD, NULL);
		if (r > 0)
			waitpid(r, NULL, 0);
		return report(r);
	}
	if (!strcmp(what, "clone3")) {
		struct { unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal,
			 stack, stack_size, tls; } ca = { 0 };
		ca.exit_signal = SIGCHLD;
		r = syscall(SYS_clone3, &ca, sizeof ca);
		if (r == 0)
			_exit(0);
		if (r > 0)
			waitpid(r, NULL, 0);
		return report(r);
	}
	if (!strcmp(what, "mount"))
		return report(mount("none", arg, "tmpfs", 0, NULL));
	if (!strcmp(what, "chroot"))
		return report(chroot(arg));
	if (!strcmp(what, "ptrace")) {
		pid_t pid = atoi(arg);
		r = ptrace(PTRACE_ATTACH, pid, 0, 0);
		if (r == 0) {
			waitpid(pid, NULL, 0);
			ptrace(PTRACE_DETACH, pid, 0, 0);
		}
		return report(r);
	}
	if (!strcmp(what, "kill"))
		return report(kill(atoi(arg), 0));
	if (!strcmp(what, "keyctl"))
		return report(syscall(SYS_add_key, "user", "lite-agent-test", "x", 1, -2 /* KEY_SPEC_PROCESS_KEYRING */));
	if (!strcmp(what, "bpf")) {
		union bpf_attr attr;
		memset(&attr, 0, sizeof attr);
		attr.map_type = BPF_MAP_TYPE_ARRAY;
		attr.key_size = 4;
		attr.value_size = 4;
		attr.max_entries = 1;
		r = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
		return report(r);
	}
	if (!strcmp(what, "io_uring")) {
		struct io_uring_params p;
		memset(&p, 0, sizeof p);
		return report(syscall(SYS_io_uring_setup, 4, &p));
	}
	if (!strcmp(what, "perf")) {
		struct perf_event_attr pe;
		memset(&pe, 0, sizeof pe);
		pe.type = PERF_TYPE_SOFTWARE;
		pe.size = sizeof pe;
		pe.config = PERF_COUNT_SW_CPU_CLOCK;
		pe.disabled = 1;
		return report(syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
	}
	if (!strcmp(what, "userfaultfd"))
		return report(syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
	if (!strcmp(what, "packet"))
		return report(socket(AF_PACKET, SOCK_RAW, 0));
	if (!strcmp(what, "raw"))
		return report(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
	if (!strcmp(what, "netlink"))
		return report(socket(AF_NETLINK, SOCK_RAW, 0));
	if (!strcmp(what, "inet"))
		return report(socket(AF_INET, SOCK_STREAM, 0));
	if (!strcmp(what, "inet6"))
		return report(socket(AF_INET6, SOCK_DGRAM, 0));
	if (!strcmp(what, "mptcp"))
		return report(socket(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */));
	if (!strcmp(what, "unix-dgram"))
		return report(socket(AF_UNIX, SOCK_DGRAM, 0));
	if (!strcmp(what, "tcp-connect")) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			return report(fd);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(atoi(arg)) };
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return report(connect(fd, (struct sockaddr *)&sa, sizeof sa));
	}
	if (!strcmp(what, "unix-connect")) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0)
			return report(fd);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		socklen_t len;
		if (arg[0] == '@') {  // abstract
			memcpy(sa.sun_path + 1, arg + 1, strlen(arg + 1));
			len = offsetof(struct sockaddr_un, sun_path) + strlen(arg);
		} else {
			strncpy(sa.sun_path, arg, sizeof sa.sun_path - 1);
			len = sizeof sa;
		}
		r = connect(fd, (struct sockaddr *)&sa, len);
		if (r == 0) {
			char c = 0;
			// the peer writes one byte to prove the connection is real
			if (read(fd, &c, 1) != 1 || c != 'y')
				errno = EPROTO, r = -1;
		}
		return report(r);
	}
	if (!strcmp(what, "tiocsti")) {
		// fd 0 is a terminal; the high bits must not help.
		char c = 'x';
		unsigned long req = TIOCSTI;
		if (!strcmp(arg, "high"))
			req |= 1UL << 32;
		return report(ioctl(0, req, &c));
	}
	if (!strcmp(what, "tioclinux")) {
		char sub = 2;  // TIOCL_SETSEL: needs a VT anyway; EPERM from seccomp first
		return report(ioctl(0, TIOCLINUX, &sub));
	}
	if (!strcmp(what, "personality"))
		return report(syscall(SYS_personality, 0x0400000 /* READ_IMPLIES_EXEC */));
	if (!strcmp(what, "personality-query"))
		return report(syscall(SYS_personality, 0xffffffffUL));
	if (!strcmp(what, "open")) {
		int fd = open(arg, O_RDONLY);
		if (fd >= 0) {
			char buf[64];
			r = read(fd, buf, sizeof buf);
			close(fd);
			return report(r);
		}
		return report(fd);
	}
	if (!strcmp(what, "fds")) {
		// The descriptors this process holds, as the command sees them.
		for (int fd = 0; fd < 4096; fd++)
			if (fcntl(fd, F_GETFD) >= 0)
				printf("%d ", fd);
		printf("\n");
		return 0;
	}
	if (!strcmp(what, "caps")) {
		// Effective/permitted/inheritable, the bounding and ambient sets,
		// no_new_privs and securebits, as the command sees them.
		struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct d[2];
		if (syscall(SYS_capget, &h, d) < 0)
			return report(-1);
		int bounding = 0, ambient = 0;
		for (int c = 0; c < 64; c++) {
			if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
				bounding++;
			if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1)
				ambient++;
		}
		printf("eff=%x%08x prm=%x%08x inh=%x%08x bounding=%d ambient=%d nnp=%d securebits=%x\n",
		       d[1].effective, d[0].effective, d[1].permitted, d[0].permitted,
		       d[1].inheritable, d[0].inheritable, bounding, ambient,
		       prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
		return 0;
	}
	if (!strcmp(what, "i386")) {
#if defined(__x86_64__)
		// getpid through the i386 table (20). Unconfined: prints ok. The
		// sandbox kills the process (SIGSYS) before it returns.
		long ret;
		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
		printf("%s\n", ret > 0 ? "ok" : "fail");
		return 0;
#else
		printf("unsupported\n");
		return 0;
#endif
	}
	fprintf(stderr, "unknown probe %s\n", what);
	return 2;
}
