package kernel

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/policies"
)

// The seed's configurations, with Claude Code's names. Before the alias
// table each of these was accepted and matched nothing: "Bash" is not
// "bash", so the deny list denied nothing and the guard never ran (the
// policies tests show the rule-level difference); here the whole run
// shows what the seed says should happen.

// TestSeedDisallowedToolsDeny: DisallowedTools ["Bash","Write","Edit"]
// hides and refuses the three tools, even in bypassPermissions mode,
// where without the deny everything would run.
func TestSeedDisallowedToolsDeny(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.ws, "e.txt"), []byte("old"), 0o644)
	o := e.opts(nil)
	o.PermissionMode, o.AllowDangerouslySkipPermissions = PermissionBypass, true
	o.DisallowedTools = []string{"Bash", "Write", "Edit"}
	res, evs := runCalls(t, o,
		bash("b", "touch hacked"),
		write("w", "w.txt"),
		call("e", "edit_file", `{"path": "e.txt", "old_string": "old", "new_string": "new"}`),
		call("r", "read_file", `{"path": "e.txt"}`))
	for _, id := range []string{"b", "w", "e"} {
		if r := res[id].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), "no tool named") {
			t.Errorf("%s: %q", id, resultText(r))
		}
	}
	if r := res["r"].result; r.ToolResult.IsError {
		t.Errorf("read_file: %q", resultText(r))
	}
	for _, f := range []string{"hacked", "w.txt"} {
		if _, err := os.Stat(filepath.Join(e.ws, f)); err == nil {
			t.Errorf("%s was created", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "e.txt")); string(b) != "old" {
		t.Errorf("e.txt was edited: %q", b)
	}
	if got := evs[0].SessionStart.Tools; slices.Contains(got, "bash") || slices.Contains(got, "write_file") || slices.Contains(got, "edit_file") {
		t.Errorf("session_start tools: %v", got)
	}
}

// TestSeedRmRfGuard is the seed's PreToolUse example: matcher "Bash",
// AllowedTools ["Bash"], deny when the command has "rm -rf", allow
// otherwise. The hook sees our name (bash) and our input field (command).
func TestSeedRmRfGuard(t *testing.T) {
	e := newEnv(t)
	victim := filepath.Join(e.ws, "victim")
	os.Mkdir(victim, 0o755)
	o := e.opts(nil)
	o.AllowedTools = []string{"Bash"}
	var seen []string
	o.Hooks = []Hook{{Event: HookPreToolUse, Matcher: "Bash", Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
		seen = append(seen, in.ToolName)
		var ti struct {
			Command string `json:"command"`
		}
		json.Unmarshal(in.ToolInput, &ti)
		if strings.Contains(ti.Command, "rm -rf") {
			return &HookOutput{Decision: "deny", Reason: "rm -rf is not allowed"}, nil
		}
		return &HookOutput{Decision: "allow"}, nil
	})}}
	res, _ := runCalls(t, o, bash("rm", "rm -rf victim"), bash("ok", "echo fine"), call("r", "list_dir", `{}`))
	res["rm"].want(t, "rm", "deny", byHook, "rm -rf is not allowed")
	res["ok"].want(t, "ok", "allow", byHook, "fine")
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the guard did not protect victim: %v", err)
	}
	if !slices.Equal(seen, []string{"bash", "bash"}) {
		t.Errorf("the hook ran for %v, want bash twice (not list_dir)", seen)
	}
}

// TestSeedToolsAndAgents: Tools ["Read","Grep","Glob"] shows our three
// tools; AllowedTools ["Agent"] and a subagent's tools list with Claude
// Code's names work.
func TestSeedToolsAndAgents(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [
	    {"tool_calls": [`+agentCall("a1", "order-support", "check O-1001")+`]},
	    {"text": "done"}],
	  "agents": {"order-support": {"turns": [
	    {"tool_calls": [{"id": "g", "name": "grep", "input": {"pattern": "x"}},
	                    {"id": "b", "name": "bash", "input": {"command": "touch hacked"}}]},
	    {"text": "ok"}]}}}`)
	o := e.opts(m)
	o.Tools = []string{"Read", "Grep", "Glob", "Agent"}
	o.AllowedTools = []string{"Agent"}
	o.Agents = map[string]AgentDefinition{"order-support": {Description: "Handles orders.", Prompt: "p", Tools: []string{"Read", "Grep"}}}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(evs[0].SessionStart.Tools, ","); got != "read_file,glob,grep,agent" {
		t.Errorf("visible tools = %s", got)
	}
	sub := subagentOutcomes(t, evs, "order-support", "a1")
	if r := sub["g"].result; r.ToolResult.IsError && strings.Contains(resultText(r), "no tool named") {
		t.Errorf("grep in the subagent: %q", resultText(r))
	}
	if r := sub["b"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), `no tool named "bash"`) {
		t.Errorf("bash in the subagent: %q", resultText(r))
	}
	main := mainOutcomes(evs)
	main["a1"].want(t, "a1", "allow", byRule, "")
}

// TestNamesOfNothingAreErrors: every place a tool is named refuses a name
// that is no tool, naming the place and the nearest real name, before
// the first model call.
func TestNamesOfNothingAreErrors(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{"turns": [{"text": "hi"}]}`)
	noop := hookFunc(func(*HookInput) (*HookOutput, error) { return nil, nil })
	cases := []struct {
		name string
		set  func(*Options)
		want string
	}{
		{"deny list", func(o *Options) { o.DisallowedTools = []string{"Bassh"} }, `DisallowedTools names "Bassh", but there is no such tool (did you mean "bash"?)`},
		{"deny with argument", func(o *Options) { o.DisallowedTools = []string{"raed_file(src/**)"} }, `the raed_file tool takes no argument pattern (only bash, read_file, write_file, edit_file, list_dir, glob, grep, web_fetch do) (did you mean read_file?)`},
		{"allow list", func(o *Options) { o.AllowedTools = []string{"lookup_citty"} }, `did you mean "lookup_city"?`},
		{"agent without agents", func(o *Options) { o.AllowedTools = []string{"Agent"} }, "exists only when Options.Agents"},
		{"tool of nothing", func(o *Options) { o.Tools = []string{"WebSearch"} }, "a Claude Code tool lite-agent does not have"},
		{"policy rule", func(o *Options) {
			o.Rules = []policies.Rule{{Behavior: policies.Deny, Text: "Grepp", Source: "/home/me/policy.toml:4"}}
		}, `/home/me/policy.toml:4 names "Grepp"`},
		{"hook matcher", func(o *Options) { o.Hooks = []Hook{{Event: HookPreToolUse, Matcher: "Write|Edt", Func: noop}} }, `Hooks[0] (PreToolUse) matcher: "Write|Edt" names "Edt"`},
		{"subagent tools", func(o *Options) {
			o.Agents = map[string]AgentDefinition{"a": {Description: "d", Prompt: "p", Tools: []string{"Gerp"}}}
		}, `Agents["a"].Tools names "Gerp", but there is no such tool (did you mean "grep"?)`},
		{"mcp server not configured", func(o *Options) { o.AllowedTools = []string{"mcp__orders__lookup_order"} }, "an MCP tool is named mcp__SERVER__TOOL"},
		{"custom tool named like an alias", func(o *Options) { o.CustomTools = append(o.CustomTools, echoTool(t, "Bash", false)) }, "Claude Code's name of the built-in bash"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := e.opts(m)
			o.CustomTools = append(o.CustomTools, echoTool(t, "lookup_city", false))
			c.set(&o)
			if err := CheckToolNames(&o); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("CheckToolNames: %v, want %q", err, c.want)
			}
			for _, err := range Query(context.Background(), o) {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("Query: %v, want %q", err, c.want)
				}
				break
			}
		})
	}
	// Wildcards and names of what exists pass.
	o := e.opts(m)
	o.DisallowedTools = []string{"mcp__nosuch__*", "Bash(curl:*)"}
	o.AllowedTools = []string{"*", "Read(src/**)", "LS"}
	o.Hooks = []Hook{{Event: HookPreToolUse, Matcher: "Write|Edit", Func: noop}}
	if _, err := collect(t, context.Background(), o); err != nil {
		t.Errorf("good names: %v", err)
	}
}

// TestCheckToolNamesBeforeConnecting: before servers connect, an external
// server's tools are unknown, so its mcp__ names pass; an in-process
// server's are known.
func TestCheckToolNamesBeforeConnecting(t *testing.T) {
	srv := mcp.NewServer("orders", "1")
	mcp.AddTool(srv, echoTool(t, "lookup_order", true))
	o := &Options{
		Agent: Agent{
			AllowedTools: []string{"mcp__orders__lookup_order", "mcp__ext__anything"},
		},
		Confinement: Confinement{
			Toolsets: mcpToolsets(t, &mcp.Options{Servers: map[string]mcp.ServerConfig{"orders": {Server: srv}, "ext": {Command: "/bin/false"}}}),
		},
	}
	if err := CheckToolNames(o); err != nil {
		t.Fatal(err)
	}
	o.AllowedTools = []string{"mcp__orders__lookup_ordr"}
	if err := CheckToolNames(o); err == nil || !strings.Contains(err.Error(), `did you mean "mcp__orders__lookup_order"?`) {
		t.Errorf("typo in an in-process tool: %v", err)
	}
}

// TestYoloNeedsTheSameOptIn: "yolo" is bypassPermissions under another
// name — refused without AllowDangerouslySkipPermissions (also for a
// subagent), and reported as bypassPermissions when allowed.
func TestYoloNeedsTheSameOptIn(t *testing.T) {
	e := newEnv(t)
	o := e.opts(script(t, `{"turns": [{"text": "hi"}]}`))
	o.PermissionMode = "yolo"
	for _, err := range Query(context.Background(), o) {
		if err == nil || !strings.Contains(err.Error(), "needs AllowDangerouslySkipPermissions") {
			t.Errorf("yolo without the opt-in: %v", err)
		}
		break
	}
	o.PermissionMode = ""
	o.Agents = map[string]AgentDefinition{"a": {Description: "d", Prompt: "p", PermissionMode: "yolo"}}
	for _, err := range Query(context.Background(), o) {
		if err == nil || !strings.Contains(err.Error(), "needs AllowDangerouslySkipPermissions") {
			t.Errorf("a yolo subagent without the opt-in: %v", err)
		}
		break
	}
	o.Agents = nil
	o.PermissionMode, o.AllowDangerouslySkipPermissions = "yolo", true
	res, _ := runCalls(t, o, write("w", "a.txt"))
	if p := res["w"].perm; p.Permission.Decision != "allow" || p.Permission.Mode != PermissionBypass {
		t.Errorf("yolo with the opt-in: %+v", p)
	}
}
