package sandboxrun

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lite-agent/lite-agent/internal/machine"
	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/sandbox"
)

// Exit codes of `lite-agent sandbox run` beyond the command's own, the
// convention of timeout(1) and env(1).
const (
	ExitTimedOut      = 124 // --timeout passed; the whole tree was killed
	ExitSandboxFailed = 125 // the sandbox could not start (reason on stderr)
	ExitCannotExec    = 126 // the command exists but could not be executed
	ExitNotFound      = 127 // the command was not found
)

const sandboxRunUsageText = `usage: lite-agent sandbox run [flags] -- CMD [ARGS...]

Runs CMD confined to the workspace: Landlock, seccomp, no capabilities, no
network unless asked, a private TMPDIR, resource limits, and the whole
process tree killed when it ends. Stdin, stdout and stderr pass through.

Exit status: the command's own; 128+N when signal N killed it; 124 on
--timeout; 125 when the sandbox could not start (the reason is on stderr);
126 when CMD could not be executed; 127 when it was not found; 2 for a
usage error.

flags:
`

// runFlags are the flags of `sandbox run`, as given.
type runFlags struct {
	workspace string
	preset    string
	// --network, --allow-read, --allow-write, --env, --allow-domain,
	// --toolchains...: the flags `run` shares (GrantFlags, flags.go).
	grants      GrantFlags
	timeout     string
	maxMemory   string
	maxProcs    int
	maxFileSize string
	maxOutput   string
	bestEffort  bool
}

// Run is `lite-agent sandbox run` (args: what follows "run"): it
// builds the policy from the preset and the flags, runs the command
// confined with this process's stdin, stdout and stderr, and returns nil
// when the command exited 0, else an *ExitError with the exit code to end
// with (the command's own, 128+N for signal N, or an Exit* code).
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f runFlags
	fs := flag.NewFlagSet("sandbox run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.workspace, "workspace", "", "`DIR` the command may read and write, and its working directory (default: the current directory)")
	fs.StringVar(&f.preset, "preset", policies.DefaultPreset, "the hardening preset `NAME`: "+strings.Join(policies.PresetNames(), ", "))
	f.grants.Register(fs)
	fs.StringVar(&f.timeout, "timeout", "", "kill the command and every process it started after `DURATION` (e.g. 30s, 5m; a bare number is seconds)")
	fs.StringVar(&f.maxMemory, "max-memory", "", "bound the memory of the whole process tree to `SIZE` (e.g. 512M, 2G)")
	fs.IntVar(&f.maxProcs, "max-procs", 0, "bound the live processes and threads of the tree to `N`")
	fs.StringVar(&f.maxFileSize, "max-file-size", "", "bound the size of any file written to `SIZE`")
	fs.StringVar(&f.maxOutput, "max-output", "", "keep at most `SIZE` of stdout+stderr and say what was dropped (default: the sandbox's)")
	fs.BoolVar(&f.bestEffort, "best-effort", false, "run even when this kernel cannot enforce everything, and print what was not enforced")
	fs.Usage = func() {
		fmt.Fprint(stderr, sandboxRunUsageText)
		fs.PrintDefaults()
	}
	// Flags come before the command: everything from the first non-flag
	// (or after "--") is the command line, its own flags included.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &ExitError{Code: 2}
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usageErrorf("no command: lite-agent sandbox run [flags] -- CMD [ARGS...]")
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })

	// What this host can enforce is probed (namespace clones, a trial
	// seccomp listener, cgroup detection: ~1 ms) while the policy is
	// made, on the other core.
	sandbox.ProbeInBackground()

	pol, rep, err := sandboxPolicy(&f, set)
	if err != nil {
		return err
	}
	// What of the person's own settings commands do not get, and the
	// flag that passes it: a TLS failure inside would come unexplained.
	for _, n := range rep.Withheld {
		fmt.Fprintf(stderr, "lite-agent: sandbox: %s\n", n)
	}
	for _, e := range f.grants.env {
		if !strings.Contains(e, "=") && sandbox.LooksSecret(e) {
			fmt.Fprintf(stderr, "lite-agent: sandbox: --env %s looks like a secret and is not passed by name; give --env %s=VALUE to pass it on purpose\n", e, e)
		}
	}
	// The command runs where the user is when that is inside the
	// workspace (sandbox run -- make, from a subdirectory), else at the
	// workspace's top.
	dir := pol.Workspace
	if cwd, err := os.Getwd(); err == nil && paths.Within(cwd, pol.Workspace) {
		dir = cwd
	}

	sb, err := sandbox.New(pol)
	if err != nil {
		return sandboxFailure(err)
	}
	defer sb.Close()
	// What the person chose to run without is said: best effort's
	// misses, and what the container level gives up here (the list
	// `sandbox check` prints). The full level's own losses stay out of
	// a command wrapper's stderr; check lists them.
	e := sb.Enforcement()
	if f.bestEffort && len(e.Missing) > 0 {
		fmt.Fprintf(stderr, "lite-agent: sandbox: best effort: NOT enforced here: %s\n", strings.Join(e.Missing, "; "))
	}
	if (f.bestEffort || pol.Level == sandbox.LevelContainer) && len(e.Lost) > 0 {
		fmt.Fprintf(stderr, "lite-agent: sandbox: level %s: runs without: %s\n", e.Level, strings.Join(e.Lost, "; "))
	}

	// An interrupt or a termination of lite-agent ends the confined tree
	// (which is in its own session and never sees the terminal's signals)
	// and is reported as the shell does: 128 + the signal.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	var (
		mu       sync.Mutex
		received syscall.Signal
	)
	go func() {
		select {
		case s := <-sigs:
			mu.Lock()
			received = s.(syscall.Signal)
			mu.Unlock()
			cancel()
		case <-ctx.Done():
		}
	}()

	// The end of what the command says, for the paths its error lines
	// name that the sandbox does not show it (Sandbox.ReadRefusals):
	// stdout too, where go test and others print their failures.
	tail := &tailBuffer{max: 64 << 10}
	st, err := sb.Run(ctx, &sandbox.Command{
		Path:   argv[0],
		Args:   argv,
		Dir:    dir,
		Stdin:  stdin,
		Stdout: io.MultiWriter(stdout, tail),
		Stderr: io.MultiWriter(stderr, tail),
	})
	cancel()
	mu.Lock()
	sig := received
	mu.Unlock()
	if err != nil {
		return startFailure(argv[0], err)
	}
	// What the sandbox refused the command by a rule, as the agent's
	// bash result says it, on a line of lite-agent's after the
	// command's own output.
	failed := st.Code != 0 || st.TimedOut || st.Signal != 0 || sig != 0
	refusals := st.Refusals
	if failed {
		refusals = append(slices.Clone(refusals), sb.ReadRefusals(tail.String())...)
	}
	if note := sandbox.RefusalNote(refusals, st.MoreRefusals, failed); note != "" {
		fmt.Fprintf(stderr, "lite-agent: sandbox: %s\n", strings.TrimPrefix(note, "[lite-agent] "))
	}
	return sandboxExit(st, sig, pol.Limits, stderr)
}

// tailBuffer keeps the last max bytes written to it (at most twice that
// in memory: it moves the tail down only when it doubled). Safe for the
// sandbox's stdout and stderr forwarders writing at once.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if len(t.b)+len(p) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	t.b = append(t.b, p...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.b) > t.max {
		return string(t.b[len(t.b)-t.max:])
	}
	return string(t.b)
}

// sandboxPolicy turns the flags into the policy: the preset's template,
// then each flag given on top of it; and the report of where each grant
// came from and what was withheld.
func sandboxPolicy(f *runFlags, set map[string]bool) (sandbox.Policy, *policies.SandboxReport, error) {
	preset, err := policies.PresetByName(f.preset)
	if err != nil {
		return sandbox.Policy{}, nil, usageErrorf("--preset: %v", err)
	}
	ws := f.workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return sandbox.Policy{}, nil, &ExitError{Code: ExitSandboxFailed, Msg: fmt.Sprintf("sandbox: the current directory: %v", err)}
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return sandbox.Policy{}, nil, usageErrorf("--workspace: %v", err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return sandbox.Policy{}, nil, &ExitError{Code: ExitSandboxFailed, Msg: fmt.Sprintf("sandbox: workspace %s: %v", ws, err)}
	}
	grants, err := f.grants.Settings(set)
	if err != nil {
		return sandbox.Policy{}, nil, err
	}
	// --toolchains defaults to auto, as for run and as its help says:
	// `sandbox run -- go test ./...` in a module works as it does there.
	// No policy files: sandbox run is the flags and the preset. The
	// allowlist stays; --env adds to it (secret-looking names given
	// without a value are still dropped by the sandbox).
	pol, rep, err := (&policies.Policy{Preset: preset}).SandboxPolicy(ws, grants, &machine.Host{})
	if err != nil {
		return sandbox.Policy{}, nil, failf("sandbox: %v", err)
	}

	if set["timeout"] {
		d, err := parseTimeout(f.timeout)
		if err != nil {
			return pol, nil, usageErrorf("--timeout: %v", err)
		}
		pol.Limits.WallTime = d
	}
	for _, s := range []struct {
		name  string
		value string
		dst   *int64
	}{
		{"max-memory", f.maxMemory, &pol.Limits.MemoryBytes},
		{"max-file-size", f.maxFileSize, &pol.Limits.FileBytes},
		{"max-output", f.maxOutput, &pol.Limits.OutputBytes},
	} {
		if !set[s.name] {
			continue
		}
		n, err := parseLimitSize(s.value)
		if err != nil {
			return pol, nil, usageErrorf("--%s: %v", s.name, err)
		}
		*s.dst = n
	}
	if set["max-procs"] {
		if f.maxProcs < 1 {
			return pol, nil, usageErrorf("--max-procs: %d is too small; give at least 1", f.maxProcs)
		}
		pol.Limits.Processes = f.maxProcs
	}
	pol.BestEffort = f.bestEffort
	// The .git name rule (no command may make a new .git, which the
	// user's git would run hooks from) is enforced by change capture: the
	// sandbox captures every command of a sandbox that has it, as the
	// kernel asks for the agent's (~0.25 ms per command).
	pol.CaptureChanges = !pol.GitWritable
	return pol, rep, nil
}

// sandboxFailure is the error for a sandbox that could not be prepared.
func sandboxFailure(err error) error {
	msg := "sandbox: " + err.Error()
	var refused *sandbox.RefusedError
	switch {
	case errors.As(err, &refused) && refused.Level != sandbox.LevelContainer:
		msg += "\n(see 'lite-agent sandbox check' for what this system can enforce; --sandbox-level container runs without namespaces and says what it gives up; --best-effort runs with what it can, and says what it could not)"
	case errors.Is(err, sandbox.ErrUnsupported):
		msg += "\n(see 'lite-agent sandbox check' for what this system can enforce; --best-effort runs with what it can, and says what it could not)"
	}
	return &ExitError{Code: ExitSandboxFailed, Msg: msg}
}

// startFailure is the error for a command the sandbox could not start:
// 127 and 126 when the command itself is missing or cannot be executed (as
// env(1) does), 125 for anything else.
func startFailure(name string, err error) error {
	if errors.Is(err, sandbox.ErrUnsupported) {
		return sandboxFailure(err)
	}
	// The sandbox looks the command up in the child's PATH; its "not
	// found" is worded as os/exec's.
	if errors.Is(err, exec.ErrNotFound) || strings.Contains(err.Error(), "executable file not found") {
		return &ExitError{Code: ExitNotFound, Msg: err.Error()}
	}
	if code, ok := execFailureCode(err); ok {
		return &ExitError{Code: code, Msg: fmt.Sprintf("%v (%s)", err, name)}
	}
	return &ExitError{Code: ExitSandboxFailed, Msg: fmt.Sprintf("sandbox: could not start %s: %v", name, err)}
}

// sandboxExit turns how the command ended into the CLI's exit code, with a
// line on stderr for what the sandbox did (a limit hit, output dropped).
func sandboxExit(st *sandbox.ExitStatus, sig syscall.Signal, lim sandbox.Limits, stderr io.Writer) error {
	if st.OutputTruncated {
		fmt.Fprintf(stderr, "%s%d%s%d%s", truncatedBefore, st.DroppedBytes, truncatedAfter, st.OmittedAfter, truncatedEnd)
	}
	if st.MemoryExceeded {
		io.WriteString(stderr, memoryExceededLine(lim))
	}
	if st.ProcessLimitHit {
		io.WriteString(stderr, processLimitLine(lim))
	}
	switch {
	case sig != 0:
		return &ExitError{Code: 128 + int(sig), Msg: signalledMsg(sig)}
	case st.TimedOut:
		return &ExitError{Code: ExitTimedOut, Msg: timedOutMsg(lim)}
	case st.Code != 0:
		return &ExitError{Code: st.Code}
	}
	return nil
}

const (
	truncatedBefore = "lite-agent: sandbox: output limit reached: "
	truncatedAfter  = " bytes of stdout/stderr were dropped after the first "
	truncatedEnd    = " (the end of the output was kept and follows them; --max-output)\n"
)

func memoryExceededLine(lim sandbox.Limits) string {
	return fmt.Sprintf("lite-agent: sandbox: the command hit the memory limit%s and was killed\n", limitNote(lim.MemoryBytes, formatSize))
}

func processLimitLine(lim sandbox.Limits) string {
	return fmt.Sprintf("lite-agent: sandbox: the command hit the process limit%s\n", limitNote(int64(lim.Processes), func(n int64) string { return strconv.FormatInt(n, 10) }))
}

func signalledMsg(sig syscall.Signal) string {
	return fmt.Sprintf("sandbox: %v: the command and every process it started were killed", sig)
}

func timedOutMsg(lim sandbox.Limits) string {
	return fmt.Sprintf("sandbox: timed out after %v: the command and every process it started were killed", lim.WallTime)
}

func limitNote(n int64, format func(int64) string) string {
	if n <= 0 {
		return ""
	}
	return " (" + format(n) + ")"
}

func flagPath(flagName, p string) (string, error) {
	if p == "" {
		return "", usageErrorf("%s: empty path", flagName)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", usageErrorf("%s %s: %v", flagName, p, err)
	}
	return abs, nil
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// parseTimeout reads a Go duration ("1m30s") or a bare number of seconds.
func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return 0, fmt.Errorf("%q is not a duration (e.g. 500ms, 30s, 5m)", s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: give a duration above zero", s)
	}
	return d, nil
}

// parseLimitSize reads a byte count: a whole number with an optional
// binary suffix K, M, G or T (KiB, MiB, ... and KB, MB, ... mean the same:
// 1024-based).
func parseLimitSize(s string) (int64, error) {
	t, shift := SplitSizeUnit(s)
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size above zero (e.g. 512M, 2G, 1048576)", s)
	}
	if n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n << shift, nil
}

// SplitSizeUnit splits a size into its number and the shift of its
// 1024-based unit: "2GiB", "2GB" and "2G" are ("2", 30).
func SplitSizeUnit(s string) (number string, shift uint) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		}
		if shift > 0 {
			t = t[:len(t)-1]
		}
	}
	return t, shift
}

// formatSize prints a byte count the way parseLimitSize reads it.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
