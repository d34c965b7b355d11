package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"

	"github.com/lite-agent/lite-agent/tools"
)

// namePatternRE accepts a tool name or a wildcard over tool names.
var namePatternRE = regexp.MustCompile(`^[A-Za-z0-9_*?-]+$`)

// namePatterns is a list of tool names and wildcards ("mcp__orders__*").
type namePatterns []string

func compileNamePatterns(field string, pats []string) (namePatterns, error) {
	for _, p := range pats {
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

// decision is the gate's verdict on one call.
type decision struct {
	allow bool
	// message is shown to the model on a denial.
	message string
	// input replaces the call's input when set (CanUseTool's UpdatedInput).
	input json.RawMessage
	// interrupt stops the run after a denial.
	interrupt bool
}

// gate decides whether a call may run, in this order (deny always wins):
// disallowed tools → allowed tools → read-only tools → CanUseTool →
// the approval handler → denied (headless). Permission is not
// confinement: an allowed call still runs under the sandbox policy.
type gate struct {
	allowed    namePatterns
	disallowed namePatterns
	canUseTool CanUseToolFunc
	approval   tools.ApprovalFunc
	sessionID  string
}

func (g *gate) decide(ctx context.Context, t *tools.Tool, call tools.Call) decision {
	if g.disallowed.match(t.Name()) {
		return decision{message: fmt.Sprintf("the %s tool is disallowed in this session", t.Name())}
	}
	if g.allowed.match(t.Name()) || t.ReadOnly() {
		return decision{allow: true}
	}
	reason := fmt.Sprintf("%s can change the workspace or the world and is not pre-approved", t.Name())
	if g.canUseTool != nil {
		res, err := g.canUseTool(ctx, t.Name(), call.Input, ToolUseInfo{SessionID: g.sessionID, ToolUseID: call.ID, Reason: reason})
		if err != nil {
			return decision{message: fmt.Sprintf("permission check for %s failed: %v", t.Name(), err)}
		}
		if !res.Allow {
			msg := res.Message
			if msg == "" {
				msg = fmt.Sprintf("the user denied this call to %s", t.Name())
			}
			return decision{message: msg, interrupt: res.Interrupt}
		}
		return decision{allow: true, input: res.UpdatedInput}
	}
	if g.approval != nil {
		ok, err := g.approval(ctx, tools.ApprovalRequest{ToolName: t.Name(), CallID: call.ID, Input: call.Input, Reason: reason})
		if err != nil {
			return decision{message: fmt.Sprintf("asking for approval of %s failed: %v", t.Name(), err)}
		}
		if !ok {
			return decision{message: fmt.Sprintf("the user denied this call to %s", t.Name())}
		}
		return decision{allow: true}
	}
	return decision{message: fmt.Sprintf("%s needs approval, and this session has no way to ask (it runs headless); it must be pre-approved (AllowedTools, or --allowed-tools %s on the command line)", t.Name(), t.Name())}
}
