package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/lite-agent/lite-agent/internal/termsafe"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/policies"
)

// slashCommands are the commands of the interactive mode and their help.
var slashCommands = map[string]string{
	"/help":        "this list",
	"/rewind":      "/rewind [files|conversation|both] [N]: go back to before a prompt (a picker; c there lists the checkpoints), or to checkpoint N; files and conversation by default",
	"/undo":        "undo the last /rewind (files and conversation), before the next prompt",
	"/checkpoints": "the session's checkpoints and what each changed",
	"/mode":        "/mode [default|acceptEdits|plan|dontAsk]: show or set the permission mode (shift+tab cycles)",
	"/allow":       "/allow RULE: allow calls matching RULE in this session, e.g. /allow bash(go test:*)",
	"/deny":        "/deny RULE: deny calls matching RULE in this session",
	"/permissions": "the mode and the session's added rules",
	"/tasks":       "the background tasks of the running turn",
	"/tools":       "the tools the model sees",
	"/mcp":         "MCP servers and their status",
	"/agents":      "the subagents the model can start",
	"/model":       "the model",
	"/context":     "how much of the context the last call used",
	"/compact":     "summarise the older turns now",
	"/cost":        "tokens used since the session was opened here",
	"/clear":       "start a new session (the old one stays: /resume)",
	"/resume":      "pick a session of this workspace to continue",
	"/exit":        "leave (also Ctrl-D)",
}

// slash runs a slash command; the caller runs the command it returns in
// sequence after the echo of the line.
func (m *chatModel) slash(line string) tea.Cmd {
	fields := strings.Fields(line)
	name, args := fields[0], fields[1:]
	say := m.say
	needSession := func() tea.Cmd {
		return say(styleErr("no session yet: type a task first"))
	}
	switch name {
	case "/help":
		return m.sayFor(m.helpText)
	case "/exit", "/quit":
		return m.quit()
	case "/cost":
		u := m.usage
		return say(fmt.Sprintf("tokens: %d input, %d output, %d cache read, %d cache write", u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens))
	case "/context":
		msg := fmt.Sprintf("the last model call read %d tokens of context", m.contextUsed)
		if w := m.app.contextWindow(); w > 0 {
			msg += fmt.Sprintf(", %d%% of the %d-token window", m.contextUsed*100/w, w)
		}
		return say(msg)
	case "/tasks":
		if len(m.tasks) == 0 {
			return say("no background tasks (a turn's tasks end with it)")
		}
		var b strings.Builder
		for _, t := range m.tasks {
			fmt.Fprintf(&b, "%s  %s  running %s\n", esc(t.id), field(t.desc, 200), time.Since(t.start).Round(time.Second))
		}
		return say(strings.TrimRight(b.String(), "\n"))
	case "/model":
		return say("model: " + esc(m.app.modelName))
	case "/tools":
		if len(m.tools) == 0 {
			return say("the tools are known once the session starts: type a task first")
		}
		return say("tools: " + field(strings.Join(m.tools, ", "), 2000))
	case "/agents":
		if len(m.agents) == 0 && len(m.app.opts.Agents) > 0 {
			// Before the first turn: the configured ones.
			names := slices.Sorted(maps.Keys(m.app.opts.Agents))
			return say("subagents: " + field(strings.Join(names, ", "), 2000))
		}
		if len(m.agents) == 0 {
			return say("no subagents (--agents FILE adds some)")
		}
		return say("subagents: " + field(strings.Join(m.agents, ", "), 2000))
	case "/mcp":
		if names := m.app.agent.MCPServers(); len(m.mcp) == 0 && len(names) > 0 {
			return say("MCP servers (they connect with the first prompt): " + field(strings.Join(names, ", "), 2000))
		}
		if len(m.mcp) == 0 {
			return say("no MCP servers (--mcp-config FILE adds some)")
		}
		return say(strings.Join(m.mcp, "\n"))
	case "/clear":
		m.app.sessionID = ""
		m.app.forgetSessionDomains()
		m.contextUsed = 0
		m.notice = "a new session starts with the next prompt"
		m.printed = nil // a redraw shows nothing of the old session
		return m.then(tea.ClearScreen)
	case "/resume":
		m.picker = sessionPicker(m.app)
		return nil
	case "/mode":
		if len(args) == 0 {
			return say("mode: " + string(m.app.mode))
		}
		mode, err := policies.ParseMode(args[0])
		if err != nil {
			return say(styleErr(termsafe.Text(err.Error())))
		}
		return m.setMode(mode)
	case "/allow", "/deny":
		if len(args) == 0 {
			return say(styleErr(slashCommands[name]))
		}
		rule := strings.Join(args, " ")
		target := &m.app.f.allowedTools
		if name == "/deny" {
			target = &m.app.f.disallowedTools
		}
		old := *target
		if *target != "" {
			*target += ","
		}
		*target += rule
		if err := m.app.rebuild(); err != nil {
			*target = old
			return say(styleErr(termsafe.Text(err.Error())))
		}
		return say(styleDim(strings.TrimPrefix(name, "/") + " " + termsafe.Escape(rule) + " (this session)"))
	case "/permissions":
		return say(fmt.Sprintf("mode %s; preset %s; sandbox %s\nallowed here: %s\ndenied here: %s",
			m.app.mode, m.app.agent.Preset().Name, networkGrant(m.app.opts.Sandbox, 2000), orNone(strings.Join(append(commaList(m.app.f.allowedTools), m.app.sessionAllow...), ",")), orNone(m.app.f.disallowedTools)))
	case "/checkpoints":
		if m.app.sessionID == "" {
			return needSession()
		}
		var out, errb bytes.Buffer
		if err := cmdCheckpoints([]string{m.app.sessionID, "--state-dir", m.app.stateDir}, &out, &errb); err != nil {
			return say(styleErr(termsafe.Text(err.Error())))
		}
		return say(strings.TrimRight(out.String()+errb.String(), "\n"))
	case "/rewind":
		if m.app.sessionID == "" {
			return needSession()
		}
		what, n := "both", ""
		for _, a := range args {
			switch a {
			case "files", "conversation", "both":
				what = a
			default:
				if _, err := strconv.Atoi(a); err != nil {
					return say(styleErr(slashCommands["/rewind"]))
				}
				n = a
			}
		}
		if n != "" {
			return m.rewind(n, what, "to checkpoint "+n, "")
		}
		p, err := promptPicker(m.app, what)
		if err != nil {
			return say(styleErr(termsafe.Text(err.Error())))
		}
		m.picker = p
		return nil
	case "/undo":
		return m.undoLast()
	case "/compact":
		if m.app.sessionID == "" {
			return needSession()
		}
		o := m.app.agent.Options()
		o.Resume = m.app.sessionID
		// A model call: run off the event loop, so the screen stays live.
		m.notice = "compacting…"
		return func() tea.Msg {
			info, err := kernel.Compact(context.Background(), o)
			switch {
			case err != nil:
				return printMsg(styleErr(termsafe.Text(err.Error())))
			case info == nil:
				return printMsg("nothing to compact yet")
			}
			return printMsg(styleDim("compacted: the older turns are summarised"))
		}
	}
	return say(styleErr("unknown command " + esc(name) + suggest(name)))
}

// helpText is the commands and the keys, in two columns: a description
// wraps under itself, never under the names.
func (m *chatModel) helpText(width int) string {
	names := make([]string, 0, len(slashCommands))
	for n := range slashCommands {
		names = append(names, n)
	}
	sort.Strings(names)
	keys := [][2]string{
		{"Enter", "sends; Alt+Enter or Ctrl+J adds a line"},
		{"/", "the command menu: Tab completes, ↑/↓ choose"},
		{"↑/↓", "the prompts typed before"},
		{"Tab", "completes a command, or an @path of the workspace (@path attaches the file)"},
		{"Shift+Tab", "cycles the mode: default, acceptEdits, plan"},
		{"Ctrl+O", "the whole output of the last command shown folded"},
		{"Esc, Ctrl+C", "stop a turn (the session stays)"},
		{"Ctrl+C twice, Ctrl+D", "exit"},
	}
	var b strings.Builder
	col := 15
	if width < 60 {
		col = 0 // narrow: each description under its name
	}
	row := func(name, desc string) {
		if col == 0 {
			b.WriteString(wrapText("  "+name, width) + "\n" + indentWrap(desc, width, 4) + "\n")
			return
		}
		text := indentWrap(desc, width, col+2)
		b.WriteString("  " + name + strings.Repeat(" ", max(1, col-len([]rune(name)))) + text[col+2:] + "\n")
	}
	for _, n := range names {
		row(n, slashCommands[n])
	}
	b.WriteString("keys:\n")
	for _, k := range keys {
		if len([]rune(k[0])) > col-1 && col > 0 {
			b.WriteString("  " + k[0] + "\n" + indentWrap(k[1], width, col+2) + "\n")
			continue
		}
		row(k[0], k[1])
	}
	return strings.TrimRight(b.String(), "\n")
}

// indentWrap wraps s to width with every row indented by n spaces.
func indentWrap(s string, width, n int) string {
	pad := strings.Repeat(" ", n)
	rows := strings.Split(wrapText(s, max(10, width-n)), "\n")
	for i := range rows {
		rows[i] = pad + rows[i]
	}
	return strings.Join(rows, "\n")
}

// printMsg is a line for the scrollback from a command that ran off the
// event loop.
type printMsg string

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return esc(s)
}

// suggest names the command closest to an unknown one: one it begins,
// else one at most two edits away, else one sharing its first three
// letters.
func suggest(name string) string {
	names := make([]string, 0, len(slashCommands))
	for n := range slashCommands {
		names = append(names, n)
	}
	sort.Strings(names)
	best, bestD := "", 3
	for _, n := range names {
		if len(name) > 2 && strings.HasPrefix(n, name) {
			best, bestD = n, -1
			break
		}
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" && len(name) > 3 {
		for _, n := range names {
			if strings.HasPrefix(n, name[:4]) {
				best = n
				break
			}
		}
	}
	if best != "" {
		return "; did you mean " + best + "? (/help lists them)"
	}
	return " (/help lists the commands)"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev = cur
	}
	return prev[len(b)]
}
