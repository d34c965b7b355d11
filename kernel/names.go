package kernel

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/builtin"
)

// Tool names in the configuration.
//
// Every place a tool is named — Tools, AllowedTools, DisallowedTools,
// Rules (presets, policy files), hook matchers, AgentDefinition.Tools —
// takes our names and Claude Code's (policies.CanonicalTool), and a name
// that is neither is an error before the first model call. A deny rule or
// a guard hook that silently matches nothing is a security bug: the user
// believes something is refused that is not.
//
// What is not checked, and why:
//   - wildcards ("mcp__orders__*", "*"): a pattern may rightly match
//     nothing in one session;
//   - names of tools of an MCP server that did not connect (its tools are
//     unknown; the failure is in session_start) — and, before the servers
//     connect (CheckToolNames), of any external server's tools.

// knownTools is what the names are checked against.
type knownTools struct {
	names map[string]bool
	// mayOffer reports whether name could be the tool of a server whose
	// tools are not known (yet).
	mayOffer func(name string) bool
	// agents: Options.Agents is not empty, so the agent tool exists.
	agents bool
	// unchecked, when set, is told of each name mayOffer let through.
	unchecked func(field, entry, name string)
}

// checkNames checks every tool name of o against k, returning every
// unknown name (errors.Join), each naming where it was written.
func checkNames(o *Options, k knownTools) error {
	var errs []error
	list := slices.Sorted(maps.Keys(k.names))
	name := func(field, entry, n string) {
		if strings.ContainsAny(n, "*?") || k.names[n] {
			return
		}
		if k.mayOffer != nil && k.mayOffer(n) {
			if k.unchecked != nil {
				k.unchecked(field, entry, n)
			}
			return
		}
		if n == AgentTool && !k.agents {
			errs = append(errs, fmt.Errorf("kernel: %s: %q names the agent tool, which exists only when Options.Agents defines a subagent", field, entry))
			return
		}
		errs = append(errs, fmt.Errorf("kernel: %w", policies.UnknownTool(field, entry, n, list)))
	}
	for _, p := range o.Tools {
		name("Tools", p, policies.CanonicalTool(p))
	}
	for _, a := range slices.Sorted(maps.Keys(o.Agents)) {
		for _, p := range o.Agents[a].Tools {
			name(fmt.Sprintf("Agents[%q].Tools", a), p, policies.CanonicalTool(p))
		}
	}
	rule := func(field string, r policies.Rule) {
		if r.Source != "" {
			field = r.Source
		}
		name(field, r.Text, r.Tool())
	}
	for _, r := range o.Rules {
		if r.Tool() == "" {
			// Built as a literal; buildRules has parsed it by now.
			p, err := policies.ParseRule(r.Behavior, r.Text)
			if err != nil {
				continue
			}
			p.Source = r.Source
			r = p
		}
		rule("Rules", r)
	}
	for _, list := range []struct {
		field string
		texts []string
	}{{"AllowedTools", o.AllowedTools}, {"DisallowedTools", o.DisallowedTools}} {
		field, texts := list.field, list.texts
		for _, t := range texts {
			r, err := policies.ParseRule(policies.Allow, t)
			if err != nil {
				errs = append(errs, fmt.Errorf("kernel: %s: %w", field, err))
				continue
			}
			rule(field, r)
		}
	}
	for i, h := range o.Hooks {
		rules, err := policies.ParseMatcher(h.Matcher)
		if h.Matcher == "" || err != nil {
			continue // compileHooks reports a bad matcher
		}
		for _, r := range rules {
			name(fmt.Sprintf("Hooks[%d] (%s) matcher", i, h.Event), h.Matcher, r.Tool())
		}
	}
	return errors.Join(errs...)
}

// checkCustomNames refuses a custom tool that takes another SDK's name of
// a built-in tool: "Bash" in a rule would then mean two tools.
func checkCustomNames(ts []*tools.Tool) error {
	for _, t := range ts {
		if t != nil && policies.IsToolAlias(t.Name()) {
			return fmt.Errorf("kernel: custom tool %q: the name is Claude Code's name of the built-in %s, which rules and matchers read as %s; name the tool differently", t.Name(), policies.CanonicalTool(t.Name()), policies.CanonicalTool(t.Name()))
		}
	}
	return nil
}

// CheckToolNames checks the tool names of o — Tools, AllowedTools,
// DisallowedTools, Rules, hook matchers, AgentDefinition.Tools — as Query
// does before the first model call, without connecting any MCP server:
// names a toolset may offer once open pass (tools.ToolOfferer: for an MCP
// toolset, mcp__SERVER__... when SERVER is an external server of it, since
// its tools are only known once it has connected), and the tools a
// toolset knows before it opens (tools.ToolsetPreview: an in-process MCP
// server's) are names like the custom tools'.
// local.New calls it, so that a misspelt name fails at construction.
func CheckToolNames(o *Options) error {
	k := knownTools{names: map[string]bool{}, agents: len(o.Agents) > 0}
	for _, t := range builtin.All() {
		k.names[t.Name()] = true
	}
	for _, t := range o.CustomTools {
		if t != nil {
			k.names[t.Name()] = true
		}
	}
	if err := checkCustomNames(o.CustomTools); err != nil {
		return err
	}
	if k.agents {
		k.names[AgentTool] = true
	}
	var offerers []tools.ToolOfferer
	for _, ts := range o.Toolsets {
		if p, ok := ts.(tools.ToolsetPreview); ok {
			for _, t := range p.KnownTools() {
				if t != nil {
					k.names[t.Name()] = true
				}
			}
		}
		if of, ok := ts.(tools.ToolOfferer); ok {
			offerers = append(offerers, of)
		}
	}
	k.mayOffer = func(n string) bool {
		for _, of := range offerers {
			if len(of.MayOffer(n)) > 0 {
				return true
			}
		}
		return false
	}
	return checkNames(o, k)
}

// noteUnchecked records, in the status of the failed server whose tool
// name names, that field's entry could not be checked: session_start then
// shows what the failure leaves unverified (a deny rule for a tool of a
// server that is down denies nothing, because the tool is not there).
func (r *run) noteUnchecked(field, entry, name string) {
	for _, ot := range r.toolsets {
		for _, server := range ot.mayOffer(name) {
			for i := range ot.status {
				if st := &ot.status[i]; st.Name == server && st.State != tools.ServerConnected {
					st.Unchecked = append(st.Unchecked, fmt.Sprintf("%s: %s", field, entry))
				}
			}
		}
	}
}
