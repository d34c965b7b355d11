package policies

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Ruleset is a compiled set of rules for one workspace. Decide is safe for
// concurrent use.
type Ruleset struct {
	workspace string // real, absolute
	home      string
	rules     []*compiled
	exact     map[string][]*compiled // rules for one tool name
	wild      []*compiled            // rules with a wildcard tool pattern

	mu      sync.Mutex
	byTool  map[string][]*compiled // cache: the rules of one tool, in order
	session []*compiled            // allow rules added at run time
}

type compiled struct {
	*Rule
	index    int           // position in the set, to keep the given order
	patterns []pathPattern // path rules: the pattern's lexical and real forms
}

// Compile binds rules to a workspace: path patterns are resolved against
// it. workspace must exist.
func Compile(rules []Rule, workspace string) (*Ruleset, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("policies: workspace %s: %w", workspace, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("policies: workspace %s: %w", workspace, err)
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
	}
	rs := &Ruleset{workspace: real, home: home, exact: map[string][]*compiled{}, byTool: map[string][]*compiled{}}
	for i := range rules {
		c, err := rs.compile(rules[i], i)
		if err != nil {
			return nil, err
		}
		rs.rules = append(rs.rules, c)
		if c.wild {
			rs.wild = append(rs.wild, c)
		} else {
			rs.exact[c.tool] = append(rs.exact[c.tool], c)
		}
	}
	return rs, nil
}

func (rs *Ruleset) compile(r Rule, index int) (*compiled, error) {
	if r.tool == "" {
		// Built as a literal instead of by ParseRule: parse it now.
		if err := r.reparse(); err != nil {
			return nil, err
		}
	}
	c := &compiled{Rule: &r, index: index}
	if r.kind == argPath {
		pats, ok := patternForms(rs.workspace, rs.home, r.pathPat)
		if !ok {
			return nil, fmt.Errorf("%s: ~ cannot be expanded: no home directory is known", r.describe())
		}
		for _, p := range pats {
			c.patterns = append(c.patterns, newPathPattern(p))
		}
	}
	return c, nil
}

// reparse parses a Rule that was built as a struct literal.
func (r *Rule) reparse() error {
	p, err := ParseRule(r.Behavior, r.Text)
	if err != nil {
		return err
	}
	p.Source = r.Source
	*r = p
	return nil
}

// Workspace returns the real path of the workspace the set is bound to.
func (rs *Ruleset) Workspace() string { return rs.workspace }

// Rules returns the rules of the set, in the order given, then the rules
// added with AddAllow.
func (rs *Ruleset) Rules() []Rule {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]Rule, 0, len(rs.rules)+len(rs.session))
	for _, c := range rs.rules {
		out = append(out, *c.Rule)
	}
	for _, c := range rs.session {
		out = append(out, *c.Rule)
	}
	return out
}

// AddAllow adds allow rules for the rest of the set's life (a person chose
// "allow always" for a call).
func (rs *Ruleset) AddAllow(source string, texts ...string) error {
	rules, err := ParseRules(Allow, source, texts...)
	if err != nil {
		return err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rules {
		c, err := rs.compile(r, len(rs.rules)+len(rs.session))
		if err != nil {
			return err
		}
		rs.session = append(rs.session, c)
	}
	rs.byTool = map[string][]*compiled{}
	return nil
}

// forTool returns the rules whose tool pattern matches name, in order.
func (rs *Ruleset) forTool(name string) []*compiled {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if cs, ok := rs.byTool[name]; ok {
		return cs
	}
	var cs []*compiled
	if len(rs.wild) == 0 && len(rs.session) == 0 {
		cs = rs.exact[name]
	} else {
		for _, c := range rs.rules {
			if c.MatchesTool(name) {
				cs = append(cs, c)
			}
		}
		for _, c := range rs.session {
			if c.MatchesTool(name) {
				cs = append(cs, c)
			}
		}
	}
	rs.byTool[name] = cs
	return cs
}

// DeniesWholeTool reports whether a deny rule without an argument pattern
// matches the tool: such a tool is removed from the model's view.
func (rs *Ruleset) DeniesWholeTool(name string) (Rule, bool) {
	for _, c := range rs.forTool(name) {
		if c.Behavior == Deny && !c.hasArg {
			return *c.Rule, true
		}
	}
	return Rule{}, false
}

// Decision is what the rules say about one call.
type Decision struct {
	// Behavior is Deny, Ask or Allow; "" when no rule decides (the
	// permission mode and the tool's default do).
	Behavior Behavior
	// Rule is the deciding rule; nil when the call asks because a rule
	// might match what the command will run (see Reason).
	Rule *Rule
	// Reason says why, in words the model and a person can act on.
	Reason string
	// Unproven is set on an Ask that stands for a deny rule: the command
	// may run what a deny rule names (a word only known when it runs, or
	// code the rules cannot read), and the rules cannot show that it does
	// not. A person may still approve it when asked; where nobody is
	// asked (bypassPermissions) the gate must deny it, so that a deny
	// rule holds without an ask behind it. CouldMatch is the deny rule
	// that stands for them.
	Unproven   bool
	CouldMatch *Rule
}

// subject is what argument patterns are matched against.
type subject struct {
	spec toolArg
	// shell
	shell *shellAnalysis
	// path: ok is false when the input names no usable path.
	ok            bool
	lexical, real string
	why           string // when !ok
	// domain: the URL's host and port (ok as for path).
	host string
	port int
}

func (rs *Ruleset) subject(tool string, input json.RawMessage) *subject {
	spec := toolArgs[tool]
	s := &subject{spec: spec}
	val, ok, why := inputField(input, spec)
	switch spec.kind {
	case argShell:
		if !ok {
			s.shell = &shellAnalysis{problems: []string{why}}
			return s
		}
		s.shell = analyzeShell(val)
	case argPath:
		if !ok {
			s.why = why
			return s
		}
		s.ok = true
		s.lexical, s.real = pathForms(rs.workspace, val)
	case argDomain:
		if !ok {
			s.why = why
			return s
		}
		s.host, s.port, s.why = urlHostPort(val)
		s.ok = s.why == ""
	}
	return s
}

// urlHostPort reads the host and port a web_fetch URL reaches (the
// scheme's default port when none is given), or why it names none.
func urlHostPort(raw string) (string, int, string) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", 0, fmt.Sprintf("the url does not parse (%v)", err)
	}
	port := 0
	switch u.Scheme {
	case "http":
		port = 80
	case "https":
		port = 443
	default:
		return "", 0, fmt.Sprintf("the url's scheme %q is not http or https", u.Scheme)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Sprintf("the url's port %q is not valid", p)
		}
		port = n
	}
	if u.Hostname() == "" {
		return "", 0, "the url has no host"
	}
	return u.Hostname(), port, ""
}

// inputField reads the string field an argument pattern is about. It
// decodes the way a tool built with tools.New does (encoding/json into a
// struct field with that tag), so that the rules read the value the
// handler will get — given the same, validated input.
func inputField(input json.RawMessage, spec toolArg) (string, bool, string) {
	var v struct {
		Command *string `json:"command"`
		Path    *string `json:"path"`
		URL     *string `json:"url"`
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if err := json.Unmarshal(input, &v); err != nil {
		return "", false, fmt.Sprintf("the input does not fit the tool (%v)", err)
	}
	f := v.Path
	switch spec.field {
	case "command":
		f = v.Command
	case "url":
		f = v.URL
	}
	if f == nil {
		if spec.def != "" {
			return spec.def, true, ""
		}
		return "", false, fmt.Sprintf("the input has no %q", spec.field)
	}
	return *f, true, ""
}

// match matches a deny or ask rule with an argument: yes, no or maybe,
// with the part or path that matched and, for maybe, why it is not known.
func (s *subject) match(c *compiled) (matchResult, string) {
	switch c.kind {
	case argShell:
		res, what := matchNo, ""
		for i := range s.shell.parts {
			p := &s.shell.parts[i]
			for _, v := range p.views {
				switch c.matchWords(v) {
				case matchYes:
					return matchYes, p.text
				case matchMaybe:
					if res == matchNo {
						res, what = matchMaybe, p.text
					}
				}
			}
		}
		return res, what
	case argPath:
		if !s.ok {
			return matchMaybe, s.why
		}
		for _, pat := range c.patterns {
			if pat.match(s.lexical) {
				return matchYes, s.lexical
			}
			if pat.match(s.real) {
				return matchYes, s.real
			}
		}
	case argDomain:
		if !s.ok {
			return matchMaybe, s.why
		}
		if c.domain.Matches(s.host, s.port) {
			return matchYes, s.host
		}
	}
	return matchNo, ""
}

// Call is one tool call being decided. The analysis of its argument (the
// parsed command, the resolved path) is done once, when first needed, and
// shared by Decide, Suggest, NotAllowedBecause and EditsInWorkspace. Make
// a new Call for every decision: the resolved path reflects the file
// system when it was first needed.
type Call struct {
	rs    *Ruleset
	tool  string
	input json.RawMessage
	subj  *subject
}

// Call starts the decision about one call; input should be the validated
// input the tool will receive.
func (rs *Ruleset) Call(tool string, input json.RawMessage) *Call {
	return &Call{rs: rs, tool: tool, input: input}
}

func (c *Call) subject() *subject {
	if c.subj == nil {
		c.subj = c.rs.subject(c.tool, c.input)
	}
	return c.subj
}

// Decide is rs.Call(tool, input).Decide().
func (rs *Ruleset) Decide(tool string, input json.RawMessage) Decision {
	return rs.Call(tool, input).Decide()
}

// Decide applies the rules to the call: deny first (deny always wins),
// then ask, then allow.
func (call *Call) Decide() Decision {
	tool := call.tool
	cands := call.rs.forTool(tool)
	if len(cands) == 0 {
		return Decision{}
	}
	var subj *subject
	argRules := false
	for _, c := range cands {
		if !c.hasArg {
			if c.Behavior == Deny {
				return Decision{Behavior: Deny, Rule: c.Rule, Reason: fmt.Sprintf("%s matches every call to %s", c.describe(), tool)}
			}
			continue
		}
		argRules = true
	}
	if argRules {
		subj = call.subject()
	}
	// Deny, then ask: a certain match decides; a possible one asks.
	var maybe *compiled
	var maybeWhat string
	guarded := false // the tool has deny or ask rules with arguments
	for _, b := range []Behavior{Deny, Ask} {
		for _, c := range cands {
			if c.Behavior != b {
				continue
			}
			if !c.hasArg {
				if b == Ask {
					return Decision{Behavior: Ask, Rule: c.Rule, Reason: fmt.Sprintf("%s matches every call to %s", c.describe(), tool)}
				}
				continue
			}
			guarded = true
			switch res, what := subj.match(c); res {
			case matchYes:
				return Decision{Behavior: b, Rule: c.Rule, Reason: fmt.Sprintf("%s matches %q", c.describe(), what)}
			case matchMaybe:
				if maybe == nil {
					maybe, maybeWhat = c, what
				}
			}
		}
	}
	if guarded && subj.shell != nil && (len(subj.shell.problems) > 0 || len(subj.shell.opaque) > 0) {
		// Any deny rule with an argument could be what the unknown part
		// runs: the first one stands for them.
		var deny *compiled
		for _, c := range cands {
			if c.Behavior == Deny && c.hasArg && deny == nil {
				deny = c
			}
		}
		why := append(append([]string(nil), subj.shell.problems...), subj.shell.opaque...)
		d := Decision{Behavior: Ask, Reason: fmt.Sprintf("cannot prove that the command avoids the deny and ask rules of %s: %s", tool, strings.Join(why, "; "))}
		if deny != nil {
			d.Unproven, d.CouldMatch = true, deny.Rule
		}
		return d
	}
	if maybe != nil {
		d := Decision{Behavior: Ask, Reason: fmt.Sprintf("cannot prove that %q is not matched by %s: part of it is only known when it runs", maybeWhat, maybe.describe())}
		if maybe.Behavior == Deny {
			d.Unproven, d.CouldMatch = true, maybe.Rule
		}
		return d
	}
	// Allow: a rule for the whole tool, or argument rules that cover the
	// whole call.
	for _, c := range cands {
		if c.Behavior == Allow && !c.hasArg {
			return Decision{Behavior: Allow, Rule: c.Rule, Reason: fmt.Sprintf("%s matches every call to %s", c.describe(), tool)}
		}
	}
	if subj != nil {
		if c := allowedBy(subj, cands); c != nil {
			return Decision{Behavior: Allow, Rule: c.Rule, Reason: fmt.Sprintf("%s matches", c.describe())}
		}
	}
	return Decision{}
}

// allowedBy returns an allow rule that covers the call (for a compound
// command, the rule of its first part: every part is covered by some
// rule), or nil.
func allowedBy(s *subject, cands []*compiled) *compiled {
	switch s.spec.kind {
	case argShell:
		a := s.shell
		if len(a.problems) > 0 || len(a.noAllow) > 0 || len(a.parts) == 0 {
			return nil
		}
		var first *compiled
		for i := range a.parts {
			var hit *compiled
			for _, c := range cands {
				if c.Behavior == Allow && c.hasArg && c.allowsWords(a.parts[i].words) {
					hit = c
					break
				}
			}
			if hit == nil {
				return nil
			}
			if first == nil {
				first = hit
			}
		}
		return first
	case argPath:
		if !s.ok {
			return nil
		}
		for _, c := range cands {
			if c.Behavior != Allow || !c.hasArg {
				continue
			}
			// The real path only: a symlink inside an allowed directory
			// that leads elsewhere is not allowed by it.
			for _, pat := range c.patterns {
				if pat.match(s.real) {
					return c
				}
			}
		}
	case argDomain:
		if !s.ok {
			return nil
		}
		for _, c := range cands {
			if c.Behavior == Allow && c.hasArg && c.domain.Matches(s.host, s.port) {
				return c
			}
		}
	}
	return nil
}

// NotAllowedBecause explains, for a shell call that argument allow rules
// did not allow, what in the command they cannot state ("" when nothing).
func (call *Call) NotAllowedBecause() string {
	if toolArgs[call.tool].kind != argShell {
		return ""
	}
	s := call.subject()
	why := append(append([]string(nil), s.shell.problems...), s.shell.noAllow...)
	return strings.Join(why, "; ")
}

// Suggest returns allow rules that would let this call run without asking
// next time: for bash, one exact rule per part of the command (none when a
// part is not fixed); for the file tools, the exact path; for any other
// tool, its name.
func (call *Call) Suggest() []string {
	tool, rs := call.tool, call.rs
	spec, ok := toolArgs[tool]
	if !ok {
		return []string{tool}
	}
	s := call.subject()
	switch spec.kind {
	case argShell:
		a := s.shell
		if len(a.problems) > 0 || len(a.noAllow) > 0 {
			return nil
		}
		seen := map[string]bool{}
		var out []string
		for i := range a.parts {
			sug := a.parts[i].suggestion()
			if sug == "" {
				return nil
			}
			if !seen[sug] {
				seen[sug] = true
				out = append(out, sug)
			}
		}
		return out
	case argPath:
		if !s.ok {
			return nil
		}
		p := s.real
		if rel, ok := paths.Rel(rs.workspace, p); ok {
			p = rel
		}
		if strings.ContainsAny(p, "*?[]{}\\()") || !doublestar.ValidatePattern(p) {
			return nil
		}
		return []string{tool + "(" + p + ")"}
	case argDomain:
		if !s.ok {
			return nil
		}
		return []string{tool + "(domain:" + s.host + ")"}
	}
	return nil
}

// EditsInWorkspace reports whether the call is a file edit tool's call on
// a path whose real form is inside the workspace (acceptEdits and auto
// allow those).
func (call *Call) EditsInWorkspace() bool {
	if !toolArgs[call.tool].edit {
		return false
	}
	s := call.subject()
	return s.ok && paths.Within(s.real, call.rs.workspace) && paths.Within(s.lexical, call.rs.workspace)
}
