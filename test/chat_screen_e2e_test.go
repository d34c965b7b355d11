package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 27 on the screen: each numbered item of the issue driven through
// the binary in a tmux pane (tmux_helpers_test.go) at 80x24 and at one
// other size, the screen captured as a person sees it.

// screenSizes are the sizes each item runs at: the 80x24, and a
// narrow or a wide terminal.
var screenSizes = []struct{ cols, rows int }{{80, 24}, {50, 24}}

// transcriptPrompts are the prompts (user text) of the one session in
// state, as the model got them.
func transcriptPrompts(t *testing.T, state string) []string {
	t.Helper()
	ents, _ := filepath.Glob(filepath.Join(state, "sessions", "*.jsonl"))
	var prompts []string
	for _, e := range ents {
		b, _ := os.ReadFile(e)
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
	}
	return prompts
}

// TestScreenAllowAlwaysNeverBricks (item 1): under the default strict
// preset, "allow always" never offers the workspace's policy file (the
// next start would refuse it) and says so; w writes nothing; u writes the
// rule to the user's file; the next start loads it and the rule holds —
// the same command runs without a question.
func TestScreenAllowAlwaysNeverBricks(t *testing.T) {
	for _, size := range screenSizes {
		t.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(t *testing.T) {
			ws, state, cfg := t.TempDir(), t.TempDir(), t.TempDir()
			script := scriptFile(t,
				map[string]any{"tool_calls": []any{call("b1", "bash", map[string]any{"command": "echo always-ran"})}},
				map[string]any{"text": "Ran it."})
			env := tmuxOptions{env: []string{"XDG_CONFIG_HOME=" + cfg}}
			s := startTmux(t, ws, size.cols, size.rows, env, "--workspace", ws, "--state-dir", state, "--script", script)
			s.waitFor("ready · ")
			s.enter("run it")
			s.waitFor("? bash wants to run", "[A] allow always")
			s.typeText("A")
			scr := s.waitFor("write it to:", "[u] your policy file", "(no [w]: the strict preset never lets", "(the next start would refuse the file))", "[Esc] back")
			if shows(scr, "[w] this workspace") {
				t.Errorf("[w] is offered under strict:\n%s", frame(scr))
			}
			s.checkScreen(scr)
			s.typeText("w")
			s.waitFor("not written to the workspace's file")
			s.typeText("u")
			s.waitFor("allowed always", "Ran it.", "ready · ")
			if _, err := os.Stat(filepath.Join(ws, ".lite-agent", "policy.toml")); err == nil {
				t.Error("the workspace's policy file was written")
			}
			if b, err := os.ReadFile(filepath.Join(cfg, "lite-agent", "policy.toml")); err != nil || !strings.Contains(string(b), `"bash(echo always-ran)"`) {
				t.Errorf("the user's policy file: %q %v", b, err)
			}
			s.keys("C-d")
			if code := s.waitExit(); code != 0 {
				t.Fatalf("exit %d", code)
			}
			// The next start loads the rule: the call runs unasked.
			again := scriptFile(t,
				map[string]any{"tool_calls": []any{call("b2", "bash", map[string]any{"command": "echo always-ran"})}},
				map[string]any{"text": "Ran again."})
			n := startTmux(t, ws, size.cols, size.rows, env, "--workspace", ws, "--state-dir", state, "--script", again)
			n.waitFor("ready · ")
			n.enter("again")
			scr = n.waitFor("Ran again.", "ready · ")
			if shows(scr, "wants to run") {
				t.Errorf("the rule written always did not hold at the next start:\n%s", frame(scr))
			}
			n.checkScreen(scr)
		})
	}
}

// TestScreenCommandOutput (item 2): a running command shows the latest
// lines of its output under its line as they come (it waits for a file
// the test writes once the screen shows them: the output was live), its
// first lines stay in the scrollback when it ends with a key to show the
// rest, ctrl+o shows the whole, and a failing command says its exit code
// with its output under it.
func TestScreenCommandOutput(t *testing.T) {
	for _, size := range screenSizes {
		t.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			script := scriptFile(t,
				map[string]any{"tool_calls": []any{call("b1", "bash", map[string]any{"command": "for i in 1 2 3; do echo step-$i; done; while [ ! -e go ]; do sleep 0.05; done; for i in $(seq 4 12); do echo step-$i; done"})}},
				map[string]any{"text": "All built."},
				map[string]any{"tool_calls": []any{call("b2", "bash", map[string]any{"command": "echo oops-printed; exit 3"})}},
				map[string]any{"text": "It failed."})
			s := startTmux(t, ws, size.cols, size.rows, tmuxOptions{}, "--workspace", ws, "--state-dir", state, "--script", script, "--allowed-tools", "bash")
			s.waitFor("ready · ")
			s.enter("build it")
			// Live: the output so far, under the running call.
			scr := s.waitFor("running", "│ step-1", "│ step-3")
			if strings.Contains(scr, "step-4") {
				t.Fatalf("step-4 before the test let the command go on:\n%s", frame(scr))
			}
			s.checkScreen(scr)
			writeFile(t, filepath.Join(ws, "go"), "")
			scr = s.waitFor("All built.", "ready · ")
			// After: the first lines, the rest folded behind ctrl+o.
			if !shows(scr, "│ step-1") || !shows(scr, "ctrl+o shows the whole output") || strings.Contains(scr, "step-12") {
				t.Errorf("the finished command's output is not its first lines with ctrl+o for the rest:\n%s", frame(scr))
			}
			s.checkScreen(scr)
			s.keys("C-o")
			s.waitFor("the whole output:", "│ step-12")
			s.enter("break it")
			scr = s.waitFor("✗ exit code 3", "│ oops-printed", "It failed.", "ready · ")
			s.checkScreen(scr)
		})
	}
}

// TestScreenAttachFiles (item 3): @path attaches the file, bounded: a
// file of 3,000 lines goes with its first 2,000 and the screen says so
// (before: "(2003 lines)", the note counted as lines); past 256 KiB in
// all, a file is not attached and the screen says why; the model gets
// exactly what was said.
func TestScreenAttachFiles(t *testing.T) {
	for _, size := range screenSizes {
		t.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			var big, wide strings.Builder
			for i := 1; i <= 3000; i++ {
				fmt.Fprintf(&big, "big line %d\n", i)
			}
			for i := 1; i <= 1500; i++ {
				fmt.Fprintf(&wide, "%04d %s\n", i, strings.Repeat("w", 100))
			}
			writeFile(t, filepath.Join(ws, "big.txt"), big.String())
			writeFile(t, filepath.Join(ws, "wide1.txt"), wide.String())
			writeFile(t, filepath.Join(ws, "wide2.txt"), wide.String())
			script := scriptFile(t, map[string]any{"text": "Read them."})
			s := startTmux(t, ws, size.cols, size.rows, tmuxOptions{}, "--workspace", ws, "--state-dir", state, "--script", script)
			s.waitFor("ready · ")
			s.enter("compare @big.txt @wide1.txt @wide2.txt")
			scr := s.waitFor("attached @big.txt: its first 2000 of 3000 lines", "attached @wide1.txt (1500 lines)",
				"@wide2.txt not attached: the prompt's attachments would pass 256 KiB", "Read them.", "ready · ")
			s.checkScreen(scr)
			prompts := transcriptPrompts(t, state)
			if len(prompts) != 1 {
				t.Fatalf("prompts: %d", len(prompts))
			}
			p := prompts[0]
			for _, want := range []string{`<attached-file path="big.txt">`, "big line 2000\n", `<attached-file path="wide1.txt">`} {
				if !strings.Contains(p, want) {
					t.Errorf("the prompt lacks %q", want)
				}
			}
			if strings.Contains(p, "big line 2001\n") || strings.Contains(p, `path="wide2.txt"`) {
				t.Errorf("the prompt holds more than the screen said")
			}
		})
	}
}

// TestScreenResumeShowsConversation (item 5): --resume ID, the picker
// (-r with no id) and --continue open on the earlier conversation,
// wrapped at the screen's width.
func TestScreenResumeShowsConversation(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	answer := "The answer is forty-two, reached after a careful deliberation over several considerable steps."
	script := scriptFile(t,
		map[string]any{"text": "Listing.", "tool_calls": []any{call("l1", "list_dir", map[string]any{"path": "."})}},
		map[string]any{"text": answer})
	stdout, stderr, code := cliRun(t, ws, "run", "--workspace", ws, "--state-dir", state, "--script", script, "--output-format", "stream-json", "what is the answer")
	if code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	id := regexp.MustCompile(`"session_id":"([^"]+)"`).FindSubmatch(stdout)
	if id == nil {
		t.Fatalf("no session id in %s", stdout)
	}
	for _, size := range screenSizes {
		for _, how := range [][]string{{"--resume", string(id[1])}, {"-r"}, {"--continue"}} {
			t.Run(fmt.Sprintf("%dx%d %s", size.cols, size.rows, how[0]), func(t *testing.T) {
				s := startTmux(t, ws, size.cols, size.rows, tmuxOptions{}, append(how, "--workspace", ws, "--state-dir", state, "--script", script)...)
				if how[0] == "-r" {
					s.waitFor("resume which session?", string(id[1])[:8], "what is the answer")
					s.keys("Enter")
				}
				scr := s.waitFor("> what is the answer", "● list_dir", "forty-two,", "earlier conversation above", "ready · ")
				s.wordsWhole(scr, answer)
				s.checkScreen(scr)
			})
		}
	}
}

// TestScreenClaudeCodeHabits (item 6): `lite-agent chat -r` with no id
// opens the picker; `lite-agent "a prompt"` opens the session with it.
func TestScreenClaudeCodeHabits(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := scriptFile(t, map[string]any{"text": "First answer."}, map[string]any{"text": "Second answer."})
	for _, size := range screenSizes {
		t.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(t *testing.T) {
			s := startTmux(t, ws, size.cols, size.rows, tmuxOptions{}, "--workspace", ws, "--state-dir", state, "--script", script, "fix the bug")
			s.waitFor("> fix the bug", "First answer.", "ready · ")
			s.keys("C-d")
			if code := s.waitExit(); code != 0 {
				t.Fatalf("exit %d", code)
			}
			r := startTmux(t, ws, size.cols, size.rows, tmuxOptions{}, "chat", "-r", "--workspace", ws, "--state-dir", state, "--script", script)
			r.waitFor("resume which session?", "fix the bug")
			r.keys("Enter")
			scr := r.waitFor("> fix the bug", "First answer.", "earlier conversation above", "ready · ")
			r.checkScreen(scr)
		})
	}
}

// TestScreenModelTrouble (item 7): against a local server speaking the
// Anthropic API, the screen shows each retry with its number and wait —
// an overloaded answer (529, retry-after 1 s), then a stream that stalls
// after its start (the idle timeout, 1 s here) — then the answer; and a
// 200 answer that is not an event stream (a proxy's HTML page) is named
// as such.
func TestScreenModelTrouble(t *testing.T) {
	for _, size := range screenSizes {
		t.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				switch n.Add(1) {
				case 1:
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("retry-after", "1")
					w.WriteHeader(529)
					io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
				case 2:
					// The stream starts, then nothing more comes.
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(200)
					io.WriteString(w, "event: message_start\ndata: "+`{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":"fake","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`+"\n\n")
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
					case <-time.After(30 * time.Second):
					}
				case 3:
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(200)
					for _, ev := range []string{
						`{"type":"message_start","message":{"id":"m2","type":"message","role":"assistant","model":"fake","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
						`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
						`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Recovered after the retries."}}`,
						`{"type":"content_block_stop","index":0}`,
						`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`,
						`{"type":"message_stop"}`,
					} {
						var typ struct{ Type string }
						json.Unmarshal([]byte(ev), &typ)
						fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, ev)
					}
				default:
					w.Header().Set("Content-Type", "text/html")
					w.WriteHeader(200)
					io.WriteString(w, "<html><body>Please sign in to the corporate proxy</body></html>")
				}
			}))
			defer srv.Close()
			ws, state := t.TempDir(), t.TempDir()
			s := startTmux(t, ws, size.cols, size.rows, tmuxOptions{env: []string{"ANTHROPIC_API_KEY=test-key", "LITE_AGENT_STREAM_IDLE_TIMEOUT=1s"}},
				"--workspace", ws, "--state-dir", state, "--base-url", srv.URL)
			s.waitFor("ready · ")
			s.enter("hello")
			scr := s.waitFor("retrying the model call 2/5 in 1s:", "Overloaded", "retrying the model call 3/5 in", "stream idle timeout", "Recovered after the retries.", "ready · ")
			s.checkScreen(scr)
			s.enter("again")
			scr = s.waitFor("answered 200 with text/html instead of an event stream", "Please sign in", "ready · ")
			s.checkScreen(scr)
		})
	}
}

// TestScreenDenials (item 8): "a" holds for the session's later prompts
// and /permissions lists it; a deny rule's refusal is one line; "n"
// denies in one line and the agent goes on; Esc denies and stops the turn
// — the model is not called again, the session goes on.
func TestScreenDenials(t *testing.T) {
	for _, size := range screenSizes {
		t.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			script := scriptFile(t,
				map[string]any{"tool_calls": []any{call("b1", "bash", map[string]any{"command": "echo first"})}},
				map[string]any{"text": "Ran once."},
				map[string]any{"tool_calls": []any{call("b2", "bash", map[string]any{"command": "echo first"})}},
				map[string]any{"text": "Ran twice."},
				map[string]any{"tool_calls": []any{call("r1", "bash", map[string]any{"command": "rm -f z-file"})}},
				map[string]any{"text": "Refused by the rule."},
				map[string]any{"tool_calls": []any{call("b3", "bash", map[string]any{"command": "touch x-file"})}},
				map[string]any{"text": "Went on without it."},
				map[string]any{"tool_calls": []any{call("b4", "bash", map[string]any{"command": "touch y-file"})}},
				map[string]any{"text": "Never said: the turn stopped."},
				map[string]any{"text": "Back again."})
			writeFile(t, filepath.Join(ws, "z-file"), "keep\n")
			s := startTmux(t, ws, size.cols, size.rows, tmuxOptions{}, "--workspace", ws, "--state-dir", state, "--script", script, "--disallowed-tools", "bash(rm:*)")
			s.waitFor("ready · ")
			s.enter("one")
			s.waitFor("? bash wants to run", "[a] allow for this session")
			s.typeText("a")
			s.waitFor("allowed for this session", "Ran once.", "ready · ")
			s.enter("two")
			scr := s.waitFor("Ran twice.", "ready · ")
			if strings.Count(scr, "wants to run") > 0 {
				t.Errorf("the session's allow did not hold:\n%s", frame(scr))
			}
			s.enter("/permissions")
			s.waitFor("allowed here: bash(echo first)")
			// A deny rule's refusal: one line (it was two: the denial, and
			// the call's error result saying it again).
			s.enter("remove z")
			scr = s.waitFor("Refused by the rule.", "ready · ")
			if c := strings.Count(flat(scr), `"bash(rm:*)"`); c != 1 {
				t.Errorf("the rule's denial is said %d times, want once:\n%s", c, frame(scr))
			}
			s.enter("three")
			s.waitFor("? bash wants to run", "[n] deny, the agent goes on", "[Esc] deny and stop the turn")
			s.typeText("n")
			scr = s.waitFor("Went on without it.", "ready · ")
			if c := strings.Count(scr, "touch x-file"); c != 1 {
				t.Errorf("the denied call shows %d times, want once:\n%s", c, frame(scr))
			}
			s.enter("four")
			s.waitFor("? bash wants to run", "touch y-file")
			s.keys("Escape")
			scr = s.waitFor("interrupted", "ready · ")
			if shows(scr, "Never said") {
				t.Errorf("the turn went on after Esc:\n%s", frame(scr))
			}
			for _, f := range []string{"x-file", "y-file"} {
				if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
					t.Errorf("the denied command made %s", f)
				}
			}
			s.checkScreen(scr)
		})
	}
}

// TestScreenRewindByPrompts (item 9): /rewind lists the prompts typed,
// each with the files its turn changed; c shows the checkpoints and back;
// going back to a prompt says so in one line (no internal paths, no
// command to run elsewhere), restores the files and puts the prompt back
// in the input.
func TestScreenRewindByPrompts(t *testing.T) {
	for _, size := range screenSizes {
		t.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(ws, "a.txt"), "hello\nsecond line\n")
			script := scriptFile(t,
				map[string]any{"tool_calls": []any{call("e1", "edit_file", map[string]any{"path": "a.txt", "old_string": "hello\n", "new_string": "hello world\n"})}},
				map[string]any{"text": "Edited a."},
				map[string]any{"tool_calls": []any{call("w1", "write_file", map[string]any{"path": "b.txt", "content": "one\ntwo\nthree\n"})}},
				map[string]any{"text": "Wrote b."})
			s := startTmux(t, ws, size.cols, size.rows, tmuxOptions{}, "--workspace", ws, "--state-dir", state, "--script", script, "--allowed-tools", "edit_file,write_file")
			s.waitFor("ready · ")
			s.enter("make the greeting louder")
			s.waitFor("Edited a.", "ready · ")
			s.enter("add a file b")
			s.waitFor("Wrote b.", "ready · ")
			s.enter("/rewind")
			s.waitFor("rewind to before which prompt?", "make the greeting louder", "(a.txt +1 −1)", "› add a file b", "(b.txt +3)")
			s.typeText("c")
			s.waitFor("rewind to which checkpoint?", "start of user turn 0")
			s.typeText("c")
			s.waitFor("rewind to before which prompt?", "› add a file b")
			s.keys("Enter")
			scr := s.waitFor(`rewound to before "add a file b": 1 file restored`, "/undo takes it back", "> add a file b", "ready · ")
			for _, bad := range []string{".jsonl.cut-", "lite-agent run --resume", "lite-agent rewind"} {
				if shows(scr, bad) {
					t.Errorf("the rewind's line shows %q:\n%s", bad, frame(scr))
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "b.txt")); err == nil {
				t.Error("b.txt is still there after the rewind to before the prompt that wrote it")
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hello world\nsecond line\n" {
				t.Errorf("a.txt after the rewind: %q, want the first prompt's edit kept", b)
			}
			s.checkScreen(scr)
		})
	}
}

// TestScreenCommandMenu (item 10): typing "/" lists the commands with
// what they do; more letters filter them; ↓ and Tab complete the chosen
// one; Enter on a half-typed command completes it instead of sending.
func TestScreenCommandMenu(t *testing.T) {
	for _, size := range screenSizes {
		t.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			script := scriptFile(t, map[string]any{"text": "unused"})
			s := startTmux(t, ws, size.cols, size.rows, tmuxOptions{}, "--workspace", ws, "--state-dir", state, "--script", script)
			s.waitFor("ready · ")
			s.typeText("/")
			s.waitFor("› /agents", "/checkpoints", "Tab completes")
			s.typeText("re")
			scr := s.waitFor("› /resume", "/rewind")
			if strings.Contains(scr, "/checkpoints") {
				t.Errorf("the menu does not filter:\n%s", frame(scr))
			}
			s.keys("Down", "Tab")
			s.waitFor("> /rewind ")
			s.waitGone("Tab completes")
			s.keys("C-u")
			s.typeText("/mo")
			s.waitFor("› /mode", "/model")
			s.keys("Enter")
			s.waitFor("> /mode ")
			s.keys("Enter")
			scr = s.waitFor("mode: default", "ready · ")
			s.checkScreen(scr)
		})
	}
}

// TestScreenWrapsAndRedraws (item 4): prose, /help, an approval's diff
// and the status line are wrapped at word boundaries (the end of a long
// diff line shows); shrinking the terminal to 50 columns and widening it
// to 120 redraws one input and one status line, the words whole; leaving
// leaves no piece of the status line behind.
func TestScreenWrapsAndRedraws(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "a.txt"), "hello\nsecond line\n")
	prose := "Reading the file first. This sentence is deliberately long so that it must wrap at a word boundary on every terminal width tested here, never inside a word."
	long := "hello world, this is a much longer line that goes past the edge of an eighty column terminal and ends with THE-END-MARKER\n"
	script := scriptFile(t,
		map[string]any{"text": prose, "tool_calls": []any{call("e1", "edit_file", map[string]any{"path": "a.txt", "old_string": "hello\n", "new_string": long})}},
		map[string]any{"text": "Edited the file."})
	s := startTmux(t, ws, 80, 24, tmuxOptions{}, "--workspace", ws, "--state-dir", state, "--script", script, "--context-window", "200000")
	s.waitFor("ready · ")
	s.enter("edit it")
	scr := s.waitFor("? edit_file wants to run", "THE-END-MARKER", "[y] allow once")
	// The status line, longer than 80 columns while a turn runs, whole.
	// (A row ends between two items, without the " · " between them.)
	if !regexp.MustCompile(`working \(Esc stops\)( ·)? scripted( ·)? mode default( ·)? net none( ·)? ctx [0-9.k]+/200.0k( ·)? tokens [0-9.k]+ in, [0-9.k]+ out`).MatchString(flat(scr)) {
		t.Errorf("the status line is not whole at 80 columns:\n%s", frame(scr))
	}
	s.wordsWhole(scr, prose)
	s.checkScreen(scr)
	if strings.Contains(scr, "…") {
		t.Errorf("a diff line is cut:\n%s", frame(scr))
	}
	s.typeText("y")
	s.waitFor("Edited the file.", "ready · ")
	s.enter("/help")
	help := "/rewind [files|conversation|both] [N]: go back to before a prompt (a picker; c there lists the checkpoints), or to checkpoint N; files and conversation by default"
	scr = s.waitFor("/undo", "Ctrl+O", "ready · ")
	s.wordsWhole(scr, help)
	for _, size := range []struct{ cols, rows int }{{50, 24}, {120, 40}, {80, 24}} {
		s.resize(size.cols, size.rows)
		// The redraw clears the screen and then prints the log's end: wait
		// for both, or a capture between them shows the view alone.
		redrawn := "the whole output of the last command shown folded"
		scr = s.waitUntil("one input and one status line under the redrawn /help, its words whole", func(scr string) bool {
			return strings.Count(scr, "ready · ") == 1 && strings.Count(scr, "> type a task") == 1 && len(brokenWords(scr, redrawn)) == 0
		})
		s.checkScreen(scr)
	}
	s.keys("C-d")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	scr = s.capture()
	if strings.Contains(scr, "ready · ") || strings.Contains(scr, "> type a task") || strings.Contains(scr, "tokens ") {
		t.Errorf("the view is left on the screen after the exit:\n%s", frame(scr))
	}
	if !shows(scr, "continue with: lite-agent --continue") {
		t.Errorf("no closing line:\n%s", frame(scr))
	}
}
