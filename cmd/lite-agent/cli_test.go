package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliEnv runs the CLI in-process against a fresh workspace and state dir.
type cliEnv struct {
	t         *testing.T
	ws, state string
}

func newCLIEnv(t *testing.T) *cliEnv {
	return &cliEnv{t: t, ws: t.TempDir(), state: t.TempDir()}
}

func (e *cliEnv) script(js string) string {
	p := filepath.Join(e.t.TempDir(), "script.json")
	if err := os.WriteFile(p, []byte(js), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *cliEnv) run(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	if len(args) > 0 && args[0] == "run" {
		args = append([]string{"run", "--workspace", e.ws, "--state-dir", e.state}, args[1:]...)
	}
	code = runCLI(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const writeScript = `{"turns": [
  {"text": "Writing.", "tool_calls": [{"id": "t1", "name": "write_file", "input": {"path": "a.txt", "content": "alpha\n"}}]},
  {"text": "Done writing."}]}`

func TestRunStreamJSON(t *testing.T) {
	e := newCLIEnv(t)
	code, out, errOut := e.run("", "run", "--script", e.script(writeScript), "--allowed-tools", "write_file", "--output-format", "stream-json", "write a file")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var types []string
	var first, last map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line is not JSON: %q", sc.Text())
		}
		if first == nil {
			first = ev
		}
		last = ev
		types = append(types, ev["type"].(string))
		switch ev["type"] {
		case "tool_call":
			if ev["id"] != "t1" || ev["name"] != "write_file" {
				t.Errorf("tool_call = %v", ev)
			}
		case "tool_result":
			if ev["id"] != "t1" || ev["is_error"] != false || ev["content"] == nil {
				t.Errorf("tool_result = %v", ev)
			}
		}
	}
	if first["type"] != "session_start" || first["session_id"] == "" {
		t.Errorf("first event = %v", first)
	}
	if last["type"] != "result" || last["subtype"] != "success" || last["result"] != "Done writing." {
		t.Errorf("last event = %v", last)
	}
	joined := strings.Join(types, " ")
	for _, want := range []string{"tool_call permission tool_result", "assistant_message"} {
		if !strings.Contains(joined, want) {
			t.Errorf("event types %q lack %q", joined, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "a.txt")); string(b) != "alpha\n" {
		t.Errorf("a.txt = %q", b)
	}
}

func TestRunTextAndJSON(t *testing.T) {
	e := newCLIEnv(t)
	code, out, errOut := e.run("", "run", "--script", e.script(writeScript), "--allowed-tools", "write_file", "--verbose", "-p", "go")
	if code != 0 || out != "Writing.\nDone writing.\n" {
		t.Fatalf("text: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "→ write_file") || !strings.Contains(errOut, "← write_file [ok]") {
		t.Errorf("--verbose stderr = %q", errOut)
	}
	e2 := newCLIEnv(t)
	code, out, _ = e2.run("", "run", "--script", e2.script(writeScript), "--output-format", "json", "go")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("json: exit %d, %q: %v", code, out, err)
	}
	if res["type"] != "result" || res["num_turns"] != 2.0 || res["session_id"] == "" {
		t.Errorf("json result = %v", res)
	}
}

func TestRunPromptFromStdinAndFlagsAfterPrompt(t *testing.T) {
	e := newCLIEnv(t)
	code, out, errOut := e.run("from stdin", "run", "-", "--script", e.script(`{"turns": [{"text": "ok"}]}`))
	if code != 0 || out != "ok\n" {
		t.Fatalf("exit %d %q %q", code, out, errOut)
	}
}

func TestExitCodes(t *testing.T) {
	e := newCLIEnv(t)
	badJSON := e.script("{\"turns\": [\n  {\"text\": \"x\",}\n]}")
	unknownField := e.script(`{"turns": [{"txt": "x"}]}`)
	provErr := e.script(`{"turns": [{"error": "HTTP 500 from upstream"}]}`)
	maxTurns := e.script(`{"turns": [{"tool_calls": [{"name": "list_dir"}]}, {"text": "x"}]}`)
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		wantErr string
	}{
		{"no command", nil, nil, 2, "usage"},
		{"mistyped command", nil, []string{"sesions"}, 2, `unknown command "sesions": did you mean "sessions"?`},
		{"no prompt", nil, []string{"run", "--script", badJSON}, 2, "no prompt"},
		{"bad flag", nil, []string{"run", "--frob", "x"}, 2, "unknown flag --frob"},
		{"bad format", nil, []string{"run", "--output-format", "xml", "hi"}, 2, "--output-format"},
		{"prompt twice", nil, []string{"run", "-p", "a", "b"}, 2, "not both"},
		{"scripted without script", nil, []string{"run", "--provider", "scripted", "hi"}, 2, "needs --script"},
		{"unknown provider", nil, []string{"run", "--provider", "gpt", "hi"}, 2, "unknown provider"},
		{"no api key", map[string]string{"ANTHROPIC_API_KEY": ""}, []string{"run", "hi"}, 1, "set ANTHROPIC_API_KEY"},
		{"script syntax", nil, []string{"run", "--script", badJSON, "hi"}, 1, "line 2, column 17"},
		{"script unknown field", nil, []string{"run", "--script", unknownField, "hi"}, 1, `unknown field "txt"`},
		{"provider error", nil, []string{"run", "--script", provErr, "hi"}, 1, "HTTP 500 from upstream"},
		{"max turns", nil, []string{"run", "--script", maxTurns, "--max-turns", "1", "hi"}, 1, "maximum number of turns"},
		{"unknown tool in --tools", nil, []string{"run", "--script", maxTurns, "--tools", "read_file,nope", "hi"}, 1, "no such tool"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			code, _, errOut := e.run("", c.args...)
			if code != c.code || !strings.Contains(errOut, c.wantErr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, c.code, errOut, c.wantErr)
			}
			if c.code == 1 && strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("an agent error should be one line on stderr: %q", errOut)
			}
		})
	}
}

func TestToolsFlagEmptyMeansNone(t *testing.T) {
	e := newCLIEnv(t)
	code, out, errOut := e.run("", "run", "--script", e.script(`{"turns": [{"text": "ok"}]}`), "--tools", "", "--output-format", "stream-json", "hi")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	if !strings.Contains(first, `"tools":[]`) {
		t.Errorf("session_start = %s", first)
	}
}

// TestRunShowsNetworkDecisions: with --allow-domain, the domain proxy's
// decisions reach stream-json as network events and --verbose as lines,
// a refusal naming what would allow it.
func TestRunShowsNetworkDecisions(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	defer srv.Close()
	granted := srv.Listener.Addr().String()
	other := httptest.NewServer(srv.Config.Handler)
	defer other.Close()
	script := `{"turns": [
	  {"tool_calls": [{"id": "f1", "name": "web_fetch", "input": {"url": "http://` + granted + `/"}}]},
	  {"tool_calls": [{"id": "f2", "name": "web_fetch", "input": {"url": "http://` + other.Listener.Addr().String() + `/"}}]},
	  {"text": "done"}]}`
	e := newCLIEnv(t)
	code, _, errOut := e.run("", "run", "--script", e.script(script), "--allowed-tools", "web_fetch", "--allow-domain", granted, "--verbose", "-p", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "⇄ network: 127.0.0.1:") || !strings.Contains(errOut, " allowed (") || !strings.Contains(errOut, " refused (") {
		t.Errorf("--verbose shows no network decisions: %q", errOut)
	}
	e2 := newCLIEnv(t)
	_, out, _ := e2.run("", "run", "--script", e2.script(script), "--allowed-tools", "web_fetch", "--allow-domain", granted, "--output-format", "stream-json", "-p", "go")
	var decisions []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Type, Decision, Rule string }
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "network" {
			decisions = append(decisions, ev.Decision)
			if ev.Decision == "deny" && !strings.Contains(ev.Rule, "allow-domain") {
				t.Errorf("a refusal does not name the flag that would allow it: %s", line)
			}
		}
	}
	if strings.Join(decisions, " ") != "allow deny" {
		t.Errorf("network events in stream-json: %v, want allow then deny\n%s", decisions, out)
	}
}

// TestFieldIsUnambiguous: a one-line field shows a newline and the
// characters that could stand for one differently.
func TestFieldIsUnambiguous(t *testing.T) {
	seen := map[string]string{}
	for _, s := range []string{"a\nb", "a⏎b", `a\nb`, "a\\\nb"} {
		f := field(s, 80)
		if strings.ContainsAny(f, "\n\r") {
			t.Errorf("field(%q) = %q: not one line", s, f)
		}
		if other, ok := seen[f]; ok {
			t.Errorf("field(%q) and field(%q) both show %q", s, other, f)
		}
		seen[f] = s
	}
}

// TestClaudeCodeHabits: what a Claude Code user types works where it
// means the same here, and a mistake is one line naming the nearest
// command or flag, exit 2.
func TestClaudeCodeHabits(t *testing.T) {
	ok := `{"turns": [{"text": "ok"}]}`
	t.Run("prompt as first argument, no terminal, runs it", func(t *testing.T) {
		e := newCLIEnv(t)
		code, out, errOut := e.run("", "--workspace", e.ws, "--state-dir", e.state, "--script", e.script(ok), "fix the bug")
		if code != 0 || out != "ok\n" {
			t.Fatalf("exit %d %q %q", code, out, errOut)
		}
		code, out, errOut = e.run("", "fix the bug", "--workspace", e.ws, "--state-dir", e.state, "--script", e.script(ok))
		if code != 0 || out != "ok\n" {
			t.Fatalf("prompt first: exit %d %q %q", code, out, errOut)
		}
	})
	t.Run("-p prints and exits", func(t *testing.T) {
		e := newCLIEnv(t)
		for _, args := range [][]string{
			{"-p", "hello", "--script", e.script(ok)},
			{"-p", "--script", e.script(ok), "hello"},
			{"--print", "--output-format", "text", "--script", e.script(ok), "hello"},
			{"run", "-p", "--script", e.script(ok), "hello"},
		} {
			args = append(args, "--workspace", e.ws, "--state-dir", e.state)
			code, out, errOut := e.run("", args...)
			if code != 0 || out != "ok\n" {
				t.Errorf("%q: exit %d %q %q", args, code, out, errOut)
			}
		}
	})
	t.Run("camelCase flags", func(t *testing.T) {
		e := newCLIEnv(t)
		code, out, errOut := e.run("", "run", "--script", e.script(writeScript), "--allowedTools", "write_file", "--maxTurns=5", "go")
		if code != 0 || !strings.Contains(out, "Done writing.") {
			t.Fatalf("exit %d %q %q", code, out, errOut)
		}
		if b, err := os.ReadFile(filepath.Join(e.ws, "a.txt")); err != nil || string(b) != "alpha\n" {
			t.Errorf("--allowedTools did not allow write_file: %q %v", b, err)
		}
	})
	t.Run("continue and resume", func(t *testing.T) {
		e := newCLIEnv(t)
		if code, _, errOut := e.run("", "run", "--script", e.script(ok), "first"); code != 0 {
			t.Fatalf("first run: %s", errOut)
		}
		three := `{"turns": [{"text": "ok"}, {"text": "ok"}, {"text": "ok"}]}` // the session's turns so far
		for _, flagName := range []string{"-c", "--continue"} {
			code, out, errOut := e.run("", "run", flagName, "--output-format", "json", "--script", e.script(three), "again")
			var res map[string]any
			if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
				t.Fatalf("%s: exit %d %q %q", flagName, code, out, errOut)
			}
			if n := strings.Count(sessionsList(t, e), "\n") - 1; n != 1 { // less the header
				t.Errorf("%s started a new session: %d sessions", flagName, n)
			}
		}
		code, _, errOut := e.run("", "run", "-r", "--script", e.script(ok), "x")
		if code != 2 || !strings.Contains(errOut, "needs a session id") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("run -r without id: exit %d %q", code, errOut)
		}
	})
	t.Run("mistakes are one line", func(t *testing.T) {
		e := newCLIEnv(t)
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"run", "--allowed-tool", "x", "hi"}, "unknown flag --allowed-tool (did you mean --allowed-tools?)"},
			{[]string{"run", "--modle", "x", "hi"}, "(did you mean --model?)"},
			{[]string{"chekpoints"}, `did you mean "checkpoints"?`},
			{[]string{"gc", "--max-sise", "1M"}, "(did you mean --max-size?)"},
		} {
			code, _, errOut := e.run("", c.args...)
			if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("%q: exit %d, stderr %q (want one line with %q)", c.args, code, errOut, c.want)
			}
		}
	})
	t.Run("-v and help", func(t *testing.T) {
		e := newCLIEnv(t)
		if code, out, _ := e.run("", "-v"); code != 0 || !strings.HasPrefix(out, "lite-agent ") {
			t.Errorf("-v: exit %d %q", code, out)
		}
		code, _, errOut := e.run("", "run", "--help")
		if code != 0 || !strings.Contains(errOut, "\n  --allowed-tools string") || strings.Contains(errOut, "\n  -allowed-tools") {
			t.Errorf("run --help: exit %d, want double-dash flags:\n%s", code, errOut)
		}
		_, _, chatHelp := e.run("", "chat", "--help")
		for _, refused := range []string{"\n  -p string", "--output-format", "--verbose"} {
			if strings.Contains(chatHelp, refused) {
				t.Errorf("chat --help lists %s, which chat refuses:\n%s", refused, chatHelp)
			}
		}
		if !strings.Contains(chatHelp, "--continue") || !strings.Contains(chatHelp, "--resume") {
			t.Errorf("chat --help lacks --continue/--resume:\n%s", chatHelp)
		}
	})
}

// sessionsList is `lite-agent sessions` of e's state dir.
func sessionsList(t *testing.T, e *cliEnv) string {
	t.Helper()
	code, out, errOut := e.run("", "sessions", "--state-dir", e.state)
	if code != 0 {
		t.Fatalf("sessions: %s", errOut)
	}
	return out
}
