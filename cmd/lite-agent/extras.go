package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/lite-agent/lite-agent/internal/safefile"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/mcp"
)

// extraFlags adds the run flags of MCP servers, subagents, the token
// budget and structured output.
func extraFlags(fs *flag.FlagSet, f *runFlags) {
	fs.StringVar(&f.mcpConfig, "mcp-config", "", `MCP servers: a file (or inline JSON) in the {"mcpServers": {...}} shape; stdio servers run in the sandbox`)
	fs.DurationVar(&f.mcpTimeout, "mcp-connect-timeout", 0, "how long each MCP server may take to start and answer (default 30s); a server that does not is reported failed and the run goes on")
	fs.StringVar(&f.agents, "agents", "", `subagents: a file (or inline JSON) {"NAME": {"description", "prompt", "tools", "model", "maxTurns", "permissionMode"}}; adds the agent tool`)
	fs.Int64Var(&f.maxBudgetTokens, "max-budget-tokens", 0, "end the run (result error_max_budget) once it and its subagents have used more than N tokens (0: no limit)")
	fs.StringVar(&f.outputSchema, "output-schema", "", "a JSON Schema file (or inline JSON) the final answer must match; it is returned as structured_output (result error_structured_output if the model cannot)")
}

// applyExtras puts what those flags say into the assembler's config.
func applyExtras(f *runFlags, cfg *local.Config) error {
	if f.mcpTimeout < 0 {
		return usageErrorf("--mcp-connect-timeout must not be negative")
	}
	if f.maxBudgetTokens < 0 {
		return usageErrorf("--max-budget-tokens must not be negative")
	}
	cfg.MCPConnectTimeout = f.mcpTimeout
	cfg.MaxBudgetTokens = f.maxBudgetTokens
	if f.mcpConfig != "" {
		c, err := loadMCPConfig(f.mcpConfig, f.workspace)
		if err != nil {
			return err
		}
		cfg.MCPServers = c.Servers
	}
	if f.agents != "" {
		data, rel, err := jsonArgFrom("--agents", f.agents, f.workspace)
		if err != nil {
			return err
		}
		var agents map[string]kernel.AgentDefinition
		if err := decodeStrict(data, &agents); err != nil {
			return failf("--agents %s: %v", argName(f.agents), err)
		}
		if len(agents) == 0 {
			return failf("--agents %s: no agent is defined", argName(f.agents))
		}
		if rel != "" {
			if err := workspaceAgentsWiden(f.agents, agents); err != nil {
				return err
			}
		}
		cfg.Agents = agents
	}
	if f.outputSchema != "" {
		data, err := jsonArg("--output-schema", f.outputSchema, f.workspace)
		if err != nil {
			return err
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(data, &s); err != nil {
			return failf("--output-schema %s: not a JSON Schema: %v", argName(f.outputSchema), err)
		}
		cfg.OutputFormat = &kernel.OutputFormat{Schema: &s}
	}
	return nil
}

// loadMCPConfig reads --mcp-config: inline JSON (the user's own), or a
// file through mcp.LoadConfigIn, which marks a file found in the
// workspace as the agent may have written it (mcp.ServerConfig.
// FromWorkspace, with its path and digest for the trust check in local).
func loadMCPConfig(v, workspace string) (*mcp.Config, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		c, err := mcp.ParseConfig([]byte(v))
		if err != nil {
			return nil, failf("--mcp-config %s: %v", argName(v), err)
		}
		return c, nil
	}
	if workspace == "" {
		// The CLI's default workspace is the current directory.
		workspace = "."
	}
	c, err := mcp.LoadConfigIn(v, workspace)
	if err != nil {
		return nil, failf("--mcp-config: %v", err)
	}
	return c, nil
}

// jsonArg returns a flag's JSON: the value itself when it starts with '{',
// otherwise the content of the file it names. Such a file is often in the
// workspace (a .mcp.json next to the code), where the agent's bash of an
// earlier session could have made it a FIFO (a hang), a symlink to
// /dev/zero (memory) or to another file: safefile.ReadUserFile reads it
// beneath the workspace with no symlinks followed, without blocking, a
// regular file of at most 1 MiB — else an error naming the file.
func jsonArg(flagName, v, workspace string) ([]byte, error) {
	data, _, err := jsonArgFrom(flagName, v, workspace)
	return data, err
}

// jsonArgFrom is jsonArg that also says where in the workspace the file
// lay ("" for inline JSON or a file outside it): one the agent could
// have written.
func jsonArgFrom(flagName, v, workspace string) ([]byte, string, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		return []byte(v), "", nil
	}
	if workspace == "" {
		// The CLI's default workspace is the current directory.
		workspace = "."
	}
	data, rel, err := safefile.ReadUserFileFrom(v, workspace, safefile.DefaultLimit)
	if err != nil {
		return nil, "", failf("%s: %v", flagName, err)
	}
	return data, rel, nil
}

// workspaceAgentsWiden refuses, in an --agents file inside the workspace,
// a definition whose permissionMode could be wider than the main agent's
// (acceptEdits, dontAsk, bypassPermissions…): the agent could have written
// the file in an earlier session, and its subagent would then run with a
// mode the person never chose. "plan" and "default" are never wider than
// a mode the person could have picked; the rest of a definition (prompt,
// tools, which only narrow) is what the file is for.
func workspaceAgentsWiden(file string, agents map[string]kernel.AgentDefinition) error {
	for _, name := range slices.Sorted(maps.Keys(agents)) {
		switch m := agents[name].PermissionMode; m {
		case "", kernel.PermissionDefault, kernel.PermissionPlan:
		default:
			return failf("--agents %s: the file is in the workspace, where the agent could have written it, and agent %q sets permissionMode %q, which could widen what it may do beyond the mode you chose; pass the definitions inline or from a file outside the workspace",
				esc(file), esc(name), esc(string(m)))
		}
	}
	return nil
}

// argName names a flag's value in messages: the file, or "(inline JSON)".
func argName(v string) string {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		return "(inline JSON)"
	}
	return v
}

// decodeStrict decodes one JSON value, refusing unknown fields so that a
// misspelt key is an error rather than silently ignored.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}
