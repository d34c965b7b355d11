package policy

import (
	"context"
	"fmt"
	"time"
)

// NetworkMode is how much network a confined process may reach.
type NetworkMode string

const (
	// NetworkNone: no AF_INET/AF_INET6 sockets at all. The default.
	NetworkNone NetworkMode = "none"
	// NetworkLoopback: 127.0.0.0/8 and ::1 only.
	NetworkLoopback NetworkMode = "loopback"
	// NetworkPrivate: loopback plus 10/8, 172.16/12, 192.168/16, fc00::/7.
	NetworkPrivate NetworkMode = "private"
	// NetworkUnrestricted: no network filter.
	NetworkUnrestricted NetworkMode = "unrestricted"
)

// ParseNetworkMode checks a mode given as text (a flag, a config file).
func ParseNetworkMode(s string) (NetworkMode, error) {
	switch m := NetworkMode(s); m {
	case NetworkNone, NetworkLoopback, NetworkPrivate, NetworkUnrestricted:
		return m, nil
	case "":
		return NetworkNone, nil
	}
	return "", fmt.Errorf("unknown network mode %q (none, loopback, private or unrestricted)", s)
}

// Level is how much of the sandbox's machinery a policy asks for.
type Level string

const (
	// LevelFull: everything package sandbox documents — Landlock, seccomp,
	// no capabilities, no_new_privs, rlimits, and the namespaces that
	// carry the rest (a private read-only mount namespace with a root of
	// the granted paths, its own /proc, /tmp and ptys; a PID namespace
	// where no cgroup finds the whole tree). The default: a host that
	// cannot give one of them is refused (fail closed) unless BestEffort.
	LevelFull Level = "full"
	// LevelContainer: for hosts where namespaces cannot be made (a
	// Docker or Podman container with its default seccomp profile, a
	// host forbidding unprivileged user namespaces, a sandbox nested in
	// another): Landlock, seccomp (with user notification where it
	// works), no capabilities, no_new_privs and rlimits, cgroups where
	// writable, and no namespace at all. What it keeps fails closed as
	// at LevelFull; what it gives up (read-only mounts outside the
	// roots, a /proc, /tmp and ptys of its own, the root of granted
	// paths, and — where the host lacks what carries them — the whole
	// tree's kill and limits, signal isolation below Landlock ABI 6,
	// change capture) is listed in sandbox.Enforcement.Lost, never silently. It
	// is only ever used when asked for by name.
	LevelContainer Level = "container"
)

// ParseLevel checks a level given as text (a flag, a policy file); empty
// is LevelFull.
func ParseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case LevelFull, LevelContainer:
		return l, nil
	case "":
		return LevelFull, nil
	}
	return "", fmt.Errorf("unknown sandbox level %q (full or container)", s)
}

// Limits bound what one confined command may consume. Zero means the
// default given for each field.
type Limits struct {
	// WallTime kills the whole process tree when exceeded (default: none;
	// callers such as the bash tool set their own).
	WallTime time.Duration
	// MemoryBytes bounds the memory of the whole tree (cgroup memory.max or
	// memory.limit_in_bytes; RLIMIT_AS per process when no cgroup is
	// available). Default 4 GiB.
	MemoryBytes int64
	// Processes bounds the number of live processes/threads of the tree
	// (cgroup pids.max). This is what stops a fork bomb, also for root,
	// for whom RLIMIT_NPROC does nothing. Default 512.
	Processes int
	// FileBytes bounds the size of any file written (RLIMIT_FSIZE).
	// Default 1 GiB.
	FileBytes int64
	// OutputBytes bounds what is kept of stdout+stderr; the rest is
	// dropped and the truncation reported. Default 1 MiB.
	OutputBytes int64
}

// Policy describes the confinement of one command or handler: what it may
// read and write, which network it may reach, which environment it sees and
// what it may consume.
type Policy struct {
	// Workspace is readable and writable; it is the working directory.
	Workspace string
	// ReadOnlyPaths and ReadWritePaths extend the workspace. Paths that do
	// not exist are an error (a typo must not silently widen nothing).
	ReadOnlyPaths  []string
	ReadWritePaths []string
	// SystemPaths are the read-only (and executable) system paths a normal
	// toolchain needs. nil means DefaultSystemPaths(); an empty non-nil
	// slice means none.
	SystemPaths []string
	// CredentialPatterns name the credential files and directories that
	// commands are not shown (~/.ssh, ~/.aws, ~/.npmrc, a toolchain's
	// npmrc or pip.conf, a system configuration file holding a
	// password), as absolute doublestar patterns ("/home/u/.ssh/**").
	// They are for the note a failed command's result carries
	// (sandbox.Sandbox.ReadRefusals): a path the command could not read
	// that matches one is named as a credential, and one the grants
	// cover never is. They grant and refuse nothing — a credential stays
	// hidden because no grant covers it — and package policies fills
	// them in with the grants.
	CredentialPatterns []string
	// TempDir is the private TMPDIR, readable and writable. Empty means a
	// fresh directory per command, emptied when it ends. Private from
	// everything outside the sandbox, not between its commands: one
	// Landlock grant covers the directory all of a sandbox.Sandbox's temp
	// dirs live in, so commands of one Sandbox running at once (background
	// tasks, subagents) can reach each other's — they are the same agent.
	TempDir string
	// Network is the network mode; empty means NetworkNone.
	Network NetworkMode
	// Env lists the variables passed to the child, as NAME (copied from
	// the parent's environment) or NAME=VALUE. nil means DefaultEnv().
	// Names that look like secrets (*_KEY, *_TOKEN, *_SECRET, *PASSWORD*,
	// ...) are dropped unless given as NAME=VALUE explicitly.
	Env []string
	// Limits bound the child's resources.
	Limits Limits
	// AllowDomains, when non-empty, gives commands one way out to the
	// internet: lite-agent's domain proxy, run outside the sandbox, which
	// admits only these names ("example.com", "*.example.com" for
	// subdomains, or a literal "IP[:PORT]"). DenyDomains wins over it. The
	// confined process can reach the proxy and nothing else beyond what
	// Network allows.
	AllowDomains []string
	DenyDomains  []string
	// DomainSources maps an entry of AllowDomains or DenyDomains to where
	// it came from ("--allow-domain example.com", "policy.toml:12"), for
	// refusals and NetworkEvent.Rule. An entry without one is shown as
	// itself.
	DomainSources map[string]string
	// OnNetwork, if set, is told of every connection the domain proxy
	// decides (allowed or refused), and of each connect that a literal
	// IP[:PORT] grant admitted around the proxy (rule "... (direct)",
	// no byte counts: see "Network by domain" in package sandbox). It is called
	// from the proxy's and the notification server's goroutines and must
	// not block.
	OnNetwork func(NetworkEvent) `json:"-"`
	// OnUnknownDomain, if set, is asked (DomainQuestion) about a host
	// that neither AllowDomains nor DenyDomains names, while the proxy
	// holds the connection, instead of refusing it at once. DenyDomains
	// is never asked about. Without AllowDomains there is no proxy and
	// nothing to ask. It may be called from several goroutines at once
	// (one question per host); its context ends after 2 minutes, or
	// when every held connection gave up, and then the connection is
	// refused whatever the answer.
	OnUnknownDomain func(ctx context.Context, q DomainQuestion) (DomainDecision, error) `json:"-"`
	// CaptureChanges prepares the sandbox for sandbox.Command.BeforeChange (the
	// pre-images checkpoints save of what commands change). It costs every
	// command of the sandbox a seccomp listener of its own (~0.2 ms per
	// spawn), so it is off unless asked for.
	CaptureChanges bool
	// GitWritable lets confined processes write the workspace's .git and
	// create new .git entries. The zero value protects them: every
	// existing .git of the workspace and the read-write paths is bound
	// read-only in the command's mount namespace, and change capture
	// refuses a new .git name (see package sandbox, "The workspace's
	// .git"). Why: git runs code named in a repository's files — hooks,
	// core.fsmonitor on every `git status` — outside the sandbox, so a
	// writable .git lets a command plant code the user's next git
	// command runs. Set it only for an agent that must commit, knowing
	// that it may then plant hooks.
	GitWritable bool
	// BestEffort runs even when the kernel cannot enforce everything the
	// policy asks for; what was not enforced is reported by
	// sandbox.Sandbox.Enforcement. The default fails closed.
	BestEffort bool
	// Level is how much machinery the sandbox uses (LevelFull when
	// empty; LevelContainer runs without namespaces and lists what it
	// gives up in sandbox.Enforcement.Lost).
	Level Level
	// OnStartFailure, if set, is told of every command the sandbox could
	// not start (the error sandbox.Sandbox.Start or Run returns), except a cancelled
	// context and a Start after Close: a session's person must learn
	// that commands do not run, not only the model. It is called from
	// the goroutine that called Start or Run and must not block.
	OnStartFailure func(error) `json:"-"`
}

// DefaultSystemPaths are the read-only paths a shell, git, python3 and cc
// need: chosen narrowly — not all of /etc, not /root, not $HOME.
func DefaultSystemPaths() []string {
	return []string{
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
		"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf",
		"/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone", "/etc/ssl/certs",
		// Port and protocol names (getservbyname, Go's net.LookupPort,
		// Python's socket.getservbyname).
		"/etc/services", "/etc/protocols",
		// node (and other OpenSSL 3 programs) refuse to start without it;
		// the file only, not /etc/ssl, which holds private/.
		"/etc/ssl/openssl.cnf",
		"/etc/ca-certificates", "/etc/alternatives", "/etc/gitconfig",
		"/etc/bash.bashrc", "/etc/profile", "/etc/inputrc", "/etc/mime.types",
		// What the system is (pip reads /etc/debian_version for its user
		// agent and dies without it) and wget's global settings (wget
		// exits at start when it cannot read them).
		"/etc/debian_version", "/etc/os-release", "/etc/wgetrc",
		"/usr/share/zoneinfo",
		// The installed packages (dpkg -l, dpkg -S, apt list --installed,
		// which a model asks before installing): public metadata. Not
		// /etc/apt, whose auth.conf.d and proxy settings may hold
		// credentials, nor dpkg's lock files (lock, lock-frontend,
		// triggers/Lock): a command running as root could hold a read
		// lock on one and keep the host's apt out.
		"/var/lib/dpkg/status", "/var/lib/dpkg/available", "/var/lib/dpkg/info", "/var/lib/dpkg/updates",
		"/var/lib/dpkg/diversions", "/var/lib/dpkg/statoverride", "/var/lib/dpkg/arch", "/var/lib/dpkg/alternatives",
		"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full", "/dev/tty",
		// Pseudo-terminals, on a devpts of the sandbox's own (see
		// PseudoTerminalPaths).
		"/dev/ptmx", "/dev/pts",
		// A process's own /proc (on a /proc of the sandbox's own: see
		// sandbox/internal/spawn's procfs_linux.go) and the host's global files named here.
		"/proc/self", "/proc/thread-self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/filesystems",
		// uptime, top, w, ps's start times and loadavg readers.
		"/proc/uptime", "/proc/loadavg", "/proc/version",
		// How many CPUs there are (glibc's sysconf(_SC_NPROCESSORS_CONF),
		// lscpu, runtimes sizing their pools): these three files, not
		// the directory, whose vulnerabilities/ tells an attacker which
		// side channels the host left open.
		"/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible", "/sys/devices/system/cpu/present",
	}
}

// PseudoTerminalPaths are the system paths a program that needs a
// terminal opens (script(1), Python's pty, node-pty): /dev/ptmx, then the
// /dev/pts entry it was given. They are in DefaultSystemPaths; a policy
// without them gets no ptys. Named, they never grant the host's devpts
// (whose /dev/pts/N are the user's other terminals of the same uid:
// reading one steals its keystrokes) but a devpts instance of the
// sandbox's own, mounted over /dev/pts in its private mount namespace.
// Without that namespace (BestEffort) ptys are off, and sandbox.Enforcement's
// notes say so.
func PseudoTerminalPaths() []string { return []string{"/dev/ptmx", "/dev/pts"} }

// DefaultEnv is the environment allowlist: names copied from the parent.
func DefaultEnv() []string {
	return []string{"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "HOME", "USER", "LOGNAME", "TZ", "SHELL"}
}

// NetworkEvent is one connection decided by the domain proxy, or one
// connect a literal IP[:PORT] grant admitted around it (Rule "... (direct)").
type NetworkEvent struct {
	Host      string // the name (or IP literal) the client asked for
	Port      int
	Decision  string // "allow" or "deny"
	Rule      string // the grant or refusal that decided, e.g. "--allow-domain example.com"
	BytesUp   int64  // client to server
	BytesDown int64  // server to client
}
