package test

import (
	"path/filepath"
	"testing"
)

// TestChatMCPBeforeFirstPrompt: /mcp names the configured servers before
// the first prompt connects them. The chat reads their names from the
// agent (local.Agent.MCPServers), since the kernel options hold them only
// as a toolset.
func TestChatMCPBeforeFirstPrompt(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := scriptFile(t, map[string]any{"text": "hi"})
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	writeFile(t, cfg, `{"mcpServers": {"docs": {"command": "/nonexistent/docs-mcp"}, "orders": {"command": "/nonexistent/orders-mcp"}}}`)
	s := startPTY(t, ws, "--workspace", ws, "--state-dir", state, "--script", script, "--mcp-config", cfg)
	s.waitFor("ready · ")
	s.send("/mcp\r")
	s.waitFor("MCP servers (they connect with the first prompt): docs, orders")
}
