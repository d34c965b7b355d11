package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/internal/termsafe"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools/builtin"
)

// What the screen shows. Every string here that the agent controls is
// escaped before it is styled: termsafe.Text for text that keeps its
// lines (model text, a diff), esc or field for one-line fields. Styling
// comes after escaping, so that the only escape sequences on the screen
// are lipgloss's own (none under NO_COLOR).

var (
	dimStyle  = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	errStyle  = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	okStyle   = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	userStyle = lipgloss.NewStyle().Bold(true)
	addStyle  = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	delStyle  = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	hunkStyle = lipgloss.NewStyle().Foreground(lipgloss.Color("6"))
	boxStyle  = lipgloss.NewStyle().Border(lipgloss.NormalBorder(), true, false).BorderForeground(lipgloss.Color("3"))
)

func styleDim(s string) string  { return dimStyle.Render(s) }
func styleErr(s string) string  { return errStyle.Render(s) }
func styleOK(s string) string   { return okStyle.Render(s) }
func styleUser(s string) string { return userStyle.Render(s) }

func (m *chatModel) View() string {
	var b strings.Builder
	if m.picker != nil {
		b.WriteString(m.pickerView())
		return b.String()
	}
	if m.stream.Len() > 0 {
		b.WriteString(tail(termsafe.Text(m.stream.String()), 8, m.width))
		b.WriteString("\n")
	}
	for _, c := range m.calls {
		fmt.Fprintf(&b, "  %s %s\n", c.line, styleDim(fmt.Sprintf("running %s", time.Since(c.start).Round(time.Second))))
		// Its subagent's calls, the last few: the screen is 24 lines.
		sub := c.sub
		if len(sub) > 4 {
			fmt.Fprintf(&b, "%s\n", styleDim(fmt.Sprintf("    … %d earlier", len(sub)-4)))
			sub = sub[len(sub)-4:]
		}
		for _, s := range sub {
			b.WriteString(lipgloss.NewStyle().MaxWidth(m.width).Render(s.String()) + "\n")
		}
	}
	for _, t := range m.tasks {
		b.WriteString(styleDim(fmt.Sprintf("  ⧗ background %s %s (%s)", esc(t.id), field(t.desc, max(10, m.width-40)), time.Since(t.start).Round(time.Second))) + "\n")
	}
	for _, q := range m.queued {
		b.WriteString(styleDim("queued: "+field(q, m.width-12)) + "\n")
	}
	if m.approval != nil {
		b.WriteString(m.approvalView())
		b.WriteString("\n")
	} else if m.domainAsk != nil {
		b.WriteString(m.domainAskView())
		b.WriteString("\n")
	} else {
		b.WriteString(m.input.View())
		b.WriteString("\n")
	}
	if m.notice != "" {
		b.WriteString(styleDim(m.notice) + "\n")
	}
	b.WriteString(m.statusLine())
	return b.String()
}

// tail is the last n lines of s, each cut to width.
func tail(s string, n, width int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = lipgloss.NewStyle().MaxWidth(width).Render(l)
	}
	return strings.Join(lines, "\n")
}

// networkGrant says what the sandbox's network policy lets a command
// reach: the mode, and the domains granted through lite-agent's proxy
// (and refused), cut to n bytes each. The domains come from policy files
// and flags, which a workspace may hold: escaped.
func networkGrant(sb *sandbox.Policy, n int) string {
	if sb == nil {
		return "network: unconfined"
	}
	mode := string(sb.Network)
	if mode == "" {
		mode = "none"
	}
	s := "network: " + mode
	if len(sb.AllowDomains) > 0 {
		s += "; domains " + field(strings.Join(sb.AllowDomains, ", "), n)
	}
	if len(sb.DenyDomains) > 0 {
		s += "; never " + field(strings.Join(sb.DenyDomains, ", "), n)
	}
	return s
}

func (m *chatModel) statusLine() string {
	net := "none"
	if sb := m.app.opts.Sandbox; sb != nil && sb.Network != "" {
		net = string(sb.Network)
	}
	if sb := m.app.opts.Sandbox; sb != nil && len(sb.AllowDomains) > 0 {
		net += fmt.Sprintf("+%d domains", len(sb.AllowDomains))
	}
	// The state first: at 80 columns the end of the line may be cut.
	state := "ready"
	if m.running {
		state = "working (Esc stops)"
	}
	ctx := humanTokens(m.contextUsed)
	if w := m.app.contextWindow(); w > 0 {
		ctx += "/" + humanTokens(w)
	}
	s := fmt.Sprintf("%s · %s · mode %s · net %s · ctx %s · tokens %s in, %s out",
		state, esc(m.app.modelName), m.app.mode, net, ctx,
		humanTokens(m.usage.InputTokens+m.usage.CacheReadInputTokens+m.usage.CacheCreationInputTokens), humanTokens(m.usage.OutputTokens))
	return dimStyle.MaxWidth(m.width).Render(s)
}

// contextWindow is the model's window as the kernel sizes it: the
// --context-window flag, else the model table's entry (0: unknown).
func (a *chatApp) contextWindow() int64 {
	if w := a.opts.ContextWindow; w > 0 {
		return int64(w)
	}
	return int64(provider.LookupModel(a.modelName).ContextWindow)
}

func humanTokens(n int64) string {
	if n >= 1000 {
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprint(n)
}

// maxDiffLines bounds the diff shown in an approval so that the question
// and its keys stay on a 24-line screen; the rest is counted.
const maxDiffLines = 12

func (m *chatModel) approvalView() string {
	a := m.approval
	var b strings.Builder
	who := ""
	if a.info.Agent != "" {
		who = " (subagent " + esc(a.info.Agent) + ")"
	}
	fmt.Fprintf(&b, "? %s wants to run%s — %s\n", esc(a.name), who, field(a.info.Reason, 120))
	body := approvalBody(m.app.f.workspace, a.name, a.input, m.app)
	if _, isChange, _ := builtin.PreviewChange(m.app.f.workspace, a.name, a.input); isChange {
		// A diff line wider than the screen would wrap and push the
		// question off a 24-line screen: cut, and marked as cut. (A
		// command is never cut: it is shown whole, wrapped.)
		body = cutLines(body, m.width)
	}
	b.WriteString(body)
	if m.approvalAt == "always" {
		user, _ := policies.UserFile()
		ws := "[w] this workspace's .lite-agent/policy.toml"
		if why := m.app.workspaceAllowRefusal(); why != "" {
			ws = "(no [w]: " + esc(why) + ")"
		}
		fmt.Fprintf(&b, "\nallow always %s — write it to:\n[u] your policy file %s, read in every workspace\n%s\n[Esc] back",
			esc(strings.Join(a.info.Suggestions, ", ")), esc(user), ws)
	} else if m.approvalAt == "message" {
		fmt.Fprintf(&b, "\ndeny with this message for the model (Enter sends, Esc back): %s█", termsafe.Escape(string(m.denyText)))
	} else {
		always := ""
		if len(a.info.Suggestions) > 0 {
			always = " (" + esc(strings.Join(a.info.Suggestions, ", ")) + ")"
		}
		fmt.Fprintf(&b, "\n[y] allow once  [a] allow for this session%s  [A] allow always  [n] deny, the agent goes on  [m] deny with a message  [Esc] deny and stop the turn", always)
	}
	return boxStyle.Width(m.width).Render(b.String())
}

// approvalBody shows what the call will do: a diff for a file change,
// the exact command and its sandbox for bash, the input otherwise.
func approvalBody(workspace, name string, input json.RawMessage, app *chatApp) string {
	if c, ok, err := builtin.PreviewChange(workspace, name, input); ok {
		if err != nil {
			return styleErr("(no preview: "+field(err.Error(), 200)+"; the call would fail the same way)") + "\n"
		}
		from := "a/" + c.Path
		if !c.Exists {
			from = "/dev/null"
		}
		return colorDiff(checkpoint.UnifiedDiff(from, "b/"+c.Path, c.Old, c.New))
	}
	shown, warn := showInput(name, input)
	var b strings.Builder
	b.WriteString("  " + shown + "\n")
	if warn != "" {
		b.WriteString(styleErr("  ("+warn+")") + "\n")
	}
	if name == policies.ShellTool && app != nil {
		var in struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(input, &in) == nil && in.Command != "" {
			v := policies.ViewShellCommand(in.Command)
			if len(v.Parts) > 1 {
				parts := make([]string, len(v.Parts))
				for i, p := range v.Parts {
					parts[i] = field(p, 60)
				}
				b.WriteString("  commands: " + strings.Join(parts, " │ ") + "\n")
			}
			for _, u := range v.Unproven {
				b.WriteString(styleErr("  unproven: "+field(u, 120)) + "\n")
			}
		}
		if sb := app.opts.Sandbox; sb != nil {
			// What the command may write and reach, from the policy it
			// runs under (not a summary of the preset).
			writes := append([]string{sb.Workspace}, sb.ReadWritePaths...)
			if sb.TempDir != "" {
				writes = append(writes, "a private temp dir")
			}
			fmt.Fprintf(&b, "  sandbox: writes only %s; %s\n", esc(strings.Join(writes, ", ")), networkGrant(sb, 200))
		} else {
			b.WriteString(styleErr("  sandbox: none — the command runs unconfined") + "\n")
		}
	}
	return b.String()
}

// cutLines cuts each line of s (styled: the cut is ANSI-aware) to width
// cells, ending a cut line with "…".
func cutLines(s string, width int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if lipgloss.Width(l) > width {
			lines[i] = lipgloss.NewStyle().MaxWidth(width-1).Render(l) + "…"
		}
	}
	return strings.Join(lines, "\n")
}

// colorDiff escapes a diff (it quotes file contents the agent wrote) and
// colours its lines, bounded to maxDiffLines.
func colorDiff(d string) string {
	lines := strings.Split(strings.TrimRight(termsafe.Text(d), "\n"), "\n")
	more := 0
	if len(lines) > maxDiffLines {
		more = len(lines) - maxDiffLines
		lines = lines[:maxDiffLines]
	}
	var b strings.Builder
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			b.WriteString(userStyle.Render(l))
		case strings.HasPrefix(l, "+"):
			b.WriteString(addStyle.Render(l))
		case strings.HasPrefix(l, "-"):
			b.WriteString(delStyle.Render(l))
		case strings.HasPrefix(l, "@@"):
			b.WriteString(hunkStyle.Render(l))
		default:
			b.WriteString(l)
		}
		b.WriteString("\n")
	}
	if more > 0 {
		fmt.Fprintf(&b, "%s\n", styleDim(fmt.Sprintf("… %d more diff lines", more)))
	}
	return b.String()
}

func (m *chatModel) pickerView() string {
	p := m.picker
	var b strings.Builder
	b.WriteString(p.title + "\n")
	if len(p.labels) == 0 {
		b.WriteString("  (nothing to choose; Esc)\n")
	}
	// A window of 15 around the cursor, 5 under a diff preview (at most
	// maxDiffLines+1 lines): a picker fits a 24-line screen.
	win := 15
	if p.shown != "" {
		win = 5
	}
	from := max(0, min(p.at-win/2, len(p.labels)-win))
	for i := from; i < len(p.labels) && i < from+win; i++ {
		cur := "  "
		if i == p.at {
			cur = "> "
		}
		b.WriteString(lipgloss.NewStyle().MaxWidth(m.width).Render(cur+p.labels[i]) + "\n")
	}
	if p.shown != "" {
		b.WriteString(cutLines(p.shown, m.width) + "\n")
	}
	return b.String()
}
