/*
 * escape: one attack per invocation, for the sandbox escape suite
 * (test/escape_test.go). Built by the test with `cc` (x86_64 Linux).
 *
 *   escape MODE [ARGS...]
 *
 * It prints "RAN MODE" first, then either "SUCCEEDED MODE: ..." and exits 0
 * when the attack worked, or "blocked MODE: <errno>" and exits 1. A sandbox
 * may also kill it (SIGSYS); that counts as blocked.
 *
 * Every mode is harmless when the sandbox fails: it creates and closes
 * kernel objects of its own (a BPF map, a perf counter on itself, a key in
 * its own process keyring, an io_uring), signals or traces only the PID the
 * test gives it (a `sleep` the test started), mounts a tmpfs only on the
 * directory it is given and unmounts it at once, and sends nothing but the
 * token it is given to the address it is given.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_userfaultfd
#define SYS_userfaultfd 323
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef AF_PACKET
#define AF_PACKET 17
#endif
#ifndef AF_NETLINK
#define AF_NETLINK 16
#endif
#define KEY_SPEC_PROCESS_KEYRING (-2)
#define X32_SYSCALL_BIT 0x40000000

static const char *mode = "?";

static int succeeded(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int succeeded(const char *fmt, ...) {
	va_list ap;
	printf("SUCCEEDED %s: ", mode);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return 0;
}

static int blocked(const char *what) {
	printf("blocked %s: %s: %s (errno %d)\n", mode, what, strerror(errno), errno);
	fflush(stdout);
	return 1;
}

static int usage(void) {
	fprintf(stderr, "escape: bad arguments for mode %s\n", mode);
	return 2;
}

/* A system call through the i386 table (int $0x80) from a 64-bit process:
 * a filter that checks x86_64 numbers without checking the architecture
 * lets anything through here. */
static long int80(long nr, long a, long b, long c) {
	long ret;
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

static int do_ptrace(pid_t pid) {
	if (ptrace(PTRACE_ATTACH, pid, 0, 0) < 0)
		return blocked("PTRACE_ATTACH");
	waitpid(pid, NULL, __WALL);
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return succeeded("attached to pid %d (and detached)", pid);
}

static int do_process_vm_readv(pid_t pid) {
	char buf[16];
	struct iovec local = {buf, sizeof buf};
	/* The address does not matter: the permission check comes first, so
	 * EFAULT already means the kernel let us at the other process. */
	struct iovec remote = {(void *)0x10000, sizeof buf};
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) >= 0)
		return succeeded("read memory of pid %d", pid);
	if (errno == EFAULT)
		return succeeded("permission to read memory of pid %d granted (EFAULT on a guessed address)", pid);
	return blocked("process_vm_readv");
}

static int do_pidfd_getfd(pid_t pid, int targetfd) {
	int pfd = syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return blocked("pidfd_open");
	int fd = syscall(SYS_pidfd_getfd, pfd, targetfd, 0);
	if (fd < 0)
		return blocked("pidfd_getfd");
	char buf[256];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n < 0)
		n = 0;
	buf[n] = 0;
	return succeeded("stole fd %d of pid %d: %s", targetfd, pid, buf);
}

static int do_i386(void) {
	/* i386 getpid is 20. */
	long r = int80(20, 0, 0, 0);
	if (r < 0) {
		errno = -r;
		return blocked("int $0x80 getpid");
	}
	if (r != getpid()) {
		printf("blocked %s: int $0x80 getpid returned %ld, not our pid\n", mode, r);
		return 1;
	}
	/* i386 unshare is 310: what a native-only filter would miss. */
	long u = int80(310, CLONE_NEWUSER, 0, 0);
	if (u == 0)
		return succeeded("i386 getpid and unshare(CLONE_NEWUSER) worked");
	return succeeded("i386 getpid worked (pid %ld); i386 unshare returned %ld", r, u);
}

static int do_x32(void) {
	long r = syscall(X32_SYSCALL_BIT | SYS_getpid);
	if (r < 0)
		return blocked("x32 getpid");
	return succeeded("x32 getpid returned %ld", r);
}

static int open_own_pty(void) {
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0)
		return -1;
	if (grantpt(m) < 0 || unlockpt(m) < 0)
		return -1;
	char *name = ptsname(m);
	if (name == NULL)
		return -1;
	return open(name, O_RDWR);
}

static int do_tiocsti(void) {
	int fd = 0;
	const char *src = "the inherited stdin";
	if (!isatty(0)) {
		fd = open_own_pty();
		src = "a pty it opened";
		if (fd < 0)
			return blocked("no tty on stdin, and opening a pty");
	}
	/* Make the tty our controlling terminal if we can: then the kernel
	 * itself allows TIOCSTI and only the sandbox stands in the way. */
	setsid();
	ioctl(fd, TIOCSCTTY, 0);
	const char *inject = "#";
	if (ioctl(fd, TIOCSTI, inject) < 0)
		return blocked("ioctl TIOCSTI");
	return succeeded("pushed input into %s", src);
}

static int do_io_uring(void) {
	unsigned char params[120];
	memset(params, 0, sizeof params);
	int fd = syscall(SYS_io_uring_setup, 4, params);
	if (fd < 0)
		return blocked("io_uring_setup");
	close(fd);
	return succeeded("io_uring_setup gave fd %d", fd);
}

static int do_bpf(void) {
	union bpf_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	int fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
	if (fd < 0)
		return blocked("bpf(BPF_MAP_CREATE)");
	close(fd);
	return succeeded("created a BPF map");
}

static int do_perf(void) {
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	int fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		return blocked("perf_event_open");
	close(fd);
	return succeeded("opened a perf counter");
}

static int do_keyctl(void) {
	long k = syscall(SYS_add_key, "user", "lite-agent-escape-test", "x", 1, KEY_SPEC_PROCESS_KEYRING);
	if (k < 0)
		return blocked("add_key");
	return succeeded("added key %ld to the process keyring", k);
}

static int do_keyctl_call(void) {
	/* KEYCTL_GET_KEYRING_ID (0) of the process keyring, creating it. */
	long k = syscall(SYS_keyctl, 0, KEY_SPEC_PROCESS_KEYRING, 1);
	if (k < 0)
		return blocked("keyctl");
	return succeeded("keyctl gave keyring %ld", k);
}

static int do_userfaultfd(void) {
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		return blocked("userfaultfd");
	close(fd);
	return succeeded("userfaultfd gave fd %d", fd);
}

static int do_mount(const char *dir) {
	if (mount("lite-agent-escape", dir, "tmpfs", 0, "size=64k") < 0)
		return blocked("mount tmpfs");
	umount2(dir, MNT_DETACH);
	return succeeded("mounted a tmpfs on %s (and unmounted it)", dir);
}

static int do_unshare(int flags, const char *what) {
	if (unshare(flags) < 0)
		return blocked(what);
	return succeeded("%s", what);
}

static int do_clone(int flags) {
	pid_t pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
	if (pid < 0)
		return blocked("clone with namespace flags");
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return succeeded("clone with namespace flags %#x", flags);
}

static int do_clone3(int flags) {
	uint64_t args[11];
	memset(args, 0, sizeof args);
	args[0] = flags;   /* flags */
	args[4] = SIGCHLD; /* exit_signal */
	pid_t pid = syscall(SYS_clone3, args, 88);
	if (pid < 0)
		return blocked("clone3 with namespace flags");
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return succeeded("clone3 with namespace flags %#x", flags);
}

static int do_chroot(void) {
	if (chroot(".") < 0)
		return blocked("chroot");
	return succeeded("chroot(\".\")");
}

static int do_setns(void) {
	int fd = open("/proc/self/ns/net", O_RDONLY);
	if (fd < 0)
		return blocked("open /proc/self/ns/net");
	if (setns(fd, CLONE_NEWNET) < 0)
		return blocked("setns");
	return succeeded("setns into a network namespace");
}

static int do_socket(int family, int type, int proto, const char *what) {
	int fd = socket(family, type, proto);
	if (fd < 0)
		return blocked(what);
	close(fd);
	return succeeded("created a %s socket", what);
}

static int do_sendmmsg(const char *host, int port, const char *token) {
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return usage();
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return blocked("socket(AF_INET, SOCK_DGRAM)");
	struct iovec iov = {(void *)token, strlen(token)};
	struct mmsghdr m;
	memset(&m, 0, sizeof m);
	m.msg_hdr.msg_name = &sa;
	m.msg_hdr.msg_namelen = sizeof sa;
	m.msg_hdr.msg_iov = &iov;
	m.msg_hdr.msg_iovlen = 1;
	if (sendmmsg(fd, &m, 1, 0) != 1)
		return blocked("sendmmsg");
	return succeeded("sendmmsg to %s:%d", host, port);
}

int main(int argc, char **argv) {
	if (argc < 2)
		return usage();
	mode = argv[1];
	printf("RAN %s\n", mode);
	fflush(stdout);
	const char *m = mode;
	if (!strcmp(m, "ptrace") && argc == 3)
		return do_ptrace(atoi(argv[2]));
	if (!strcmp(m, "process_vm_readv") && argc == 3)
		return do_process_vm_readv(atoi(argv[2]));
	if (!strcmp(m, "pidfd_getfd") && argc == 4)
		return do_pidfd_getfd(atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(m, "i386"))
		return do_i386();
	if (!strcmp(m, "x32"))
		return do_x32();
	if (!strcmp(m, "tiocsti"))
		return do_tiocsti();
	if (!strcmp(m, "io_uring"))
		return do_io_uring();
	if (!strcmp(m, "bpf"))
		return do_bpf();
	if (!strcmp(m, "perf_event_open"))
		return do_perf();
	if (!strcmp(m, "add_key"))
		return do_keyctl();
	if (!strcmp(m, "keyctl"))
		return do_keyctl_call();
	if (!strcmp(m, "userfaultfd"))
		return do_userfaultfd();
	if (!strcmp(m, "mount") && argc == 3)
		return do_mount(argv[2]);
	if (!strcmp(m, "unshare-user"))
		return do_unshare(CLONE_NEWUSER, "unshare(CLONE_NEWUSER)");
	if (!strcmp(m, "unshare-mount"))
		return do_unshare(CLONE_NEWNS, "unshare(CLONE_NEWNS)");
	if (!strcmp(m, "unshare-net"))
		return do_unshare(CLONE_NEWNET, "unshare(CLONE_NEWNET)");
	if (!strcmp(m, "clone-newuser"))
		return do_clone(CLONE_NEWUSER);
	if (!strcmp(m, "clone3-newuser"))
		return do_clone3(CLONE_NEWUSER);
	if (!strcmp(m, "chroot"))
		return do_chroot();
	if (!strcmp(m, "setns"))
		return do_setns();
	if (!strcmp(m, "af_packet"))
		return do_socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL), "AF_PACKET");
	if (!strcmp(m, "raw"))
		return do_socket(AF_INET, SOCK_RAW, IPPROTO_ICMP, "raw AF_INET");
	if (!strcmp(m, "netlink"))
		return do_socket(AF_NETLINK, SOCK_RAW, 0 /* NETLINK_ROUTE */, "AF_NETLINK");
	if (!strcmp(m, "inet"))
		return do_socket(AF_INET, SOCK_STREAM, 0, "AF_INET");
	if (!strcmp(m, "sendmmsg") && argc == 5)
		return do_sendmmsg(argv[2], atoi(argv[3]), argv[4]);
	return usage();
}
