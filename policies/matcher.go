package policies

import "encoding/json"

// Matcher decides whether a hook applies to a call. Its pattern is a rule
// pattern ("bash", "mcp__orders__*", "bash(git push:*)", "write_file(src/**)")
// read like a deny rule: a compound command matches when any part does,
// a path when either its lexical or its real form does, and a call the
// pattern might match (a command only known when it runs) matches too — a
// guard runs when in doubt.
type Matcher struct {
	set *Ruleset // nil: every tool
}

// NewMatcher compiles pattern for workspace; "" matches every tool.
func NewMatcher(pattern, workspace string) (*Matcher, error) {
	if pattern == "" {
		return &Matcher{}, nil
	}
	r, err := ParseRule(Deny, pattern)
	if err != nil {
		return nil, err
	}
	set, err := Compile([]Rule{r}, workspace)
	if err != nil {
		return nil, err
	}
	return &Matcher{set: set}, nil
}

// Match reports whether the pattern matches (or might match) the call.
func (m *Matcher) Match(tool string, input json.RawMessage) bool {
	if m == nil || m.set == nil {
		return true
	}
	return m.set.Decide(tool, input).Behavior != ""
}

// MatchTool reports whether the pattern's tool part matches name (for
// events that have a tool but no input).
func (m *Matcher) MatchTool(name string) bool {
	if m == nil || m.set == nil {
		return true
	}
	return len(m.set.forTool(name)) > 0
}
