package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaudeNamesThroughTheCLI: a workspace policy file and flags written
// with Claude Code's names, as a user porting a configuration writes them.
// Before the names were aliases, deny = ["Bash(rm:*)"] and the matcher
// "Write|Edit" matched nothing (the matcher did not even parse) and
// --allowed-tools Bash allowed nothing.
func TestClaudeNamesThroughTheCLI(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(ws, "victim"), 0o755)
	writeFile(t, filepath.Join(ws, ".lite-agent/policy.toml"), `
[permissions]
deny = ["Bash(rm:*)"]

[[hooks]]
event   = "PreToolUse"
matcher = "Write|Edit"
command = "echo 'no writes today' >&2; exit 2"
`)
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [
	    {"id": "rm", "name": "bash", "input": {"command": "rm -rf victim"}},
	    {"id": "ok", "name": "bash", "input": {"command": "echo fine"}},
	    {"id": "w", "name": "write_file", "input": {"path": "a.txt", "content": "x"}}]},
	  {"text": "done"}]}`)
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "Bash,Write", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	perms := byID(evs, "permission")
	if p := perms["rm"]; p["decision"] != "deny" || p["rule"] != "Bash(rm:*)" || !strings.Contains(p["rule_source"].(string), "policy.toml:3") {
		t.Errorf("rm -rf: %v", p)
	}
	if p := perms["ok"]; p["decision"] != "allow" || p["rule"] != "Bash" {
		t.Errorf("echo: %v", p)
	}
	if p := perms["w"]; p["decision"] != "deny" || p["by"] != "hook" {
		t.Errorf("write_file past the Write|Edit hook: %v", p)
	}
	if _, err := os.Stat(filepath.Join(ws, "victim")); err != nil {
		t.Errorf("victim: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err == nil {
		t.Error("a.txt was written")
	}

	// A name of nothing fails before the model is called.
	_, code, stderr = runAgent(t, ws, state, "--script", script, "--disallowed-tools", "Bsah", "go")
	if code == 0 || !strings.Contains(stderr, `did you mean "bash"?`) {
		t.Errorf("--disallowed-tools Bsah: exit %d, %s", code, stderr)
	}
}
