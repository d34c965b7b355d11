package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/tools"
)

// namePatternRE accepts a tool name or a wildcard over tool names.
var namePatternRE = regexp.MustCompile(`^[A-Za-z0-9_*?-]+$`)

// namePatterns is a list of tool names and wildcards ("mcp__orders__*").
type namePatterns []string

func compileNamePatterns(field string, pats []string) (namePatterns, error) {
	// Claude Code's names are ours ("Read" is read_file; see names.go).
	pats = slices.Clone(pats)
	for i, p := range pats {
		pats[i] = policies.CanonicalTool(p)
		if !namePatternRE.MatchString(p) {
			return nil, fmt.Errorf("%s: %q is not a tool name or wildcard (letters, digits, '_', '-', '*', '?')", field, p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", field, p, err)
		}
	}
	return namePatterns(pats), nil
}

func (ps namePatterns) match(name string) bool {
	for _, p := range ps {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Who decided a call, as the permission event's "by" says.
const (
	byRule       = "rule"
	byHook       = "hook"
	byMode       = "mode"
	byDefault    = "default"
	byCanUseTool = "can_use_tool"
	byApproval   = "approval"
	byHeadless   = "headless"
)

// decision is the gate's verdict on one call.
type decision struct {
	allow bool
	// message is shown to the model on a denial.
	message string
	// input replaces the call's input when set (a hook's or CanUseTool's
	// rewrite, validated).
	input json.RawMessage
	// interrupt stops the run after a denial.
	interrupt bool

	// Why, for the permission event.
	by     string
	rule   *policies.Rule
	hook   string
	reason string
	asked  bool
	// context is what PreToolUse hooks added for the model.
	context []string
}

// gate decides whether a call may run. The order, deny first:
//
//  1. deny rules (Options.DisallowedTools, Options.Rules — presets and
//     policy files) → denied; plan mode refuses a tool that is not
//     read-only;
//  2. PreToolUse hooks → deny, ask, allow, or a rewritten input (which is
//     validated and checked against the deny rules again);
//  3. ask rules → ask; allow rules (and Options.AllowedTools) → allowed;
//  4. the permission mode (bypassPermissions allows; acceptEdits allows
//     workspace edits; auto allows read-only tools and workspace edits,
//     asks for the shell and network tools);
//  5. the tool's default: lite-agent's own read-only tools run, others
//     ask (a custom or MCP tool's ReadOnlyHint is a hint, not a
//     permission; see annotations.go);
//  6. an ask: dontAsk mode denies; else CanUseTool, else the approval
//     handler, else (headless) denied with a message the model sees.
//
// Permission is not confinement: an allowed call still runs sandboxed.
//
// A subagent's gate is a copy of its parent's that shares the same rules
// (and the allow rules added at run time), hooks, CanUseTool and approval
// handler; only the mode (see AgentDefinition.PermissionMode) and the
// agent's name differ.
type gate struct {
	rules      *policies.Ruleset
	mode       PermissionMode
	hooks      *hookSet
	canUseTool CanUseToolFunc
	approval   tools.ApprovalFunc
	sessionID  string
	workspace  string
	// delegate is the agent tool: it changes nothing itself, and every
	// call the subagent it starts makes passes this gate, so it runs
	// without asking by default and is not refused in plan mode (the
	// subagent is in plan mode then too).
	delegate *tools.Tool
	// trusted are the tools whose read-only hint lets them run by default
	// (annotations.go); any other tool's hint is not a permission.
	trusted map[*tools.Tool]bool
	// agent and agentID name the subagent deciding ("" for the main agent).
	agent, agentID string
}

func (g *gate) hookInput() HookInput {
	return HookInput{SessionID: g.sessionID, Workspace: g.workspace, PermissionMode: g.mode, Agent: g.agent, AgentID: g.agentID}
}

// readOnly reports whether the gate treats t as changing nothing.
func (g *gate) readOnly(t *tools.Tool) bool {
	return t.ReadOnly() || g.delegate != nil && t == g.delegate
}

// unprovenDenial: in bypassPermissions mode nobody is asked, so a call
// the rules cannot prove clear of a deny rule (policies.Decision.Unproven)
// is denied — a deny rule holds without an ask behind it.
func (g *gate) unprovenDenial(v policies.Decision) (decision, bool) {
	if g.mode != PermissionBypass || v.Behavior != policies.Ask || !v.Unproven {
		return decision{}, false
	}
	msg := v.Reason + " (bypassPermissions mode asks nobody, so a call that could run what a deny rule names is denied; write the command so that every program it runs is a fixed word)"
	return decision{by: byRule, rule: v.CouldMatch, message: msg, reason: v.Reason}, true
}

func ruleDenial(v policies.Decision, after string) decision {
	msg := v.Reason
	if after != "" {
		msg += " (" + after + ")"
	}
	return decision{by: byRule, rule: v.Rule, message: msg, reason: v.Reason}
}

// decide runs the gate for a call whose input has been validated. report
// delivers hook events (failures) to the stream.
func (g *gate) decide(ctx context.Context, t *tools.Tool, call tools.Call, report func(Event)) decision {
	name := t.Name()
	input := call.Input

	// 1. Deny rules, and plan mode's refusal, which is a denial too.
	rc := g.rules.Call(name, input)
	v := rc.Decide()
	if v.Behavior == policies.Deny {
		return ruleDenial(v, "")
	}
	if d, ok := g.unprovenDenial(v); ok {
		return d
	}
	if g.mode == PermissionPlan && !g.readOnly(t) {
		return decision{by: byMode, reason: "plan mode refuses tools that are not read-only",
			message: fmt.Sprintf("this session is in plan mode: %s is not read-only, and no such tool runs in plan mode. Investigate with read-only tools and present your plan; the user will leave plan mode to carry it out", name)}
	}

	// 2. PreToolUse hooks.
	var rewritten json.RawMessage
	var extra []string
	askBy, askReason, askHook := "", "", ""
	var askRule *policies.Rule
	if hs := g.hooks.matching(HookPreToolUse, name, input); len(hs) > 0 {
		h := runPre(ctx, hs, g.hookInput(), call, t, report)
		extra = h.context
		if h.input != nil {
			rewritten, input = h.input, h.input
			// Deny always wins: the rewritten input meets the rules again.
			rc = g.rules.Call(name, input)
			v = rc.Decide()
			if v.Behavior == policies.Deny {
				d := ruleDenial(v, "after the PreToolUse hook "+h.rewrote+" rewrote the input")
				d.context = extra
				return d
			}
			if d, ok := g.unprovenDenial(v); ok {
				d.context = extra
				return d
			}
		}
		switch h.decision {
		case "deny":
			return decision{by: byHook, hook: h.hook, message: h.reason, reason: h.reason, context: extra}
		case "ask":
			askBy, askHook = byHook, h.hook
			askReason = fmt.Sprintf("the PreToolUse hook %s asks", h.hook)
			if h.reason != "" {
				askReason += ": " + h.reason
			}
		case "allow":
			reason := fmt.Sprintf("the PreToolUse hook %s allows it", h.hook)
			if h.reason != "" {
				reason += ": " + h.reason
			}
			return decision{allow: true, by: byHook, hook: h.hook, input: rewritten, reason: reason, context: extra}
		}
	}
	allowed := func(by, reason string, rule *policies.Rule) decision {
		return decision{allow: true, by: by, rule: rule, reason: reason, input: rewritten, context: extra}
	}

	// 3. Ask and allow rules.
	if askBy == "" {
		switch v.Behavior {
		case policies.Ask:
			askBy, askRule, askReason = byRule, v.Rule, v.Reason
			if v.Rule != nil {
				askReason = "the " + v.Reason
			}
		case policies.Allow:
			return allowed(byRule, v.Reason, v.Rule)
		}
	}

	// 4. The permission mode, and 5. the tool's default.
	if askBy == "" {
		switch g.mode {
		case PermissionBypass:
			return allowed(byMode, "bypassPermissions mode", nil)
		case PermissionAcceptEdits:
			if rc.EditsInWorkspace() {
				return allowed(byMode, "acceptEdits mode allows edits inside the workspace", nil)
			}
		case PermissionAuto:
			if why := autoAsks(t); why != "" {
				askBy, askReason = byMode, "auto mode asks before "+why
			} else if g.runsByDefault(t) {
				return allowed(byMode, "auto mode allows read-only tools", nil)
			} else if rc.EditsInWorkspace() || workspaceOnly(t) {
				return allowed(byMode, "auto mode allows changes that stay in the workspace", nil)
			}
		}
	}
	if askBy == "" {
		// A hint is not a permission (annotations.go): only our own
		// read-only tools run by default.
		if g.runsByDefault(t) {
			return allowed(byDefault, name+" is read-only", nil)
		}
		if g.delegate != nil && t == g.delegate {
			return allowed(byDefault, name+" changes nothing itself; every call of the subagent it starts passes the gate", nil)
		}
		askBy = byDefault
		askReason = fmt.Sprintf("%s can change the workspace or the world and is not pre-approved", name)
		if t.ReadOnly() {
			askReason = fmt.Sprintf("%s is not pre-approved (its readOnlyHint is a hint, not a permission)", name)
		}
		if why := rc.NotAllowedBecause(); why != "" && v.Behavior == "" {
			askReason += " (allow rules cannot approve this command: " + why + ")"
		}
	}

	// 6. Ask.
	asked := func(d decision) decision {
		d.asked, d.context = true, extra
		if d.hook == "" {
			d.hook = askHook
		}
		if d.rule == nil {
			d.rule = askRule
		}
		return d
	}
	if g.mode == PermissionDontAsk {
		return decision{by: byMode, rule: askRule, hook: askHook, reason: "dontAsk mode denies what would ask: " + askReason, context: extra,
			message: fmt.Sprintf("this session never asks for approval (dontAsk mode), and this call needs it: %s. Pre-approve it with an allow rule, or do without it", askReason)}
	}
	if g.canUseTool != nil {
		info := ToolUseInfo{SessionID: g.sessionID, ToolUseID: call.ID, Agent: g.agent, AgentID: g.agentID, Reason: askReason, Mode: g.mode, Suggestions: rc.Suggest()}
		res, err := g.canUseTool(ctx, name, input, info)
		if err != nil {
			return asked(decision{by: byCanUseTool, reason: askReason, message: fmt.Sprintf("permission check for %s failed: %v", name, err)})
		}
		if !res.Allow {
			msg := res.Message
			if msg == "" {
				msg = fmt.Sprintf("the user denied this call to %s", name)
			}
			return asked(decision{by: byCanUseTool, reason: askReason, message: msg, interrupt: res.Interrupt})
		}
		d := asked(decision{allow: true, by: byCanUseTool, reason: askReason, input: rewritten})
		if len(res.UpdatedInput) > 0 {
			prepared, bad := t.PrepareInput(res.UpdatedInput)
			if bad != nil {
				return asked(decision{by: byCanUseTool, reason: askReason, message: fmt.Sprintf("CanUseTool rewrote the input into one the tool refuses: %s", bad.TextOf())})
			}
			v := g.rules.Decide(name, prepared)
			if v.Behavior == policies.Deny {
				return asked(ruleDenial(v, "after CanUseTool rewrote the input"))
			}
			if d, ok := g.unprovenDenial(v); ok {
				return asked(d)
			}
			d.input = prepared
		}
		if len(res.AllowRules) > 0 {
			if err := g.rules.AddAllow("allowed for this session", res.AllowRules...); err != nil {
				return asked(decision{by: byCanUseTool, reason: askReason, message: fmt.Sprintf("CanUseTool returned an allow rule that does not parse: %v", err)})
			}
		}
		return d
	}
	if g.approval != nil {
		reason := askReason
		if g.agent != "" {
			reason = fmt.Sprintf("asked by the subagent %s (%s): %s", g.agent, g.agentID, askReason)
		}
		ok, err := g.approval(ctx, tools.ApprovalRequest{ToolName: name, CallID: call.ID, Input: input, Reason: reason})
		if err != nil {
			return asked(decision{by: byApproval, reason: askReason, message: fmt.Sprintf("asking for approval of %s failed: %v", name, err)})
		}
		if !ok {
			return asked(decision{by: byApproval, reason: askReason, message: fmt.Sprintf("the user denied this call to %s", name)})
		}
		return asked(decision{allow: true, by: byApproval, reason: askReason, input: rewritten})
	}
	return decision{by: byHeadless, rule: askRule, hook: askHook, reason: askReason, context: extra,
		message: fmt.Sprintf("%s needs approval (%s), and this session has no way to ask (it runs headless); %s", name, askReason, howToAllow(rc.Suggest()))}
}

// howToAllow tells the model (and through it the user) how this call
// could be pre-approved.
func howToAllow(rules []string) string {
	if len(rules) == 0 {
		return "no allow rule can describe this call, so only a person can approve it"
	}
	return fmt.Sprintf("it must be pre-approved with an allow rule (AllowedTools, --allowed-tools %q, or a policy file)", strings.Join(rules, ","))
}

// autoAsks says why auto mode asks before a tool: the shell, and tools
// that may reach the network (or did not declare).
func autoAsks(t *tools.Tool) string {
	if t.Name() == policies.ShellTool {
		return "shell commands"
	}
	sec := t.Security()
	if sec == nil {
		return "tools that do not declare what they touch"
	}
	if sec.Network != tools.NetworkNone {
		return "tools that reach the network"
	}
	return ""
}

// workspaceOnly reports whether a tool declares effects that stay in the
// workspace and no network.
func workspaceOnly(t *tools.Tool) bool {
	sec := t.Security()
	if sec == nil {
		return false
	}
	return sec.Network == tools.NetworkNone && sec.Filesystem != tools.FilesystemUnrestricted && sec.SideEffects != tools.SideEffectsExternal
}
