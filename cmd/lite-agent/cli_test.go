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
		{"unknown command", nil, []string{"frobnicate"}, 2, "unknown command"},
		{"no prompt", nil, []string{"run", "--script", badJSON}, 2, "no prompt"},
		{"bad flag", nil, []string{"run", "--frob", "x"}, 2, "flag provided but not defined"},
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
