// The one-shot runner of `lite-agent sandbox run`: runs a stored plan
// (fastpath.h) from a cgo constructor, before the Go runtime starts.
//
// Why: a Go program needs ~2 ms to start here before main runs, and the
// CLI's own package initialisation and sandbox.New add ~4 ms more, while a
// confined spawn itself costs ~0.6 ms. For a short command the CLI would
// spend nine tenths of its time getting ready. So the Go path, after
// preparing a sandbox, stores what it computed as a plan, and the next
// identical invocation runs that plan here and never starts Go.
//
// What it trusts: the plan comes from the user's kernel keyring, which no
// confined process can reach (the seccomp filter of every lite-agent
// sandbox refuses keyctl, add_key and request_key), keyed by a SHA-256 of
// everything the Go path read to make it: this binary (device, inode, size,
// mtime), the user and group ids, the effective capabilities, the working
// directory, the process's cgroups and the flags before the command; the
// plan lists the environment variables it was made from, with their
// values. Any difference takes the Go path, which stores a fresh plan.
// And the plan must carry an HMAC under a per-user secret that lives in a
// 0700 directory of the user's, not in a sandbox's reach by default
// (la_secret): writing the keyring alone does not make a plan.
//
// What it does (the Go path's Start/Wait, for the plans it stores: network
// "none"; a per-command v1 pids cgroup, or a PID namespace under our init):
// make the per-run temp dir, build the
// Landlock ruleset, make the command's cgroups, spawn through la_spawn
// (spawn_linux.c) with both seccomp programs loaded by the child, serve the
// connect notifications (pathname unix sockets beneath the read-write
// roots), forward stdout/stderr within the output budget, enforce the wall
// time, forward SIGINT/SIGTERM/SIGHUP as the end of the tree, kill what is
// left when the main process ends, then report as the CLI does and clean up.
//
// Until the command is running, any failure — no plan, a path that no
// longer opens, a command not found, a spawn that fails — undoes what was
// done and returns to the Go path, which does everything again and reports
// the error in its own words. Nothing is half-run twice: la_spawn fails
// only before execve.
#define _GNU_SOURCE
#include "confine.h"
#include "fastpath.h"
#include "init.h"

#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif

// ---- SHA-256 (FIPS 180-4) ----

static const uint32_t la_k256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define LA_ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void la_sha256_block(uint32_t h[8], const unsigned char *b)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = LA_ROR(w[i - 15], 7) ^ LA_ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = LA_ROR(w[i - 2], 17) ^ LA_ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = hh + (LA_ROR(e, 6) ^ LA_ROR(e, 11) ^ LA_ROR(e, 25)) + ((e & f) ^ (~e & g)) + la_k256[i] + w[i];
		uint32_t t2 = (LA_ROR(a, 2) ^ LA_ROR(a, 13) ^ LA_ROR(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
		hh = g; g = f; f = e; e = d + t1; d = c; c = bb; bb = a; a = t1 + t2;
	}
	h[0] += a; h[1] += bb; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void la_sha256(const void *p, unsigned long n, unsigned char out[32])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	const unsigned char *b = p;
	unsigned long left = n;
	for (; left >= 64; left -= 64, b += 64)
		la_sha256_block(h, b);
	unsigned char tail[128];
	memset(tail, 0, sizeof tail);
	memcpy(tail, b, left);
	tail[left] = 0x80;
	int blocks = left < 56 ? 1 : 2;
	uint64_t bits = (uint64_t)n * 8;
	for (int i = 0; i < 8; i++)
		tail[blocks * 64 - 1 - i] = (unsigned char)(bits >> (8 * i));
	for (int i = 0; i < blocks; i++)
		la_sha256_block(h, tail + 64 * i);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(h[i] >> 8);
		out[4 * i + 3] = (unsigned char)h[i];
	}
}

// la_hmac is HMAC-SHA256 with a 32-byte key (RFC 2104).
static int la_hmac(const unsigned char key[32], const unsigned char *msg, size_t n, unsigned char out[32])
{
	unsigned char *b = malloc(64 + (n > 32 ? n : 32));
	if (!b)
		return -1;
	unsigned char inner[32];
	for (int i = 0; i < 64; i++)
		b[i] = (unsigned char)((i < 32 ? key[i] : 0) ^ 0x36);
	memcpy(b + 64, msg, n);
	la_sha256(b, 64 + n, inner);
	for (int i = 0; i < 64; i++)
		b[i] = (unsigned char)((i < 32 ? key[i] : 0) ^ 0x5c);
	memcpy(b + 64, inner, 32);
	la_sha256(b, 64 + 32, out);
	free(b);
	return 0;
}

// la_secret reads the per-user plan secret (fastpath.h), checking that
// only this user could have written it: the directory is opened without
// following a symlink and checked on the open descriptor, the file is
// opened beneath it.
static int la_secret(char **envp, unsigned char key[32])
{
	char dir[4200];
	const char *xdg = NULL;
	for (int i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], "XDG_RUNTIME_DIR=", 16) == 0) {
			xdg = envp[i] + 16;
			break;
		}
	if (xdg && xdg[0] == '/' && strlen(xdg) < 4000)
		snprintf(dir, sizeof dir, "%s/%s", xdg, LA_SECRET_XDG_SUBDIR);
	else
		snprintf(dir, sizeof dir, LA_SECRET_DIR_FMT, (unsigned)geteuid());
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	struct stat st;
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
		close(dfd);
		return -1;
	}
	int fd = openat(dfd, LA_SECRET_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return -1;
	int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
		 (st.st_mode & 077) == 0 && st.st_size == 32 && read(fd, key, 32) == 32;
	close(fd);
	return ok ? 0 : -1;
}

// ---- a growable byte buffer ----

struct la_buf {
	char *p;
	size_t n, cap;
	int oom;
};

static void la_put(struct la_buf *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t c = b->cap ? b->cap : 4096;
		while (c < b->n + n)
			c *= 2;
		char *q = realloc(b->p, c);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = c;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void la_puts(struct la_buf *b, const char *s) { la_put(b, s, strlen(s)); }

static void la_putf(struct la_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void la_putf(struct la_buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof tmp) {
		b->oom = 1;
		return;
	}
	la_put(b, tmp, (size_t)n);
}

// la_read_all reads a small file (a /proc or cgroup file) into b.
static int la_read_all(const char *path, struct la_buf *b)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char tmp[4096];
	for (;;) {
		ssize_t n = read(fd, tmp, sizeof tmp);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return n < 0 ? -1 : 0;
		}
		la_put(b, tmp, (size_t)n);
	}
}

// ---- the key ----

// la_flag_split finds where the command starts in the arguments after
// "sandbox run", as Go's flag package parses them: flags until the first
// argument that is not one, or just after "--". Returns the index, or -1
// when the invocation is not one the runner takes (help, a missing value,
// no command).
static int la_flag_split(int n, char **args)
{
	int i = 0;
	while (i < n) {
		const char *s = args[i];
		if (strlen(s) < 2 || s[0] != '-')
			break;
		if (strcmp(s, "--") == 0) {
			i++;
			break;
		}
		const char *name = s + 1;
		if (*name == '-')
			name++;
		if (*name == '-' || *name == '=' || *name == 0)
			return -1; // bad flag syntax: Go reports it
		if (strchr(name, '=')) {
			i++;
			continue;
		}
		if (strcmp(name, "best-effort") == 0) {
			i++;
			continue;
		}
		if (strcmp(name, "h") == 0 || strcmp(name, "help") == 0)
			return -1;
		if (i + 1 >= n)
			return -1;
		i += 2;
	}
	return i < n ? i : -1;
}

// la_plan_key builds the key material (fastpath_linux.go keyMaterial must
// produce the same bytes) and returns its SHA-256 as the key's description.
static int la_plan_key(int nflags, char **flags, char desc[128])
{
	struct la_buf b = { 0 };
	struct stat st;
	if (stat("/proc/self/exe", &st) < 0)
		return -1;
	la_puts(&b, LA_PLAN_KEY_VERSION);
	la_putf(&b, "exe %llu %llu %lld %lld %ld\n", (unsigned long long)st.st_dev,
		(unsigned long long)st.st_ino, (long long)st.st_size,
		(long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	getresuid(&ru, &eu, &su);
	getresgid(&rg, &eg, &sg);
	la_putf(&b, "ids %u %u %u %u %u %u\n", ru, eu, su, rg, eg, sg);
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capget, &hdr, data) < 0) {
		free(b.p);
		return -1;
	}
	la_putf(&b, "caps %u %u\n", data[0].effective, data[1].effective);
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd)) {
		free(b.p);
		return -1;
	}
	la_puts(&b, "cwd ");
	la_puts(&b, cwd);
	la_puts(&b, "\ncgroup\n");
	if (la_read_all("/proc/self/cgroup", &b) < 0) {
		free(b.p);
		return -1;
	}
	la_putf(&b, "args %d\n", nflags);
	for (int i = 0; i < nflags; i++)
		la_put(&b, flags[i], strlen(flags[i]) + 1);
	if (b.oom) {
		free(b.p);
		return -1;
	}
	unsigned char sum[32];
	la_sha256(b.p, b.n, sum);
	free(b.p);
	int off = snprintf(desc, 128, "%s", LA_PLAN_KEY_PREFIX);
	for (int i = 0; i < 32; i++)
		off += snprintf(desc + off, 128 - off, "%02x", sum[i]);
	return 0;
}

// ---- the plan ----

struct la_str {
	const char *p;
	uint32_t n;
};

struct la_plan {
	uint64_t ll_fs, ll_net, ll_scoped, ll_file_only, ll_tmp;
	int n_rules;
	struct { uint64_t access; struct la_str path; } rules[LA_MAX_RULES];
	struct la_str main_bpf, child_bpf;
	int child_notifies, last_cap, drop_bounding, lock_securebits;
	int n_env;
	struct la_str env[LA_MAX_ENV]; // in order
	char env_tmp[LA_MAX_ENV];      // 1: env[i] is a NAME whose value is the temp dir
	struct la_str dir, tmp_base;
	int n_rlimits;
	struct { int resource; uint64_t cur, max; } rlimits[LA_MAX_RLIMITS];
	struct la_str cg_pids, cg_pids_max, cg_mem, cg_mem_limit;
	int with_init, new_user;
	struct la_str uid_map, gid_map, pid_max, init_as;
	int n_roots;
	struct la_str roots[LA_MAX_ROOTS];
	int mount_ns;
	int n_deps;
	struct la_str deps[LA_MAX_ENV];
	uint64_t output_bytes, wall_ns, created;
	struct la_str msg_preamble, msg_timeout, msg_oom, msg_pids, msg_trunc_a, msg_trunc_b;
	struct la_str msg_sig[3]; // SIGINT, SIGTERM, SIGHUP
};

static uint64_t la_le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

// la_plan_parse checks and indexes a plan; strings point into buf.
static int la_plan_parse(const unsigned char *buf, size_t n, struct la_plan *pl)
{
	memset(pl, 0, sizeof *pl);
	size_t m = strlen(LA_PLAN_MAGIC);
	if (n < m || memcmp(buf, LA_PLAN_MAGIC, m) != 0)
		return -1;
	size_t off = m;
	int have_main = 0, have_dir = 0, have_tmp = 0, have_out = 0;
	while (off < n) {
		if (n - off < 6)
			return -1;
		unsigned tag = (unsigned)la_le(buf + off, 2);
		uint64_t len = la_le(buf + off + 2, 4);
		off += 6;
		if (len > n - off)
			return -1;
		const unsigned char *d = buf + off;
		struct la_str s = { (const char *)d, (uint32_t)len };
		off += len;
#define U64() do { if (len != 8) return -1; } while (0)
#define U32() do { if (len != 4) return -1; } while (0)
		switch (tag) {
		case LA_T_LL_FS: U64(); pl->ll_fs = la_le(d, 8); break;
		case LA_T_LL_NET: U64(); pl->ll_net = la_le(d, 8); break;
		case LA_T_LL_SCOPED: U64(); pl->ll_scoped = la_le(d, 8); break;
		case LA_T_LL_FILE_ONLY: U64(); pl->ll_file_only = la_le(d, 8); break;
		case LA_T_LL_TMP: U64(); pl->ll_tmp = la_le(d, 8); have_tmp++; break;
		case LA_T_LL_RULE:
			if (len <= 8 || pl->n_rules >= LA_MAX_RULES)
				return -1;
			pl->rules[pl->n_rules].access = la_le(d, 8);
			pl->rules[pl->n_rules].path = (struct la_str){ (const char *)d + 8, (uint32_t)len - 8 };
			pl->n_rules++;
			break;
		case LA_T_MAIN_BPF:
			if (len == 0 || len % 8 || len / 8 > 0xffff)
				return -1;
			pl->main_bpf = s;
			have_main = 1;
			break;
		case LA_T_CHILD_BPF:
			if (len % 8 || len / 8 > 0xffff)
				return -1;
			pl->child_bpf = s;
			break;
		case LA_T_CHILD_NOTIFIES: U32(); pl->child_notifies = (int)la_le(d, 4); break;
		case LA_T_LAST_CAP: U32(); pl->last_cap = (int)la_le(d, 4); break;
		case LA_T_DROP_BOUNDING: U32(); pl->drop_bounding = (int)la_le(d, 4); break;
		case LA_T_LOCK_SECUREBITS: U32(); pl->lock_securebits = (int)la_le(d, 4); break;
		case LA_T_ENV:
		case LA_T_ENV_TMP:
			if (pl->n_env >= LA_MAX_ENV)
				return -1;
			pl->env_tmp[pl->n_env] = tag == LA_T_ENV_TMP;
			pl->env[pl->n_env++] = s;
			break;
		case LA_T_ENV_DEP:
			if (pl->n_deps >= LA_MAX_ENV)
				return -1;
			pl->deps[pl->n_deps++] = s;
			break;
		case LA_T_DIR: pl->dir = s; have_dir = 1; break;
		case LA_T_TMP_BASE: pl->tmp_base = s; break;
		case LA_T_RLIMIT:
			if (len != 20 || pl->n_rlimits >= LA_MAX_RLIMITS)
				return -1;
			pl->rlimits[pl->n_rlimits].resource = (int)la_le(d, 4);
			pl->rlimits[pl->n_rlimits].cur = la_le(d + 4, 8);
			pl->rlimits[pl->n_rlimits].max = la_le(d + 12, 8);
			pl->n_rlimits++;
			break;
		case LA_T_CG_PIDS: pl->cg_pids = s; break;
		case LA_T_CG_PIDS_MAX: pl->cg_pids_max = s; break;
		case LA_T_CG_MEM: pl->cg_mem = s; break;
		case LA_T_CG_MEM_LIMIT: pl->cg_mem_limit = s; break;
		case LA_T_INIT: U32(); pl->with_init = (int)la_le(d, 4); break;
		case LA_T_NEW_USER: U32(); pl->new_user = (int)la_le(d, 4); break;
		case LA_T_UID_MAP: pl->uid_map = s; break;
		case LA_T_GID_MAP: pl->gid_map = s; break;
		case LA_T_PID_MAX: pl->pid_max = s; break;
		case LA_T_INIT_AS: pl->init_as = s; break;
		case LA_T_UNIX_ROOT:
			if (pl->n_roots >= LA_MAX_ROOTS)
				return -1;
			pl->roots[pl->n_roots++] = s;
			break;
		case LA_T_MOUNT_NS: U32(); pl->mount_ns = (int)la_le(d, 4); break;
		case LA_T_OUTPUT_BYTES: U64(); pl->output_bytes = la_le(d, 8); have_out = 1; break;
		case LA_T_WALL_NS: U64(); pl->wall_ns = la_le(d, 8); break;
		case LA_T_CREATED: U64(); pl->created = la_le(d, 8); break;
		case LA_T_MSG_PREAMBLE: pl->msg_preamble = s; break;
		case LA_T_MSG_TIMEOUT: pl->msg_timeout = s; break;
		case LA_T_MSG_OOM: pl->msg_oom = s; break;
		case LA_T_MSG_PIDS: pl->msg_pids = s; break;
		case LA_T_MSG_TRUNC_A: pl->msg_trunc_a = s; break;
		case LA_T_MSG_TRUNC_B: pl->msg_trunc_b = s; break;
		case LA_T_MSG_SIGINT: pl->msg_sig[0] = s; break;
		case LA_T_MSG_SIGTERM: pl->msg_sig[1] = s; break;
		case LA_T_MSG_SIGHUP: pl->msg_sig[2] = s; break;
		default:
			return -1; // a plan from another version: the Go path
		}
#undef U64
#undef U32
	}
	// A plan without the pieces that confine is never run: no
	// Landlock, no seccomp, no temp dir, no process tree.
	// Only a fresh plan: the key's own timeout could be reset by anything
	// that writes the keyring, the signed creation time cannot.
	time_t now = time(NULL);
	if (pl->created == 0 || (uint64_t)now + 60 < pl->created || (uint64_t)now > pl->created + LA_PLAN_LIFETIME_S)
		return -1;
	if (!have_dir || have_tmp != 1 || !have_out || pl->ll_fs == 0 ||
	    pl->tmp_base.n == 0 || !pl->child_notifies || pl->child_bpf.n == 0)
		return -1;
	// The process tree: our cgroup, or a PID namespace under our init
	// (whose child program holds the namespace rules only: the main
	// program must come too).
	if (pl->with_init ? !have_main || pl->init_as.n == 0 || (pl->new_user && (!pl->uid_map.n || !pl->gid_map.n))
			  : pl->cg_pids.n == 0 || pl->cg_pids_max.n == 0)
		return -1;
	return 0;
}

// la_cstr copies s into a fresh NUL-terminated string.
// la_start_time reads this process's start time, field 22 of
// /proc/self/stat (after the command name in parentheses): with the pid it
// names the temp dir's owner, as tmpRootDir does (tmpdirs_linux.go), so
// that a later start can tell the directory of a killed run is stale.
// 0 when it cannot be read: such a name is never judged stale.
static unsigned long long la_start_time(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	for (int field = 2; field < 21 && p; field++) // skip to field 22
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

static char *la_cstr(struct la_str s)
{
	char *p = malloc(s.n + 1);
	if (p) {
		memcpy(p, s.p, s.n);
		p[s.n] = 0;
	}
	return p;
}

static void la_write_str(int fd, struct la_str s)
{
	size_t off = 0;
	while (off < s.n) {
		ssize_t n = write(fd, s.p + off, s.n - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		off += (size_t)n;
	}
}

static void la_trace(char **envp, const char *what)
{
	for (int i = 0; envp && envp[i]; i++) {
		if (strncmp(envp[i], "LITE_AGENT_SANDBOX_TRACE=", 25) == 0 && envp[i][25]) {
			int fd = open(envp[i] + 25, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
			if (fd >= 0) {
				la_write_str(fd, (struct la_str){ what, (uint32_t)strlen(what) });
				close(fd);
			}
			return;
		}
	}
}

// ---- the run ----

struct la_run {
	struct la_plan pl;
	char *tmp;           // the per-run temp dir
	int ruleset;
	char *cg_pids_parent, *cg_pids_dir, *cg_mem_parent, *cg_mem_dir;
	int tasks[2];
	char **roots;        // NUL-terminated copies of pl.roots
	struct la_mount_root mroots[LA_MAX_ROOTS + 1]; // with pl.mount_ns
	char *exe;
};

static int la_write_path(const char *path, const char *v, size_t n)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, v, n);
	int e = errno;
	close(fd);
	errno = e;
	return w == (ssize_t)n ? 0 : -1;
}

// la_rm_tree removes what a command left in its temp dir: never following
// a symlink, making unwritable directories writable first.
static void la_rm_tree_at(int dfd, const char *name, int depth)
{
	if (depth > 256)
		return;
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	fchmod(fd, 0700);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		la_rm_tree_at(dirfd(d), e->d_name, depth + 1);
	}
	closedir(d);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

static void la_rmdir_retry(const char *d)
{
	// Right after its last task exited a cgroup may still be busy.
	for (int i = 0; i < 200; i++) {
		if (rmdir(d) == 0 || errno == ENOENT)
			return;
		if (errno != EBUSY)
			return;
		usleep(1000);
	}
}

static void la_run_undo(struct la_run *r)
{
	if (r->ruleset >= 0)
		close(r->ruleset);
	for (int i = 0; i < 2; i++)
		if (r->tasks[i] >= 0)
			close(r->tasks[i]);
	if (r->cg_pids_dir)
		la_rmdir_retry(r->cg_pids_dir);
	if (r->cg_pids_parent)
		la_rmdir_retry(r->cg_pids_parent);
	if (r->cg_mem_dir)
		la_rmdir_retry(r->cg_mem_dir);
	if (r->cg_mem_parent)
		la_rmdir_retry(r->cg_mem_parent);
	if (r->tmp) {
		la_rm_tree_at(AT_FDCWD, r->tmp, 0);
		struct stat st;
		if (lstat(r->tmp, &st) == 0) {
			// Deeper than la_rm_tree_at goes: rm(1) walks any depth.
			char *rm_argv[] = { "rm", "-rf", "--", r->tmp, NULL };
			char *rm_env[] = { NULL };
			pid_t pid;
			if (posix_spawn(&pid, "/bin/rm", NULL, NULL, rm_argv, rm_env) == 0)
				while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
					;
		}
	}
}

struct la_ll_ruleset_attr {
	uint64_t handled_access_fs, handled_access_net, scoped;
};
struct la_ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

static int la_add_rule(int ruleset, const struct la_plan *pl, const char *path, uint64_t access)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	uint64_t acc = access & pl->ll_fs;
	if (!S_ISDIR(st.st_mode))
		acc &= pl->ll_file_only;
	int rc = 0;
	if (acc) {
		struct la_ll_path_beneath pb = { acc, fd };
		rc = (int)syscall(SYS_landlock_add_rule, ruleset, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &pb, 0);
	}
	close(fd);
	return rc < 0 ? -1 : 0;
}

// la_make_cgroup makes <base>/lite-agent.<pid>.0/c1 (the names the Go
// path's stale-directory cleaner knows; its own sets count from 1, so a
// set this runner could not remove never collides with the Go path's in
// the same process), writes its limit and opens tasks.
static int la_make_cgroup(struct la_str base, const char *file, struct la_str limit, const char *file2,
			  char **parent, char **dir, int *tasks)
{
	char *b = la_cstr(base);
	char *lim = la_cstr(limit);
	if (!b || !lim) {
		free(b);
		free(lim);
		return -1;
	}
	int rc = -1;
	if (asprintf(parent, "%s/lite-agent.%d.0", b, (int)getpid()) < 0) {
		*parent = NULL;
		goto out;
	}
	if (mkdir(*parent, 0755) < 0) {
		free(*parent);
		*parent = NULL;
		goto out;
	}
	if (asprintf(dir, "%s/c1", *parent) < 0) {
		*dir = NULL;
		goto out;
	}
	if (mkdir(*dir, 0755) < 0) {
		free(*dir);
		*dir = NULL;
		goto out;
	}
	char *p;
	if (asprintf(&p, "%s/%s", *dir, file) < 0)
		goto out;
	int w = la_write_path(p, lim, strlen(lim));
	free(p);
	if (w < 0)
		goto out;
	if (file2) {
		// memsw exists only with swap accounting: absent is fine.
		if (asprintf(&p, "%s/%s", *dir, file2) < 0)
			goto out;
		if (la_write_path(p, lim, strlen(lim)) < 0 && errno != ENOENT) {
			free(p);
			goto out;
		}
		free(p);
	}
	if (asprintf(&p, "%s/tasks", *dir) < 0)
		goto out;
	*tasks = open(p, O_WRONLY | O_CLOEXEC);
	free(p);
	rc = *tasks < 0 ? -1 : 0;
out:
	free(b);
	free(lim);
	return rc;
}

// la_env_value returns the value of name in a NULL-terminated environment.
static const char *la_env_value(char **env, const char *name)
{
	size_t n = strlen(name);
	for (int i = 0; env[i]; i++)
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

// la_clean cleans an absolute path in place as Go's filepath.Clean does:
// no "." elements, ".." eats the element before it, no double or trailing
// slashes.
static void la_clean(char *p)
{
	size_t o = 0;
	char *tmp = malloc(strlen(p) + 2);
	if (!tmp)
		return;
	tmp[o++] = '/';
	const char *in = p;
	while (*in) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		const char *end = strchr(in, '/');
		size_t n = end ? (size_t)(end - in) : strlen(in);
		if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (o > 1 && tmp[o - 1] != '/')
				o--;
			if (o > 1)
				o--;
		} else if (!(n == 1 && in[0] == '.')) {
			if (o > 1)
				tmp[o++] = '/';
			memcpy(tmp + o, in, n);
			o += n;
		}
		in += n;
	}
	tmp[o] = 0;
	memcpy(p, tmp, o + 1);
	free(tmp);
}

// la_join joins a and b with a slash and cleans the result (a absolute).
static char *la_join(const char *a, const char *b, size_t bn)
{
	char *out;
	if (asprintf(&out, "%s/%.*s", a, (int)bn, b) < 0)
		return NULL;
	la_clean(out);
	return out;
}

// la_look_path finds file as the Go path's lookPath does: a name with a
// slash is taken as it is (relative to dir), else the first regular file
// with an execute bit along the child's PATH (an empty PATH has no
// entries, as filepath.SplitList says).
static char *la_look_path(const char *file, char **env, const char *dir)
{
	if (strchr(file, '/')) {
		if (file[0] == '/')
			return strdup(file);
		return la_join(dir, file, strlen(file));
	}
	const char *path = la_env_value(env, "PATH");
	if (!path || !*path)
		return NULL;
	const char *p = path;
	for (;;) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char *d = NULL, *c = NULL;
		if (n == 0)
			d = strdup(dir);
		else if (p[0] == '/')
			d = strndup(p, n);
		else
			d = la_join(dir, p, n);
		if (d)
			c = la_join(d, file, strlen(file));
		free(d);
		if (!c)
			return NULL;
		struct stat st;
		if (stat(c, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return c;
		free(c);
		if (!end)
			return NULL;
		p = end + 1;
	}
}

// ---- the connect supervisor (connectsup_linux.go, mode none) ----

static int la_within(const char *root, const char *path)
{
	size_t n = strlen(root);
	if (strcmp(root, "/") == 0)
		return path[0] == '/';
	return strncmp(path, root, n) == 0 && (path[n] == 0 || path[n] == '/');
}

static int la_notif_valid(int listener, uint64_t id)
{
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

// la_pidfd_of_thread opens a pidfd through which thread tid's descriptors
// can be taken. A notification names the calling thread, which need not be
// the thread-group leader (a connect from a thread of the program's own):
// pidfd_open(tid, 0) is EINVAL for it. The same rule as the Go side's
// pidfdOfThread (netsup_linux.go): PIDFD_THREAD (Linux 6.9+), else the
// thread group's leader, whose fd table the thread shares.
static int la_pidfd_of_thread(int tid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, O_EXCL /* PIDFD_THREAD */);
	if (fd >= 0 || errno != EINVAL)
		return fd;
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/status", tid);
	int sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0)
		return -1;
	ssize_t n = read(sfd, buf, sizeof buf - 1);
	close(sfd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *line = strstr(buf, "\nTgid:\t");
	if (!line)
		return -1;
	int tgid = atoi(line + 7);
	if (tgid <= 0)
		return -1;
	return (int)syscall(SYS_pidfd_open, tgid, 0);
}

// la_connect_decide performs (or refuses) the connect the notification
// asks for and returns the errno for the process (0: success).
static int la_connect_decide(struct la_run *r, int listener, struct seccomp_notif *req)
{
	if (req->data.nr != SYS_connect)
		return ENOSYS;
	int sockfd = (int)req->data.args[0];
	uint64_t addr_ptr = req->data.args[1];
	uint32_t addr_len = (uint32_t)req->data.args[2];
	// At most a sockaddr_un: what the kernel accepts for AF_UNIX, and
	// more than any AF_INET/AF_INET6 address (which are refused here).
	struct sockaddr_storage ss;
	if (addr_len < 2 || addr_len > sizeof(struct sockaddr_un))
		return EINVAL;
	int pid = (int)req->pid;
	int pidfd = la_pidfd_of_thread(pid);
	if (pidfd < 0)
		return EPERM;
	int rc = EPERM, cwd = -1, sock = -1, obj = -1;
	struct iovec local = { &ss, addr_len }, remote = { (void *)(uintptr_t)addr_ptr, addr_len };
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got != (ssize_t)addr_len) {
		rc = (got < 0 && errno == EFAULT) ? EFAULT : EPERM;
		goto out;
	}
	sa_family_t family = ss.ss_family;
	if (family == AF_UNIX) {
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/cwd", pid);
		if ((cwd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			goto out;
	}
	if (!la_notif_valid(listener, req->id))
		goto out; // gone; nobody reads the answer
	sock = (int)syscall(SYS_pidfd_getfd, pidfd, sockfd, 0);
	if (sock < 0) {
		rc = errno ? errno : EBADF;
		goto out;
	}
	if (family != AF_UNIX) {
		// AF_INET/AF_INET6: no such socket can be made in mode none.
		// Anything else goes to the kernel on our copy of the socket.
		rc = EPERM;
		if (family != AF_INET && family != AF_INET6)
			rc = connect(sock, (struct sockaddr *)&ss, addr_len) < 0 ? errno : 0;
		goto out;
	}
	int dom = 0;
	socklen_t dl = sizeof dom;
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &dom, &dl) < 0) {
		rc = errno ? errno : ENOTSOCK;
		goto out;
	}
	if (dom != AF_UNIX) {
		rc = EAFNOSUPPORT;
		goto out;
	}
	struct sockaddr_un *su = (struct sockaddr_un *)&ss;
	size_t plen = addr_len - offsetof(struct sockaddr_un, sun_path);
	if (plen == 0 || plen > sizeof su->sun_path) {
		rc = EINVAL;
		goto out;
	}
	if (su->sun_path[0] == 0) {
		rc = EPERM; // abstract: see connectsup_linux.go
		goto out;
	}
	char path[sizeof su->sun_path + 1];
	memcpy(path, su->sun_path, plen);
	path[plen] = 0;
	// Resolve as the kernel would for the caller, and keep the result
	// open: it is what gets connected.
	if ((obj = openat(cwd, path, O_PATH | O_CLOEXEC)) < 0) {
		rc = errno ? errno : ENOENT;
		goto out;
	}
	struct stat st;
	if (fstat(obj, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		rc = ECONNREFUSED;
		goto out;
	}
	char link[64], real[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", obj);
	ssize_t rn = readlink(link, real, sizeof real - 1);
	if (rn < 0) {
		rc = EACCES;
		goto out;
	}
	real[rn] = 0;
	int allowed = 0;
	for (int i = 0; r->roots[i]; i++)
		if (la_within(r->roots[i], real))
			allowed = 1;
	if (!allowed) {
		rc = EACCES;
		goto out;
	}
	struct sockaddr_un via = { .sun_family = AF_UNIX };
	snprintf(via.sun_path, sizeof via.sun_path, "/proc/self/fd/%d", obj);
	rc = connect(sock, (struct sockaddr *)&via, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(via.sun_path) + 1)) < 0 ? errno : 0;
out:
	if (obj >= 0)
		close(obj);
	if (sock >= 0)
		close(sock);
	if (cwd >= 0)
		close(cwd);
	close(pidfd);
	return rc;
}

// The supervisor: one thread waits on the listener and hands each
// notification to a thread of its own, because a connect may block (a
// listener with a full backlog) and must hold up neither other connects
// nor the main thread's deadline and signals (connectsup_linux.go runs a
// goroutine per notification for the same reason). The listener stays
// open until the process exits: nothing may reuse its number under a
// late answer.
struct la_notif_job {
	struct la_run *r;
	int listener;
	struct seccomp_notif req;
};

static void *la_decide_thread(void *arg)
{
	struct la_notif_job *j = arg;
	struct seccomp_notif_resp resp;
	memset(&resp, 0, sizeof resp);
	resp.id = j->req.id;
	int e = la_connect_decide(j->r, j->listener, &j->req);
	resp.error = e ? -e : 0;
	ioctl(j->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	free(j);
	return NULL;
}

struct la_sup {
	struct la_run *r;
	int listener;
};

static void *la_supervise(void *arg)
{
	struct la_sup *sup = arg;
	for (;;) {
		struct pollfd pf = { sup->listener, POLLIN, 0 };
		int n = poll(&pf, 1, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (pf.revents & POLLIN) {
			struct la_notif_job *j = calloc(1, sizeof *j);
			if (!j)
				continue;
			j->r = sup->r;
			j->listener = sup->listener;
			if (ioctl(sup->listener, SECCOMP_IOCTL_NOTIF_RECV, &j->req) < 0) {
				free(j); // ENOENT: the caller died or was interrupted
				continue;
			}
			pthread_t t;
			pthread_attr_t at;
			pthread_attr_init(&at);
			pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
			pthread_attr_setstacksize(&at, 64 * 1024);
			if (pthread_create(&t, &at, la_decide_thread, j) != 0)
				la_decide_thread(j); // no thread: answer here
			pthread_attr_destroy(&at);
		} else if (pf.revents & (POLLHUP | POLLERR | POLLNVAL)) {
			return NULL; // every process of the filter is gone
		}
	}
}

// The output: a thread per stream copies the command's pipe to ours,
// within the budget both share (output.go: past it, bytes are read and
// counted, never block the command). A write that fails with EPIPE (our
// reader went away) is what kills a Go program writing to fds 1 and 2:
// the main thread is told, ends the tree and dies of SIGPIPE as the Go
// path does, after cleaning up.
struct la_out {
	pthread_mutex_t mu;
	int64_t left;
	long long dropped; // atomic: read after a forwarder may be stuck holding mu
	int broken;
	int wake; // write end of the main thread's wake-up pipe
};

struct la_fwd {
	struct la_out *o;
	int from, to;
};

static void *la_forward(void *arg)
{
	struct la_fwd *f = arg;
	struct la_out *o = f->o;
	char *buf = malloc(32768);
	if (!buf)
		return NULL;
	for (;;) {
		ssize_t m = read(f->from, buf, 32768);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0) {
			free(buf);
			return NULL; // EOF: every writer is gone
		}
		pthread_mutex_lock(&o->mu);
		int64_t keep = m < o->left ? m : o->left;
		o->left -= keep;
		__atomic_add_fetch(&o->dropped, (long long)(m - keep), __ATOMIC_RELAXED);
		ssize_t off = 0;
		while (keep > 0 && !o->broken && off < keep) {
			ssize_t w = write(f->to, buf + off, (size_t)(keep - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && errno == EAGAIN) {
				// Our stdout may be non-blocking (shared with
				// whoever started us): wait for room.
				struct pollfd wp = { f->to, POLLOUT, 0 };
				poll(&wp, 1, -1);
				continue;
			}
			if (w <= 0) {
				o->broken = errno == EPIPE ? 2 : 1;
				if (o->broken == 2)
					(void)!write(o->wake, "P", 1);
				break;
			}
			off += w;
		}
		pthread_mutex_unlock(&o->mu);
	}
}

// ---- the tree ----

static uint64_t la_now_ns(void);

// la_cgroup_pids lists the pids of a cgroup.procs file (up to max).
static int la_cgroup_pids(const char *dir, int *pids, int max)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/cgroup.procs", dir);
	struct la_buf b = { 0 };
	if (la_read_all(p, &b) < 0 || b.oom) {
		free(b.p);
		return -1;
	}
	int n = 0;
	for (size_t i = 0; i < b.n && n < max;) {
		long v = 0;
		int any = 0;
		while (i < b.n && b.p[i] >= '0' && b.p[i] <= '9') {
			v = v * 10 + (b.p[i++] - '0');
			any = 1;
		}
		if (any)
			pids[n++] = (int)v;
		while (i < b.n && (b.p[i] < '0' || b.p[i] > '9'))
			i++;
	}
	free(b.p);
	return n;
}

// la_kill_members kills every process of the command's cgroup, each
// through a pidfd after checking (pidfd held) that it is still a member,
// so that a recycled pid is never hit; until none is left.
static void la_kill_members(struct la_run *r)
{
	// Membership: /proc/PID/cgroup ends in /lite-agent.<pid>.0/c1 for
	// the pids hierarchy.
	char rel[64];
	snprintf(rel, sizeof rel, "/lite-agent.%d.0/c1", (int)getpid());
	size_t rl = strlen(rel);
	int pids[512];
	// The pids limit bounds how many there can be, and a process with
	// SIGKILL pending cannot fork: a few rounds end even a fork bomb. One
	// stuck in the kernel (D state) gets 10 s, as in the Go path.
	uint64_t give_up = la_now_ns() + 10000000000ull;
	for (int round = 0;; round++) {
		int n = la_cgroup_pids(r->cg_pids_dir, pids, 512);
		if (n <= 0 || la_now_ns() > give_up)
			return;
		for (int i = 0; i < n; i++) {
			int pfd = (int)syscall(SYS_pidfd_open, pids[i], 0);
			if (pfd < 0)
				continue;
			char p[64];
			snprintf(p, sizeof p, "/proc/%d/cgroup", pids[i]);
			struct la_buf b = { 0 };
			int member = 0;
			if (la_read_all(p, &b) == 0 && !b.oom) {
				la_put(&b, "", 1);
				for (char *line = b.p; line && *line;) {
					char *nl = strchr(line, '\n');
					if (nl)
						*nl = 0;
					char *c1 = strchr(line, ':');
					char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
					if (c2) {
						*c2 = 0;
						int is_pids = 0;
						for (char *t = strtok(c1 + 1, ","); t; t = strtok(NULL, ","))
							if (strcmp(t, "pids") == 0)
								is_pids = 1;
						size_t pl = strlen(c2 + 1);
						if (is_pids && pl >= rl && strcmp(c2 + 1 + pl - rl, rel) == 0)
							member = 1;
					}
					line = nl ? nl + 1 : NULL;
				}
			}
			free(b.p);
			if (member && syscall(SYS_pidfd_send_signal, pfd, 0, NULL, 0) == 0)
				syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
			close(pfd);
		}
		usleep(round < 10 ? 200 : 2000);
	}
}

static int la_cgroup_empty(struct la_run *r)
{
	int pids[1];
	return la_cgroup_pids(r->cg_pids_dir, pids, 1) == 0;
}

// la_end_tree kills every process of the command: through the cgroup,
// or, in a PID namespace, by killing its init (the kernel kills the rest).
static void la_end_tree(struct la_run *r, int pidfd)
{
	if (r->pl.with_init)
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	else
		la_kill_members(r);
}

static long long la_read_keyed(const char *dir, const char *file, const char *key)
{
	if (!dir)
		return 0;
	char p[4200];
	snprintf(p, sizeof p, "%s/%s", dir, file);
	struct la_buf b = { 0 };
	long long v = 0;
	if (la_read_all(p, &b) == 0 && !b.oom) {
		la_put(&b, "", 1);
		size_t kl = strlen(key);
		for (char *line = b.p; line && *line;) {
			if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
				v = atoll(line + kl + 1);
			char *nl = strchr(line, '\n');
			line = nl ? nl + 1 : NULL;
		}
	}
	free(b.p);
	return v;
}

static uint64_t la_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void la_noop(int sig) { (void)sig; }

// la_die_of_sigpipe ends the runner as a Go program ends whose stdout
// reader went away: killed by SIGPIPE.
static void la_die_of_sigpipe(void)
{
	signal(SIGPIPE, SIG_DFL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(SIGPIPE);
	_exit(141);
}

// la_fast_run runs the plan; it returns only when the command could not be
// started (then the Go path takes over), otherwise it exits.
static void la_fast_run(struct la_run *r, char **cmd_argv, char **envp)
{
	struct la_plan *pl = &r->pl;
	r->ruleset = -1;
	r->tasks[0] = r->tasks[1] = -1;
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, wakep[2] = { -1, -1 }, statusp[2] = { -1, -1 }, sfd = -1;
	char **init_argv = NULL;
	struct sigaction saved[65];
	int saved_n = 0;
	sigset_t oldmask;
	sigprocmask(SIG_SETMASK, NULL, &oldmask);
	char *dir = la_cstr(pl->dir);
	char *base = la_cstr(pl->tmp_base);
	char **env = calloc((size_t)pl->n_env + 1, sizeof *env);
	r->roots = calloc((size_t)pl->n_roots + 2, sizeof *r->roots);
	if (!dir || !base || !env || !r->roots)
		goto undo;

	// The per-run temp dir, named as tmpRootDir names it (pid and start
	// time of its owner: see tmpdirs_linux.go).
	if (asprintf(&r->tmp, "%s/lite-agent-sandbox-%d.%llu-XXXXXX", base, (int)getpid(), la_start_time()) < 0) {
		r->tmp = NULL;
		goto undo;
	}
	if (!mkdtemp(r->tmp)) {
		free(r->tmp);
		r->tmp = NULL;
		goto undo;
	}

	// Landlock.
	struct la_ll_ruleset_attr attr = { pl->ll_fs, pl->ll_net, pl->ll_scoped };
	r->ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (r->ruleset < 0)
		goto undo;
	for (int i = 0; i < pl->n_rules; i++) {
		char *p = la_cstr(pl->rules[i].path);
		int rc = p ? la_add_rule(r->ruleset, pl, p, pl->rules[i].access) : -1;
		free(p);
		if (rc < 0)
			goto undo;
	}
	if (la_add_rule(r->ruleset, pl, r->tmp, pl->ll_tmp) < 0)
		goto undo;

	// Environment, and the command.
	for (int i = 0; i < pl->n_env; i++) {
		if (!pl->env_tmp[i])
			env[i] = la_cstr(pl->env[i]);
		else if (asprintf(&env[i], "%.*s=%s", (int)pl->env[i].n, pl->env[i].p, r->tmp) < 0)
			env[i] = NULL;
		if (!env[i])
			goto undo;
	}
	if (!(r->exe = la_look_path(cmd_argv[0], env, dir)))
		goto undo;
	// The unix-socket roots, resolved now as the Landlock rules were
	// (a symlink re-pointed since the plan was made counts as it is
	// now); the temp dir is one too (canonical: mkdtemp under the
	// canonical base the Go path recorded).
	int nr = 0;
	for (int i = 0; i < pl->n_roots; i++) {
		char *p = la_cstr(pl->roots[i]);
		// /proc/self/... names the runner, not the command (the Go
		// path skips such roots; so does the plan): never a root.
		char *real = p && strncmp(p, "/proc/", 6) != 0 ? realpath(p, NULL) : NULL;
		free(p);
		if (real && strncmp(real, "/proc/", 6) != 0 && strcmp(real, "/proc") != 0)
			r->roots[nr++] = real;
		else
			free(real);
	}
	r->roots[nr] = r->tmp;
	// The read-write roots of the private mount namespace are the same
	// list (the workspace, the read-write paths, the temp dir), with the
	// identity they have now, as the Landlock rules were opened now.
	if (pl->mount_ns) {
		for (int i = 0; i <= nr; i++) {
			struct stat st;
			if (stat(r->roots[i], &st) < 0)
				goto undo;
			r->mroots[i].path = r->roots[i];
			r->mroots[i].dev = (uint64_t)st.st_dev;
			r->mroots[i].ino = (uint64_t)st.st_ino;
		}
	}
	int n_mroots = nr + 1;

	// Cgroups: the command's own pids (and memory) directory.
	if (!pl->with_init && la_make_cgroup(pl->cg_pids, "pids.max", pl->cg_pids_max, NULL,
					     &r->cg_pids_parent, &r->cg_pids_dir, &r->tasks[0]) < 0)
		goto undo;
	if (pl->cg_mem.n && la_make_cgroup(pl->cg_mem, "memory.limit_in_bytes", pl->cg_mem_limit,
					   "memory.memsw.limit_in_bytes", &r->cg_mem_parent, &r->cg_mem_dir, &r->tasks[1]) < 0)
		goto undo;

	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(wakep, O_CLOEXEC) < 0)
		goto undo;
	if (pl->with_init && pipe2(statusp, O_CLOEXEC) < 0)
		goto undo;

	// Signals. INT/TERM/HUP end the tree: blocked here and read through a
	// signalfd until the end (the child unblocks everything before
	// execve). Every signal the command would inherit as ignored gets a
	// handler instead, which the child resets to the default: in the Go
	// path every signal has the runtime's handler, so the command starts
	// with none ignored. (SIGPIPE's handler also keeps a failed write to
	// our stdout from killing us before we clean up.)
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	if ((sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		goto undo;
	for (int sig = 1; sig < 65; sig++) {
		struct sigaction old;
		if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &old) < 0)
			continue;
		if (old.sa_handler == SIG_IGN || sig == SIGPIPE) {
			struct sigaction sa;
			memset(&sa, 0, sizeof sa);
			sa.sa_handler = la_noop;
			sa.sa_flags = SA_RESTART;
			saved[saved_n] = old;
			saved[saved_n].sa_flags = sig; // remember which (restored below)
			if (sigaction(sig, &sa, NULL) == 0)
				saved_n++;
		}
	}

	struct la_spawn_args *a = calloc(1, sizeof *a);
	if (!a)
		goto undo;
	a->path = r->exe;
	a->argv = cmd_argv;
	if (pl->with_init) {
		// The namespace's first process is our init, which starts the
		// command and reports on the status pipe (init_linux.c).
		int argc = 0;
		while (cmd_argv[argc])
			argc++;
		init_argv = calloc((size_t)argc + 5, sizeof *init_argv);
		char fdstr[16];
		snprintf(fdstr, sizeof fdstr, "%d", statusp[1]);
		if (!init_argv || !(init_argv[0] = strdup(LA_INIT_MARKER)) || !(init_argv[1] = strdup(fdstr)) ||
		    !(init_argv[2] = la_cstr(pl->init_as)) || !(init_argv[3] = strdup(r->exe))) {
			free(a);
			goto undo;
		}
		memcpy(init_argv + 4, cmd_argv, (size_t)argc * sizeof *init_argv);
		a->path = "/proc/self/exe";
		a->argv = init_argv;
		a->status_fd = statusp[1];
		a->new_pid = 1;
		a->new_user = pl->new_user;
		a->uid_map = la_cstr(pl->uid_map);
		a->gid_map = la_cstr(pl->gid_map);
		a->pid_max = pl->pid_max.n ? la_cstr(pl->pid_max) : NULL;
	}
	a->envp = env;
	a->dir = dir;
	a->stdio[0] = 0;
	a->stdio[1] = outp[1];
	a->stdio[2] = errp[1];
	a->cgroup_dir = -1;
	a->cgroup_procs = -1;
	a->cgroup_tasks[0] = r->tasks[0];
	a->cgroup_tasks[1] = r->tasks[1];
	for (int i = 0; i < pl->n_rlimits; i++) {
		a->rlimits[i].resource = pl->rlimits[i].resource;
		a->rlimits[i].cur = pl->rlimits[i].cur;
		a->rlimits[i].max = pl->rlimits[i].max;
	}
	a->n_rlimits = pl->n_rlimits;
	if (!pl->with_init)
		a->status_fd = -1;
	a->confine.last_cap = pl->last_cap;
	a->confine.drop_bounding = pl->drop_bounding;
	a->confine.lock_securebits = pl->lock_securebits;
	a->confine.ruleset_fd = r->ruleset;
	a->confine.filter = pl->main_bpf.n ? pl->main_bpf.p : NULL;
	a->confine.filter_len = (uint16_t)(pl->main_bpf.n / 8);
	a->confine.child = pl->child_bpf.p;
	a->confine.child_len = (uint16_t)(pl->child_bpf.n / 8);
	a->confine.child_listener = 1;
	if (pl->mount_ns) {
		// In the child, before it confines itself: its child program
		// refuses the mount calls (the plan's programs are the ones the
		// Go path's children run under).
		a->new_ns = 1;
		a->mount_roots = r->mroots;
		a->n_mount_roots = n_mroots;
	}

	uint64_t start = la_now_ns();
	if (la_spawn(a) < 0) {
		if (a->pidfd >= 0) {
			siginfo_t si;
			waitid(P_PIDFD, (id_t)a->pidfd, &si, WEXITED);
			close(a->pidfd);
		}
		free(a);
		goto undo;
	}
	int pidfd = a->pidfd, listener = a->listener;
	free(a);
	FILE *status = NULL;
	if (pl->with_init) {
		// Wait for the init's word that the command's execve worked;
		// if it failed, nothing of the command ran: the Go path redoes
		// everything and reports the error its way.
		close(statusp[1]);
		statusp[1] = -1;
		status = fdopen(statusp[0], "r");
		char line[64];
		line[0] = 0;
		if (status && !fgets(line, sizeof line, status))
			line[0] = 0;
		if (strcmp(line, "S\n") != 0 && line[0] != 'E') {
			// Neither started nor refused: the init died. Whether the
			// command ran is unknown, so it must not run twice: end
			// whatever is there and say so, as the Go path does.
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			siginfo_t si;
			waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED);
			la_run_undo(r);
			static const char msg[] = "lite-agent: sandbox: the PID namespace's init ended before starting the command\n";
			la_write_str(2, (struct la_str){ msg, sizeof msg - 1 });
			_exit(125);
		}
		if (line[0] == 'E') {
			// The command's execve failed: nothing of it ran. The Go
			// path redoes everything and reports the error its way.
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			siginfo_t si;
			waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED);
			close(pidfd);
			if (listener >= 0)
				close(listener);
			if (status)
				fclose(status);
			statusp[0] = -1;
			goto undo;
		}
	}
	// From here on the command runs: no way back to the Go path.
	close(outp[1]);
	close(errp[1]);
	close(r->ruleset);
	if (r->tasks[0] >= 0)
		close(r->tasks[0]);
	if (r->tasks[1] >= 0)
		close(r->tasks[1]);
	r->ruleset = r->tasks[0] = r->tasks[1] = -1;
	la_trace(envp, "fast\n");
	// Now that the Go path will not run (it would print them too): the
	// warnings, before anything the command writes.
	la_write_str(2, pl->msg_preamble);

	// The helper threads take no signals (they inherit this mask): a
	// handler running on one would interrupt its connect or write.
	sigset_t all, main_mask;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &main_mask);
	int fatal = 0;
	if (listener < 0) {
		fatal = 1; // cannot be (la_confine made it): unsupervised is worse
		la_end_tree(r, pidfd);
	} else {
		static struct la_sup sup;
		sup.r = r;
		sup.listener = listener;
		pthread_t t;
		if (pthread_create(&t, NULL, la_supervise, &sup) != 0) {
			fatal = 1;
			la_end_tree(r, pidfd);
		}
	}
	static struct la_out out;
	pthread_mutex_init(&out.mu, NULL);
	out.left = (int64_t)pl->output_bytes;
	out.wake = wakep[1];
	static struct la_fwd fwd[2];
	pthread_t fwd_t[2];
	int fwd_ok[2] = { 0, 0 };
	fwd[0] = (struct la_fwd){ &out, outp[0], 1 };
	fwd[1] = (struct la_fwd){ &out, errp[0], 2 };
	for (int k = 0; k < 2; k++)
		fwd_ok[k] = pthread_create(&fwd_t[k], NULL, la_forward, &fwd[k]) == 0;
	pthread_sigmask(SIG_SETMASK, &main_mask, NULL);
	if (!fwd_ok[0] || !fwd_ok[1]) {
		fatal = 1;
		la_end_tree(r, pidfd);
	}

	uint64_t deadline = pl->wall_ns ? start + pl->wall_ns : 0;
	int timed_out = 0, got_sig = 0, epipe = 0, wait_failed = 0;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	for (;;) {
		uint64_t now = la_now_ns();
		if (deadline && !timed_out && now >= deadline) {
			timed_out = 1;
			la_end_tree(r, pidfd);
		}
		int timeout = -1;
		if (deadline && !timed_out) {
			uint64_t ms = (deadline - now) / 1000000 + 1;
			timeout = ms > 3600000 ? 3600000 : (int)ms;
		}
		struct pollfd pf[3] = { { pidfd, POLLIN, 0 }, { sfd, POLLIN, 0 }, { wakep[0], POLLIN, 0 } };
		int n = poll(pf, 3, timeout);
		if (n < 0 && errno != EINTR) {
			// Cannot watch the command any longer: end it, and wait.
			la_end_tree(r, pidfd);
			if (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0)
				wait_failed = 1;
			break;
		}
		if (n <= 0)
			continue;
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo ssi;
			if (read(sfd, &ssi, sizeof ssi) == (ssize_t)sizeof ssi && !got_sig) {
				got_sig = (int)ssi.ssi_signo;
				la_end_tree(r, pidfd);
			}
		}
		if (pf[2].revents & POLLIN) {
			char c;
			(void)!read(wakep[0], &c, 1);
			if (!epipe) {
				epipe = 1;
				la_end_tree(r, pidfd);
			}
		}
		if (pf[0].revents & POLLIN) {
			if (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0) {
				if (errno == EINTR)
					continue;
				wait_failed = 1;
			}
			break;
		}
	}
	// The main process is gone: so is the rest of the tree (daemons
	// included). Then the output drains — every writer is dead, so EOF
	// comes at once; 2 s is the Go path's grace for a stuck reader of
	// ours.
	if (!pl->with_init && !la_cgroup_empty(r))
		la_kill_members(r);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	for (int k = 0; k < 2; k++)
		if (fwd_ok[k])
			pthread_timedjoin_np(fwd_t[k], NULL, &until);
	// A signal that came while the tree was ending still counts.
	{
		struct signalfd_siginfo ssi;
		if (!got_sig && read(sfd, &ssi, sizeof ssi) == (ssize_t)sizeof ssi)
			got_sig = (int)ssi.ssi_signo;
	}

	long long oom = la_read_keyed(r->cg_mem_dir, "memory.oom_control", "oom_kill");
	long long pmax = la_read_keyed(r->cg_pids_dir, "pids.events", "max");
	la_run_undo(r);

	// Not under out.mu: a forwarder still stuck writing to a reader
	// that does not read holds it.
	long long dropped = __atomic_load_n(&out.dropped, __ATOMIC_RELAXED);
	if (epipe)
		la_die_of_sigpipe();
	if (dropped > 0) {
		char num[32];
		snprintf(num, sizeof num, "%lld", dropped);
		la_write_str(2, pl->msg_trunc_a);
		la_write_str(2, (struct la_str){ num, (uint32_t)strlen(num) });
		la_write_str(2, pl->msg_trunc_b);
	}
	if (oom > 0)
		la_write_str(2, pl->msg_oom);
	if (pmax > 0)
		la_write_str(2, pl->msg_pids);
	int code = 0;
	if (si.si_code == CLD_EXITED)
		code = si.si_status;
	else if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
		code = 128 + si.si_status;
	if (status) {
		// The init reported how the command ended ("X<wait status>"),
		// unless it was killed first (timeout, signal).
		char line[64];
		if (fgets(line, sizeof line, status) && line[0] == 'X') {
			int ws = atoi(line + 1);
			if (WIFEXITED(ws))
				code = WEXITSTATUS(ws);
			else if (WIFSIGNALED(ws))
				code = 128 + WTERMSIG(ws);
		}
	}
	if (got_sig) {
		int k = got_sig == SIGINT ? 0 : got_sig == SIGTERM ? 1 : 2;
		la_write_str(2, pl->msg_sig[k]);
		code = 128 + got_sig;
	} else if (timed_out) {
		la_write_str(2, pl->msg_timeout);
		code = 124;
	} else if (fatal || wait_failed) {
		static const char msg[] = "lite-agent: sandbox: the one-shot runner lost track of the command; it and every process it started were killed\n";
		la_write_str(2, (struct la_str){ msg, sizeof msg - 1 });
		code = 125;
	}
	_exit(code);

undo:
	if (sfd >= 0)
		close(sfd);
	for (int k = 0; k < 2; k++)
		if (statusp[k] >= 0)
			close(statusp[k]);
	for (int i = 0; i < saved_n; i++) {
		int sig = saved[i].sa_flags;
		saved[i].sa_flags = 0;
		sigaction(sig, &saved[i], NULL);
	}
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	for (int k = 0; k < 2; k++) {
		if (outp[k] >= 0)
			close(outp[k]);
		if (errp[k] >= 0)
			close(errp[k]);
		if (wakep[k] >= 0)
			close(wakep[k]);
	}
	la_run_undo(r);
}

// la_deps_hold reports whether every variable the plan was computed from
// has the value it had then (the first occurrence, as getenv sees it).
static int la_deps_hold(const struct la_plan *pl, char **envp)
{
	for (int i = 0; i < pl->n_deps; i++) {
		struct la_str d = pl->deps[i];
		const char *eq = memchr(d.p, '=', d.n);
		size_t nl = eq ? (size_t)(eq - d.p) : d.n;
		const char *have = NULL;
		for (int j = 0; envp && envp[j]; j++)
			if (strncmp(envp[j], d.p, nl) == 0 && envp[j][nl] == '=') {
				have = envp[j] + nl + 1;
				break;
			}
		if (!eq) {
			if (have)
				return 0;
			continue;
		}
		size_t vl = d.n - nl - 1;
		if (!have || strlen(have) != vl || memcmp(have, eq + 1, vl) != 0)
			return 0;
	}
	return 1;
}

// Runs in every program that links package sandbox, before the Go
// runtime; it returns at once unless this is `... sandbox run` with a
// stored plan for exactly this invocation.
__attribute__((constructor)) static void la_fast_check(int argc, char **argv, char **envp)
{
	if (argc < 4 || !argv || !argv[1] || !argv[2] || strcmp(argv[1], "sandbox") != 0 || strcmp(argv[2], "run") != 0)
		return;
	for (int i = 0; envp && envp[i]; i++)
		if (strcmp(envp[i], "LITE_AGENT_SANDBOX_PLANS=off") == 0)
			return;
	// Standard streams closed: the runner's own descriptors would land on
	// 0-2 and the command would write into them. The Go runtime opens
	// /dev/null there first; let it.
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0)
			return;
	int nargs = argc - 3;
	char **args = argv + 3;
	int split = la_flag_split(nargs, args);
	if (split < 0)
		return;
	char desc[128];
	if (la_plan_key(split, args, desc) < 0)
		return;
	long id = syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, "user", desc, 0);
	if (id < 0)
		return;
	static unsigned char buf[32768];
	long n = syscall(SYS_keyctl, KEYCTL_READ, id, buf, sizeof buf);
	if (n <= 0 || n > (long)sizeof buf)
		return;
	// The plan is followed by its HMAC under the user's secret, over the
	// key's description and the plan: valid only for this invocation.
	unsigned char key[32], mac[32];
	static unsigned char signed_msg[128 + sizeof buf];
	size_t dl = strlen(desc) + 1;
	if (n <= 32 || la_secret(envp, key) < 0)
		return;
	memcpy(signed_msg, desc, dl);
	memcpy(signed_msg + dl, buf, (size_t)n - 32);
	int hr = la_hmac(key, signed_msg, dl + (size_t)n - 32, mac);
	explicit_bzero(key, sizeof key);
	if (hr < 0)
		return;
	unsigned char diff = 0;
	for (int i = 0; i < 32; i++)
		diff |= (unsigned char)(mac[i] ^ buf[n - 32 + i]);
	if (diff)
		return;
	static struct la_run run;
	memset(&run, 0, sizeof run);
	if (la_plan_parse(buf, (size_t)n - 32, &run.pl) < 0 || !la_deps_hold(&run.pl, envp))
		return;
	la_fast_run(&run, args + split, envp);
	la_trace(envp, "fast-fallback\n");
}
