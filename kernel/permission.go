package kernel

import (
	"context"
	"encoding/json"

	"github.com/lite-agent/lite-agent/policies"
)

// PermissionMode is what the gate does with a call that no rule, hook or
// option decided (see the package documentation, "The permission gate").
// It is policies.Mode, so that presets and policy files can name one.
type PermissionMode = policies.Mode

// The permission modes.
const (
	// PermissionDefault: read-only tools run; every other call asks.
	PermissionDefault = policies.ModeDefault
	// PermissionAcceptEdits: like default, and write_file and edit_file
	// run without asking on paths inside the workspace.
	PermissionAcceptEdits = policies.ModeAcceptEdits
	// PermissionPlan: no tool that is not read-only runs; the model is
	// told to present its plan instead.
	PermissionPlan = policies.ModePlan
	// PermissionDontAsk: whatever would ask is denied, with a message the
	// model sees.
	PermissionDontAsk = policies.ModeDontAsk
	// PermissionBypass: everything runs without asking, except what deny
	// rules, DisallowedTools, ask rules and hooks say. It needs
	// Options.AllowDangerouslySkipPermissions; the sandbox still confines
	// every call.
	PermissionBypass = policies.ModeBypassPermissions
	// PermissionAuto: read-only tools and workspace edits run; the shell,
	// tools that reach the network and tools with effects outside the
	// workspace ask.
	PermissionAuto = policies.ModeAuto
)

// ToolUseInfo tells CanUseTool about the call it decides.
type ToolUseInfo struct {
	SessionID string
	ToolUseID string
	// Agent and AgentID name the subagent whose call this is (its key in
	// Options.Agents, and its id in the session's events); both are empty
	// for the main agent.
	Agent   string
	AgentID string
	// Reason says why the call was not allowed outright (which rule, hook
	// or mode asked).
	Reason string
	// Mode is the permission mode of the agent asking.
	Mode PermissionMode
	// Suggestions are allow rules that would let this call run without
	// asking (one per part of a compound command; none when a part is not
	// a fixed command). Return them in PermissionResult.AllowRules for
	// "allow always".
	Suggestions []string
}

// PermissionResult is CanUseTool's answer.
type PermissionResult struct {
	// Allow lets the call run; otherwise it is denied.
	Allow bool
	// UpdatedInput, when set with Allow, replaces the call's input. It is
	// validated against the tool's schema and checked against the deny
	// rules again: a rewrite cannot reach what a deny rule refuses.
	UpdatedInput json.RawMessage
	// AllowRules, with Allow, are added as allow rules for the rest of the
	// run ("allow always for this session"): usually
	// ToolUseInfo.Suggestions. A rule that does not parse denies the call.
	AllowRules []string
	// Message is shown to the model when the call is denied.
	Message string
	// Interrupt stops the whole run after a denial.
	Interrupt bool
}

// CanUseToolFunc decides whether a tool call that would ask may run. An
// error counts as a denial.
type CanUseToolFunc func(ctx context.Context, toolName string, input json.RawMessage, info ToolUseInfo) (PermissionResult, error)
