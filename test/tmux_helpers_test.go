package test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The screen tests (issue 27) run the binary in a tmux pane and read the
// pane as a person sees it: `tmux capture-pane -p` is the terminal's
// screen after tmux interpreted every byte — cursor moves, erases, line
// wraps, the reflow of a resize — so a leftover fragment, a duplicated
// status line or a line cut at the edge shows, where the raw output log
// of the pty tests (chat_e2e_test.go) holds only the bytes written.
//
// Each test starts a tmux server of its own (tmux -L with a socket name
// of this process and test, -f /dev/null: no user configuration), with
// the status bar off so that the pane is the whole window, and kills that
// server, and only it, when the test ends.

// tmuxScreen is the binary running in a tmux pane.
type tmuxScreen struct {
	t      *testing.T
	socket string
	// sockDir holds the server's socket (TMUX_TMPDIR): the test's own
	// temporary directory, removed with it.
	sockDir string
	cols    int
	rows    int
	// last is the screen the last wait captured.
	last string
}

var tmuxServers atomic.Int64

// tmuxOptions: env is added to the binary's environment.
type tmuxOptions struct {
	env []string
}

// startTmux runs the binary with args in dir, in a cols×rows pane.
func startTmux(t *testing.T, dir string, cols, rows int, o tmuxOptions, args ...string) *tmuxScreen {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: this test would drive the interactive mode in a tmux pane and check the screen as captured (tmux capture-pane); install it with make deps")
	}
	s := &tmuxScreen{t: t, socket: fmt.Sprintf("la-%d-%d", os.Getpid(), tmuxServers.Add(1)), sockDir: t.TempDir(), cols: cols, rows: rows}
	// A placeholder first, so that the options are set before the binary
	// runs: no status bar (the pane is the whole window), and the pane
	// stays after the binary exits, to read its last screen.
	s.tmux("new-session", "-d", "-s", "main", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), "sleep 1000000",
		";", "set-option", "-g", "status", "off",
		";", "set-option", "-g", "remain-on-exit", "on")
	t.Cleanup(func() {
		// Only this test's server: its socket is its own.
		kill := exec.Command("tmux", "-L", s.socket, "kill-server")
		kill.Env = append(os.Environ(), "TMUX_TMPDIR="+s.sockDir)
		kill.Run()
	})
	// XDG_CONFIG_HOME, XDG_STATE_HOME: the user policy file and the trust
	// store are the test's, never the machine's. TERM as tmux's own.
	env := append([]string{"NO_COLOR=1", "TERM=tmux-256color", "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}, o.env...)
	cmd := []string{"respawn-pane", "-k", "-t", "main", "-c", dir}
	for _, e := range env {
		cmd = append(cmd, "-e", e)
	}
	cmd = append(cmd, "--", binary)
	s.tmux(append(cmd, args...)...)
	return s
}

// tmux runs a tmux command on this test's server.
func (s *tmuxScreen) tmux(args ...string) string {
	s.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", s.socket, "-f", "/dev/null"}, args...)...)
	cmd.Env = append(os.Environ(), "TMUX_TMPDIR="+s.sockDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture is the pane's screen now: one line per row, without trailing
// spaces.
func (s *tmuxScreen) capture() string {
	s.t.Helper()
	return strings.TrimRight(s.tmux("capture-pane", "-p", "-t", "main"), "\n")
}

// waitUntil polls the screen until ok says it is as wanted, for at most
// 20 s, and returns it; what names the wait in the failure.
func (s *tmuxScreen) waitUntil(what string, ok func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		scr := s.capture()
		if ok(scr) {
			s.last = scr
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%dx%d: the screen never showed %s; it shows:\n%s", s.cols, s.rows, what, frame(scr))
		}
		time.Sleep(20 * time.Millisecond) // a poll interval, not the assertion
	}
}

// shows reports whether the screen shows text: on one row, or across
// rows where the screen wrapped it at a space (the rows read as one line,
// their indentation dropped). A word broken inside does not match.
func shows(scr, text string) bool {
	return strings.Contains(scr, text) || strings.Contains(flat(scr), strings.Join(strings.Fields(text), " "))
}

// flat is the screen's rows joined with one space, runs of spaces as one.
func flat(scr string) string {
	return strings.Join(strings.Fields(scr), " ")
}

// waitFor waits until the screen shows each of want.
func (s *tmuxScreen) waitFor(want ...string) string {
	s.t.Helper()
	return s.waitUntil(fmt.Sprintf("%q", want), func(scr string) bool {
		for _, w := range want {
			if !shows(scr, w) {
				return false
			}
		}
		return true
	})
}

// waitGone waits until the screen shows none of gone.
func (s *tmuxScreen) waitGone(gone ...string) string {
	s.t.Helper()
	return s.waitUntil(fmt.Sprintf("no %q", gone), func(scr string) bool {
		for _, g := range gone {
			if shows(scr, g) {
				return false
			}
		}
		return true
	})
}

// typeText types text literally; keys sends tmux key names (Enter,
// Escape, C-c, Tab, BTab, Up, Down).
func (s *tmuxScreen) typeText(text string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", "main", "-l", text)
}

func (s *tmuxScreen) keys(names ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys", "-t", "main"}, names...)...)
}

// enter types text and Enter.
func (s *tmuxScreen) enter(text string) {
	s.t.Helper()
	s.typeText(text)
	s.keys("Enter")
}

// resize makes the window cols×rows, as a person dragging the terminal.
func (s *tmuxScreen) resize(cols, rows int) {
	s.t.Helper()
	s.tmux("resize-window", "-t", "main", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows))
	s.cols, s.rows = cols, rows
}

// waitExit waits until the binary exited and returns its status.
func (s *tmuxScreen) waitExit() int {
	s.t.Helper()
	var status string
	// The tmux server is this test's own (its socket is the test's).
	server, _ := strconv.Atoi(strings.TrimSpace(s.tmux("display-message", "-p", "#{pid}")))
	s.waitUntil("the binary's exit", func(string) bool {
		out := strings.Fields(s.tmux("display-message", "-p", "-t", "main", "#{pane_dead} #{pane_dead_status}"))
		if len(out) == 2 && out[0] == "1" {
			status = out[1]
			return true
		}
		// tmux 3.3a sometimes misses the SIGCHLD of a pane's exit: the
		// binary is a zombie nobody reaps and the pane never dies (seen
		// one run in three on a loaded machine; a SIGCHLD sent by hand
		// then reaps it). Its handler reaps with WNOHANG, so a repeated
		// SIGCHLD changes nothing when nothing exited.
		if server > 0 {
			syscall.Kill(server, syscall.SIGCHLD)
		}
		return false
	})
	code, _ := strconv.Atoi(status)
	return code
}

// frame shows a screen in a failure message with its edges marked.
func frame(scr string) string {
	lines := strings.Split(scr, "\n")
	for i, l := range lines {
		lines[i] = "|" + l + "|"
	}
	return strings.Join(lines, "\n")
}

// checkScreen fails when the screen shows what a broken redraw leaves:
// a row wider than the pane (it cannot be: tmux wraps; a row exactly as
// wide as the pane is what a line longer than the pane leaves, unless
// the line was wrapped on purpose), more than one status line or one
// input prompt, or text of a status line outside the last rows.
func (s *tmuxScreen) checkScreen(scr string) {
	s.t.Helper()
	lines := strings.Split(scr, "\n")
	status, prompts := 0, 0
	for _, l := range lines {
		if strings.HasPrefix(l, "ready · ") || strings.HasPrefix(l, "working (Esc stops) · ") {
			status++
		}
		if strings.HasPrefix(l, "> type a task") {
			prompts++
		}
	}
	if status > 1 || prompts > 1 {
		s.t.Errorf("%dx%d: %d status lines and %d input prompts on the screen, want at most one each:\n%s", s.cols, s.rows, status, prompts, frame(scr))
	}
}

// wordsWhole fails unless each word of text (of 4 letters or more)
// shows whole on one row: a word broken across rows means the line was
// cut by the terminal rather than wrapped at a word boundary.
func (s *tmuxScreen) wordsWhole(scr, text string) {
	s.t.Helper()
	if broken := brokenWords(scr, text); len(broken) > 0 {
		s.t.Errorf("%dx%d: %q is not whole on any row (broken mid-word?):\n%s", s.cols, s.rows, broken[0], frame(scr))
	}
}

// brokenWords is the words of text (of 4 letters or more) that show
// whole on no row of scr.
func brokenWords(scr, text string) []string {
	var broken []string
	for _, w := range strings.Fields(text) {
		if len([]rune(w)) >= 4 && !strings.Contains(scr, w) {
			broken = append(broken, w)
		}
	}
	return broken
}
