package sandbox

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"
)

// ErrUnsupported is wrapped by every error that says the kernel (or the
// platform) cannot enforce what a policy asks for. The message names what
// is missing.
var ErrUnsupported = errors.New("sandbox: not enforceable on this system")

// RefusedError is New's refusal of a policy whose level needs what this
// host cannot give (it wraps ErrUnsupported). Missing names each thing,
// as Enforcement.Missing would under BestEffort.
type RefusedError struct {
	Level   Level
	Missing []string
}

func (e *RefusedError) Error() string {
	hint := "set BestEffort to run without it"
	if e.Level != LevelContainer {
		hint += ", or Level container to run without namespaces, with what that gives up listed"
	}
	return fmt.Sprintf("%v: %s (%s)", ErrUnsupported, strings.Join(e.Missing, "; "), hint)
}

func (e *RefusedError) Unwrap() error { return ErrUnsupported }

// Command is one program to run confined.
type Command struct {
	// Path is the program; without a slash it is looked up in the PATH of
	// the child's environment.
	Path string
	// Args is argv, including argv[0]; empty means {Path}.
	Args []string
	// Dir is the working directory; empty means the policy's workspace.
	Dir string
	// Env adds NAME=VALUE pairs on top of the policy's environment.
	Env []string
	// Stdin, Stdout and Stderr are the child's standard streams; nil means
	// /dev/null (stdin) or discard (output). Output written through them is
	// bounded by Limits.OutputBytes: its head and its tail are kept (see
	// OutputOmitter).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// StreamOutput forwards every byte of output as it comes, without the
	// Limits.OutputBytes head-and-tail budget: for a command that runs
	// for long (a background task, a server) whose writers keep a bounded
	// window of the latest output themselves. The writers must bound
	// their memory; the sandbox keeps none.
	StreamOutput bool
	// BeforeChange, when set, is called before the command or any process
	// it starts changes a path inside the policy's workspace — creates,
	// opens for writing, truncates, renames, links, removes, changes the
	// mode of it, or binds a unix socket to it — so that a checkpoint can
	// save the path's pre-image first (see "Change capture" in doc.go and
	// internal/notify/capture_linux.go for how, and what is not seen). A write to a file with hard links names every
	// workspace name of it; a link names its source too. A call whose
	// paths cannot be resolved fails (EPERM) instead of running
	// unrecorded. Calls come one at a time, in the order the processes
	// made them.
	BeforeChange ChangeFunc
	// ForeignChange, with BeforeChange, is called while the command runs
	// when a process outside its tree — the user, another session —
	// changes a path the command announced through BeforeChange (or a
	// child of an announced directory): why names the writer. The
	// checkpoint then knows that the path's state at the seal is not the
	// command's alone. It needs a privileged fanotify listener
	// (CAP_SYS_ADMIN): elsewhere it is never called (see
	// foreign_linux.go for why, and what it does not see). Calls come
	// one at a time, once per such event.
	ForeignChange ForeignFunc
	// Writers, with BeforeChange, is the session's set of commands that
	// may change the workspace (NewWriters): the files the command opens
	// for writing are kept in it, so that a checkpoint sealed while the
	// command still holds one open (or mapped) records what it writes
	// there afterwards, and the checkpoint pauses the command while it
	// seals (writers_linux.go). Give every command of a session the same
	// one; nil for a command whose checkpoint is always sealed after it
	// ended.
	Writers *Writers
}

// ExitStatus is how a confined command ended.
type ExitStatus struct {
	// Code is the exit code, or 128+signal when a signal killed the command
	// (the shell convention).
	Code int
	// Signal is the signal that killed the main process, if any.
	Signal syscall.Signal
	// TimedOut: the wall-time limit or the context ended the tree.
	TimedOut bool
	// MemoryExceeded: the memory limit was hit (OOM kill in the tree).
	MemoryExceeded bool
	// ProcessLimitHit: a fork failed because of the process limit.
	ProcessLimitHit bool
	// OutputTruncated: stdout/stderr exceeded Limits.OutputBytes. The
	// first half of the limit was forwarded, then DroppedBytes were
	// dropped, then the last half of the limit (the end of the output)
	// was forwarded; OmittedAfter is how many bytes came before the gap.
	// A writer implementing OutputOmitter is told at the gap itself.
	OutputTruncated bool
	DroppedBytes    int64
	OmittedAfter    int64
	// Duration is the wall time from start to the end of the whole tree.
	Duration time.Duration
	// Refusals are the command's calls a rule of the sandbox refused,
	// each once, in the order they came (see Refusal for what the
	// sandbox can and cannot see); at most 32, MoreRefusals counts the
	// others.
	Refusals     []Refusal
	MoreRefusals int
}

// Enforcement says what a prepared sandbox actually enforces. With
// BestEffort, Missing lists what the kernel could not enforce; Lost lists
// what the sandbox runs without either way.
type Enforcement struct {
	// Level is the policy's level ("full" or "container").
	Level       Level    `json:"level"`
	LandlockABI int      `json:"landlock_abi"`
	Seccomp     bool     `json:"seccomp"`
	Cgroup      string   `json:"cgroup"` // "v2", "v1" or "" (none)
	NetworkMode string   `json:"network_mode"`
	Missing     []string `json:"missing,omitempty"`
	// Lost lists the guarantees of the package doc that this sandbox
	// does not give and that do not refuse it: what its Level gives up
	// (LevelContainer: no namespaces), and conveniences and bounds the
	// host cannot carry at any level (the whole tree's memory limit
	// without a memory cgroup, ptys without a devpts of its own). A
	// sandbox is fully enforced when Missing and Lost are both empty.
	Lost         []string `json:"lost,omitempty"`
	Unprivileged bool     `json:"unprivileged"`
	// Notes say how each limit is enforced (cgroup, rlimit, PID
	// namespace), for `sandbox check` and logs.
	Notes []string `json:"notes,omitempty"`
}

// Capabilities is what this kernel and this user can enforce, for
// `lite-agent sandbox check`.
type Capabilities struct {
	Kernel            string `json:"kernel"`
	LandlockABI       int    `json:"landlock_abi"` // 0: none
	Seccomp           bool   `json:"seccomp"`
	SeccompUserNotify bool   `json:"seccomp_user_notify"`
	PidfdGetfd        bool   `json:"pidfd_getfd"`
	// ProcMatchesPID: /proc/self is this process (not an outer PID
	// namespace's /proc), which the notification server relies on.
	ProcMatchesPID bool `json:"proc_matches_pid"`
	UserNamespaces bool `json:"user_namespaces"`
	// PIDNamespaces: this user can make a PID namespace (root directly,
	// others inside a user namespace).
	PIDNamespaces bool `json:"pid_namespaces"`
	// UnshareFiles: unshare(CLONE_FILES) works here (Docker's default
	// seccomp profile refuses unshare outright); without it a command's
	// change-capture listener is made on a spawner thread of its own.
	UnshareFiles bool `json:"unshare_files"`
	// Fanotify: a privileged fanotify listener can be made (writers of
	// the files a command changes are told apart).
	Fanotify bool `json:"fanotify"`
	// ReadOnlyMounts: commands can get a private mount namespace, read-only
	// but the read-write roots (no chmod, chown or utimensat elsewhere).
	ReadOnlyMounts bool     `json:"read_only_mounts"`
	CgroupV2       bool     `json:"cgroup_v2"`
	CgroupV1       []string `json:"cgroup_v1_controllers,omitempty"`
	CgroupWritable bool     `json:"cgroup_writable"`
	Root           bool     `json:"root"`
	Notes          []string `json:"notes,omitempty"`
}
