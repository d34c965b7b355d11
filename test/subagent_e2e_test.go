package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// subagentEvents returns the events a subagent emitted, checking that each
// names the agent and the parent's agent call.
func subagentEvents(t *testing.T, evs []event, agent, parentCall string) []event {
	t.Helper()
	var out []event
	for _, ev := range evs {
		if ev["agent_id"] == nil {
			continue
		}
		if ev["agent"] != agent || ev["parent_tool_use_id"] != parentCall || !strings.HasPrefix(ev["agent_id"].(string), agent+"-") {
			t.Errorf("subagent event %v: want agent %s and parent call %s", ev, agent, parentCall)
		}
		out = append(out, ev)
	}
	if len(out) == 0 {
		t.Fatalf("no events from the subagent %s", agent)
	}
	return out
}

// TestSubagentWithoutBashIsRefused: a subagent whose definition omits bash
// cannot run it, even though the session's rules would allow bash; its
// final text is the agent call's result.
func TestSubagentWithoutBashIsRefused(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{
	  "turns": [
	    {"tool_calls": [{"id": "a1", "name": "agent", "input": {"agent": "reader", "prompt": "look around"}}]},
	    {"text": "The reader reported back."}],
	  "agents": {"reader": {"turns": [
	    {"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "touch pwned"}}]},
	    {"text": "I may only read."}]}}}`)
	agents := `{"reader": {"description": "Reads files.", "prompt": "You only read.", "tools": ["read_file", "grep", "glob"]}}`
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--agents", agents, "--allowed-tools", "bash", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := stringList(evs[0]["agents"]); len(got) != 1 || got[0] != "reader" {
		t.Errorf("session_start agents: %v", evs[0]["agents"])
	}
	sub := byID(subagentEvents(t, evs, "reader", "a1"), "tool_result")
	if r := sub["b1"]; r["is_error"] != true || !strings.Contains(contentText(r), `no tool named "bash"`) {
		t.Errorf("bash in the subagent: %v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
		t.Error("the subagent ran bash")
	}
	if r := byID(evs, "tool_result")["a1"]; r["is_error"] != false || contentText(r) != "I may only read." || r["agent_id"] != nil {
		t.Errorf("the agent call's result: %v", r)
	}
	if last := evs[len(evs)-1]; last["subtype"] != "success" {
		t.Errorf("result: %v", last)
	}
}

// TestHookFiresInsideSubagent: the workspace policy file's PreToolUse hook
// (a command, run in the sandbox) sees the subagent's calls, and whom they
// come from, and its denial holds there.
func TestHookFiresInsideSubagent(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, ".lite-agent/policy.toml"), `
[[hooks]]
event   = "PreToolUse"
matcher = "write_file"
command = "input=$(cat); case $input in *'\"agent\":\"scribe\"'*) echo 'subagents do not write files' >&2; exit 2;; esac"
`)
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{
	  "turns": [
	    {"tool_calls": [
	      {"id": "w0", "name": "write_file", "input": {"path": "main.txt", "content": "main"}},
	      {"id": "a1", "name": "agent", "input": {"agent": "scribe", "prompt": "write sub.txt"}}]},
	    {"text": "done"}],
	  "agents": {"scribe": {"turns": [
	    {"tool_calls": [{"id": "w1", "name": "write_file", "input": {"path": "sub.txt", "content": "sub"}}]},
	    {"text": "could not write"}]}}}`)
	agents := `{"scribe": {"description": "Writes.", "prompt": "You write."}}`
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--agents", agents, "--allowed-tools", "write_file", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if p := byID(evs, "permission")["w0"]; p["decision"] != "allow" {
		t.Errorf("the main agent's write: %v", p)
	}
	p := byID(subagentEvents(t, evs, "scribe", "a1"), "permission")["w1"]
	if p["decision"] != "deny" || p["by"] != "hook" || !strings.Contains(p["reason"].(string), "subagents do not write files") {
		t.Errorf("the subagent's write: %v", p)
	}
	if _, err := os.Stat(filepath.Join(ws, "main.txt")); err != nil {
		t.Errorf("main.txt: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "sub.txt")); err == nil {
		t.Error("the subagent wrote sub.txt past the hook")
	}
}

// TestBudgetExhaustedInSubagent: the subagent's tokens count against
// --max-budget-tokens; when they exceed it the whole run ends cleanly with
// error_max_budget and exit code 1, nothing more running.
func TestBudgetExhaustedInSubagent(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{
	  "turns": [
	    {"tool_calls": [
	      {"id": "a1", "name": "agent", "input": {"agent": "spender", "prompt": "think hard"}},
	      {"id": "w1", "name": "write_file", "input": {"path": "after.txt", "content": "x"}}],
	     "usage": {"input_tokens": 200, "output_tokens": 20}},
	    {"text": "unreached"}],
	  "agents": {"spender": {"turns": [
	    {"tool_calls": [{"id": "g1", "name": "glob", "input": {"pattern": "*"}}], "usage": {"input_tokens": 600, "output_tokens": 400}},
	    {"text": "unreached"}]}}}`)
	agents := `{"spender": {"description": "Thinks.", "prompt": "You think."}}`
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--agents", agents, "--allowed-tools", "write_file", "--max-budget-tokens", "1000", "go")
	if code != 1 || !strings.Contains(stderr, "exceeded the token budget: 1220 tokens used, the budget is 1000") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	last := evs[len(evs)-1]
	usage, _ := last["usage"].(map[string]any)
	if last["type"] != "result" || last["subtype"] != "error_max_budget" || last["is_error"] != true || usage["input_tokens"] != 800.0 || last["num_turns"] != 1.0 {
		t.Errorf("result: %v", last)
	}
	if r := byID(subagentEvents(t, evs, "spender", "a1"), "tool_result")["g1"]; r["is_error"] != true || !strings.Contains(contentText(r), "not run") {
		t.Errorf("the subagent's call after the budget: %v", r)
	}
	if r := byID(evs, "tool_result")["w1"]; r["is_error"] != true || !strings.Contains(contentText(r), "not run") {
		t.Errorf("the main agent's call after the budget: %v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "after.txt")); err == nil {
		t.Error("a call ran after the budget was spent")
	}
}
