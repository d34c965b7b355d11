package kernel

import (
	"github.com/lite-agent/lite-agent/tools"
)

// Annotations are hints, not permissions.
//
// A tool's ReadOnlyHint is what its author says, not something the kernel
// can check: a custom or MCP tool that claims it and writes anyway would,
// if the hint allowed it, run without any rule, mode, hook or CanUseTool
// having said yes. So the hint does what the seeds say it does — it lets a
// call run concurrently with other read-only calls and lets it run in plan
// mode — and it is never a permission: such a tool runs when an allow
// rule, a mode that allows it (bypassPermissions; auto for a tool whose
// declared, enforced Security stays in the workspace), a PreToolUse hook
// or CanUseTool says so. Only lite-agent's own read-only tools (the
// built-in file and search tools, the MCP resource tools) run by default,
// because their code is ours and does what the hint says.

// trustedReadOnly returns the tools of a session whose ReadOnlyHint the
// gate may treat as a permission: the built-ins that declare it, and the
// tools a toolset the session was handed vouches for
// (tools.ToolTraits.TrustedReadOnly: package mcp's resource tools).
func (r *run) trustedReadOnly() map[*tools.Tool]bool {
	set := map[*tools.Tool]bool{}
	for t := range r.builtins {
		if t.ReadOnly() {
			set[t] = true
		}
	}
	for _, ot := range r.toolsets {
		for _, t := range ot.tools {
			if t.ReadOnly() && ot.traits(t).TrustedReadOnly {
				set[t] = true
			}
		}
	}
	return set
}

// runsByDefault reports whether t runs when nothing else decided: its
// read-only hint is trusted (see trustedReadOnly).
func (g *gate) runsByDefault(t *tools.Tool) bool { return g.trusted[t] }
