// The one-shot runner of `lite-agent sandbox run` (fastpath_linux.c) and
// the plan format it shares with fastpath_linux.go.
//
// A plan is what sandbox.New and Start computed for one invocation, in a
// form the C runner executes without the Go runtime: the Landlock rules,
// the compiled seccomp programs, the command's environment, its cgroup
// limits, the connect supervisor's roots and the CLI's messages. It is
// stored in the user's kernel keyring under a key derived from everything
// the Go path read to compute it (see la_plan_key) but the environment, and
// read back there by the next identical invocation. The plan lists the
// variables it was computed from (LA_T_ENV_DEP); the runner takes it only
// when each still has the same value. (Not the whole environment: tools
// such as hyperfine vary unrelated variables from run to run.)
//
// Encoding: the magic LA_PLAN_MAGIC (8 bytes), then records of
// u16 tag, u32 length, data (little endian, no padding). Integers are
// u32/u64 as the tag says; strings are not NUL-terminated.
#ifndef LITE_AGENT_FASTPATH_H
#define LITE_AGENT_FASTPATH_H

#define LA_PLAN_MAGIC "LAPLAN3\n" // 3: LA_T_MOUNT_NS (a plan without it must not run)
#define LA_PLAN_KEY_PREFIX "lite-agent:sandbox-plan:"
#define LA_PLAN_KEY_VERSION "lite-agent/sandbox-plan/3\n"

enum la_plan_tag {
	LA_T_LL_FS = 1,          // u64 handled_access_fs
	LA_T_LL_NET = 2,         // u64 handled_access_net
	LA_T_LL_SCOPED = 3,      // u64 scoped
	LA_T_LL_FILE_ONLY = 4,   // u64 rights that apply to a non-directory
	LA_T_LL_RULE = 5,        // u64 access, then the path (repeated)
	LA_T_LL_TMP = 6,         // u64 access of the per-run temp dir
	LA_T_MAIN_BPF = 10,      // struct sock_filter[]: loaded after the child
	                         // program (absent: the child program has
	                         // every rule — the cgroup shape)
	LA_T_CHILD_BPF = 11,     // struct sock_filter[], with the listener
	LA_T_CHILD_NOTIFIES = 12,// u32 1: the child program has a listener
	LA_T_LAST_CAP = 13,      // u32
	LA_T_DROP_BOUNDING = 14, // u32
	LA_T_LOCK_SECUREBITS = 15,// u32
	LA_T_ENV = 20,           // "NAME=VALUE" (repeated)
	LA_T_ENV_TMP = 21,       // "NAME": its value is the temp dir (repeated)
	LA_T_DIR = 22,           // working directory
	LA_T_TMP_BASE = 23,      // where the temp dir is made
	LA_T_ENV_DEP = 24,       // a variable the plan was made from: "NAME=VALUE",
	                         // or "NAME" when it was unset (repeated)
	LA_T_RLIMIT = 30,        // u32 resource, u64 cur, u64 max (repeated)
	LA_T_CG_PIDS = 40,       // v1 pids hierarchy directory to make ours in
	LA_T_CG_PIDS_MAX = 41,   // pids.max
	LA_T_CG_MEM = 42,        // v1 memory hierarchy directory
	LA_T_CG_MEM_LIMIT = 43,  // memory.limit_in_bytes (and memsw)
	LA_T_INIT = 44,          // u32 1: a PID namespace under our init
	                         // (init_linux.c) instead of cgroups
	LA_T_NEW_USER = 45,      // u32 1: and a user namespace
	LA_T_UID_MAP = 46,
	LA_T_GID_MAP = 47,
	LA_T_PID_MAX = 48,       // the namespace's pid_max (absent: leave it)
	LA_T_INIT_AS = 49,       // RLIMIT_AS the init applies, or "-"
	LA_T_UNIX_ROOT = 50,     // a read-write root for unix sockets (repeated)
	LA_T_MOUNT_NS = 51,      // u32 1: the command gets the private mount
	                         // namespace, read-only but the unix roots and
	                         // the temp dir (la_mount_setup)
	LA_T_OUTPUT_BYTES = 60,  // u64 stdout+stderr budget
	LA_T_WALL_NS = 61,       // u64 wall-time limit, 0 = none
	LA_T_MSG_PREAMBLE = 70,  // written to stderr before the command runs
	LA_T_MSG_TIMEOUT = 71,   // full lines, as the Go path prints them
	LA_T_MSG_OOM = 72,
	LA_T_MSG_PIDS = 73,
	LA_T_MSG_TRUNC_A = 74,   // "...: " <dropped bytes> "...\n"
	LA_T_MSG_TRUNC_B = 75,
	LA_T_MSG_SIGINT = 76,
	LA_T_MSG_SIGTERM = 77,
	LA_T_MSG_SIGHUP = 78,
	LA_T_CREATED = 80,       // u64 when the plan was made (Unix seconds)
};

// How long a plan is used after LA_T_CREATED (also the key's timeout).
#define LA_PLAN_LIFETIME_S 3600

// Bounds of a plan the runner takes (the Go side stores no larger plan).
#define LA_MAX_RULES 128
#define LA_MAX_ENV 256
#define LA_MAX_RLIMITS 8
#define LA_MAX_ROOTS 32

// The per-user secret that authenticates plans lives in
// $XDG_RUNTIME_DIR/lite-agent when XDG_RUNTIME_DIR is an absolute path,
// else in LA_SECRET_DIR_FMT (with the effective uid): a directory of the
// user's, mode 0700, holding LA_SECRET_FILE, 32 bytes, mode 0600. A
// stored plan is the encoding followed by
// HMAC-SHA256(secret, key description || NUL || encoding): a plan signed
// for one invocation is refused under another's key.
#define LA_SECRET_DIR_FMT "/tmp/lite-agent-%u"
#define LA_SECRET_XDG_SUBDIR "lite-agent"
#define LA_SECRET_FILE "plan-secret"

// la_sha256 hashes n bytes of p into out (32 bytes); exported for the
// test that compares it with crypto/sha256.
void la_sha256(const void *p, unsigned long n, unsigned char out[32]);

#endif
