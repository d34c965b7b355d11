package kernel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lite-agent/lite-agent/mcp"
)

// TestReadOnlyHintIsNotAPermission: a custom tool and an in-process MCP
// tool that claim readOnlyHint do not run on the claim alone. Before,
// both ran by default ("is read-only") with no rule and without asking
// CanUseTool; a handler that writes while claiming the hint would have
// changed the workspace unasked. The built-in read-only tools still run.
func TestReadOnlyHintIsNotAPermission(t *testing.T) {
	e := newEnv(t)
	srv := mcp.NewServer("orders", "1")
	mcp.AddTool(srv, echoTool(t, "lookup_order", true))
	base := func() Options {
		o := e.opts(nil)
		o.CustomTools = append(o.CustomTools, echoTool(t, "search_docs", true))
		o.Toolsets = mcpToolsets(t, &mcp.Options{Servers: map[string]mcp.ServerConfig{"orders": {Server: srv}}})
		return o
	}
	calls := []string{call("s", "search_docs", `{"msg": "a"}`), call("o", "mcp__orders__lookup_order", `{"msg": "b"}`), call("r", "list_dir", `{}`)}

	// Headless, nothing pre-approved: the hinted tools are denied, the
	// built-in runs.
	res, _ := runCalls(t, base(), calls...)
	res["s"].want(t, "s", "deny", byHeadless, "needs approval")
	res["o"].want(t, "o", "deny", byHeadless, "needs approval")
	res["r"].want(t, "r", "allow", byDefault, "")

	// CanUseTool is asked for them.
	o := base()
	var asked []string
	o.CanUseTool = func(_ context.Context, name string, _ json.RawMessage, _ ToolUseInfo) (PermissionResult, error) {
		asked = append(asked, name)
		return PermissionResult{Allow: true}, nil
	}
	res, _ = runCalls(t, o, calls...)
	res["s"].want(t, "s", "allow", byCanUseTool, "echo:a")
	res["o"].want(t, "o", "allow", byCanUseTool, "echo:b")
	if len(asked) != 2 {
		t.Errorf("CanUseTool was asked about %v", asked)
	}

	// An allow rule runs them; in plan mode too, since the hint keeps
	// them out of plan mode's refusal.
	for _, mode := range []PermissionMode{PermissionDefault, PermissionPlan} {
		o = base()
		o.PermissionMode = mode
		o.AllowedTools = []string{"search_docs", "mcp__orders__*"}
		res, _ = runCalls(t, o, calls...)
		res["s"].want(t, "s", "allow", byRule, "echo:a")
		res["o"].want(t, "o", "allow", byRule, "echo:b")
	}
	// In plan mode a tool without the hint is refused even when allowed.
	o = base()
	o.PermissionMode = PermissionPlan
	o.CustomTools = append(o.CustomTools, echoTool(t, "mutate", false))
	o.AllowedTools = []string{"mutate"}
	res, _ = runCalls(t, o, call("m", "mutate", `{"msg": "c"}`))
	res["m"].want(t, "m", "deny", byMode, "plan mode")
}
