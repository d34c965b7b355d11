package builtin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

func bashTestContext(t *testing.T) *tools.Context {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not on PATH; would have checked the bash tool")
	}
	ws := t.TempDir()
	sb, err := sandbox.New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatalf("the bash tool runs only in the sandbox, and it cannot start here: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return &tools.Context{Ctx: context.Background(), Workspace: ws, Sandbox: sb}
}

// bashRunTool calls the bash tool and returns its result and how long it
// took.
func bashRunTool(t *testing.T, ctx *tools.Context, input map[string]any) (*tools.Result, time.Duration) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := Bash().Call(ctx, raw)
	return r, time.Since(start)
}

func TestBashDeclaration(t *testing.T) {
	if Bash().Name() != "bash" || Bash().ReadOnly() {
		t.Fatalf("name %q, read-only %v", Bash().Name(), Bash().ReadOnly())
	}
	sec := Bash().Security()
	if sec == nil || sec.Network != tools.NetworkNone || sec.Filesystem != tools.FilesystemWorkspace || sec.SideEffects != tools.SideEffectsWorkspace {
		t.Fatalf("security = %+v, want what the default sandbox allows (workspace, no network)", sec)
	}
	a := Bash().Annotations()
	if a.Title != "Run shell command" || a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Fatalf("annotations = %+v", a)
	}
	if Bash().Timeout() <= bashMaxTimeout {
		t.Errorf("tool timeout %v would cut the command's own %v timeout short", Bash().Timeout(), bashMaxTimeout)
	}
	schema := string(Bash().InputSchemaJSON())
	// No schema default for timeout_ms: absent means 2 minutes for a
	// command but no limit for a background task.
	if strings.Contains(schema, `"default"`) {
		t.Errorf("schema fills in a default timeout, which would time background tasks out: %s", schema)
	}
	for _, want := range []string{`"command"`, `"timeout_ms"`, `"description"`, `"maximum":600000`, `"run_in_background"`, `"required":["command"]`} {
		if !strings.Contains(schema, want) {
			t.Errorf("schema lacks %s: %s", want, schema)
		}
	}
}

func TestBashOutputAndExitCode(t *testing.T) {
	ctx := bashTestContext(t)
	r, _ := bashRunTool(t, ctx, map[string]any{"command": "echo out1; echo err1 >&2; echo out2; echo err2 >&2", "description": "Print to both streams"})
	if r.IsError || r.TextOf() != "out1\nerr1\nout2\nerr2\n" {
		t.Errorf("combined output: IsError=%v %q", r.IsError, r.TextOf())
	}

	r, _ = bashRunTool(t, ctx, map[string]any{"command": "echo partial; exit 3"})
	if !r.IsError || !strings.HasPrefix(r.TextOf(), "partial\n") || !strings.HasSuffix(r.TextOf(), "exit code 3") {
		t.Errorf("exit 3: IsError=%v %q", r.IsError, r.TextOf())
	}

	r, _ = bashRunTool(t, ctx, map[string]any{"command": "true"})
	if r.IsError || r.TextOf() != "(no output)" {
		t.Errorf("no output: IsError=%v %q", r.IsError, r.TextOf())
	}

	r, _ = bashRunTool(t, ctx, map[string]any{"command": "kill -SEGV $$"})
	if !r.IsError || !strings.Contains(r.TextOf(), "SIGSEGV") {
		t.Errorf("killed by a signal: IsError=%v %q", r.IsError, r.TextOf())
	}
}

func TestBashWorkingDirectoryAndStdin(t *testing.T) {
	ctx := bashTestContext(t)
	r, _ := bashRunTool(t, ctx, map[string]any{"command": "pwd -P; touch made-here"})
	want, _ := filepath.EvalSymlinks(ctx.Workspace)
	if r.IsError || strings.TrimSpace(r.TextOf()) != want {
		t.Errorf("pwd = %q, want %q", r.TextOf(), want)
	}
	if _, err := os.Stat(filepath.Join(ctx.Workspace, "made-here")); err != nil {
		t.Errorf("the command did not run in the workspace: %v", err)
	}

	// stdin is /dev/null: a read gets EOF at once instead of blocking.
	r, d := bashRunTool(t, ctx, map[string]any{"command": `if read -r line; then echo "got [$line]"; else echo "eof"; fi; wc -c`})
	if r.IsError || r.TextOf() != "eof\n0\n" || d > 5*time.Second {
		t.Errorf("stdin: IsError=%v %q after %v", r.IsError, r.TextOf(), d)
	}
}

func TestBashOutputCapKeepsHeadAndTail(t *testing.T) {
	ctx := bashTestContext(t)
	// 4 + 50000 + 4 bytes, written in many small pieces.
	r, _ := bashRunTool(t, ctx, map[string]any{"command": "printf HEAD; for i in $(seq 5000); do printf '%09d\\n' $i; done; printf TAIL"})
	text := r.TextOf()
	if r.IsError {
		t.Fatalf("IsError: %s", text)
	}
	if !strings.HasPrefix(text, "HEAD000000001\n") || !strings.HasSuffix(text, "000005000\nTAIL") {
		t.Errorf("head or tail lost: %q ... %q", text[:min(len(text), 40)], text[max(0, len(text)-40):])
	}
	if !strings.Contains(text, "[... 20,008 bytes cut from the middle of the output (50,008 bytes in all; the first 15000 and the last 15000 are shown)") {
		t.Errorf("cut note missing or wrong")
	}
	if len(text) > bashMaxOutputBytes+500 {
		t.Errorf("output is %d bytes, cap %d", len(text), bashMaxOutputBytes)
	}
	// The middle really is gone.
	if strings.Contains(text, "000002500\n") {
		t.Errorf("the middle of the output was kept")
	}
}

// TestBashOutputBeyondSandboxLimit: output far past the sandbox's output
// limit (1 MiB by default) keeps its true end — the last lines, where
// errors and test summaries are — and the note states the true size.
func TestBashOutputBeyondSandboxLimit(t *testing.T) {
	ctx := bashTestContext(t)
	// seq 1 300000 prints 1,988,895 bytes; FINAL-LINE\n makes 1,988,906.
	r, _ := bashRunTool(t, ctx, map[string]any{"command": "seq 1 300000; echo FINAL-LINE; exit 3"})
	text := r.TextOf()
	if !r.IsError || !strings.HasPrefix(text, "1\n2\n3\n") || !strings.HasSuffix(text, "299999\n300000\nFINAL-LINE\n\nexit code 3") {
		t.Errorf("head, tail or exit code lost: %q ... %q", text[:min(len(text), 40)], text[max(0, len(text)-60):])
	}
	if want := "[... 1,958,906 bytes cut from the middle of the output (1,988,906 bytes in all; the first 15000 and the last 15000 are shown)"; !strings.Contains(text, want) {
		t.Errorf("the note does not state the true size, want %q in %q", want, text[15000:min(len(text), 15400)])
	}

	// 64 MiB: the same, with memory bounded by the limits, not the output.
	r, _ = bashRunTool(t, ctx, map[string]any{"command": "head -c 67108864 /dev/zero | tr '\\0' x; echo; echo FINAL-LINE"})
	text = r.TextOf()
	if r.IsError || !strings.HasSuffix(text, "xxx\nFINAL-LINE\n") || !strings.Contains(text, "(67,108,876 bytes in all;") {
		t.Errorf("64 MiB: IsError=%v, tail %q, note missing: %v", r.IsError, text[max(0, len(text)-40):], !strings.Contains(text, "(67,108,876 bytes in all;"))
	}
	if len(text) > bashMaxOutputBytes+500 {
		t.Errorf("output is %d bytes, cap %d", len(text), bashMaxOutputBytes)
	}
}

func TestGroupDigits(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 2147000000: "2,147,000,000", -1234: "-1,234"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestBashOutputRing(t *testing.T) {
	o := newBashOutput(10) // 5 head, 5 tail
	for _, s := range []string{"ab", "cdefg", "hij", "klmnopqrstuvwxyz", "1", "23"} {
		o.Write([]byte(s))
	}
	got := o.String()
	if !strings.HasPrefix(got, "abcde") || !strings.HasSuffix(got, "yz123") || !strings.Contains(got, "[... 19 bytes cut") {
		t.Errorf("ring: %q", got)
	}
	o = newBashOutput(10)
	o.Write([]byte("short"))
	o.Write([]byte("er"))
	if got := o.String(); got != "shorter" {
		t.Errorf("no cut: %q", got)
	}
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	ctx := bashTestContext(t)
	marker := filepath.Join(ctx.Workspace, "marker")
	r, d := bashRunTool(t, ctx, map[string]any{"command": treeLock + "echo started; (sleep 2; touch marker) & sleep 30", "timeout_ms": 300})
	if d > 1500*time.Millisecond {
		t.Errorf("timeout of 300ms returned after %v", d)
	}
	if !r.IsError || !strings.Contains(r.TextOf(), "started") || !strings.Contains(r.TextOf(), "timed out: killed after 300ms (timeout_ms 300), together with the processes it started") {
		t.Errorf("timeout result: IsError=%v %q", r.IsError, r.TextOf())
	}
	waitTreeGone(t, ctx.Workspace)
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the background subshell survived the timeout and created %s", marker)
	}
}

// treeLock, at the start of a command, takes an exclusive flock on the
// workspace file "tree.lock" through fd 9, which every process the command
// starts inherits; a command that cannot take it exits 97 at once, so its
// "started" is printed only once it is held. (A statement of its own: in
// "a && b && c &" the whole list would go to the background.)
const treeLock = "exec 9>tree.lock; flock -n 9 || exit 97; "

// waitTreeGone waits until the lock treeLock took is free again. The
// kernel releases a flock when the last descriptor of its open file is
// closed, so getting it proves that every process of the command's tree
// (background subshells, setsid children) is gone: from then on none can
// still create a marker, and a marker's absence means something. Without
// the tree kill the lock stays held and this fails.
func waitTreeGone(t *testing.T, workspace string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(workspace, "tree.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the command did not create its lock file: %v", err)
	}
	defer f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a process of the command's tree still holds its lock 10s after the call returned (%v): the tree was not killed", err)
		}
		time.Sleep(5 * time.Millisecond) // a poll interval, not the assertion
	}
}

// TestBashBackgroundChildIsKilled: what a command leaves running in the
// background is killed when the shell exits — nothing outlives the call —
// and the call does not wait for it.
func TestBashBackgroundChildIsKilled(t *testing.T) {
	t.Parallel()
	ctx := bashTestContext(t)
	marker := filepath.Join(ctx.Workspace, "late-marker")
	r, d := bashRunTool(t, ctx, map[string]any{"command": treeLock + "(sleep 1; touch late-marker) & setsid sh -c 'sleep 1; touch late-marker' & echo started"})
	if d > 900*time.Millisecond {
		t.Errorf("the call waited %v for background children", d)
	}
	if r.IsError || r.TextOf() != "started\n" {
		t.Errorf("result: IsError=%v %q", r.IsError, r.TextOf())
	}
	waitTreeGone(t, ctx.Workspace)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a background child outlived the command and created the marker")
	}
}

// TestBashIsConfined: the command cannot read outside the workspace, while
// the same read works unconfined (so the test proves something).
func TestBashIsConfined(t *testing.T) {
	t.Parallel()
	ctx := bashTestContext(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET-4711"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-c", "cat "+secret).Output(); err != nil || string(out) != "TOP-SECRET-4711" {
		t.Fatalf("unconfined read failed (%v): the test would prove nothing", err)
	}
	r, _ := bashRunTool(t, ctx, map[string]any{"command": "cat " + secret})
	// Not there under the sandbox's root skeleton, refused by Landlock
	// where it has no mount namespace.
	refused := strings.Contains(r.TextOf(), "No such file or directory") || strings.Contains(r.TextOf(), "Permission denied")
	if !r.IsError || strings.Contains(r.TextOf(), "TOP-SECRET") || !refused {
		t.Errorf("confined read: IsError=%v %q", r.IsError, r.TextOf())
	}
	none := &tools.Context{Ctx: context.Background(), Workspace: ctx.Workspace}
	if r, _ := bashRunTool(t, none, map[string]any{"command": "true"}); !r.IsError || !strings.Contains(r.TextOf(), "no sandbox") {
		t.Errorf("without a sandbox: %q", r.TextOf())
	}
}

func TestBashCancellation(t *testing.T) {
	t.Parallel()
	ctx := bashTestContext(t)
	c, cancel := context.WithCancel(context.Background())
	ctx.Ctx = c
	time.AfterFunc(200*time.Millisecond, cancel)
	// The handler itself (Tool.Call would return at once on cancellation
	// and leave the handler to finish in the background).
	start := time.Now()
	r, err := bashHandler(ctx, bashInput{Command: treeLock + "echo started; (sleep 1; touch marker) & sleep 30"})
	d := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if d > 1500*time.Millisecond {
		t.Errorf("cancellation took %v", d)
	}
	if !r.IsError || !strings.Contains(r.TextOf(), "cancelled") {
		t.Errorf("cancelled result: IsError=%v %q", r.IsError, r.TextOf())
	}
	if !strings.Contains(r.TextOf(), "started") {
		t.Fatalf("the command did not take its lock before it was cancelled: %q", r.TextOf())
	}
	waitTreeGone(t, ctx.Workspace)
	if _, err := os.Stat(filepath.Join(ctx.Workspace, "marker")); err == nil {
		t.Errorf("a process of the cancelled command survived")
	}
}

func TestBashInvalidInput(t *testing.T) {
	ctx := bashTestContext(t)
	for _, tc := range []struct {
		input map[string]any
		want  string
	}{
		{map[string]any{"command": "true", "timeout_ms": 600001}, "timeout_ms"},
		{map[string]any{"command": "true", "timeout_ms": 0}, "timeout_ms"},
		{map[string]any{"command": ""}, "command"},
		{map[string]any{}, "command"},
	} {
		r, _ := bashRunTool(t, ctx, tc.input)
		if !r.IsError || !strings.Contains(r.TextOf(), tc.want) {
			t.Errorf("%v: IsError=%v %q, want an error naming %s", tc.input, r.IsError, r.TextOf(), tc.want)
		}
	}
	r, _ := bashRunTool(t, &tools.Context{}, map[string]any{"command": "true"})
	if !r.IsError || !strings.Contains(r.TextOf(), "no workspace") {
		t.Errorf("no workspace: %q", r.TextOf())
	}
}

// TestTreeLockSeesASurvivor: the probe waitTreeGone relies on, shown
// working where nothing kills the tree — unconfined, a background child
// outlives its shell and still holds the lock, so a surviving process
// cannot go unnoticed.
func TestTreeLockSeesASurvivor(t *testing.T) {
	dir := t.TempDir()
	// The survivor's output goes elsewhere, so that the shell's output
	// ends when the shell does; it is killed (by its pid) at the end.
	cmd := exec.Command("bash", "-c", treeLock+"sleep 30 >/dev/null 2>&1 & echo $! > bg.pid; echo started")
	cmd.Dir = dir
	out, err := cmd.Output()
	if b, _ := os.ReadFile(filepath.Join(dir, "bg.pid")); len(b) > 0 {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
			defer syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err != nil || string(out) != "started\n" {
		t.Fatalf("unconfined shell: %q %v", out, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "tree.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != syscall.EWOULDBLOCK {
		t.Fatalf("the shell exited with its background child alive, yet the lock was free (%v): the probe would prove nothing", err)
	}
}
