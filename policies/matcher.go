package policies

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Matcher decides whether a hook applies to a call. Its pattern is a rule
// pattern ("bash", "mcp__orders__*", "bash(git push:*)", "write_file(src/**)")
// read like a deny rule: a compound command matches when any part does,
// a path when either its lexical or its real form does, and a call the
// pattern might match (a command only known when it runs) matches too — a
// guard runs when in doubt. Alternatives are separated by '|', as in
// Claude Code's matchers ("Write|Edit"), and its tool names are ours
// ("Bash" is bash; see CanonicalTool).
type Matcher struct {
	set   *Ruleset // nil: every tool
	rules []Rule
}

// ParseMatcher parses a matcher pattern into its alternatives, each a
// rule pattern. It is what NewMatcher and the policy files' [[hooks]]
// check, so that both accept the same patterns.
func ParseMatcher(pattern string) ([]Rule, error) {
	var out []Rule
	for _, alt := range splitAlternatives(pattern) {
		if strings.TrimSpace(alt) == "" {
			return nil, fmt.Errorf("matcher %q: an empty alternative between '|'", pattern)
		}
		r, err := ParseRule(Deny, alt)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// splitAlternatives splits s at the '|' that are outside parentheses: the
// '|' of "bash(a | b)" is part of the command.
func splitAlternatives(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case '|':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// NewMatcher compiles pattern for workspace; "" matches every tool.
func NewMatcher(pattern, workspace string) (*Matcher, error) {
	if pattern == "" {
		return &Matcher{}, nil
	}
	rules, err := ParseMatcher(pattern)
	if err != nil {
		return nil, err
	}
	set, err := Compile(rules, workspace)
	if err != nil {
		return nil, err
	}
	return &Matcher{set: set, rules: rules}, nil
}

// Rules returns the matcher's alternatives (nil for "", every tool), so
// that the kernel can check that each names a tool that exists.
func (m *Matcher) Rules() []Rule {
	if m == nil {
		return nil
	}
	return m.rules
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
