package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

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
	boxRule   = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
)

func styleDim(s string) string  { return dimStyle.Render(s) }
func styleErr(s string) string  { return errStyle.Render(s) }
func styleOK(s string) string   { return okStyle.Render(s) }
func styleUser(s string) string { return userStyle.Render(s) }

func (m *chatModel) View() string {
	if m.quitting {
		return ""
	}
	if m.picker != nil {
		return m.pickerView()
	}
	w := m.width
	var parts []string
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if m.stream.Len() > 0 {
		add(lastRows(wrapText(termsafe.Text(m.stream.String()), w), 8))
	}
	for _, c := range m.calls {
		add(m.callView(c))
	}
	for _, t := range m.tasks {
		add(wrapText(styleDim(fmt.Sprintf("  ⧗ background %s %s (%s)", esc(t.id), field(t.desc, 200), time.Since(t.start).Round(time.Second))), w))
	}
	for _, q := range m.queued {
		add(wrapText(styleDim("queued: "+field(q, 200)), w))
	}
	// The bottom: what the person answers or types, then what helps with
	// it, the notice and the status. A question gets the rows the rest
	// leaves it on the screen.
	var below []string
	if menu := m.commandMenu(); menu != "" {
		below = append(below, menu)
	}
	if m.notice != "" {
		below = append(below, wrapText(styleDim(m.notice), w))
	}
	below = append(below, m.statusLine())
	room := m.height - rowsOf(strings.Join(below, "\n"))
	switch {
	case m.approval != nil:
		add(m.approvalView(room))
	case m.domainAsk != nil:
		add(m.domainAskView())
	default:
		add(m.input.View())
	}
	parts = append(parts, below...)
	view := strings.Join(parts, "\n")
	if m.height > 0 && rowsOf(view) > m.height {
		// The bottom stays: what the person answers or types, and the
		// status (the renderer would drop the top rows anyway).
		view = lastRows(view, m.height)
	}
	return view
}

// liveTailRows is how many rows of a running command's latest output
// show under it; foldedRows how many of its output's first rows stay in
// the scrollback under its line once it ended (ctrl+o shows the whole).
const (
	liveTailRows = 5
	foldedRows   = 4
)

// callView is a running call: its line and how long it runs, the latest
// rows of its output (a command's), and its subagent's last few calls.
func (m *chatModel) callView(c runningCall) string {
	w := m.width
	rows := []string{wrapText("  "+c.line+" "+styleDim("running "+time.Since(c.start).Round(time.Second).String()), w)}
	if c.output != "" {
		out := outputRows(c.output, w)
		if len(out) > liveTailRows {
			out = out[len(out)-liveTailRows:]
		}
		rows = append(rows, styleDim(strings.Join(out, "\n")))
	}
	// Its subagent's calls, the last few: the screen is 24 lines.
	sub := c.sub
	if len(sub) > 4 {
		rows = append(rows, styleDim(fmt.Sprintf("    … %d earlier", len(sub)-4)))
		sub = sub[len(sub)-4:]
	}
	for _, s := range sub {
		rows = append(rows, wrapText(s.String(), w))
	}
	return strings.Join(rows, "\n")
}

// outputPrefix marks a command's output under its call's line.
const outputPrefix = "    │ "

// outputRows is a command's output as the screen shows it: a line that a
// progress bar redrew (carriage returns) as it was left, terminal
// sequences dropped (colours) and every other control character escaped
// (the output is the agent's), trailing blank lines dropped, each line
// wrapped under outputPrefix.
func outputRows(raw string, width int) []string {
	raw = strings.TrimRight(strings.ReplaceAll(raw, "\r\n", "\n"), "\n")
	if raw == "" {
		return nil
	}
	var rows []string
	inner := max(10, width-ansi.StringWidth(outputPrefix))
	for _, l := range strings.Split(raw, "\n") {
		if i := strings.LastIndexByte(l, '\r'); i >= 0 {
			l = l[i+1:]
		}
		l = termsafe.Text(ansi.Strip(l))
		for _, r := range strings.Split(wrapText(l, inner), "\n") {
			rows = append(rows, outputPrefix+r)
		}
	}
	return rows
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
	state := "ready"
	if m.running {
		state = "working (Esc stops)"
	}
	ctx := humanTokens(m.contextUsed)
	if w := m.app.contextWindow(); w > 0 {
		ctx += "/" + humanTokens(w)
	}
	items := []string{state, esc(m.app.modelName), "mode " + string(m.app.mode), "net " + net, "ctx " + ctx,
		"tokens " + humanTokens(m.usage.InputTokens+m.usage.CacheReadInputTokens+m.usage.CacheCreationInputTokens) + " in, " + humanTokens(m.usage.OutputTokens) + " out"}
	// Whole items to a row: the line breaks between them, never inside
	// one (unless one alone is wider than the screen).
	var rows []string
	row := ""
	for _, it := range items {
		switch {
		case row == "":
			row = it
		case ansi.StringWidth(row+" · "+it) <= m.width:
			row += " · " + it
		default:
			rows = append(rows, row)
			row = it
		}
	}
	rows = append(rows, row)
	return styleDim(wrapText(strings.Join(rows, "\n"), m.width))
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

// box frames a question: a rule above and below, its lines wrapped.
func (m *chatModel) box(content string) string {
	rule := boxRule.Render(strings.Repeat("─", m.width))
	return rule + "\n" + wrapText(strings.TrimRight(content, "\n"), m.width) + "\n" + rule
}

// approvalView is the question about a call, in at most room rows (the
// screen's height left by the notice and the status; 0: unknown): a
// diff is cut to what fits, and d prints it whole into the scrollback.
func (m *chatModel) approvalView(room int) string {
	a := m.approval
	who := ""
	if a.info.Agent != "" {
		who = " (subagent " + esc(a.info.Agent) + ")"
	}
	head := fmt.Sprintf("? %s wants to run%s — %s", esc(a.name), who, field(a.info.Reason, 300))
	var keys string
	if m.approvalAt == "always" {
		user, _ := policies.UserFile()
		ws := "[w] this workspace's .lite-agent/policy.toml"
		if why := m.app.workspaceAllowRefusal(); why != "" {
			ws = "(no [w]: " + esc(why) + ")"
		}
		keys = fmt.Sprintf("allow always %s — write it to:\n[u] your policy file %s, read in every workspace\n%s\n[Esc] back",
			esc(strings.Join(a.info.Suggestions, ", ")), esc(user), ws)
	} else if m.approvalAt == "message" {
		keys = fmt.Sprintf("deny with this message for the model (Enter sends, Esc back): %s█", termsafe.Escape(string(m.denyText)))
	} else {
		always := ""
		if len(a.info.Suggestions) > 0 {
			always = " (" + esc(strings.Join(a.info.Suggestions, ", ")) + ")"
		}
		keys = fmt.Sprintf("[y] allow once  [a] allow for this session%s  [A] allow always  [n] deny, the agent goes on  [m] deny with a message  [Esc] deny and stop the turn", always)
	}
	var body string
	if d, isChange := m.approvalDiff(); isChange {
		// The rows the diff may take: the screen less the question's
		// other rows (the rules, the head, a blank line, the keys).
		fixed := 3 + rowsOf(wrapText(head, m.width)) + rowsOf(wrapText(keys, m.width))
		rows := maxDiffRows
		if room > 0 {
			rows = max(3, room-fixed)
		}
		body = colorDiff(d, m.width, rows, "d: the whole diff, above")
	} else {
		body = approvalBody(m.app.f.workspace, a.name, a.input, m.app)
	}
	return m.box(head + "\n" + strings.TrimRight(body, "\n") + "\n\n" + keys)
}

// maxDiffRows bounds a diff shown where the screen's height is unknown.
const maxDiffRows = 12

// approvalDiff is the unified diff of the change the call asks to make,
// when it is an edit or a write whose preview works.
func (m *chatModel) approvalDiff() (string, bool) {
	a := m.approval
	c, ok, err := builtin.PreviewChange(m.app.f.workspace, a.name, a.input)
	if !ok || err != nil {
		return "", false
	}
	return changeDiff(c), true
}

// approvalBody shows what the call will do: a diff for a file change,
// the exact command and its sandbox for bash, the input otherwise.
func approvalBody(workspace, name string, input json.RawMessage, app *chatApp) string {
	if c, ok, err := builtin.PreviewChange(workspace, name, input); ok {
		if err != nil {
			return styleErr("(no preview: "+field(err.Error(), 200)+"; the call would fail the same way)") + "\n"
		}
		return colorDiff(changeDiff(c), 0, -1, "")
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

// diffRows breaks a diff line at width (0: not at all). The rows a line
// of the old or new file goes on to repeat its sign (+, -, or a space),
// so that the sign column still says which side every row shows.
func diffRows(l string, width int) []string {
	if width <= 1 || strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "@@") || l == "" {
		return hardWrap(l, width)
	}
	sign, body := l[:1], l[1:]
	rows := hardWrap(body, width-1)
	for i := range rows {
		rows[i] = sign + rows[i]
	}
	return rows
}

// changeDiff is the unified diff of a previewed change.
func changeDiff(c *builtin.FileChange) string {
	from := "a/" + c.Path
	if !c.Exists {
		from = "/dev/null"
	}
	return checkpoint.UnifiedDiff(from, "b/"+c.Path, c.Old, c.New)
}

// colorDiff escapes a diff (it quotes file contents the agent wrote),
// breaks its lines at width (0: not at all) so that the end of a long
// line shows, and colours them. At most maxRows rows (-1: all) are kept;
// the lines left out are counted, with more (what shows them) in the
// count's row.
func colorDiff(d string, width, maxRows int, more string) string {
	type row struct {
		text string
		line int
	}
	lines := strings.Split(strings.TrimRight(termsafe.Text(d), "\n"), "\n")
	var rows []row
	for i, l := range lines {
		style := lipgloss.NewStyle()
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			style = userStyle
		case strings.HasPrefix(l, "+"):
			style = addStyle
		case strings.HasPrefix(l, "-"):
			style = delStyle
		case strings.HasPrefix(l, "@@"):
			style = hunkStyle
		}
		for _, r := range diffRows(l, width) {
			rows = append(rows, row{style.Render(r), i})
		}
	}
	left := 0
	if maxRows >= 0 && len(rows) > maxRows {
		// One row for the count of the lines left out.
		keep := max(0, maxRows-1)
		left = len(lines) - rows[keep].line
		rows = rows[:keep]
	}
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.text + "\n")
	}
	if left > 0 {
		note := fmt.Sprintf("… %d more diff line(s)", left)
		if more != "" {
			note += " (" + more + ")"
		}
		b.WriteString(styleDim(note) + "\n")
	}
	return b.String()
}

func (m *chatModel) pickerView() string {
	p := m.picker
	w := m.width
	title := wrapText(p.title, w)
	rows := []string{title}
	if len(p.labels) == 0 {
		rows = append(rows, "  (nothing to choose; Esc)")
	}
	shown := strings.TrimRight(p.shown, "\n")
	// The labels around the cursor that fit the screen with the title and
	// the preview; a label is one row, cut with "…" when wider.
	win := 15
	if m.height > 0 {
		win = max(3, m.height-rowsOf(title)-rowsOf(shown)-1)
	}
	from := max(0, min(p.at-win/2, len(p.labels)-win))
	for i := from; i < len(p.labels) && i < from+win; i++ {
		cur := "  "
		if i == p.at {
			cur = "› "
		}
		rows = append(rows, ansi.Truncate(cur+p.labels[i], w, "…"))
	}
	if shown != "" {
		rows = append(rows, shown)
	}
	return strings.Join(rows, "\n")
}

// previewRows is how many rows a picker's diff preview may take.
func (m *chatModel) previewRows() int {
	if m.height <= 0 {
		return maxDiffRows
	}
	return max(4, m.height-8)
}
