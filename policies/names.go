package policies

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Tool names of other agent SDKs.
//
// Claude Code and the Qoder Agent SDK name their built-in tools Read,
// Write, Bash, …; lite-agent names them read_file, write_file, bash, ….
// A configuration ported from those SDKs writes their names in Tools,
// allow/ask/deny rules, hook matchers and subagent tool lists. Before this
// table existed such an entry matched nothing: a deny list of
// ["Bash","Write","Edit"] denied nothing and a PreToolUse guard with the
// matcher "Bash" never fired. So every place that reads a tool name reads
// it through CanonicalTool (rules and matchers in ParseRule, tool lists in
// the kernel), and a name that is none of ours is an error naming the
// nearest one (UnknownTool). Our names stay canonical everywhere else: in
// events, in what the model sees, in a rule's Tool().
//
// This is the only copy of the table; nothing else may map names.

// toolAliases maps another SDK's name of a built-in tool to ours. The
// agent tool's name is "agent" (kernel.AgentTool); it is spelled here
// because policies is below the kernel.
var toolAliases = map[string]string{
	"Read":       "read_file",
	"Write":      "write_file",
	"Edit":       "edit_file",
	"Bash":       "bash",
	"Glob":       "glob",
	"Grep":       "grep",
	"LS":         "list_dir",
	"BashOutput": "bash_output",
	"KillShell":  "kill_task",
	"KillBash":   "kill_task",
	"WebFetch":   "web_fetch",
	"Agent":      "agent",
	"Task":       "agent",
}

// missingTools are other SDKs' tool names that lite-agent has no
// counterpart for, with what to do instead. A rule naming one is an error
// unless a custom tool of that very name exists: a deny rule for WebFetch
// that silently denies nothing would be the bug this file exists to fix.
var missingTools = map[string]string{
	"MultiEdit":    "edit_file makes one replacement per call (call it once per change)",
	"WebSearch":    "lite-agent has no web search tool; add a custom tool named WebSearch or an MCP server",
	"TodoWrite":    "lite-agent has no to-do tool",
	"TodoRead":     "lite-agent has no to-do tool",
	"NotebookEdit": "lite-agent has no notebook tool; edit_file edits the .ipynb JSON",
	"NotebookRead": "lite-agent has no notebook tool; read_file reads the .ipynb JSON",
	"ExitPlanMode": "plan mode ends when the caller changes the permission mode",
}

// CanonicalTool returns lite-agent's name of a built-in tool given under
// another SDK's name ("Bash" → "bash", "Read" → "read_file", "Agent" and
// "Task" → "agent"), and any other name or pattern unchanged.
func CanonicalTool(name string) string {
	if c, ok := toolAliases[name]; ok {
		return c
	}
	return name
}

// IsToolAlias reports whether name is another SDK's name of one of ours. A
// custom tool may not take such a name: "Bash" in a rule would then mean
// two tools.
func IsToolAlias(name string) bool {
	_, ok := toolAliases[name]
	return ok
}

// ToolAliases returns the aliases of canonical ("bash" → ["Bash"]), sorted.
func ToolAliases(canonical string) []string {
	var out []string
	for a, c := range toolAliases {
		if c == canonical {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// UnknownTool is the error for an entry of field (a rule, a matcher, a
// Tools list) that names a tool that does not exist. known are the names
// that do; the message names the nearest of them (by edit distance, also
// through the aliases), or says what to do for a tool of another SDK that
// lite-agent does not have.
func UnknownTool(field, entry, name string, known []string) error {
	if why, ok := missingTools[name]; ok {
		return fmt.Errorf("%s: %q names %s, a Claude Code tool lite-agent does not have: %s; remove the entry", field, entry, name, why)
	}
	msg := fmt.Sprintf("%s: %q names %q, but there is no such tool", field, entry, name)
	if entry == name {
		msg = fmt.Sprintf("%s names %q, but there is no such tool", field, name)
	}
	if near := NearestTool(name, known); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	if strings.HasPrefix(name, "mcp__") {
		msg += "; an MCP tool is named mcp__SERVER__TOOL after a configured MCP server (mcp__SERVER__* names all its tools)"
	}
	return fmt.Errorf("%s", msg)
}

// NearestTool returns the name in known closest to name by edit distance
// (case-insensitive, aliases counted as the name they stand for), or ""
// when nothing is close enough to be a plausible typo.
func NearestTool(name string, known []string) string {
	cands := slices.Clone(known)
	for a, c := range toolAliases {
		if slices.Contains(known, c) {
			cands = append(cands, a)
		}
	}
	sort.Strings(cands)
	best, bestD := "", -1
	lower := strings.ToLower(name)
	for _, k := range cands {
		d := editDistance(lower, strings.ToLower(k))
		if bestD < 0 || d < bestD {
			best, bestD = CanonicalTool(k), d
		}
	}
	// More than half the name changed is not a typo of it.
	if bestD < 0 || bestD > (len(name)+1)/2 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes: tool
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
