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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/openat2.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <pthread.h>
#include <unistd.h>

#ifndef IPV6_2292RTHDR
#define IPV6_2292RTHDR 5
#endif
#ifndef IPV6_2292PKTOPTIONS
#define IPV6_2292PKTOPTIONS 6
#endif
#ifndef IP_UNICAST_IF
#define IP_UNICAST_IF 50
#endif
#ifndef IPV6_UNICAST_IF
#define IPV6_UNICAST_IF 76
#endif
#ifndef SO_BINDTOIFINDEX
#define SO_BINDTOIFINDEX 62
#endif

static int report(long r)
{
	if (r < 0)
		printf("%s\n", strerrorname_np(errno));
	else
		printf("ok\n");
	return 0;
}

static int child_fn(void *arg) { (void)arg; _exit(0); }

static const char *result(long r)
{
	return r < 0 ? strerrorname_np(errno) : "ok";
}

// sockopts tries, each on a fresh socket, the socket options that could
// send an already-connected socket's traffic somewhere else than its
// peer, and a few harmless ones (controls), and prints name=result pairs.
// The socket is AF_INET (IP and socket levels) or AF_INET6; where that
// family cannot be made (network none) an AF_UNIX stream socket stands in,
// so that a refusal by the filter (EPERM) is still told apart from the
// kernel's answer (EOPNOTSUPP, ENOPROTOOPT).
static int sockopts(void)
{
	// Loose source route via 127.0.0.2 (nothing is sent: only set). Some
	// kernels (6.18 here) want CAP_NET_RAW for a source route; any kernel
	// takes a record-route option from anyone, which shows that the filter
	// refuses IP_OPTIONS whatever it carries.
	static const unsigned char lsrr[8] = { 1, 0x83, 7, 4, 127, 0, 0, 2 };
	static const unsigned char rr[8] = { 1, 7, 7, 4, 0, 0, 0, 0 };
	// IPv6 segment routing header (type 4) with segments [::1, ::1].
	unsigned char srh[40] = { 0, 4, 4, 1, 1, 0, 0, 0 };
	srh[8 + 15] = 1;
	srh[24 + 15] = 1;
	int one = 1, zero = 0, lo_be = (int)htonl(1);
	struct in6_pktinfo pi6 = { .ipi6_ifindex = 1 };
	struct in_addr any4 = { 0 };
	struct {
		const char *name;
		int family, level, opt;
		const void *val;
		socklen_t len;
		int high;  // junk in the upper 32 bits of level and optname
	} cases[] = {
		{ "ip_options", AF_INET, IPPROTO_IP, IP_OPTIONS, rr, sizeof rr, 0 },
		{ "ip_options_high", AF_INET, IPPROTO_IP, IP_OPTIONS, rr, sizeof rr, 1 },
		{ "ip_options_lsrr", AF_INET, IPPROTO_IP, IP_OPTIONS, lsrr, sizeof lsrr, 0 },
		{ "ip_unicast_if", AF_INET, IPPROTO_IP, IP_UNICAST_IF, &lo_be, sizeof lo_be, 0 },
		{ "ipv6_rthdr", AF_INET6, IPPROTO_IPV6, IPV6_RTHDR, srh, sizeof srh, 0 },
		{ "ipv6_rthdr_high", AF_INET6, IPPROTO_IPV6, IPV6_RTHDR, srh, sizeof srh, 1 },
		{ "ipv6_2292rthdr", AF_INET6, IPPROTO_IPV6, IPV6_2292RTHDR, &one, sizeof one, 0 },
		{ "ipv6_2292pktoptions", AF_INET6, IPPROTO_IPV6, IPV6_2292PKTOPTIONS, NULL, 0, 0 },
		{ "ipv6_pktinfo", AF_INET6, IPPROTO_IPV6, IPV6_PKTINFO, &pi6, sizeof pi6, 0 },
		{ "ipv6_unicast_if", AF_INET6, IPPROTO_IPV6, IPV6_UNICAST_IF, &lo_be, sizeof lo_be, 0 },
		{ "so_bindtodevice", AF_INET, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3, 0 },
		{ "so_bindtoifindex", AF_INET, SOL_SOCKET, SO_BINDTOIFINDEX, &one, sizeof one, 0 },
		{ "so_mark", AF_INET, SOL_SOCKET, SO_MARK, &one, sizeof one, 0 },
		// controls: must keep working
		{ "ip_tos", AF_INET, IPPROTO_IP, IP_TOS, &zero, sizeof zero, 0 },
		{ "ip_pktinfo", AF_INET, IPPROTO_IP, IP_PKTINFO, &one, sizeof one, 0 },
		{ "ip_multicast_if", AF_INET, IPPROTO_IP, IP_MULTICAST_IF, &any4, sizeof any4, 0 },
		{ "ipv6_recvpktinfo", AF_INET6, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one, 0 },
		{ "ipv6_tclass", AF_INET6, IPPROTO_IPV6, IPV6_TCLASS, &zero, sizeof zero, 0 },
		{ "so_reuseaddr", AF_INET, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one, 0 },
		{ "so_keepalive", AF_INET, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int fd = socket(cases[i].family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		long hi = cases[i].high ? 1L << 32 : 0;
		long r = syscall(SYS_setsockopt, fd, hi | cases[i].level, hi | cases[i].opt,
				 cases[i].val, cases[i].len);
		printf("%s%s=%s", i ? " " : "", cases[i].name, result(r));
		close(fd);
	}
	printf("\n");
	return 0;
}

// socket_protos tries AF_INET/AF_INET6 stream and datagram sockets with
// every protocol number up to 300, every other type up to 9 (3, raw, is
// refused in every mode anyway) with a few protocols, each also with junk in
// the upper half of the register, and prints family/type/protocol=result
// for each attempt the filter did not refuse (anything but EPERM: the
// kernel does not answer EPERM for these). Unconfined this takes a while:
// the kernel asks modprobe for every protocol it does not know.
static int socket_protos(void)
{
	static const long extra[] = { 1L << 32 | 132, 1L << 32 | 6, 1L << 32, 65536 + 17, -1 };
	static const long few[] = { 0, 6, 17, 132, 262 };
	int first = 1;
	for (int f = 0; f < 2; f++) {
		int fam = f ? AF_INET6 : AF_INET;
		for (int type = 0; type <= 9; type++) {
			if (type == SOCK_RAW)
				continue;
			int all = type == SOCK_STREAM || type == SOCK_DGRAM;
			int nfew = (int)(sizeof few / sizeof few[0]), nextra = (int)(sizeof extra / sizeof extra[0]);
			int n = (all ? 301 : nfew) + nextra;
			for (int i = 0; i < n; i++) {
				long proto = i >= n - nextra ? extra[i - (n - nextra)] : all ? i : few[i];
				long fd = syscall(SYS_socket, fam, type | SOCK_CLOEXEC, proto);
				if (fd >= 0)
					close((int)fd);
				else if (errno == EPERM)
					continue;
				printf("%s%d/%d/%ld=%s", first ? "" : " ", fam, type, proto, result(fd));
				first = 0;
			}
		}
	}
	printf("\n");
	return 0;
}

// setid tries one way of giving path a set-id mode (or of making a device
// node) and prints "ok" when the kernel did it, else the errno name. The
// file is the caller's own (a test file in its temp dir); every mode that
// creates a file removes what it made first. "plain-*" are the controls:
// ordinary modes that must keep working.
static int setid(const char *way, const char *path)
{
	long r = -1;
	int fd;
	if (!strcmp(way, "chmod-suid"))
		r = chmod(path, 04755);
	else if (!strcmp(way, "chmod-sgid"))
		r = chmod(path, 02755);
	else if (!strcmp(way, "fchmod")) {
		if ((fd = open(path, O_RDONLY)) < 0)
			return report(fd);
		r = fchmod(fd, 04755);
		close(fd);
	} else if (!strcmp(way, "fchmodat"))
		r = syscall(SYS_fchmodat, AT_FDCWD, path, 06755);
	else if (!strcmp(way, "fchmodat2"))
		r = syscall(452 /* fchmodat2 */, AT_FDCWD, path, 04755, 0);
	else if (!strcmp(way, "open-creat")) {
		unlink(path);
		r = syscall(SYS_open, path, O_WRONLY | O_CREAT | O_EXCL, 04755);
	} else if (!strcmp(way, "openat-creat")) {
		unlink(path);
		r = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_EXCL, 02755);
	} else if (!strcmp(way, "creat")) {
		unlink(path);
		r = syscall(SYS_creat, path, 04755);
	} else if (!strcmp(way, "tmpfile")) {
		// An unnamed file with the bit, to be named by linkat later;
		// path is a directory here.
		r = syscall(SYS_openat, AT_FDCWD, path, O_TMPFILE | O_WRONLY, 04755);
	} else if (!strcmp(way, "openat2")) {
		struct open_how how = { .flags = O_WRONLY | O_CREAT | O_EXCL, .mode = 04755 };
		unlink(path);
		r = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	} else if (!strcmp(way, "mknod-suid")) {
		unlink(path);
		r = mknod(path, S_IFREG | 04755, 0);
	} else if (!strcmp(way, "mknod-chr")) {
		unlink(path);
		r = mknod(path, S_IFCHR | 0600, makedev(1, 3)); // /dev/null's numbers
	} else if (!strcmp(way, "mknodat-blk")) {
		unlink(path);
		r = mknodat(AT_FDCWD, path, S_IFBLK | 0600, makedev(7, 0));
	} else if (!strcmp(way, "plain-chmod"))
		r = chmod(path, 0755) || chmod(path, 0644);
	else if (!strcmp(way, "plain-creat")) {
		unlink(path);
		r = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_EXCL, 0755);
	} else {
		printf("bad way %s\n", way);
		return 0;
	}
	if (r >= 0 && strncmp(way, "plain-", 6) && strcmp(way, "tmpfile")) {
		// Did the bit really land? (The kernel strips S_ISGID for a
		// caller outside the file's group.)
		struct stat st;
		if (stat(path, &st) < 0 || !(st.st_mode & (S_ISUID | S_ISGID) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
			printf("no-bit\n");
			return 0;
		}
	}
	return report(r);
}

// thread_connect: connect(2) from a thread that is not the thread-group
// leader (as Go's dialer, libuv's pool and glibc's resolver threads do).
// kind is unix (addr a path; the peer writes "y"), tcp or udp (addr
// IPv4:PORT).
struct tc_args { const char *kind, *addr; long r; int err; };

static int inet_addr_port(const char *addr, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(addr, ':');
	if (!colon || colon - addr >= (long)sizeof host)
		return -1;
	memcpy(host, addr, colon - addr);
	host[colon - addr] = 0;
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons(atoi(colon + 1));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static void *thread_connect_fn(void *p)
{
	struct tc_args *a = p;
	int fd;
	a->r = -1;
	if (!strcmp(a->kind, "unix")) {
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		strncpy(sa.sun_path, a->addr, sizeof sa.sun_path - 1);
		if (fd >= 0 && (a->r = connect(fd, (struct sockaddr *)&sa, sizeof sa)) == 0) {
			char c = 0;
			if (read(fd, &c, 1) != 1 || c != 'y')
				errno = EPROTO, a->r = -1;
		}
	} else {
		struct sockaddr_in sa;
		if (inet_addr_port(a->addr, &sa) < 0) {
			a->err = EINVAL;
			return NULL;
		}
		fd = socket(AF_INET, !strcmp(a->kind, "udp") ? SOCK_DGRAM : SOCK_STREAM, 0);
		if (fd >= 0)
			a->r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	}
	if (fd < 0)
		a->r = -1;
	a->err = errno;
	return NULL;
}

static int thread_connect(const char *kind, const char *addr)
{
	struct tc_args a = { kind, addr, -1, 0 };
	pthread_t th;
	if (pthread_create(&th, NULL, thread_connect_fn, &a) != 0)
		return printf("pthread_create failed\n"), 1;
	pthread_join(th, NULL);
	errno = a.err;
	return report(a.r);
}

// own_server: a test's own server, as httptest or supertest makes one. It
// binds the wildcard address on port 0 (kind tcp, udp) and, from a
// thread, connects to 127.0.0.1:that port and exchanges a byte with
// itself. It prints "ok bound=ADDR" or the failing step and errno.
struct os_args { int udp, port; long r; int err; };

static void *own_client_fn(void *p)
{
	struct os_args *a = p;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(a->port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, a->udp ? SOCK_DGRAM : SOCK_STREAM, 0);
	a->r = -1;
	if (fd >= 0) {
		if (a->udp)
			a->r = sendto(fd, "y", 1, 0, (struct sockaddr *)&sa, sizeof sa);
		else if ((a->r = connect(fd, (struct sockaddr *)&sa, sizeof sa)) == 0) {
			char c = 0;
			if (read(fd, &c, 1) != 1 || c != 'y')
				errno = EPROTO, a->r = -1;
		}
	}
	a->err = errno;
	return NULL;
}

static int own_server(const char *kind)
{
	int udp = !strcmp(kind, "udp");
	int fd = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
	if (fd < 0)
		return printf("socket %s\n", strerrorname_np(errno)), 0;
	struct sockaddr_in sa = { .sin_family = AF_INET }; // 0.0.0.0:0
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		return printf("bind %s\n", strerrorname_np(errno)), 0;
	if (!udp && listen(fd, 4) < 0)
		return printf("listen %s\n", strerrorname_np(errno)), 0;
	socklen_t len = sizeof sa;
	getsockname(fd, (struct sockaddr *)&sa, &len);
	char bound[32];
	inet_ntop(AF_INET, &sa.sin_addr, bound, sizeof bound);
	struct os_args a = { udp, ntohs(sa.sin_port), -1, 0 };
	pthread_t th;
	if (pthread_create(&th, NULL, own_client_fn, &a) != 0)
		return printf("pthread_create failed\n"), 1;
	char c = 0;
	int served = 0;
	if (udp)
		served = recv(fd, &c, 1, 0) == 1 && c == 'y';
	else {
		int conn = accept(fd, NULL, NULL);
		served = conn >= 0 && write(conn, "y", 1) == 1;
	}
	int serr = errno;
	pthread_join(th, NULL);
	if (a.r < 0)
		return printf("client %s\n", strerrorname_np(a.err)), 0;
	if (!served)
		return printf("server %s\n", strerrorname_np(serr)), 0;
	return printf("ok bound=%s\n", bound), 0;
}

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
	if (!strcmp(what, "setns")) {
		// Joining a namespace by a pidfd of one's own (no path for
		// Landlock to refuse first): the UTS one, harmless where allowed.
		int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		if (fd < 0)
			return report(fd);
		return report(setns(fd, CLONE_NEWUTS));
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
	// Ways to undo the read-only mounts (TestMountNSMetadata): a remount
	// without MS_RDONLY, clearing the attribute, a writable clone of a
	// mount, a new file system, detaching a mount to see what is under it.
	if (!strcmp(what, "remount-rw"))
		return report(mount(NULL, arg, NULL, MS_REMOUNT | MS_BIND, NULL));
	if (!strcmp(what, "mount-setattr-rw")) {
		struct { unsigned long long set, clr, prop, userns; } a = { 0, 1 /* MOUNT_ATTR_RDONLY */, 0, 0 };
		return report(syscall(442 /* mount_setattr */, AT_FDCWD, arg, 0x8000 /* AT_RECURSIVE */, &a, sizeof a));
	}
	if (!strcmp(what, "open-tree"))
		return report(syscall(428 /* open_tree */, AT_FDCWD, arg, 1 /* OPEN_TREE_CLONE */ | O_CLOEXEC));
	if (!strcmp(what, "open-tree-attr")) {
		struct { unsigned long long set, clr, prop, userns; } a = { 0, 1, 0, 0 };
		return report(syscall(467 /* open_tree_attr */, AT_FDCWD, arg, 1 | O_CLOEXEC, &a, sizeof a));
	}
	if (!strcmp(what, "fsopen"))
		return report(syscall(430 /* fsopen */, "tmpfs", 0));
	if (!strcmp(what, "fspick"))
		return report(syscall(433 /* fspick */, AT_FDCWD, arg, 0));
	if (!strcmp(what, "umount"))
		return report(umount2(arg, MNT_DETACH));
	// Switching root or moving a mount (the spawn path's child may
	// pivot_root into the sandbox's skeleton; the command never may).
	if (!strcmp(what, "pivot-root")) {
		if (chdir(arg) < 0)
			return report(-1);
		return report(syscall(SYS_pivot_root, ".", "."));
	}
	if (!strcmp(what, "move-mount"))
		return report(syscall(429 /* move_mount */, AT_FDCWD, arg, AT_FDCWD, "/tmp", 0));
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
	if (!strcmp(what, "thread-connect"))
		return thread_connect(arg, argc > 3 ? argv[3] : "");
	if (!strcmp(what, "own-server"))
		return own_server(arg);
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
	if (!strcmp(what, "unix-bind")) {
		// bind a pathname socket and listen on it; the socket file stays.
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0)
			return report(fd);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		strncpy(sa.sun_path, arg, sizeof sa.sun_path - 1);
		r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
		if (r == 0)
			r = listen(fd, 1);
		return report(r);
	}
	if (!strcmp(what, "sockopts"))
		return sockopts();
	if (!strcmp(what, "socket-protos"))
		return socket_protos();
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
	if (!strcmp(what, "rename") && argc > 3)
		// rename(2) itself, with no copy to fall back on as mv has.
		return report(rename(argv[2], argv[3]));
	if (!strcmp(what, "rename-exchange") && argc > 3)
		return report(syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], 2 /* RENAME_EXCHANGE */));
	if (!strcmp(what, "setid") && argc > 3)
		return setid(argv[2], argv[3]);
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
