package local

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/tools"
)

// pidServer is an in-process MCP server at package level, so that its tool
// is found in the confined child.
var pidServer = func() *mcp.Server {
	s := mcp.NewServer("probe", "1")
	mcp.AddTool(s, pidProbe)
	return s
}()

// wideServer's tool declares what strict refuses of a custom tool.
var wideServer = func() *mcp.Server {
	s := mcp.NewServer("wide", "1")
	mcp.AddTool(s, tool("mail", &tools.Security{Network: tools.NetworkLoopback, SideEffects: tools.SideEffectsExternal}))
	return s
}()

func TestMCPServersJudgedByThePreset(t *testing.T) {
	ws := t.TempDir()
	m := model(t, `{"turns": [{"text": "hi"}]}`)
	cases := []struct {
		preset  string
		servers map[string]mcp.ServerConfig
		want    []string // "" entries: accepted
	}{
		// Strict: at most loopback, whatever the transport.
		{"strict", map[string]mcp.ServerConfig{"fs": {Command: "mcp-server-filesystem"}}, nil},
		{"strict", map[string]mcp.ServerConfig{"db": {Command: "db-mcp", Network: tools.NetworkLoopback}}, nil},
		{"strict", map[string]mcp.ServerConfig{"local": {Type: mcp.TypeHTTP, URL: "http://127.0.0.1:8080/mcp"}}, nil},
		{"strict", map[string]mcp.ServerConfig{"lan": {Command: "x", Network: tools.NetworkPrivate}},
			[]string{`MCP server "lan"`, `field network is "private"`, "strict preset", "at most loopback"}},
		{"strict", map[string]mcp.ServerConfig{"remote": {Type: mcp.TypeHTTP, URL: "https://mcp.example.com/mcp"}},
			[]string{`MCP server "remote"`, `"unrestricted"`}},
		{"strict", map[string]mcp.ServerConfig{"root": {Command: "x", Filesystem: tools.FilesystemUnrestricted}},
			[]string{`MCP server "root"`, `field filesystem is "unrestricted"`}},
		// An in-process server's tools are custom tools.
		{"strict", map[string]mcp.ServerConfig{"wide": {Server: wideServer}},
			[]string{`MCP server "wide"`, `custom tool "mcp__wide__mail"`, "Security.SideEffects"}},
		{"standard", map[string]mcp.ServerConfig{"wide": {Server: wideServer}, "root": {Command: "x", Filesystem: tools.FilesystemUnrestricted}}, nil},
		{"standard", map[string]mcp.ServerConfig{"remote": {Type: mcp.TypeHTTP, URL: "https://mcp.example.com/mcp"}},
			[]string{`"unrestricted"`, "standard preset", "at most loopback"}},
		// Permissive lets commands reach anywhere, so MCP servers too.
		{"permissive", map[string]mcp.ServerConfig{"remote": {Type: mcp.TypeHTTP, URL: "https://mcp.example.com/mcp"}}, nil},
		{"strict", map[string]mcp.ServerConfig{"bad name__": {Command: "x"}}, []string{"MCP server name"}},
	}
	for _, c := range cases {
		a, err := New(Config{Preset: c.preset, PolicyFiles: noFiles, MCPServers: c.servers, Agent: kernel.Agent{Model: m, Workspace: ws}})
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s refused %v: %v", c.preset, c.servers, err)
				continue
			}
			// One toolset of those servers, capped at the preset's network.
			o := a.Options()
			if len(o.Toolsets) != 1 {
				t.Errorf("%s: toolsets %v", c.preset, o.Toolsets)
				continue
			}
			if ts, ok := o.Toolsets[0].(*mcp.Toolset); !ok || len(ts.Servers()) != len(c.servers) || ts.MaxNetwork() != MCPMaxNetwork(a.Preset()) || len(a.MCPServers()) != len(c.servers) {
				t.Errorf("%s: toolset %v, servers %v", c.preset, o.Toolsets[0], a.MCPServers())
			}
			continue
		}
		if err == nil {
			t.Errorf("%s accepted %v", c.preset, c.servers)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.preset, err, w)
			}
		}
	}
	for preset, want := range map[string]tools.Network{"strict": tools.NetworkLoopback, "standard": tools.NetworkLoopback, "permissive": tools.NetworkUnrestricted} {
		p, _ := policies.PresetByName(preset)
		if got := MCPMaxNetwork(p); got != want {
			t.Errorf("MCPMaxNetwork(%s) = %q, want %q", preset, got, want)
		}
	}
	// A subagent may not take a mode the preset forbids.
	_, err := New(Config{PolicyFiles: noFiles,
		Agent: kernel.Agent{Model: m, Workspace: ws, AllowDangerouslySkipPermissions: true,
			Agents: map[string]kernel.AgentDefinition{"yolo": {Description: "d", Prompt: "p", PermissionMode: kernel.PermissionBypass}},
		}})
	if err == nil || !strings.Contains(err.Error(), `agent "yolo": field PermissionMode is bypassPermissions`) {
		t.Errorf("a bypassPermissions subagent under strict: %v", err)
	}
}

// TestInProcessMCPServerRunsConfined: through the assembler, an in-process
// server's tool is called by its full name and runs in a confined child.
func TestInProcessMCPServerRunsConfined(t *testing.T) {
	a, err := New(Config{PolicyFiles: noFiles,
		MCPServers: map[string]mcp.ServerConfig{"probe": {Server: pidServer}},
		Agent: kernel.Agent{
			Model:     model(t, `{"turns": [{"tool_calls": [{"id": "p", "name": "mcp__probe__pid_probe", "input": {}}]}, {"text": "done"}]}`),
			Workspace: t.TempDir(), StateDir: t.TempDir(),
			AllowedTools: []string{"mcp__probe__*"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	var servers []mcp.ServerStatus
	for ev, err := range a.Query(context.Background(), "go") {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case kernel.EventSessionStart:
			servers = ev.SessionStart.MCPServers
		case kernel.EventToolResult:
			text = ev.ToolResult.Content[0].Text
		}
	}
	if len(servers) != 1 || servers[0].State != mcp.StateConnected {
		t.Errorf("servers: %+v", servers)
	}
	if pid, err := strconv.Atoi(text); err != nil || pid == 0 || pid == os.Getpid() {
		t.Errorf("the in-process server's tool ran in pid %q (this process is %d): not confined in a child", text, os.Getpid())
	}
}
