package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/tools"
)

// TestRunExtrasFlagErrors: the MCP, subagent, budget and output-schema
// flags fail clearly, naming the flag and the file.
func TestRunExtrasFlagErrors(t *testing.T) {
	e := newCLIEnv(t)
	ok := e.script(`{"turns": [{"text": "ok"}]}`)
	badJSON := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(badJSON, []byte(`{"mcpServers": {"x": `), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"negative budget", []string{"--max-budget-tokens", "-5"}, 2, "--max-budget-tokens must not be negative"},
		{"negative timeout", []string{"--mcp-connect-timeout", "-1s"}, 2, "--mcp-connect-timeout must not be negative"},
		{"mcp config missing", []string{"--mcp-config", "/nonexistent/mcp.json"}, 1, "--mcp-config: open /nonexistent/mcp.json"},
		{"mcp config bad JSON", []string{"--mcp-config", badJSON}, 1, "--mcp-config: " + badJSON},
		{"mcp config bad server", []string{"--mcp-config", `{"mcpServers": {"x": {"type": "ftp"}}}`}, 1, `unknown type "ftp"`},
		{"agents misspelt key", []string{"--agents", `{"a": {"description": "d", "prompt": "p", "tool": ["bash"]}}`}, 1, `unknown field "tool"`},
		{"agents empty", []string{"--agents", `{}`}, 1, "no agent is defined"},
		{"agent without prompt", []string{"--agents", `{"a": {"description": "d"}}`}, 1, "Prompt is empty"},
		{"schema not an object", []string{"--output-schema", `{"type": "array"}`}, 1, "must describe a JSON object"},
		{"schema missing", []string{"--output-schema", "/nonexistent/schema.json"}, 1, "--output-schema: open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--script", ok}, c.args...)
			code, _, errOut := e.run("", append(args, "hi")...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, c.code, errOut, c.want)
			}
		})
	}
}

// TestRunTextShowsSubagentsOnStderr: in text output stdout is the main
// agent's answer; a subagent's text and calls go to stderr, tagged.
func TestRunTextShowsSubagentsOnStderr(t *testing.T) {
	e := newCLIEnv(t)
	script := e.script(`{
	  "turns": [
	    {"text": "Asking.", "tool_calls": [{"id": "a1", "name": "agent", "input": {"agent": "helper", "prompt": "list"}}]},
	    {"text": "All listed."}],
	  "agents": {"helper": {"turns": [
	    {"text": "Listing now.", "tool_calls": [{"id": "l1", "name": "list_dir", "input": {}}]},
	    {"text": "Nothing there."}]}}}`)
	agents := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(agents, []byte(`{"helper": {"description": "Lists.", "prompt": "You list.", "tools": ["list_dir"], "maxTurns": 3}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := e.run("", "run", "--script", script, "--agents", agents, "--verbose", "go")
	if code != 0 || out != "Asking.\nAll listed.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, want := range []string{"] Listing now.", "] → list_dir", "] ← list_dir [ok]", "← agent [ok] Nothing there."} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(errOut, "[helper-") {
		t.Errorf("subagent lines are not tagged with its id:\n%s", errOut)
	}

	// json output: the result alone, with the budget's usage.
	code, out, _ = e.run("", "run", "--script", script, "--agents", agents, "--max-budget-tokens", "100000", "--output-format", "json", "go")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res["subtype"] != "success" || res["result"] != "All listed." {
		t.Errorf("json: exit %d, %s", code, out)
	}
}

// TestWorkspaceAgentsFileMayNotWiden: an --agents file inside the
// workspace (the agent could have written it) may not give a subagent a
// permission mode wider than the person chose; the same file outside
// the workspace may, and a workspace file without a mode, or with plan,
// is accepted.
func TestWorkspaceAgentsFileMayNotWiden(t *testing.T) {
	e := newCLIEnv(t)
	ok := e.script(`{"turns": [{"text": "ok"}]}`)
	def := func(mode string) string {
		d := map[string]any{"helper": map[string]any{"description": "d", "prompt": "p", "permissionMode": mode}}
		b, _ := json.Marshal(d)
		return string(b)
	}
	for _, c := range []struct {
		mode, where string
		refused     bool
	}{
		{"acceptEdits", "workspace", true},
		{"dontAsk", "workspace", true},
		{"acceptEdits", "outside", false},
		{"plan", "workspace", false},
		{"", "workspace", false},
	} {
		dir := t.TempDir()
		if c.where == "workspace" {
			dir = filepath.Join(e.ws, ".agents")
			os.MkdirAll(dir, 0o755)
		}
		file := filepath.Join(dir, "agents-"+c.mode+".json")
		if err := os.WriteFile(file, []byte(def(c.mode)), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := e.run("", "run", "--script", ok, "--agents", file, "hi")
		switch {
		case c.refused && (code == 0 || !strings.Contains(errOut, "could have written it")):
			t.Errorf("mode %q from the %s: exit %d, stderr %q; want a refusal", c.mode, c.where, code, errOut)
		case !c.refused && code != 0:
			t.Errorf("mode %q from the %s: exit %d, stderr %q; want it accepted", c.mode, c.where, code, errOut)
		}
	}
}

// TestFlagFileInWriteGrantRefused: an --mcp-config or --agents file
// beneath an --allow-write directory outside the workspace (which the
// agent's commands may write) is refused, naming the grant; the same file
// elsewhere outside the workspace is the user's and is read.
func TestFlagFileInWriteGrantRefused(t *testing.T) {
	e := newCLIEnv(t)
	ok := e.script(`{"turns": [{"text": "ok"}]}`)
	grant, elsewhere := t.TempDir(), t.TempDir()
	files := map[string]string{
		"--mcp-config": `{"mcpServers": {}}`,
		"--agents":     `{"helper": {"description": "d", "prompt": "p"}}`,
	}
	for flagName, body := range files {
		for _, dir := range []string{grant, elsewhere} {
			file := filepath.Join(dir, strings.TrimPrefix(flagName, "--")+".json")
			if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := e.run("", "run", "--script", ok, "--allow-write", grant, flagName, file, "hi")
			refused := strings.Contains(errOut, "which the agent's commands may write")
			switch {
			case dir == grant && (code == 0 || !refused):
				t.Errorf("%s in the write grant: exit %d, stderr %q; want a refusal", flagName, code, errOut)
			case dir == elsewhere && code != 0:
				t.Errorf("%s outside every grant: exit %d, stderr %q; want it read", flagName, code, errOut)
			}
		}
	}
}

// TestFlagFileThroughLinkAndDotDot: a flag's file named through a link
// and then ".." is judged where the kernel (and the reader,
// safefile.ReadUserFileFrom) finds it: elsewhere/in/../mcp.json, with
// in -> grant/sub, is grant/mcp.json, in the write grant, and refused —
// not elsewhere/mcp.json, where filepath.Abs would put it.
func TestFlagFileThroughLinkAndDotDot(t *testing.T) {
	e := newCLIEnv(t)
	ok := e.script(`{"turns": [{"text": "ok"}]}`)
	grant, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(grant, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(grant, "sub"), filepath.Join(elsewhere, "in")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{grant, elsewhere} {
		if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(`{"mcpServers": {}}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := elsewhere + "/in/../mcp.json" // not filepath.Join: it cleans
	code, _, errOut := e.run("", "run", "--script", ok, "--allow-write", grant, "--mcp-config", file, "hi")
	if code == 0 || !strings.Contains(errOut, "which the agent's commands may write") {
		t.Errorf("--mcp-config %s: exit %d, stderr %q; want a refusal (it is %s/mcp.json)", file, code, errOut, grant)
	}
}

// TestRunSaysWhichMCPServersFailed: a server that cannot start is said on
// stderr at the start, in every output format — the model only sees its
// tools missing — and the run goes on.
func TestRunSaysWhichMCPServersFailed(t *testing.T) {
	e := newCLIEnv(t)
	ok := e.script(`{"turns": [{"text": "ok"}]}`)
	cfg := `{"mcpServers": {"gone": {"command": "/nonexistent/mcp-server"}}}`
	for _, format := range []string{"text", "stream-json"} {
		t.Run(format, func(t *testing.T) {
			code, out, errOut := e.run("", "run", "--script", ok, "--mcp-config", cfg, "--output-format", format, "hi")
			if code != 0 || !strings.Contains(out, "ok") {
				t.Fatalf("exit %d, stdout %q, stderr %q: the run must go on without the server", code, out, errOut)
			}
			if !strings.Contains(errOut, "lite-agent: MCP server gone failed, its tools are not offered: ") || !strings.Contains(errOut, "/nonexistent/mcp-server") {
				t.Errorf("stderr %q does not say which server failed and why", errOut)
			}
		})
	}
}

// TestWarnMCPServersNotes: a server narrowed to the session's network is
// said with the flag that widens it; a connected server without notes is
// not mentioned.
func TestWarnMCPServersNotes(t *testing.T) {
	var b strings.Builder
	warnMCPServers(&kernel.SessionStartEvent{MCPServers: []tools.ServerStatus{
		{Name: "fine", State: tools.ServerConnected},
		{Name: "web", State: tools.ServerConnected, Notes: []string{`declares network "unrestricted" but runs with "none", the most the session's sandbox allows`}},
	}}, &b)
	want := "note: MCP server web declares network \"unrestricted\" but runs with \"none\", the most the session's sandbox allows (--network widens the session's)\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
