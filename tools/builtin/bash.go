package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

const (
	bashDefaultTimeout = 120 * time.Second
	bashMaxTimeout     = 600 * time.Second
	// bashMaxOutputBytes bounds the output returned to the model: the first
	// and last halves are kept, the middle is cut.
	bashMaxOutputBytes = 30000
)

type bashInput struct {
	Command     string `json:"command" jsonschema:"The shell command to run with bash -c in the workspace directory."`
	TimeoutMS   int    `json:"timeout_ms,omitempty" jsonschema:"Kill the command (and every process it started) after this many milliseconds. Default 120000 (2 minutes), at most 600000 (10 minutes)."`
	Description string `json:"description,omitempty" jsonschema:"What the command does, in 5-10 words, shown to the user (e.g. 'Run the unit tests')."`
	// RunInBackground starts the command as a background task and returns
	// at once; see bash_output and kill_task.
	RunInBackground bool `json:"run_in_background,omitempty" jsonschema:"Start the command in the background and return its task_id at once, for dev servers, watchers and other long-running commands. Read its output with bash_output and stop it with kill_task. It has no timeout unless timeout_ms is given, and it is killed when the session ends."`
}

const bashDescription = `Run a shell command with bash -c in the workspace directory and return its output (stdout and stderr together, in the order they were written) and its exit code.

- Use it for builds, tests, git, package managers and other programs. To read, find, search or edit files use the read_file, glob, grep, edit_file and write_file tools instead of cat, find, grep, sed or echo >: they are faster and their output is made for you.
- Each call is a fresh shell: the working directory is the workspace and cd, variables and aliases do not carry over to the next call. Chain dependent steps with && in one command.
- Standard input is empty (/dev/null): interactive programs, prompts and pagers will not get input, so pass flags such as --yes, -y or --no-pager.
- timeout_ms (default 120000, max 600000) kills the command and all processes it started when it runs too long. Processes left running in the background (cmd &) are killed when the shell exits.
- The command runs in a sandbox: it can read and write the workspace and a private TMPDIR, read the system's toolchain, and nothing else; by default it has no network. Do not try to work around the sandbox; if a command needs more, say so to the user.
- Output is capped at 30000 bytes: the beginning and the end are kept and the middle is cut. For long output, redirect it to a file and read or grep that file, or pipe through head/tail.
- A non-zero exit code makes the result an error; the text ends with "exit code N".
- Quote paths with spaces ("my dir/file").
- run_in_background: true starts a long-running command (a dev server, a watcher) as a background task and returns its task_id at once; read new output with bash_output, stop it with kill_task. Background tasks run in the same sandbox and are killed when the session ends.`

// Bash runs shell commands in the workspace, each one confined by the
// session's sandbox (Context.Sandbox): Landlock, seccomp, no capabilities,
// resource limits, and a kill of the whole process tree. Its declaration is
// what the default sandbox policy allows — the workspace, no network; a
// session that widens its sandbox policy widens what bash can reach.
var Bash = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("bash", bashDescription, bashHandler, &tools.Options{
		Security: &tools.Security{
			Network:     tools.NetworkNone,
			Filesystem:  tools.FilesystemWorkspace,
			SideEffects: tools.SideEffectsWorkspace,
		},
		InputSchema: bashInputSchema(),
		// The command's own timeout (at most bashMaxTimeout) always fires
		// first, so that the result says what happened.
		Timeout: bashMaxTimeout + 30*time.Second,
		Annotations: &tools.Annotations{
			Title:           "Run shell command",
			DestructiveHint: tools.Bool(true),
			OpenWorldHint:   tools.Bool(true),
		},
	}))
})

// bashInputSchema is the schema inferred from bashInput with the bounds and
// the default that struct tags cannot state.
func bashInputSchema() *jsonschema.Schema {
	s, err := jsonschema.For[bashInput](nil)
	if err != nil {
		panic(fmt.Errorf("bash: inferring the input schema: %w", err))
	}
	minLen := 1
	s.Properties["command"].MinLength = &minLen
	lo, hi := 1.0, float64(bashMaxTimeout/time.Millisecond)
	t := s.Properties["timeout_ms"]
	t.Minimum, t.Maximum = &lo, &hi
	// No schema default: an absent timeout means 2 minutes for a command
	// and none for a background task, which a filled-in default would hide.
	return s
}

func bashHandler(ctx *tools.Context, in bashInput) (*tools.Result, error) {
	if ctx == nil || ctx.Workspace == "" {
		return nil, errNoWorkspace
	}
	if strings.TrimSpace(in.Command) == "" {
		return nil, errors.New("command is empty; give the shell command to run")
	}
	timeout := time.Duration(in.TimeoutMS) * time.Millisecond
	switch {
	case in.TimeoutMS == 0 && in.RunInBackground:
		timeout = 0 // until killed, or the session ends
	case in.TimeoutMS == 0:
		timeout = bashDefaultTimeout
	case in.TimeoutMS < 0 || timeout > bashMaxTimeout:
		return nil, fmt.Errorf("field timeout_ms: %d is out of range; give 1 to %d milliseconds", in.TimeoutMS, bashMaxTimeout/time.Millisecond)
	}
	out := newBashOutput(bashMaxOutputBytes)
	sb := sessionSandbox(ctx)
	if sb == nil {
		return nil, errors.New("no sandbox is active for this session, and bash runs commands only inside one")
	}
	if in.RunInBackground {
		return startBackground(ctx, in, timeout)
	}
	var full storeFull
	// ctx.Output: the output is also streamed live to the session (the
	// kernel's tool_output events), for a person watching. The sandbox
	// streams every byte (out keeps a bounded head and tail itself and
	// counts the true total), so the live tail goes on past the sandbox's
	// own output budget.
	run, err := runCommand(ctx.Context(), sb, ctx.Workspace, in.Command, timeout, ctx.Output(out), true, full.watch(ctx.BeforeChange()), ctx.ForeignChange(), confined.Writers(ctx))
	if err != nil {
		return nil, err
	}

	var b strings.Builder
	text := out.String()
	if text == "" {
		text = "(no output)"
	}
	b.WriteString(text)
	isError := false
	note := func(format string, args ...any) {
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
		fmt.Fprintf(&b, format, args...)
	}
	switch {
	case run.timedOut:
		isError = true
		note("Command timed out: killed after %v (timeout_ms %d), together with the processes it started. If it needs longer, raise timeout_ms (at most %d); if it waits for input, give it non-interactive flags.", timeout, timeout.Milliseconds(), bashMaxTimeout.Milliseconds())
	case run.cancelled:
		isError = true
		note("Command was cancelled: it was killed, together with the processes it started.")
	case run.signal != "":
		isError = true
		note("Command was killed by signal %s.", run.signal)
	case run.exitCode != 0:
		isError = true
		note("exit code %d", run.exitCode)
	}
	if run.memoryExceeded {
		note("The command ran out of memory: the sandbox's memory limit killed it.")
	}
	if run.processLimitHit {
		note("The command hit the sandbox's limit on the number of processes.")
	}
	// What the sandbox refused by a rule, after everything the command
	// said, on a line of its own marked as lite-agent's: the command's
	// bytes stay as they were. A failed command's error lines may name
	// a path the sandbox does not show it, which no rule records.
	if line := sandbox.RefusalNote(withReadRefusals(sb, run, isError, text), run.moreRefusals, isError); line != "" {
		note("%s", line)
		// And for the person: the same line as an event, which `run`
		// sums up at the end (the model alone would see it otherwise).
		ctx.Emit(SandboxRefusalEvent, map[string]any{"note": line})
	}
	if err := full.first(); err != nil {
		note("Some changes were refused with \"No space left on device\": the checkpoint store is full, not the disk of the workspace (%v). The refused changes did not happen. Free space where the store is, or shrink it with 'lite-agent gc --max-size SIZE', then run the command again.", err)
	}
	return &tools.Result{Content: []tools.Content{tools.TextContent(b.String())}, IsError: isError}, nil
}

// SandboxRefusalEvent is the name of the custom event (tools.Context.Emit)
// the bash tool emits with the line it adds to a result when the sandbox
// refused the command something: {"note": LINE}.
const SandboxRefusalEvent = "sandbox_refusal"

// storeFull remembers the first change refused because the checkpoint
// store ran out of space: the command sees ENOSPC about a workspace file
// that has room, so the result says which disk is full.
type storeFull struct {
	mu  sync.Mutex
	err error
}

func (f *storeFull) watch(hook sandbox.ChangeFunc) sandbox.ChangeFunc {
	if hook == nil {
		return nil
	}
	return func(paths []string) error {
		err := hook(paths)
		if err != nil && errors.Is(err, syscall.ENOSPC) {
			f.mu.Lock()
			if f.err == nil {
				f.err = err
			}
			f.mu.Unlock()
		}
		return err
	}
}

func (f *storeFull) first() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// bashRun is how a command ended.
type bashRun struct {
	exitCode        int    // the shell's exit status, when it exited
	signal          string // the signal that killed it otherwise
	timedOut        bool   // killed because the timeout passed
	cancelled       bool   // killed because the call's context was cancelled
	memoryExceeded  bool   // the memory limit killed something in the tree
	processLimitHit bool   // a fork failed on the process limit
	// refusals are what rules of the sandbox refused (moreRefusals: not
	// listed).
	refusals     []sandbox.Refusal
	moreRefusals int
}

// withReadRefusals is what the sandbox refused run: what its rules
// recorded, and, when the command failed, the paths its output (text)
// names that the sandbox does not show commands (sandbox.ReadRefusals).
func withReadRefusals(sb *sandbox.Sandbox, run bashRun, failed bool, text string) []sandbox.Refusal {
	if !failed {
		return run.refusals
	}
	return append(slices.Clone(run.refusals), sb.ReadRefusals(text)...)
}

// runCommand runs command with bash -c in dir inside sb, stdin from
// /dev/null, stdout and stderr both written to out in arrival order. On
// timeout or when ctx is done the whole process tree is killed (the sandbox
// reaches processes that setsid or double-fork away), and when the shell
// exits whatever it left running in the background is killed too: nothing a
// command starts outlives it. It returns an error only when the sandbox
// could not start the command.
func runCommand(ctx context.Context, sb *sandbox.Sandbox, dir, command string, timeout time.Duration, out io.Writer, stream bool, beforeChange sandbox.ChangeFunc, foreign sandbox.ForeignFunc, writers *sandbox.Writers) (bashRun, error) {
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	st, err := sb.Run(runCtx, &sandbox.Command{
		Path: "bash",
		Args: []string{"bash", "-c", command},
		Dir:  dir,
		// The same writer for both gives the child one pipe for stdout and
		// stderr, which keeps their relative order.
		Stdout: out,
		Stderr: out,
		// The bash tool's writers keep a bounded window themselves (the
		// result's head and tail, a task's latest output): the sandbox's
		// head-and-tail budget would hold everything past its head until
		// the command ends.
		StreamOutput: stream,
		// With checkpoints on, the pre-image of everything the command
		// changes is recorded before the change.
		BeforeChange: beforeChange,
		// And the user's (or another session's) writes to the same
		// files during the command are not taken for the command's.
		ForeignChange: foreign,
		// A file it leaves open for writing past a seal (a background
		// task's) is carried into the next checkpoint.
		Writers: writers,
	})
	if err != nil {
		return bashRun{}, fmt.Errorf("the sandbox could not start bash: %w", err)
	}
	var run bashRun
	switch {
	case ctx.Err() != nil:
		run.cancelled = true
	case st.TimedOut || errors.Is(runCtx.Err(), context.DeadlineExceeded):
		run.timedOut = true
	}
	run.exitCode = st.Code
	if st.Signal != 0 {
		run.signal = bashSignalName(st.Signal)
	}
	run.memoryExceeded = st.MemoryExceeded
	run.processLimitHit = st.ProcessLimitHit
	run.refusals, run.moreRefusals = st.Refusals, st.MoreRefusals
	return run, nil
}

func bashSignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGBUS:
		return "SIGBUS"
	}
	return fmt.Sprintf("%d (%v)", int(s), s)
}

// bashOutput collects a command's output, keeping the first and the last
// half of limit bytes and counting what falls in between, including what
// the sandbox dropped before it (OmitOutput), so that the note states the
// command's true output size. It is safe for concurrent writes.
type bashOutput struct {
	mu    sync.Mutex
	limit int
	head  []byte // up to limit/2 bytes from the start
	tail  []byte // ring buffer of the latest bytes, limit - limit/2 long
	next  int    // where the ring writes next
	full  bool   // the ring has wrapped
	total int64  // every byte the command wrote, kept or not
}

func newBashOutput(limit int) *bashOutput {
	return &bashOutput{limit: limit, tail: make([]byte, limit-limit/2)}
}

func (o *bashOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	o.total += int64(n)
	if room := o.limit/2 - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = append(o.head, p[:k]...)
		p = p[k:]
	}
	if len(p) >= len(o.tail) {
		// Only the last len(tail) bytes can survive.
		copy(o.tail, p[len(p)-len(o.tail):])
		o.next, o.full = 0, true
		return n, nil
	}
	for len(p) > 0 {
		k := copy(o.tail[o.next:], p)
		p = p[k:]
		o.next += k
		if o.next == len(o.tail) {
			o.next, o.full = 0, true
		}
	}
	return n, nil
}

// OmitOutput counts the bytes the sandbox dropped at this point of the
// stream (sandbox.OutputOmitter): they fall between the head and the tail
// kept here, since the sandbox keeps more of both ends than bashOutput.
func (o *bashOutput) OmitOutput(n int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total += n
}

// String returns the kept output, with a note in place of the cut middle.
func (o *bashOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var tail []byte
	if o.full {
		tail = append(append(tail, o.tail[o.next:]...), o.tail[:o.next]...)
	} else {
		tail = o.tail[:o.next]
	}
	var b strings.Builder
	b.Write(o.head)
	if cut := o.total - int64(len(o.head)) - int64(len(tail)); cut > 0 {
		fmt.Fprintf(&b, "\n\n[... %s bytes cut from the middle of the output (%s bytes in all; the first %d and the last %d are shown). Redirect the output to a file and grep or read it, or pipe it through head or tail, to see the rest ...]\n\n", groupDigits(cut), groupDigits(o.total), len(o.head), len(tail))
	}
	b.Write(tail)
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// groupDigits writes n with thousands separators (2,147,000,000), so that a
// large byte count reads at a glance.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
