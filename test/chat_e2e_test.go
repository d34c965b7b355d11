package test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Issue 16 through the binary in a terminal (a pty of 80x24): the
// interactive mode edits a file with the diff on screen, runs a command it
// shows, is interrupted mid-command (the command's process is gone, the
// session goes on), rewinds to checkpoint 0 byte for byte, and --continue
// picks the session up again.

// ptySession is the binary running in a pty, its output collected.
type ptySession struct {
	t    *testing.T
	f    *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	mark int // waitFor looks at the output after this offset
	done chan struct{}
}

func startPTY(t *testing.T, dir string, args ...string) *ptySession {
	t.Helper()
	return startPTYWith(t, dir, ptyOptions{answer: true}, args...)
}

// ptyOptions: answer makes the pty answer the terminal queries as a
// terminal does; env is added to the binary's environment (after the
// defaults, so it wins).
type ptyOptions struct {
	answer bool
	env    []string
}

func startPTYWith(t *testing.T, dir string, o ptyOptions, args ...string) *ptySession {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	// XDG_CONFIG_HOME, XDG_STATE_HOME: the user policy file and the trust
	// store are the test's, never the machine's.
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "TERM=xterm-256color", "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, o.env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	s := &ptySession{t: t, f: f, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			// Answer as a terminal does the background-colour query
			// (OSC 11) and the cursor report that follows it, which
			// lipgloss sends when the program starts: a terminal that
			// answered neither would make it wait for its timeout.
			if o.answer && bytes.Contains(buf[:n], []byte("\x1b]11;?")) {
				f.Write([]byte("\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[1;1R"))
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	})
	return s
}

// ansiRE matches the escape sequences of the UI's rendering.
var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]`)

func (s *ptySession) screen(from int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Without the renderer's sequences and the pty's CRs.
	return strings.ReplaceAll(ansiRE.ReplaceAllString(string(s.out.Bytes()[from:]), ""), "\r", "")
}

// waitFor polls the output after the mark until it holds each of want,
// for at most 20 s, and moves the mark past what it read.
func (s *ptySession) waitFor(want ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		scr := s.screen(s.mark)
		ok := true
		for _, w := range want {
			if !strings.Contains(scr, w) {
				ok = false
			}
		}
		if ok {
			s.mu.Lock()
			s.mark = s.out.Len()
			s.mu.Unlock()
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the screen does not show %q; since the last step it showed:\n%s", want, scr)
		}
		time.Sleep(20 * time.Millisecond) // a poll interval, not the assertion
	}
}

func (s *ptySession) send(keys string) {
	s.t.Helper()
	if _, err := s.f.Write([]byte(keys)); err != nil {
		s.t.Fatal(err)
	}
}

// waitExit waits (bounded) for the binary to exit and returns its code.
func (s *ptySession) waitExit() int {
	s.t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- s.cmd.Wait() }()
	select {
	case err := <-ch:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 0
	case <-time.After(20 * time.Second):
		s.t.Fatalf("the session did not exit; screen:\n%s", s.screen(0))
	}
	return -1
}

// findProcess is the pid of the process whose argv is exactly argv, or 0.
func findProcess(argv ...string) int {
	want := strings.Join(argv, "\x00") + "\x00"
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && string(b) == want {
			return pid
		}
	}
	return 0
}

// waitProcess waits (20 s at most) for the process whose argv is exactly
// argv to show, and returns its pid; what names it in the failure.
func waitProcess(t *testing.T, s *ptySession, what string, argv ...string) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if pid := findProcess(argv...); pid != 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed; screen:\n%s", what, s.screen(s.mark))
		}
		time.Sleep(20 * time.Millisecond) // a poll interval, not the assertion
	}
}

// waitGone waits (10 s at most) until pid no longer runs.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); procRunning(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d (%s) still runs", pid, what)
		}
		time.Sleep(20 * time.Millisecond) // a poll interval, not the assertion
	}
}

// procRunning says whether pid runs (a zombie has stopped running).
func procRunning(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func TestChatSession(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	original := "hello\nsecond line\n"
	writeFile(t, filepath.Join(ws, "a.txt"), original)
	// A marker no other process has: the sleep's argv.
	marker := strconv.Itoa(900000 + os.Getpid()%99999)
	marker2 := strconv.Itoa(800000 + os.Getpid()%99999)
	marker3 := strconv.Itoa(600000 + os.Getpid()%99999)
	script := scriptFile(t,
		map[string]any{"text": "I'll edit it.", "tool_calls": []any{
			call("e1", "edit_file", map[string]any{"path": "a.txt", "old_string": "hello\n", "new_string": "hello world\n"})}},
		map[string]any{"text": "Edited the file."},
		map[string]any{"tool_calls": []any{call("b1", "bash", map[string]any{"command": "echo ran-$((40+2))"})}},
		map[string]any{"text": "Ran it."},
		// A tree: the shell, a sleep in the background, a sleep in the
		// foreground; the interrupt must end all of them.
		map[string]any{"tool_calls": []any{call("b2", "bash", map[string]any{"command": "sleep " + marker2 + " & sleep " + marker + "; echo never"})}},
		map[string]any{"text": "Still here after the interrupt."},
		map[string]any{"tool_calls": []any{call("b3", "bash", map[string]any{"command": "sleep " + marker3})}},
		map[string]any{"text": "Still here after Ctrl-C."},
		map[string]any{"text": "Continued."})
	args := []string{"--workspace", ws, "--state-dir", state, "--script", script}

	s := startPTY(t, ws, args...)
	s.waitFor("ready · ", "mode default")
	s.send("edit a.txt\r")
	// The diff of the edit is on screen before it is approved.
	s.waitFor("? edit_file wants to run", "--- a/a.txt", "+++ b/a.txt", "-hello", "+hello world", "[y] allow once")
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != original {
		t.Fatalf("the file changed before the approval: %q", b)
	}
	s.send("\r") // Enter never allows
	s.send("y")
	s.waitFor("allowed once", "Edited the file.")
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hello world\nsecond line\n" {
		t.Fatalf("after the approved edit a.txt is %q", b)
	}

	s.send("run it\r")
	s.waitFor("? bash wants to run", "$ echo ran-$((40+2))", "sandbox:")
	s.send("y")
	s.waitFor("Ran it.")

	// Interrupted mid-command: the sleep runs, Esc stops the turn.
	s.send("wait\r")
	s.waitFor("? bash wants to run", "$ sleep "+marker2+" & sleep "+marker)
	s.send("y")
	// The pids of both sleeps, found by their argv (each marker is this
	// test's own); the command is still running, so they are there.
	pid := waitProcess(t, s, "the command's sleep", "sleep", marker)
	pid2 := waitProcess(t, s, "the command's background sleep", "sleep", marker2)
	s.send("\x1b")
	// The turn ends (the status is ready again, never while it runs).
	s.waitFor("interrupted", "ready · ")
	for _, p := range []int{pid, pid2} {
		waitGone(t, p, "a sleep of the interrupted command, after the interrupt")
	}
	// The session goes on.
	s.send("go on\r")
	s.waitFor("Still here after the interrupt.")
	// Ctrl-C stops a running command the same way.
	s.send("wait again\r")
	s.waitFor("? bash wants to run", "$ sleep "+marker3)
	s.send("y")
	pid3 := waitProcess(t, s, "the command's process", "sleep", marker3)
	s.send("\x03")
	s.waitFor("interrupted", "ready · ")
	waitGone(t, pid3, "the command's sleep, after Ctrl-C")
	s.send("go on\r")
	s.waitFor("Still here after Ctrl-C.")

	// /rewind 0: the workspace as it was, byte for byte.
	s.send("/rewind 0\r")
	s.waitFor("rewound")
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != original {
		t.Errorf("after /rewind 0 a.txt is %q, want %q", b, original)
	}
	// /undo takes the rewind back, files and conversation; once.
	s.send("/undo\r")
	s.waitFor("files: back as before the rewind to checkpoint 0", "conversation: the cut turns are back")
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hello world\nsecond line\n" {
		t.Errorf("after /undo a.txt is %q, want the edit back", b)
	}
	s.send("/undo\r")
	s.waitFor("no rewind to undo")
	s.send("/rewind 0\r")
	s.waitFor("rewound")
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != original {
		t.Errorf("after the second /rewind 0 a.txt is %q, want %q", b, original)
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("after /rewind 0 the workspace holds %v, want only a.txt", names)
	}
	s.send("/rewnd\r")
	s.waitFor("did you mean /rewind")
	s.send("\x04") // Ctrl-D at the empty prompt
	scr := s.screen(0)
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	m := regexp.MustCompile(`session ([0-9a-zA-Z_-]+)`).FindStringSubmatch(scr)
	if m == nil {
		t.Fatalf("no session id on screen:\n%s", scr)
	}
	id := m[1]

	// --continue: the same session, its checkpoints there.
	c := startPTY(t, ws, append(args, "--continue")...)
	c.waitFor("resuming session " + id)
	// The history crosses sessions: ↑ brings back the last line typed in
	// the session before; Ctrl-C at a prompt with text clears it.
	c.send("\x1b[A")
	c.waitFor("> /rewnd")
	c.send("\x03")
	// The conversation was cut to nothing: /compact says so, off the
	// event loop.
	c.send("/compact\r")
	c.waitFor("nothing to compact")
	// Ctrl+J is a new line in the input, not a send: Enter sends both
	// lines as one prompt (echoed with the second line indented). The
	// conversation was cut, so the model begins its script again: deny.
	c.send("first line\nsecond line")
	c.waitFor("> first line", "> second line")
	c.send("\r")
	c.waitFor("> first line", "\n  second line", "? edit_file wants to run")
	c.send("n")
	c.waitFor("denied", "ready · ")
	c.send("/checkpoints\r")
	c.waitFor("rewind to checkpoint 0")
	// The /rewind picker lists the prompts; c switches to the checkpoints
	// with what each changed, and d previews a rewind's diff (to
	// checkpoint 1, after the edit: it would bring the edit back),
	// changing nothing.
	c.send("/rewind files\r")
	c.waitFor("rewind to before which prompt?", "first line second line")
	c.send("c")
	c.waitFor("rewind to which checkpoint?", "start of user turn 0", "edit_file (e1)  a.txt")
	c.send("\x1b[B") // down: checkpoint 1
	c.send("d")
	c.waitFor("+hello world")
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != original {
		t.Errorf("the preview changed a.txt: %q", b)
	}
	c.send("\x1b") // Esc closes the picker
	c.waitFor("ready · ")
	c.send("\x03")
	c.waitFor("press Ctrl-C again")
	c.send("\x03")
	if code := c.waitExit(); code != 0 {
		t.Fatalf("--continue exit %d", code)
	}

	// --resume with no id: a picker of this workspace's sessions.
	r := startPTY(t, ws, append(args, "--resume")...)
	r.waitFor("resume which session?", id[:8])
	r.send("\r")
	r.waitFor("resuming session " + id)
	r.send("\x04")
	if code := r.waitExit(); code != 0 {
		t.Fatalf("--resume exit %d", code)
	}
}

// TestChatNeedsTerminal: without a terminal the interactive mode says to
// use run, exit 2.
func TestChatNeedsTerminal(t *testing.T) {
	for _, args := range [][]string{{}, {"chat"}, {"--continue"}} {
		_, stderr, code := cliRun(t, t.TempDir(), args...)
		if code != 2 || !strings.Contains(string(stderr), "lite-agent run") {
			t.Errorf("%v without a terminal: exit %d, %s", args, code, stderr)
		}
	}
}

// TestChatFirstPromptArgument: `lite-agent [flags] PROMPT` in a terminal,
// as a Claude Code user types it, opens the interactive session and sends
// PROMPT as its first prompt (before, "chat takes no prompt", exit 2);
// the session then goes on as usual.
func TestChatFirstPromptArgument(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := scriptFile(t,
		map[string]any{"text": "First answer."},
		map[string]any{"text": "Second answer."})
	s := startPTY(t, ws, "--workspace", ws, "--state-dir", state, "--script", script, "fix the bug")
	s.waitFor("> fix the bug", "First answer.", "ready · ")
	s.send("more\r")
	// Ctrl-D is for an idle prompt: wait for the turn to end first.
	s.waitFor("Second answer.", "ready · ")
	s.send("\x04")
	if code := s.waitExit(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestChatSessionAllowOutlivesTheTurn: "a" (allow for this session)
// holds for the session's later prompts too — each prompt is a query, and
// the rule used to last one query, so the next prompt asked again and
// /permissions said "(none)"; a call the person denies is said once (not
// three times: the answer, the permission event, the error result).
func TestChatSessionAllowOutlivesTheTurn(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := scriptFile(t,
		map[string]any{"tool_calls": []any{call("b1", "bash", map[string]any{"command": "echo first"})}},
		map[string]any{"text": "Ran once."},
		map[string]any{"tool_calls": []any{call("b2", "bash", map[string]any{"command": "echo first"})}},
		map[string]any{"text": "Ran twice."},
		map[string]any{"tool_calls": []any{call("b3", "bash", map[string]any{"command": "touch x-file"})}},
		map[string]any{"text": "Could not."})
	s := startPTY(t, ws, "--workspace", ws, "--state-dir", state, "--script", script)
	s.waitFor("ready · ")
	s.send("one\r")
	s.waitFor("? bash wants to run", "[a] allow for this session")
	s.send("a")
	s.waitFor("allowed for this session", "Ran once.", "ready · ")
	s.send("two\r")
	scr := s.waitFor("Ran twice.", "ready · ")
	if strings.Contains(scr, "wants to run") {
		t.Errorf("the session's allow did not hold for the next prompt:\n%s", scr)
	}
	s.send("/permissions\r")
	s.waitFor("allowed here: bash(echo")
	s.send("three\r")
	s.waitFor("? bash wants to run", "[n] deny, the agent goes on", "[Esc] deny and")
	s.send("n")
	scr = s.waitFor("Could not.", "ready · ")
	if got := strings.Count(scr, "denied"); got != 1 {
		t.Errorf("the denial was said %d times, want once:\n%s", got, scr)
	}
	if _, err := os.Stat(filepath.Join(ws, "x-file")); err == nil {
		t.Error("the denied command ran")
	}
	s.send("\x04")
	s.waitExit()
}

// TestChatContinueShowsEarlierConversation: --continue (and --resume ID)
// open on the earlier conversation — the prompts, the agent's answers,
// its tool calls — not on an empty screen.
func TestChatContinueShowsEarlierConversation(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := scriptFile(t,
		map[string]any{"text": "Listing.", "tool_calls": []any{call("l1", "list_dir", map[string]any{"path": "."})}},
		map[string]any{"text": "The answer is forty-two."},
		map[string]any{"text": "Continued fine."})
	if _, stderr, code := cliRun(t, ws, "run", "--workspace", ws, "--state-dir", state, "--script", script, "what is the answer"); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{{"--continue"}, {"-c"}} {
		args = append(args, "--workspace", ws, "--state-dir", state, "--script", script)
		s := startPTY(t, ws, args...)
		s.waitFor("> what is the answer", "The answer is forty-two.", "list_dir", "earlier conversation above", "ready · ")
		s.send("\x04")
		s.waitExit()
	}
}

// TestChatEscapesAgentStrings: the attack (terminal_e2e_test.go) in the
// model's text and in a command to approve reaches the pty escaped. That
// the CLI does receive these raw bytes from the same script is shown by
// TestTerminalOutputIsEscaped's stream-json twin; written raw, the OSC 52
// sequence would set the clipboard and the CSI/CR pair would show "ls -la"
// in place of the line.
func TestChatEscapesAgentStrings(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := scriptFile(t,
		map[string]any{"text": "model says " + attack, "tool_calls": []any{
			call("b1", "bash", map[string]any{"command": "echo '" + attack + "'"})}},
		map[string]any{"text": "done"})
	s := startPTY(t, ws, "--workspace", ws, "--state-dir", state, "--script", script)
	s.waitFor("ready · ")
	s.send("go\r")
	s.waitFor("? bash wants to run", "[y] allow once")
	s.send("n")
	s.waitFor("done", "ready · ")
	s.send("\x04")
	s.waitExit()
	s.mu.Lock()
	raw := s.out.String()
	s.mu.Unlock()
	for _, bad := range []string{"\x1b]52;", "\x07", "\u202e", "\u009b", "\x1b[1A\x1b[2K\rls -la"} {
		if strings.Contains(raw, bad) {
			t.Errorf("raw %q reaches the terminal", bad)
		}
	}
	// NO_COLOR (startPTY sets it): no colour sequence at all (without it
	// the same session shows \x1b[90m for the dim lines, \x1b[37m, ...).
	if m := regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?(?:3[0-9]|9[0-7]|38;)[0-9;]*m`).FindString(raw); m != "" {
		t.Errorf("a colour sequence %q under NO_COLOR", m)
	}
	if scr := s.screen(0); !strings.Contains(scr, "model says "+attackShown) {
		t.Errorf("the model's text is not shown escaped:\n%s", scr)
	}
}

// TestChatStartsOnSilentTerminal: on a terminal that answers no query
// (this pty answers nothing), a command starts at once. Bubble Tea's
// package init asks the terminal for its background colour (OSC 11, then
// a cursor report) and waits up to 5 s for a reply, before main runs, for
// every command of the binary; internal/noquery keeps it from asking.
// Without it this pty sees "\x1b]11;?" and each start below takes 5 s.
// TERM is set aside only during the package inits: the session's
// commands see it as the user's, and the screen is coloured as TERM says.
func TestChatStartsOnSilentTerminal(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := scriptFile(t,
		map[string]any{"tool_calls": []any{call("b1", "bash", map[string]any{"command": `printf 'term=%s' "$TERM" > term.txt`})}},
		map[string]any{"text": "Wrote it."})
	for _, args := range [][]string{{"--version"}, {"--workspace", ws, "--state-dir", state, "--script", script}} {
		start := time.Now()
		// Colour on (NO_COLOR empty): the colour profile, read from TERM
		// after the inits, must be the terminal's again. CI empty too:
		// termenv turns colour off wherever CI is set, as on CI runners.
		s := startPTYWith(t, ws, ptyOptions{env: []string{"NO_COLOR=", "CI="}}, args...)
		if args[0] == "--version" {
			s.waitExit()
		} else {
			s.waitFor("ready · ")
		}
		// The query's timeout is 5 s: a start that waited for it takes
		// at least that long.
		if d := time.Since(start); d >= 5*time.Second {
			t.Errorf("%v on a silent terminal took %v to start", args, d)
		}
		s.mu.Lock()
		raw := s.out.String()
		s.mu.Unlock()
		if strings.Contains(raw, "\x1b]11;?") {
			t.Errorf("%v asked the terminal for its background colour", args)
		}
		if args[0] == "--version" {
			continue
		}
		if !strings.Contains(raw, "\x1b[90m") {
			t.Errorf("no colour on a colour terminal (TERM not restored?): %q", raw)
		}
		s.send("go\r")
		s.waitFor("? bash wants to run")
		s.send("y")
		s.waitFor("Wrote it.", "ready · ")
		s.send("\x04")
		s.waitExit()
		if b, _ := os.ReadFile(filepath.Join(ws, "term.txt")); string(b) != "term=xterm-256color" {
			t.Errorf("the session's command saw %q, want TERM as the user's", b)
		}
	}
}

// TestChatSubagentsAndTasks: a subagent's calls show nested under the
// agent call that started it, live and in the scrollback; a background
// task is listed while the turn runs (and by /tasks, which answers during
// the turn), and the turn's end, which kills it, says so — its process
// is gone. The commands wait for files the test creates, so the test sees
// them running without a sleep.
func TestChatSubagentsAndTasks(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	marker := strconv.Itoa(700000 + os.Getpid()%99999)
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{
	  "turns": [
	    {"tool_calls": [{"id": "a1", "name": "agent", "input": {"agent": "reader", "prompt": "look around"}}]},
	    {"tool_calls": [{"id": "bg1", "name": "bash", "input": {"command": "sleep `+marker+`", "run_in_background": true, "description": "dev server"}}]},
	    {"tool_calls": [{"id": "w1", "name": "bash", "input": {"command": "while [ ! -e go2 ]; do sleep 0.05; done; echo main-done"}}]},
	    {"text": "All done."}],
	  "agents": {"reader": {"turns": [
	    {"tool_calls": [{"id": "s1", "name": "bash", "input": {"command": "while [ ! -e go1 ]; do sleep 0.05; done; echo sub-done"}}]},
	    {"text": "Reader done."}]}}}`)
	agents := `{"reader": {"description": "Looks.", "prompt": "You look."}}`
	s := startPTY(t, ws, "--workspace", ws, "--state-dir", state, "--script", script, "--agents", agents, "--allowed-tools", "bash")
	s.waitFor("ready · ")
	s.send("/agents\r")
	s.waitFor("subagents: reader")
	s.send("go\r")
	// Live: the subagent's running call under the running agent call.
	scr := s.waitFor("● agent reader running", "    └ [reader-", "] ● bash while [ ! -e go1 ]")
	if strings.Index(scr, "● agent reader running") > strings.LastIndex(scr, "    └ [reader-") {
		t.Errorf("the subagent's call is not under its parent:\n%s", scr)
	}
	writeFile(t, filepath.Join(ws, "go1"), "")
	// In the scrollback: the agent call's line, then its subagent's call.
	scr = s.waitFor("● agent reader ✓", "] ● bash while [ ! -e go1 ]; do sleep 0.05; done;", "sub-done ✓")
	if i, j := strings.Index(scr, "● agent reader ✓"), strings.Index(scr, "] ● bash while [ ! -e go1 ]; do sleep 0.05; done;"); i < 0 || j < i {
		t.Errorf("the finished subagent call is not printed under the agent call:\n%s", scr)
	}
	// The background task is listed while the turn goes on.
	s.waitFor("⧗ background task-1 dev server")
	pid := waitProcess(t, s, "the background task's process", "sleep", marker)
	s.send("/tasks\r")
	s.waitFor("task-1  dev server  running")
	writeFile(t, filepath.Join(ws, "go2"), "")
	s.waitFor("background task(s) stopped with the turn: task-1", "All done.", "ready · ")
	waitGone(t, pid, "the background task's sleep, after its turn")
	s.send("/tasks\r")
	s.waitFor("no background tasks")
	s.send("\x04")
	s.waitExit()
}

// TestChatSlashCommands: each slash command through the terminal, as a
// user types it: what it shows, and for /allow, /deny, /mode (and the
// mode key, shift+tab) and /clear what it changes in the session.
func TestChatSlashCommands(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "x"), "keep me\n")
	script := scriptFile(t,
		map[string]any{"tool_calls": []any{call("b1", "bash", map[string]any{"command": "echo hi"})}},
		map[string]any{"text": "Said hi."},
		map[string]any{"tool_calls": []any{call("b2", "bash", map[string]any{"command": "rm -f x"})}},
		map[string]any{"text": "Could not."},
		map[string]any{"text": "A summary of the session."})
	s := startPTY(t, ws, "--workspace", ws, "--state-dir", state, "--script", script, "--context-window", "100000")
	s.waitFor("ready · ", "mode default", "ctx 0/100.0k")
	for _, c := range []struct{ cmd, want string }{
		{"/help", "Enter          sends"},
		{"/model", "model: scripted"},
		{"/tools", "type a task first"},
		{"/mcp", "no MCP servers"},
		{"/agents", "no subagents"},
		{"/cost", "tokens: 0 input, 0 output"},
		{"/context", "the last model call read 0 tokens"},
		{"/mode", "mode: default"},
		{"/frobnicate", "unknown command /frobnicate (/help lists the commands)"},
		{"/mdoe", "unknown command /mdoe; did you mean /mode?"},
		{"/compact", "no session yet"},
	} {
		s.send(c.cmd + "\r")
		s.waitFor(c.want)
	}
	// /mode sets the mode; shift+tab cycles default → acceptEdits → plan.
	s.send("/mode plan\r")
	s.waitFor("mode: plan", "mode plan · ")
	s.send("\x1b[Z")
	s.waitFor("mode: default", "mode default · ")
	s.send("\x1b[Z")
	s.waitFor("mode: acceptEdits", "mode acceptEdits · ")
	s.send("/mode default\r")
	s.waitFor("mode default · ")
	s.send("/mode nosuch\r")
	s.waitFor("nosuch")

	// /allow: the next call matching runs without a question.
	s.send("/allow bash(echo hi)\r")
	s.waitFor("allow bash(echo hi) (this session)")
	s.send("/deny bash(rm:*)\r")
	s.waitFor("deny bash(rm:*) (this session)")
	s.send("/permissions\r")
	s.waitFor("mode default; preset", "allowed here: bash(echo hi)", "denied here: bash(rm:*)")
	s.send("say hi\r")
	scr := s.waitFor("Said hi.", "ready · ")
	if strings.Contains(scr, "wants to run") {
		t.Errorf("/allow bash(echo hi) still asked:\n%s", scr)
	}
	// /deny: the call is refused, x stays.
	s.send("remove x\r")
	scr = s.waitFor("Could not.", "ready · ")
	if !strings.Contains(scr, "✗ denied bash") || strings.Contains(scr, "wants to run") {
		t.Errorf("/deny bash(rm:*) did not refuse at once:\n%s", scr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "x")); err != nil || string(b) != "keep me\n" {
		t.Errorf("x after the denied rm: %q %v", b, err)
	}
	s.send("/tools\r")
	s.waitFor("tools: ", "bash", "edit_file")
	s.send("/cost\r")
	if scr := s.waitFor("tokens: "); strings.Contains(scr, "tokens: 0 input, 0 output") {
		t.Errorf("/cost after two turns:\n%s", scr)
	}
	s.send("/context\r")
	s.waitFor("the last model call read ", "% of the 100000-token window")
	s.send("/compact\r")
	s.waitFor("compacted: the older turns are summarised")
	// /clear: the next prompt starts a new session; the rules stay.
	first := regexp.MustCompile(`session ([0-9a-zA-Z_-]+)`).FindStringSubmatch(s.screen(0))
	s.send("/clear\r")
	s.waitFor("a new session starts with the next prompt")
	s.send("say hi again\r")
	scr = s.waitFor("session ", "Said hi.", "ready · ")
	second := regexp.MustCompile(`session ([0-9a-zA-Z_-]+)`).FindStringSubmatch(scr)
	if first == nil || second == nil || first[1] == second[1] {
		t.Errorf("/clear: sessions %v then %v, want two", first, second)
	}
	s.send("/exit\r")
	if code := s.waitExit(); code != 0 {
		t.Errorf("/exit: %d", code)
	}
}

// TestChatInput: a bracketed paste holding newlines (a terminal sends
// them as CR, the key Enter sends) is kept whole and does not submit;
// Tab completes an @path from the workspace's files; A asks which policy
// file (under strict, never the workspace's) and writes the rule it
// showed there.
func TestChatInput(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "src/deep/main.go"), "package main\n")
	script := scriptFile(t,
		map[string]any{"text": "Got it."},
		map[string]any{"tool_calls": []any{call("b1", "bash", map[string]any{"command": "echo always"})}},
		map[string]any{"text": "Ran."})
	cfg := t.TempDir()
	s := startPTYWith(t, ws, ptyOptions{answer: true, env: []string{"XDG_CONFIG_HOME=" + cfg}}, "--workspace", ws, "--state-dir", state, "--script", script)
	s.waitFor("ready · ")

	s.send("look at @src/d\t")
	s.waitFor("> look at @src/deep/", "src/deep/  src/deep/main.go")
	s.send("\t")
	s.waitFor("> look at @src/deep/main.go")
	s.send("\x03") // Ctrl-C with text: clears the input
	s.waitFor("> type a task")

	var lines []string
	for i := 1; i <= 150; i++ {
		lines = append(lines, "pasted line "+strconv.Itoa(i))
	}
	s.send("\x1b[200~" + strings.Join(lines, "\r") + "\x1b[201~")
	scr := s.waitFor("> pasted line 150")
	if strings.Contains(scr, "working") {
		t.Fatalf("the paste submitted:\n%s", scr)
	}
	s.send("\r")
	s.waitFor("Got it.", "ready · ")
	// The prompt the model got: all 150 lines, one prompt.
	ents, _ := filepath.Glob(filepath.Join(state, "sessions", "*.jsonl"))
	if len(ents) != 1 {
		t.Fatalf("transcripts: %v", ents)
	}
	var prompts []string
	b, _ := os.ReadFile(ents[0])
	for _, l := range strings.Split(string(b), "\n") {
		var rec struct {
			Message *struct {
				Role    string `json:"role"`
				Content []struct{ Type, Text string }
			} `json:"message"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Message != nil && rec.Message.Role == "user" {
			for _, c := range rec.Message.Content {
				if c.Type == "text" {
					prompts = append(prompts, c.Text)
				}
			}
		}
	}
	if want := strings.Join(lines, "\n"); len(prompts) != 1 || prompts[0] != want {
		t.Errorf("the pasted prompt reached the model as %d prompt(s): %.200q", len(prompts), prompts)
	}

	// A: which file? Under strict, not the workspace's (the next start
	// would refuse it): u, the user's; the rule shown is written there.
	s.send("run it\r")
	s.waitFor("? bash wants to run", "[A] allow always")
	s.send("A")
	s.waitFor("allow always bash(echo always) — write it to:", "[u] your policy file", "(no [w]: the strict preset never lets")
	s.send("\r") // Enter chooses nothing
	s.send("w")
	s.waitFor("not written to the workspace's file")
	s.send("u")
	s.waitFor("allowed always (bash(echo always) added to", "Ran.", "ready · ")
	if b, err := os.ReadFile(filepath.Join(cfg, "lite-agent", "policy.toml")); err != nil || !strings.Contains(string(b), `"bash(echo always)"`) {
		t.Errorf("the user's policy file: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".lite-agent", "policy.toml")); err == nil {
		t.Error("w wrote the workspace's policy file under strict")
	}
	s.send("\x04")
	s.waitExit()
}
