package mcp

import (
	"fmt"
	"regexp"
	"strings"
)

// Prefix starts the full name of every tool that comes from an MCP server.
const Prefix = "mcp__"

// maxToolName is the longest tool name tools.New accepts (and the longest
// most model APIs take).
const maxToolName = 64

// serverNameRE: letters, digits, '-' and single underscores between them.
// A server name may not contain "__" nor start or end with '_', so that
// mcp__{server}__{tool} splits back into its parts in exactly one way.
var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$`)

// toolNameRE is the set tools.New accepts for the tool part.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ToolName is the full name under which the model, permission rules, hook
// matchers and subagent tool lists see tool of server:
// mcp__{server}__{tool}.
func ToolName(server, tool string) string { return Prefix + server + "__" + tool }

// ParseToolName splits a full name made by ToolName. ok is false for names
// that are not MCP tool names.
func ParseToolName(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, Prefix)
	if !found {
		return "", "", false
	}
	server, tool, found = strings.Cut(rest, "__")
	if !found || !serverNameRE.MatchString(server) || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// CheckServerName reports why name cannot name a server, or nil. A server
// name is letters, digits, '-' and '_', without "__" and without a leading
// or trailing '_' (the full tool name must split back unambiguously), and
// short enough to leave room for a tool name within the 64 characters a
// tool name may have.
func CheckServerName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("MCP server name is empty")
	case !serverNameRE.MatchString(name):
		return fmt.Errorf("MCP server name %q: use letters, digits, '-' and '_' (no \"__\", no leading or trailing '_')", name)
	case len(ToolName(name, "x")) > maxToolName:
		return fmt.Errorf("MCP server name %q is too long: %s leaves no room for tool names within %d characters", name, ToolName(name, ""), maxToolName)
	}
	return nil
}

// checkToolName reports why tool of server cannot be exposed.
func checkToolName(server, tool string) error {
	if !toolNameRE.MatchString(tool) {
		return fmt.Errorf("tool name %q: use letters, digits, '_' and '-'", tool)
	}
	if full := ToolName(server, tool); len(full) > maxToolName {
		return fmt.Errorf("full tool name %s is %d characters, more than %d", full, len(full), maxToolName)
	}
	return nil
}
