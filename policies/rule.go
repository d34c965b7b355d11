package policies

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/lite-agent/lite-agent/internal/netproxy"
)

// Behavior is what a rule does to the calls it matches.
type Behavior string

const (
	// Allow runs the call without asking.
	Allow Behavior = "allow"
	// Ask sends the call to CanUseTool, the approval prompt, or — headless
	// or in dontAsk mode — denies it.
	Ask Behavior = "ask"
	// Deny refuses the call with a message the model sees. Deny wins over
	// everything.
	Deny Behavior = "deny"
)

// ParseBehavior checks a behavior given as text.
func ParseBehavior(s string) (Behavior, error) {
	switch b := Behavior(s); b {
	case Allow, Ask, Deny:
		return b, nil
	}
	return "", fmt.Errorf("unknown rule behavior %q (allow, ask or deny)", s)
}

// argKind is how a tool's argument pattern is read.
type argKind int

const (
	argNone   argKind = iota
	argShell          // a shell command (bash)
	argPath           // a file path
	argDomain         // the host of a URL (web_fetch), as domain:PATTERN
)

// toolArg says which input field of a built-in tool an argument pattern is
// matched against. The names and fields are the built-in tools' documented
// contract (tools/builtin).
type toolArg struct {
	kind  argKind
	field string
	// def is the field's value when the input omits it.
	def string
	// edit: the tool changes the file (acceptEdits allows it inside the
	// workspace).
	edit bool
}

var toolArgs = map[string]toolArg{
	"bash":       {kind: argShell, field: "command"},
	"read_file":  {kind: argPath, field: "path"},
	"write_file": {kind: argPath, field: "path", edit: true},
	"edit_file":  {kind: argPath, field: "path", edit: true},
	"list_dir":   {kind: argPath, field: "path", def: "."},
	"glob":       {kind: argPath, field: "path", def: "."},
	"grep":       {kind: argPath, field: "path", def: "."},
	"web_fetch":  {kind: argDomain, field: "url"},
}

// ShellTool is the name of the tool whose argument is a shell command.
const ShellTool = "bash"

// IsEditTool reports whether name is a built-in tool that edits one file
// named by its path field (write_file, edit_file).
func IsEditTool(name string) bool { return toolArgs[name].edit }

// ArgumentTools lists the tools that take an argument pattern.
func ArgumentTools() []string {
	return []string{"bash", "read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "web_fetch"}
}

// toolPatternRE accepts a tool name or a wildcard over tool names: the
// characters of a tool name plus '*' and '?'.
var toolPatternRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_*?-]+$`) })

// Rule is one parsed permission rule: a behavior, a tool pattern and an
// optional argument pattern. Build one with ParseRule; the zero value
// matches nothing.
//
// Syntax: TOOL or TOOL(ARG). TOOL is a tool name or a wildcard over names
// ("mcp__orders__*"). ARG is read by the tool:
//
//   - bash(COMMAND): the command, word by word after shell quoting is
//     removed ("git status"); COMMAND:* is a prefix — "npm run test:*"
//     matches "npm run test" and "npm run test -- --watch", not
//     "npm run testing". bash(*) is the same as bash.
//   - read_file, write_file, edit_file, list_dir, glob, grep (PATH): a
//     doublestar glob over the path the call names, relative to the
//     workspace unless absolute ("src/**", "/etc/**", "~/.ssh/**").
//   - web_fetch(domain:PATTERN): the host of the URL the call fetches;
//     PATTERN is the sandbox's --allow-domain grammar ("docs.example.com",
//     "*.example.com" for its subdomains, an optional ":PORT", an IP),
//     matched by the same code (internal/netproxy). The sandbox's proxy
//     still decides the connection: an allow rule grants no domain.
//
// Other tools take no argument pattern. Claude Code's names of the
// built-in tools are read as ours: "Bash(git status)" is
// "bash(git status)", "Read(src/**)" is "read_file(src/**)" (see
// CanonicalTool).
type Rule struct {
	Behavior Behavior `json:"behavior"`
	// Text is the rule as written ("bash(git status)").
	Text string `json:"rule"`
	// Source says where the rule came from ("preset strict",
	// "/home/me/.config/lite-agent/policy.toml:4", "AllowedTools"); it is
	// quoted in every decision the rule makes.
	Source string `json:"source,omitempty"`

	tool   string // the tool pattern
	wild   bool   // tool has '*' or '?'
	hasArg bool
	arg    string // the argument pattern as written
	kind   argKind
	// shell rules: the pattern's words, and whether it is a prefix.
	words  []string
	prefix bool
	// path rules: the pattern as written, cleaned (workspace-relative or
	// absolute or ~-relative).
	pathPat string
	// domain rules: the parsed pattern.
	domain *netproxy.Pattern
}

// ParseRule parses one rule. The error says what is wrong with it.
func ParseRule(b Behavior, text string) (Rule, error) {
	if _, err := ParseBehavior(string(b)); err != nil {
		return Rule{}, err
	}
	r := Rule{Behavior: b, Text: text}
	s := strings.TrimSpace(text)
	if s == "" {
		return Rule{}, fmt.Errorf("empty rule")
	}
	tool, rest, hasArg := strings.Cut(s, "(")
	r.tool = strings.TrimSpace(tool)
	if !toolPatternRE().MatchString(r.tool) {
		return Rule{}, fmt.Errorf("rule %q: %q is not a tool name or wildcard (letters, digits, '_', '-', '*', '?')", text, r.tool)
	}
	if _, err := path.Match(r.tool, ""); err != nil {
		return Rule{}, fmt.Errorf("rule %q: bad tool pattern: %w", text, err)
	}
	r.wild = strings.ContainsAny(r.tool, "*?")
	// Another SDK's name of a built-in tool ("Bash", "Read") is ours
	// ("bash", "read_file"): the rule matches, and reads its argument, as
	// if written with our name (see names.go). Text keeps what was written.
	r.tool = CanonicalTool(r.tool)
	if !hasArg {
		return r, nil
	}
	if !strings.HasSuffix(rest, ")") {
		return Rule{}, fmt.Errorf("rule %q: the argument pattern must end with ')'", text)
	}
	arg := strings.TrimSpace(rest[:len(rest)-1])
	if arg == "" {
		return Rule{}, fmt.Errorf("rule %q: empty argument pattern (write %s alone to match every call)", text, r.tool)
	}
	if arg == "*" {
		// TOOL(*) is TOOL.
		return r, nil
	}
	if r.wild {
		return Rule{}, fmt.Errorf("rule %q: an argument pattern needs one tool name, not the wildcard %q", text, r.tool)
	}
	spec, ok := toolArgs[r.tool]
	if !ok {
		hint := ""
		if near := NearestTool(r.tool, ArgumentTools()); near != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", near)
		}
		return Rule{}, fmt.Errorf("rule %q: the %s tool takes no argument pattern (only %s do)%s; write %s alone", text, r.tool, strings.Join(ArgumentTools(), ", "), hint, r.tool)
	}
	r.hasArg, r.arg, r.kind = true, arg, spec.kind
	switch spec.kind {
	case argShell:
		pat := arg
		if p, ok := strings.CutSuffix(arg, ":*"); ok {
			pat, r.prefix = p, true
		}
		words, err := patternWords(pat)
		if err != nil {
			return Rule{}, fmt.Errorf("rule %q: %w", text, err)
		}
		if len(words) == 0 {
			return Rule{}, fmt.Errorf("rule %q: the command pattern has no words", text)
		}
		r.words = words
	case argPath:
		p := arg
		if !strings.HasPrefix(p, "~/") && p != "~" && strings.HasPrefix(p, "~") {
			return Rule{}, fmt.Errorf("rule %q: only ~/ is understood, not ~user", text)
		}
		if !doublestar.ValidatePattern(p) {
			return Rule{}, fmt.Errorf("rule %q: %q is not a valid glob pattern", text, p)
		}
		r.pathPat = p
	case argDomain:
		p, ok := strings.CutPrefix(arg, "domain:")
		if !ok {
			return Rule{}, fmt.Errorf("rule %q: the %s tool's argument is domain:PATTERN (e.g. %s(domain:docs.example.com))", text, r.tool, r.tool)
		}
		d, err := netproxy.ParsePattern(strings.TrimSpace(p))
		if err != nil {
			return Rule{}, fmt.Errorf("rule %q: %w", text, err)
		}
		r.domain = d
	}
	return r, nil
}

// MustParseRule is ParseRule for rules written in code; it panics on error.
func MustParseRule(b Behavior, text string) Rule {
	r, err := ParseRule(b, text)
	if err != nil {
		panic(err)
	}
	return r
}

// ParseRules parses each text with behavior b and the same source.
func ParseRules(b Behavior, source string, texts ...string) ([]Rule, error) {
	out := make([]Rule, 0, len(texts))
	for _, t := range texts {
		r, err := ParseRule(b, t)
		if err != nil {
			if source != "" {
				return nil, fmt.Errorf("%s: %w", source, err)
			}
			return nil, err
		}
		r.Source = source
		out = append(out, r)
	}
	return out, nil
}

// String is the rule with its behavior: "deny bash(curl:*)".
func (r Rule) String() string { return string(r.Behavior) + " " + r.Text }

// Tool returns the rule's tool pattern, with another SDK's name of a
// built-in tool replaced by ours ("Bash" → "bash").
func (r Rule) Tool() string { return r.tool }

// HasArgument reports whether the rule has an argument pattern (and so
// matches only some calls of its tool).
func (r Rule) HasArgument() bool { return r.hasArg }

// MatchesTool reports whether the rule's tool pattern matches name.
func (r Rule) MatchesTool(name string) bool {
	if !r.wild {
		return r.tool == name
	}
	ok, _ := path.Match(r.tool, name)
	return ok
}

// describe is how a decision quotes the rule.
func (r *Rule) describe() string {
	if r.Source == "" {
		return fmt.Sprintf("%s rule %q", r.Behavior, r.Text)
	}
	return fmt.Sprintf("%s rule %q (%s)", r.Behavior, r.Text, r.Source)
}

// UnmarshalJSON reads a rule back from its JSON form
// ({"behavior": "deny", "rule": "bash(curl:*)", "source": "..."}) and
// parses it, so that a decoded rule matches like the original.
func (r *Rule) UnmarshalJSON(b []byte) error {
	var raw struct {
		Behavior Behavior `json:"behavior"`
		Text     string   `json:"rule"`
		Source   string   `json:"source"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	p, err := ParseRule(raw.Behavior, raw.Text)
	if err != nil {
		return err
	}
	p.Source = raw.Source
	*r = p
	return nil
}
