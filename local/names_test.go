package local

import (
	"context"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/tools"
)

// TestNewChecksNamesKeysAndPrefixes: what issue 15 found accepted by New
// and failing only later (or never) is refused by New, with one prefix.
func TestNewChecksNamesKeysAndPrefixes(t *testing.T) {
	ws := t.TempDir()
	m := model(t, `{"turns": [{"text": "hi"}]}`)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"deny list of nothing", Config{Agent: kernel.Agent{DisallowedTools: []string{"Bsah"}}}, `DisallowedTools names "Bsah", but there is no such tool (did you mean "bash"?)`},
		{"hook matcher of nothing", Config{Agent: kernel.Agent{Hooks: []kernel.Hook{{Event: kernel.HookPreToolUse, Matcher: "Bsh", Func: noopHook}}}}, `matcher names "Bsh", but there is no such tool (did you mean "bash"?)`},
		{"key is not the server's name", Config{MCPServers: map[string]mcp.ServerConfig{"order": {Server: pidServer}}}, `the in-process server is named "probe"; its entry must have the same name`},
		{"yolo subagent under strict", Config{
			Agent: kernel.Agent{AllowDangerouslySkipPermissions: true,
				Agents: map[string]kernel.AgentDefinition{"a": {Description: "d", Prompt: "p", PermissionMode: "yolo"}},
			}}, `agent "a": field PermissionMode is bypassPermissions`},
		{"yolo under strict", Config{Agent: kernel.Agent{PermissionMode: "yolo", AllowDangerouslySkipPermissions: true}}, "strict preset does not allow bypassPermissions"},
	}
	for _, c := range cases {
		c.cfg.Model, c.cfg.Workspace, c.cfg.PolicyFiles = m, ws, noFiles
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// yolo needs the opt-in like bypassPermissions.
	if _, err := New(Config{Preset: "standard", PolicyFiles: noFiles, Agent: kernel.Agent{Model: m, Workspace: ws, PermissionMode: "yolo"}}); err == nil || !strings.Contains(err.Error(), "needs AllowDangerouslySkipPermissions") {
		t.Errorf("yolo without the opt-in: %v", err)
	}
	a, err := New(Config{Preset: "standard", PolicyFiles: noFiles, Agent: kernel.Agent{Model: m, Workspace: ws, PermissionMode: "yolo", AllowDangerouslySkipPermissions: true}})
	if err != nil || a.Options().PermissionMode != kernel.PermissionBypass {
		t.Errorf("yolo with the opt-in: %v", err)
	}
	// One "local: " per message (it was "local: MCP server "wide": local:
	// custom tool ...").
	_, err = New(Config{PolicyFiles: noFiles, MCPServers: map[string]mcp.ServerConfig{"wide": {Server: wideServer}}, Agent: kernel.Agent{Model: m, Workspace: ws}})
	if err == nil || strings.Count(err.Error(), "local:") != 1 || !strings.Contains(err.Error(), `local: MCP server "wide": custom tool "mcp__wide__mail"`) {
		t.Errorf("prefix: %v", err)
	}
}

func noopHook(context.Context, *kernel.HookInput) (*kernel.HookOutput, error) { return nil, nil }

// TestNewRefusesToolsTheChildCannotFind: a tool that was not handed to
// confined.Serve (TestMain called it without this one, as a main that
// builds a tool after the call would) is refused by New, before any model
// call, with the rule and the fix.
func TestNewRefusesToolsTheChildCannotFind(t *testing.T) {
	late := tool("built_late", &tools.Security{Network: tools.NetworkNone})
	_, err := New(Config{PolicyFiles: noFiles, Agent: kernel.Agent{Model: model(t, `{"turns": [{"text": "never"}]}`), Workspace: t.TempDir(), CustomTools: []*tools.Tool{late}}})
	if err == nil || !strings.Contains(err.Error(), "the built_late tool cannot run confined: it is not among the tools handed to confined.Serve") {
		t.Errorf("New: %v", err)
	}
}
