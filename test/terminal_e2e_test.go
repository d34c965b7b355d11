package test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// Issue 11 §5 and §6 through the binary: nothing the agent controls
// reaches a terminal raw, Ctrl-C stops the agent at the approval prompt,
// and the workspace is where the user thinks it is.
//
// Each text-output check has a JSON twin that proves the attack is real:
// the stream-json (or --json) output of the same run decodes to the raw
// bytes — ESC, BEL, CR, a bidi override — so the CLI does receive them, and
// the text path printed exactly these strings before termsafe (for model
// text, `out.WriteString(ev.Text)`; for a rewind's diff,
// `io.WriteString(stdout, rep.Diff)`): without the escaping, the OSC 52
// sequence below writes "pwned" to the user's clipboard, and the CSI/CR
// pair erases the line it is on and shows "ls -la" in its place.

// attack is what a hostile agent puts everywhere it can: an OSC 52
// clipboard write (ended by BEL), cursor up and erase line, a carriage
// return, a decoy, a right-to-left override, and a C1 CSI.
const attack = "\x1b]52;c;cHduZWQ=\x07\x1b[1A\x1b[2K\rls -la \u202eEVIL\u009b2J"

// attackShown is how the attack must look on the terminal.
const attackShown = `\x1b]52;c;cHduZWQ=\x07\x1b[1A\x1b[2K\rls -la \u202eEVIL\u009b2J`

// evilName is a file name holding an escape sequence.
const evilName = "evil\x1b[8m.txt"

// assertInert fails if out holds a byte or character a terminal would act
// on or hide, and (when shown is set) if it lacks the visible escapes.
func assertInert(t *testing.T, where string, out []byte, shown ...string) {
	t.Helper()
	// Valid UTF-8 first: then a byte 0x9b (an 8-bit CSI) can only be part
	// of a character, never a control on its own.
	if !utf8.Valid(out) {
		t.Errorf("%s: output is not valid UTF-8: %q", where, out)
	}
	for _, bad := range []string{"\x1b", "\x07", "\r", "\u202e", "\u009b"} {
		if i := bytes.Index(out, []byte(bad)); i >= 0 {
			lo := max(0, i-40)
			t.Errorf("%s: raw %q reaches the terminal at byte %d: %q", where, bad, i, out[lo:min(len(out), i+40)])
		}
	}
	for _, s := range shown {
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("%s: %q is not shown; got:\n%s", where, s, out)
		}
	}
}

// cliRun runs the binary in dir (when set) with stdin empty and returns
// stdout, stderr and the exit code.
func cliRun(t *testing.T, dir string, args ...string) (stdout, stderr []byte, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), errb.Bytes(), code
}

func scriptFile(t *testing.T, turns ...map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, p, string(b))
	return p
}

func call(id, name string, input map[string]any) map[string]any {
	return map[string]any{"id": id, "name": name, "input": input}
}

// TestTerminalOutputIsEscaped: the attack in model text, tool input, tool
// output, a file name, a file's content and the session prompt comes out
// escaped in text mode and --verbose, `sessions`, `checkpoints` and
// `rewind --dry-run`; the JSON outputs keep the exact bytes.
func TestTerminalOutputIsEscaped(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := scriptFile(t,
		map[string]any{"text": "model says " + attack + "\n\tindented\n", "tool_calls": []any{
			call("w", "write_file", map[string]any{"path": evilName, "content": "line 1\n" + attack + "\n"})}},
		map[string]any{"tool_calls": []any{call("r", "read_file", map[string]any{"path": evilName})}},
		map[string]any{"text": "done " + attack})
	prompt := "please " + attack
	stdout, stderr, code := cliRun(t, "", "run", "--workspace", ws, "--state-dir", state, "--script", script,
		"--allowed-tools", "write_file", "--verbose", prompt)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Model text keeps its lines and tabs, and nothing else raw.
	assertInert(t, "text mode stdout (model text)", stdout, "model says "+attackShown+"\n\tindented\n", "done "+attackShown)
	// --verbose: the tool call's input (file name and content) and the
	// tool's output (the file's content).
	assertInert(t, "--verbose stderr (tool calls and results)", stderr,
		"→ write_file", `evil\x1b[8m.txt`, "← read_file [ok]", attackShown)

	// The same run as stream-json: the exact bytes.
	ws2, state2 := t.TempDir(), t.TempDir()
	evs, code, errs := runAgent(t, ws2, state2, "--script", script, "--allowed-tools", "write_file", prompt)
	if code != 0 {
		t.Fatalf("stream-json exit %d: %s", code, errs)
	}
	var text string
	for _, ev := range evs {
		if ev["type"] == "text_delta" {
			text += ev["text"].(string)
		}
	}
	if !strings.Contains(text, "model says "+attack) {
		t.Errorf("stream-json text deltas lost the exact bytes: %q", text)
	}
	if in := byID(evs, "tool_call")["w"]["input"].(map[string]any); in["path"] != evilName || !strings.Contains(in["content"].(string), attack) {
		t.Errorf("stream-json tool_call input: %q", in)
	}
	if got := contentText(byID(evs, "tool_result")["r"]); !strings.Contains(got, attack) {
		t.Errorf("stream-json tool_result: %q", got)
	}
	var jsonOut bytes.Buffer
	if o, e, code := cliRun(t, "", "run", "--workspace", t.TempDir(), "--state-dir", t.TempDir(), "--script", script,
		"--allowed-tools", "write_file", "--output-format", "json", prompt); code != 0 {
		t.Fatalf("json exit %d: %s", code, e)
	} else {
		jsonOut.Write(o)
	}
	var result map[string]any
	if err := json.Unmarshal(jsonOut.Bytes(), &result); err != nil || !strings.Contains(result["result"].(string), "done "+attack) {
		t.Errorf("--output-format json: %v %q", err, jsonOut.String())
	}

	// sessions: the prompt, escaped; --json exact.
	out, e, code := cliRun(t, "", "sessions", "--state-dir", state)
	if code != 0 {
		t.Fatalf("sessions: %d %s", code, e)
	}
	assertInert(t, "sessions", out, `please \x1b]52;c;cHduZWQ=\x07`)
	out, _, _ = cliRun(t, "", "sessions", "--state-dir", state, "--json")
	var sess struct {
		ID     string `json:"session_id"`
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal(out, &sess); err != nil || sess.Prompt != prompt {
		t.Fatalf("sessions --json: %v, prompt %q, want %q", err, sess.Prompt, prompt)
	}

	// checkpoints: the file name and the tool, escaped; --json exact.
	out, e, code = cliRun(t, "", "checkpoints", "--state-dir", state, sess.ID)
	if code != 0 {
		t.Fatalf("checkpoints: %d %s", code, e)
	}
	assertInert(t, "checkpoints", out, `created  evil\x1b[8m.txt`)
	out, _, _ = cliRun(t, "", "checkpoints", "--state-dir", state, sess.ID, "--json")
	if !strings.Contains(string(out), `"path":"evil\u001b[8m.txt"`) {
		t.Errorf("checkpoints --json does not carry the exact name:\n%s", out)
	}

	// rewind --dry-run: the diff shows the file's content, escaped.
	out, e, code = cliRun(t, "", "rewind", "--state-dir", state, sess.ID, "--to", "0", "--files-only", "--dry-run")
	if code != 0 {
		t.Fatalf("rewind --dry-run: %d %s", code, e)
	}
	assertInert(t, "rewind --dry-run stdout (diff)", out, `evil\x1b[8m.txt`, "-"+attackShown+"\n")
	assertInert(t, "rewind --dry-run stderr", e)
	if b, err := os.ReadFile(filepath.Join(ws, evilName)); err != nil || !strings.Contains(string(b), attack) {
		t.Fatalf("the dry run changed the file: %q %v", b, err)
	}
}

// TestHookReasonsAndErrorsAreEscaped: a workspace hook's deny reason (the
// workspace policy file is one the agent can write) and a run's error
// message are escaped on stderr; the stream keeps the exact reason.
func TestHookReasonsAndErrorsAreEscaped(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, ".lite-agent/policy.toml"), `
[[hooks]]
event   = "PreToolUse"
matcher = "write_file"
command = '''printf 'no \033]52;c;cHduZWQ=\007 way\r' >&2; exit 2'''
`)
	script := scriptFile(t,
		map[string]any{"tool_calls": []any{call("w", "write_file", map[string]any{"path": "a.txt", "content": "x"})}},
		map[string]any{"error": attack})
	_, stderr, code := cliRun(t, "", "run", "--workspace", ws, "--state-dir", state, "--script", script, "--allowed-tools", "write_file", "go")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the model's error): %s", code, stderr)
	}
	assertInert(t, "stderr (hook reason, error)", stderr,
		`[denied write_file: no \x1b]52;c;cHduZWQ=\x07 way`, "lite-agent: ", attackShown)

	// The same run as stream-json keeps the hook's exact reason.
	ws2, state2 := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(ws2, ".lite-agent"), 0o755)
	b, _ := os.ReadFile(filepath.Join(ws, ".lite-agent/policy.toml"))
	os.WriteFile(filepath.Join(ws2, ".lite-agent/policy.toml"), b, 0o644)
	evs, _, _ := runAgent(t, ws2, state2, "--script", script, "--allowed-tools", "write_file", "go")
	if p := byID(evs, "permission")["w"]; p == nil || !strings.Contains(p["reason"].(string), "no \x1b]52;c;cHduZWQ=\x07 way") {
		t.Errorf("stream-json permission event does not keep the hook's exact reason: %v", p)
	}
}

// promptWatch collects stderr and says when the approval prompt waits.
type promptWatch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	waiting chan struct{}
	once    sync.Once
}

func newPromptWatch() *promptWatch { return &promptWatch{waiting: make(chan struct{})} }

func (w *promptWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.Contains(w.buf.Bytes(), []byte("[n] deny\n  > ")) {
		w.once.Do(func() { close(w.waiting) })
	}
	return len(p), nil
}

func (w *promptWatch) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.buf.Bytes()...)
}

// startAtPrompt starts a run whose stdin is a terminal (so that it asks)
// and returns once the approval prompt waits for an answer.
func startAtPrompt(t *testing.T, command string) (cmd *exec.Cmd, master *os.File, w *promptWatch, done chan error, ws string) {
	t.Helper()
	master, slave := openPTY(t)
	ws = t.TempDir()
	writeFile(t, filepath.Join(ws, "important"), "keep me\n")
	script := scriptFile(t,
		map[string]any{"tool_calls": []any{call("b", "bash", map[string]any{"command": command})}},
		map[string]any{"text": "ok"})
	cmd = exec.Command(binary, "run", "--workspace", ws, "--state-dir", t.TempDir(), "--script", script, "go")
	w = newPromptWatch()
	cmd.Stdin, cmd.Stderr = slave, w
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-w.waiting:
	case err := <-done:
		t.Fatalf("the run ended before asking (%v): %s", err, w.bytes())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no approval prompt within a minute: %s", w.bytes())
	}
	return cmd, master, w, done, ws
}

// TestApprovalPromptShowsWhatRuns: a command that, printed raw, erases
// itself and shows "ls -la" is shown with its escapes, and a warning.
func TestApprovalPromptShowsWhatRuns(t *testing.T) {
	_, master, w, done, ws := startAtPrompt(t, "rm -f important #\x1b[2K\rls -la")
	shown := w.bytes()
	assertInert(t, "approval prompt", shown,
		`$ rm -f important #\x1b[2K\rls -la`, "control or invisible characters")
	master.Write([]byte("n\n"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after a denial: %v: %s", err, w.bytes())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not end after the answer: %s", w.bytes())
	}
	if _, err := os.Stat(filepath.Join(ws, "important")); err != nil {
		t.Errorf("the denied command ran: %v", err)
	}
}

// TestCtrlCAtTheApprovalPrompt: SIGINT while the prompt waits ends the run
// at once — before the fix the prompt's read ignored the cancelled context
// and the process waited for Enter (here: until the timeout below).
func TestCtrlCAtTheApprovalPrompt(t *testing.T) {
	cmd, _, w, done, ws := startAtPrompt(t, "rm -f important")
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 {
			t.Fatalf("exit after SIGINT: %v, want status 1: %s", err, w.bytes())
		}
		t.Logf("exited %v after SIGINT", time.Since(start))
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("SIGINT at the approval prompt did not stop the run within 20s (it waits for Enter): %s", w.bytes())
	}
	if s := string(w.bytes()); !strings.Contains(s, "interrupted") {
		t.Errorf("stderr does not say the run was interrupted: %s", s)
	}
	if _, err := os.Stat(filepath.Join(ws, "important")); err != nil {
		t.Errorf("the interrupted call ran: %v", err)
	}
}

// TestWorkspaceThroughAgentSymlink: session 1's agent plants a symlink in
// its workspace; a later run whose workspace goes through it — named with
// --workspace or cd'd through — is refused with the link, the session and
// the way out; the resolved path runs; a symlink the user made runs and
// text mode's first line shows where the agent really works.
func TestWorkspaceThroughAgentSymlink(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	elsewhere, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(elsewhere, "sub"), 0o755)
	script := scriptFile(t,
		map[string]any{"tool_calls": []any{call("b", "bash", map[string]any{"command": "ln -s " + elsewhere + " project"})}},
		map[string]any{"text": "linked"})
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "bash", "make a link")
	if code != 0 {
		t.Fatalf("session 1: exit %d: %s", code, stderr)
	}
	id := evs[0]["session_id"].(string)
	link := filepath.Join(ws, "project")
	if target, err := os.Readlink(link); err != nil || target != elsewhere {
		t.Fatalf("session 1 made no link: %q %v", target, err)
	}

	hello := scriptFile(t, map[string]any{"text": "hello"})
	// Named with --workspace, and walked through by cd ($PWD).
	for _, c := range []struct{ name, dir, flag string }{
		{"--workspace", "", link},
		{"cd'd through", filepath.Join(link, "sub"), ""},
	} {
		args := []string{"run", "--state-dir", state, "--script", hello, "hi"}
		if c.flag != "" {
			args = append(args, "--workspace", c.flag)
		}
		_, e, code := cliRun(t, c.dir, args...)
		msg := string(e)
		if code != 1 || !strings.Contains(msg, "symlink "+link+" -> "+elsewhere) || !strings.Contains(msg, "session "+id) || !strings.Contains(msg, "pass the resolved path") {
			t.Errorf("%s: exit %d, want a refusal naming the link, the session and the resolved path:\n%s", c.name, code, msg)
		}
	}
	// The resolved path: the user says they mean it.
	if out, e, code := cliRun(t, "", "run", "--workspace", elsewhere, "--state-dir", state, "--script", hello, "hi"); code != 0 || string(out) != "hello\n" {
		t.Errorf("the resolved path: exit %d, stdout %q: %s", code, out, e)
	}

	// A symlink the user made, not recorded: runs, and says where.
	mine := filepath.Join(t.TempDir(), "mine")
	userTarget, _ := filepath.EvalSymlinks(t.TempDir())
	os.Symlink(userTarget, mine)
	out, e, code := cliRun(t, "", "run", "--workspace", mine, "--state-dir", state, "--script", hello, "hi")
	if code != 0 || string(out) != "hello\n" {
		t.Fatalf("a user's symlink: exit %d, stdout %q: %s", code, out, e)
	}
	first, _, _ := strings.Cut(string(e), "\n")
	if !strings.Contains(first, "workspace "+userTarget) || !strings.Contains(first, mine) {
		t.Errorf("the first line of a run through a user's symlink = %q, want the resolved workspace %s", first, userTarget)
	}
	// With no symlink, no such line.
	if _, e, _ := cliRun(t, "", "run", "--workspace", userTarget, "--state-dir", state, "--script", hello, "hi"); strings.Contains(string(e), "through a symlink") {
		t.Errorf("a plain workspace got the symlink line: %s", e)
	}
}

// TestPolicyShowIsEscaped: the workspace policy file is one an agent can
// write; `policy show` prints its rules and hooks escaped.
func TestPolicyShowIsEscaped(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	writeFile(t, filepath.Join(ws, ".lite-agent/policy.toml"), "[permissions]\ndeny = [\"read_file(x\\u001b]52;c;cHduZWQ=\\u0007/**)\"]\n\n[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"true \\u001b[2K\\r\\u202e\"\n")
	out, e, code := cliRun(t, "", "policy", "show", "--workspace", ws)
	if code != 0 {
		t.Fatalf("policy show: %d %s", code, e)
	}
	assertInert(t, "policy show", out, `read_file(x\x1b]52;c;cHduZWQ=\x07/**)`, `true \x1b[2K\r\u202e`)
}
