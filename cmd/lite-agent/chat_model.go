package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/internal/termsafe"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
)

// Messages from the turn's goroutine to the screen.
type (
	eventMsg    struct{ ev kernel.Event }
	turnDoneMsg struct{ err error }
)

// runningCall is a tool call shown live until its result. sub are the
// calls of the subagents it started (an agent tool call), shown nested
// under it live and printed under its line when it ends.
type runningCall struct {
	id, line string
	input    json.RawMessage // what the model sent: a result does not carry it
	start    time.Time
	sub      []subCall
	// output is the end of what its command wrote so far (tool_output
	// events), at most maxLiveOutput bytes.
	output string
}

// maxLiveOutput bounds the output kept of a running call: its last rows
// are shown.
const maxLiveOutput = 16 << 10

// subCall is one call a subagent made, under the call that started it.
type subCall struct {
	id, agent, line string
	start           time.Time
	result          string // "" while it runs: then its status and duration
}

func (c subCall) String() string {
	st := c.result
	if st == "" {
		st = styleDim(fmt.Sprintf(" running %s", time.Since(c.start).Round(time.Second)))
	}
	return "    └ [" + esc(c.agent) + "] " + c.line + st
}

// bgTask is a background task a bash call started (run_in_background):
// listed until it is killed or seen ended, or the turn ends, which kills
// it (the kernel kills a run's tasks when its query ends).
type bgTask struct {
	id, desc string
	start    time.Time
}

// picker is a list to choose from (a session to resume, a checkpoint to
// rewind to). Its labels are escaped when the picker is made.
type picker struct {
	title  string
	labels []string
	values []string
	at     int
	pick   func(m *chatModel, value string) tea.Cmd
	// preview, when set, is what d shows for the value under the cursor
	// (a checkpoint's diff); shown holds it until the cursor moves.
	preview func(m *chatModel, value string) string
	shown   string
	// otherKey switches to the picker other makes (the prompts' and the
	// checkpoints' views of a rewind).
	otherKey string
	other    func() (*picker, error)
}

type chatModel struct {
	app    *chatApp
	input  textarea.Model
	width  int
	height int  // 0 until the terminal said
	sized  bool // the first size came: a later change of width redraws

	// The scrollback's outbox (chat_screen.go): what waits to be printed,
	// whether a batch is in flight, and the log of what was printed, for
	// a redraw.
	outbox   []outItem
	printing bool
	printed  []func(width int) string
	quitting bool // the view is empty from now on

	running bool
	cancel  context.CancelFunc
	stream  strings.Builder // the assistant text of the current message
	calls   []runningCall

	approval   *approvalMsg
	approvalAt string // "" choosing, "message": typing a denial's message
	// domainAsk is a question about an unknown domain (chat_domains.go);
	// domainAskAt is "always" while choosing the file.
	domainAsk   *domainAskMsg
	domainAskAt string
	denyText    []rune

	picker *picker

	usage       provider.Usage // the session's, since it was opened here
	contextUsed int64
	tools       []string
	mcp         []string
	agents      []string
	armedQuit   bool // Ctrl-C was pressed once at an empty prompt
	notice      string

	history []string
	histAt  int
	queued  []string // typed while a turn ran, sent when it ends
	// personDenied are the calls the person denied at the prompt, by
	// call id: their denial is shown once, by the answer's own line, not
	// again by the permission event and the call's error result.
	personDenied map[string]bool
	// denied are the calls the gate denied (any way), by call id: their
	// error result is not shown again.
	denied map[string]bool
	// refusals are the notes on what the sandbox refused a call's
	// command (builtin.SandboxRefusalEvent), by call id, shown under its
	// result: the note ends the output, which a folded view cuts.
	refusals map[string]string
	// folded are the outputs of commands shown folded, for ctrl+o.
	folded []foldedOutput
	// menuAt is the command menu's cursor, for the input menuFor.
	menuAt  int
	menuFor string
	ending  string // how the turn ended, if it failed: shown at its end

	undo *undoRewind // the last rewind, until the next prompt

	tasks []bgTask // the turn's background tasks still running
}

func newChatModel(app *chatApp, pickSession bool) *chatModel {
	ta := textarea.New()
	ta.Placeholder = "type a task (/ for commands)"
	ta.ShowLineNumbers = false
	ta.Prompt = "> "
	ta.CharLimit = 0
	// No cap on the lines typed with the newline key (the default stops
	// at 99); a paste is kept whole up to the textarea's 10,000 lines.
	ta.MaxHeight = 0
	ta.SetHeight(3)
	// Enter sends: a new line is Alt+Enter or Ctrl+J.
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"))
	ta.Focus()
	m := &chatModel{app: app, input: ta, width: 80}
	m.history = loadHistory(chatHistoryPath(app.stateDir))
	m.histAt = len(m.history)
	if pickSession {
		m.picker = sessionPicker(app)
	}
	return m
}

func (m *chatModel) Init() tea.Cmd {
	intro := fmt.Sprintf("lite-agent %s — workspace %s", version, esc(m.app.f.workspace))
	if m.app.sessionID != "" {
		intro += "\nresuming session " + esc(m.app.sessionID)
	}
	cmds := []tea.Cmd{m.say(styleDim(intro + "\n/help for commands, Esc or Ctrl-C stops a turn, Ctrl-D exits")), textarea.Blink}
	if r := m.recap(); r != nil {
		cmds = append(cmds, r)
	}
	if p := m.app.firstPrompt; strings.TrimSpace(p) != "" && m.picker == nil {
		// The prompt given on the command line, as if typed.
		m.app.firstPrompt = ""
		cmds = append(cmds, m.dispatch(p)...)
	}
	return tea.Sequence(cmds...)
}

func (m *chatModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		old := m.width
		m.width, m.height = max(20, msg.Width), msg.Height
		m.input.SetWidth(m.width - 1)
		if m.sized && old != m.width {
			return m, m.redraw()
		}
		m.sized = true
		return m, nil
	case printedMsg:
		m.printing = false
		return m, m.pump()
	case eventMsg:
		return m, m.onEvent(msg.ev)
	case printMsg:
		return m, m.say(string(msg))
	case turnDoneMsg:
		m.running, m.cancel = false, nil
		m.calls = nil
		m.notice = ""
		var cmds []tea.Cmd
		if len(m.tasks) > 0 {
			// The query's end killed them: say so, they were listed.
			ids := make([]string, len(m.tasks))
			for i, t := range m.tasks {
				ids[i] = esc(t.id)
			}
			cmds = append(cmds, m.say(styleDim("background task(s) stopped with the turn: "+strings.Join(ids, ", "))))
			m.tasks = nil
		}
		if m.stream.Len() > 0 {
			cmds = append(cmds, m.say(termsafe.Text(m.stream.String())))
			m.stream.Reset()
		}
		if m.ending != "" {
			cmds = append(cmds, m.say(m.ending))
			m.ending = ""
		}
		if len(m.queued) > 0 {
			next := m.queued[0]
			m.queued = m.queued[1:]
			cmds = append(cmds, m.dispatch(next)...)
		}
		return m, tea.Sequence(cmds...)
	case approvalMsg:
		select {
		case <-msg.cancel:
			return m, nil // the turn was interrupted before the question showed
		default:
		}
		m.approval, m.approvalAt, m.denyText = &msg, "", nil
		return m, nil
	case domainAskMsg:
		return m, m.showDomainAsk(msg)
	case domainAskGone:
		return m, m.domainAskGoneMsg(msg)
	case tea.KeyMsg:
		return m.onKey(msg)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

func (m *chatModel) onKey(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	if m.approval != nil {
		return m, m.approvalKey(k)
	}
	if m.domainAsk != nil {
		return m, m.domainKey(k)
	}
	if m.picker != nil {
		return m, m.pickerKey(k)
	}
	s := k.String()
	if s != "ctrl+c" {
		m.armedQuit = false
	}
	if m.menuKey(s) {
		return m, nil
	}
	switch s {
	case "ctrl+o":
		return m, m.expandOutput()
	case "ctrl+c":
		if m.running {
			return m, m.interrupt()
		}
		if m.input.Value() != "" {
			m.input.Reset()
			return m, nil
		}
		if m.armedQuit {
			return m, m.quit()
		}
		m.armedQuit = true
		m.notice = "press Ctrl-C again to exit (or Ctrl-D)"
		return m, nil
	case "esc":
		if m.running {
			return m, m.interrupt()
		}
		return m, nil
	case "ctrl+d":
		if m.input.Value() == "" && !m.running {
			return m, m.quit()
		}
		return m, nil
	case "shift+tab":
		if !m.running {
			return m, m.setMode(nextMode(m.app.mode))
		}
		return m, nil
	case "enter":
		return m, m.submit()
	case "tab":
		if m.completePath() {
			return m, nil
		}
	case "up":
		if m.input.Line() == 0 && m.histAt > 0 {
			m.histAt--
			m.input.SetValue(m.history[m.histAt])
			return m, nil
		}
	case "down":
		if m.input.Line() == m.input.LineCount()-1 && m.histAt < len(m.history) {
			m.histAt++
			if m.histAt == len(m.history) {
				m.input.Reset()
			} else {
				m.input.SetValue(m.history[m.histAt])
			}
			return m, nil
		}
	}
	m.notice = ""
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return m, cmd
}

// quit ends the program once what is queued is printed. The view is
// emptied first, so that none of it stays on the screen above the line
// the command prints when it ends.
func (m *chatModel) quit() tea.Cmd {
	m.quitting = true
	return m.then(tea.Quit)
}

// interrupt stops the running turn: cancelling its context stops the
// model stream and kills a running tool's process tree (the sandbox kills
// the whole confined tree when its context ends); the session stays.
func (m *chatModel) interrupt() tea.Cmd {
	if m.cancel != nil {
		m.cancel()
	}
	m.notice = "interrupting…"
	if n := len(m.queued); n > 0 {
		m.queued = nil
		return m.say(styleDim(fmt.Sprintf("(dropped %d prompt(s) typed during the turn)", n)))
	}
	return nil
}

func (m *chatModel) submit() tea.Cmd {
	text := m.input.Value()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	m.input.Reset()
	m.history = appendHistory(chatHistoryPath(m.app.stateDir), m.history, text)
	m.histAt = len(m.history)
	if m.running && readOnlySlash[strings.Fields(text)[0]] {
		// A question about the session answers at once, turn or not.
		return tea.Sequence(m.dispatch(text)...)
	}
	if m.running {
		// Typed while a turn runs: it waits for the turn's end, as a
		// message typed ahead does in a terminal; Esc drops it.
		m.queued = append(m.queued, text)
		return nil
	}
	return tea.Sequence(m.dispatch(text)...)
}

// readOnlySlash are the commands that only show the session's state: they
// run at once even while a turn runs (the others wait for its end).
var readOnlySlash = map[string]bool{"/tasks": true, "/cost": true, "/context": true, "/help": true,
	"/model": true, "/tools": true, "/mcp": true, "/agents": true, "/permissions": true}

// dispatch runs what was typed, a slash command or a prompt: the commands
// to run in sequence, for the caller's one tea.Sequence.
func (m *chatModel) dispatch(text string) []tea.Cmd {
	echo := m.say(styleUser("> " + strings.ReplaceAll(termsafe.Text(text), "\n", "\n  ")))
	if strings.HasPrefix(text, "/") {
		return []tea.Cmd{echo, m.slash(strings.TrimSpace(text))}
	}
	prompt, notes := m.app.attachFiles(context.Background(), text)
	cmds := []tea.Cmd{echo}
	for _, n := range notes {
		cmds = append(cmds, m.say(styleDim("  "+esc(n))))
	}
	return append(cmds, m.startTurn(prompt))
}

// startTurn runs one prompt as a query resuming the session.
func (m *chatModel) startTurn(prompt string) tea.Cmd {
	if err := m.app.keepSessionAllows(); err != nil {
		return m.say(styleErr(termsafe.Text(err.Error())))
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.running, m.cancel = true, cancel
	m.undo = nil
	agent, sid, prog := m.app.agent, m.app.sessionID, m.app.prog
	go func() {
		defer cancel()
		var opts []local.QueryOption
		if sid != "" {
			opts = append(opts, local.Resume(sid))
		}
		var runErr error
		for ev, err := range agent.Query(ctx, prompt, opts...) {
			if err != nil {
				runErr = err
			}
			prog.Send(eventMsg{ev})
		}
		prog.Send(turnDoneMsg{runErr})
	}()
	return nil
}

func (m *chatModel) onEvent(ev kernel.Event) tea.Cmd {
	if ev.Type == kernel.EventToolResult {
		m.trackTasks(ev)
	}
	if ev.AgentID != "" {
		return m.onSubagentEvent(ev)
	}
	switch ev.Type {
	case kernel.EventSessionStart:
		first := m.app.sessionID == ""
		m.app.sessionID = ev.SessionID
		m.tools = ev.SessionStart.Tools
		m.agents = ev.SessionStart.Agents
		m.mcp = m.mcp[:0]
		for _, s := range ev.SessionStart.MCPServers {
			st := "connected"
			if s.Error != "" {
				st = "failed: " + s.Error
			}
			for _, n := range s.Notes {
				st += "; " + n
			}
			m.mcp = append(m.mcp, esc(s.Name)+": "+field(st, 200))
		}
		if first {
			lines := []string{styleDim("session " + esc(ev.SessionID))}
			// The writable roots no rewind covers are said once, at the
			// start, as run says them.
			for _, n := range notRewindableNotes(ev.SessionStart) {
				lines = append(lines, styleErr("note: "+n))
			}
			if m.app.agent != nil {
				if rep := m.app.agent.SandboxReport(); rep != nil {
					for _, n := range rep.Withheld {
						lines = append(lines, styleErr("note: the sandbox is "+field(n, 300)))
					}
				}
			}
			// What the sandbox runs commands without here, as run says it.
			if st := ev.SessionStart; len(st.SandboxLost) > 0 || len(st.SandboxNotEnforced) > 0 {
				lines = append(lines, styleErr("the sandbox (level "+esc(string(st.SandboxLevel))+") runs commands here without:"))
				for _, l := range st.SandboxNotEnforced {
					lines = append(lines, styleErr("  - NOT enforced (best effort): "+field(l, 300)))
				}
				for _, l := range st.SandboxLost {
					lines = append(lines, styleDim("  - "+field(l, 300)))
				}
			}
			return m.say(strings.Join(lines, "\n"))
		}
	case kernel.EventTextDelta:
		m.stream.WriteString(ev.TextDelta.Text)
	case kernel.EventRetry:
		m.stream.Reset()
		return m.say(styleDim(field(ev.Retry.Describe(), 260)))
	case kernel.EventAssistantMessage:
		m.usage = addUsage(m.usage, ev.AssistantMessage.Usage)
		m.contextUsed = ev.AssistantMessage.Usage.ContextTokens()
		if m.stream.Len() > 0 {
			text := m.stream.String()
			m.stream.Reset()
			// Whole now: rendered as Markdown (renderMarkdown escapes it).
			return m.say(renderMarkdown(text, m.width, lipgloss.ColorProfile()))
		}
	case kernel.EventToolCall:
		m.calls = append(m.calls, runningCall{id: ev.ToolCall.ID, line: callSummary(ev.ToolCall.Name, ev.ToolCall.Input), input: ev.ToolCall.Input, start: time.Now()})
	case kernel.EventCustom:
		if note, ok := refusalNote(ev.Custom); ok {
			if m.refusals == nil {
				m.refusals = map[string]string{}
			}
			m.refusals[ev.Custom.ID] = note
		}
	case kernel.EventToolOutput:
		for i := range m.calls {
			if m.calls[i].id == ev.ToolOutput.ID {
				m.calls[i].output = keepEnd(m.calls[i].output+ev.ToolOutput.Text, maxLiveOutput)
			}
		}
	case kernel.EventPermission:
		if ev.Permission.Decision != "deny" {
			return nil
		}
		// A denied call is said once: by the answer's line when the
		// person denied it, else by this one; its error result is not
		// shown again.
		if m.denied == nil {
			m.denied = map[string]bool{}
		}
		m.denied[ev.Permission.ID] = true
		if !m.personDenied[ev.Permission.ID] {
			return m.say(styleErr("  ✗ denied " + esc(ev.Permission.Name) + ": " + field(ev.Permission.Reason, 300)))
		}
	case kernel.EventToolResult:
		id := ev.ToolResult.ID
		var call *runningCall
		for i, c := range m.calls {
			if c.id == id {
				call = &c
				m.calls = append(m.calls[:i], m.calls[i+1:]...)
				break
			}
		}
		if m.denied[id] || m.personDenied[id] {
			delete(m.denied, id)
			delete(m.personDenied, id)
			return nil // said by the denial's line
		}
		return m.sayFor(m.resultText(ev, call))
	case kernel.EventCompact:
		return m.say(styleDim("context compacted"))
	case kernel.EventSandbox:
		return m.say(styleErr("  ✗ the sandbox could not start a command: " + field(ev.Sandbox.Error, 300)))
	case kernel.EventResult:
		if ev.Result.IsError {
			msg := ev.Result.Error
			if strings.Contains(msg, "context canceled") || strings.Contains(msg, "interrupted") {
				msg = "interrupted: the turn was stopped; the session goes on"
			}
			// Shown when the turn's stream has ended: the results of the
			// calls it stopped may still follow this event.
			m.ending = styleErr("⏹ " + field(msg, 300))
		}
	}
	return nil
}

// onSubagentEvent nests a subagent's calls under the parent's call that
// started it (ParentToolUseID). A subagent's text is its parent's
// business: the parent's call returns it as its result.
func (m *chatModel) onSubagentEvent(ev kernel.Event) tea.Cmd {
	parent := -1
	for i, c := range m.calls {
		if c.id == ev.ParentToolUseID {
			parent = i
		}
	}
	switch ev.Type {
	case kernel.EventToolCall:
		c := subCall{id: ev.ToolCall.ID, agent: ev.AgentID, line: callSummary(ev.ToolCall.Name, ev.ToolCall.Input), start: time.Now()}
		if parent < 0 {
			return nil // shown at its result
		}
		m.calls[parent].sub = append(m.calls[parent].sub, c)
	case kernel.EventToolResult:
		st := status(ev)
		if parent < 0 {
			// Its parent is not running here (it cannot be, in order): the
			// line alone, still marked as a subagent's.
			return m.say(styleDim(subCall{agent: ev.AgentID, line: callSummary(ev.ToolResult.Name, nil), result: st}.String()))
		}
		p := &m.calls[parent]
		for i := range p.sub {
			if p.sub[i].id == ev.ToolResult.ID && p.sub[i].result == "" {
				p.sub[i].result = st + fmt.Sprintf(" (%s)", time.Since(p.sub[i].start).Round(time.Millisecond))
				return nil
			}
		}
		p.sub = append(p.sub, subCall{id: ev.ToolResult.ID, agent: ev.AgentID, line: callSummary(ev.ToolResult.Name, nil), result: st})
	case kernel.EventPermission:
		if ev.Permission.Decision == "deny" {
			return m.say(styleErr("    ✗ [" + esc(ev.AgentID) + "] denied " + esc(ev.Permission.Name) + ": " + field(ev.Permission.Reason, 200)))
		}
	}
	return nil
}

// resultText is a finished call for the scrollback: its line, its
// outcome and duration; for a command, the first rows of its output (the
// rest folded: ctrl+o prints it whole); a subagent's calls under it, as
// they were shown live.
func (m *chatModel) resultText(ev kernel.Event, call *runningCall) func(width int) string {
	res := ev.ToolResult
	line, d := callSummary(res.Name, nil), time.Duration(0)
	var sub []subCall
	if call != nil {
		line, d, sub = call.line, time.Since(call.start), call.sub
	}
	text := ""
	for _, c := range res.Content {
		text += c.Text
	}
	refused := m.refusals[res.ID]
	delete(m.refusals, res.ID)
	if refused != "" {
		// Shown on a row of its own, below: not again as output, nor
		// as a failed command's status (its exit code is).
		text = strings.TrimSuffix(strings.TrimRight(text, "\n"), refused)
		text = strings.TrimRight(text, "\n")
	}
	st := status(ev)
	showsOutput := res.Name == policies.ShellTool || res.Name == "bash_output"
	if showsOutput && res.IsError {
		// A command's failure is said by the result's last line (its exit
		// code, the timeout, the signal); its first line is output.
		st = styleErr(" ✗ " + field(lastLine(text), 120))
	}
	head := "  " + line + st + styleDim(fmt.Sprintf(" (%s)", d.Round(time.Millisecond)))
	output := showsOutput && strings.TrimSpace(text) != "" && text != "(no output)"
	if output && len(outputRows(text, m.width)) > foldedRows {
		m.folded = append(m.folded, foldedOutput{title: line, text: text})
		if len(m.folded) > maxFolded {
			m.folded = m.folded[1:]
		}
	}
	return func(width int) string {
		rows := []string{wrapText(head, width)}
		if output {
			out := outputRows(text, width)
			if len(out) > foldedRows {
				rows = append(rows, styleDim(strings.Join(out[:foldedRows-1], "\n")),
					styleDim(wrapText(fmt.Sprintf("%s… %d more row(s) (ctrl+o shows the whole output)", outputPrefix, len(out)-foldedRows+1), width)))
			} else {
				rows = append(rows, styleDim(strings.Join(out, "\n")))
			}
		}
		for _, c := range sub {
			rows = append(rows, wrapText(styleDim(c.String()), width))
		}
		if refused != "" {
			rows = append(rows, styleErr(wrapText(outputPrefix+esc(refused), width)))
		}
		return strings.Join(rows, "\n")
	}
}

// foldedOutput is a command's output shown folded in the scrollback.
type foldedOutput struct{ title, text string }

// maxFolded bounds the folded outputs kept for ctrl+o.
const maxFolded = 20

// expandOutput prints the whole output of the last folded command (ctrl+o;
// again for the one before).
func (m *chatModel) expandOutput() tea.Cmd {
	if len(m.folded) == 0 {
		m.notice = "no folded command output to show"
		return nil
	}
	f := m.folded[len(m.folded)-1]
	m.folded = m.folded[:len(m.folded)-1]
	return m.sayFor(func(width int) string {
		return wrapText(styleDim("  "+f.title+" — the whole output:"), width) + "\n" + styleDim(strings.Join(outputRows(f.text, width), "\n"))
	})
}

// keepEnd is the last n bytes of s, from the start of a line when one
// begins in them (a live tail shows whole lines).
func keepEnd(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

var (
	taskStartedRE = regexp.MustCompile(`^Started background task (\S+): ([^\n]*)`)
	taskEndedRE   = regexp.MustCompile(`Task (\S+) has ended: ([^\n]*)$`)
)

// trackTasks follows the background tasks from the results of the tools
// that start, read and stop them (tools/builtin/tasks.go's words).
func (m *chatModel) trackTasks(ev kernel.Event) {
	res := ev.ToolResult
	if res.IsError {
		return
	}
	text := ""
	for _, c := range res.Content {
		text += c.Text
	}
	var input json.RawMessage
	for _, c := range m.calls {
		if c.id == res.ID {
			input = c.input
		}
	}
	switch res.Name {
	case "bash":
		if g := taskStartedRE.FindStringSubmatch(text); g != nil {
			m.tasks = append(m.tasks, bgTask{id: g[1], desc: g[2], start: time.Now()})
		}
	case "bash_output", "kill_task":
		var in struct {
			TaskID string `json:"task_id"`
		}
		_ = json.Unmarshal(input, &in)
		// The report's last line says how the task is; what comes before
		// is the task's own output.
		last := text[strings.LastIndexByte(strings.TrimRight(text, "\n"), '\n')+1:]
		if g := taskEndedRE.FindStringSubmatch(strings.TrimSpace(last)); (g != nil && g[1] == strings.TrimSpace(in.TaskID)) || res.Name == "kill_task" {
			m.tasks = slices.DeleteFunc(m.tasks, func(t bgTask) bool { return t.id == strings.TrimSpace(in.TaskID) })
		}
	}
}

func addUsage(a, b provider.Usage) provider.Usage {
	a.InputTokens += b.InputTokens
	a.OutputTokens += b.OutputTokens
	a.CacheCreationInputTokens += b.CacheCreationInputTokens
	a.CacheReadInputTokens += b.CacheReadInputTokens
	return a
}

// status is a tool result's outcome, its first line when it failed.
func status(ev kernel.Event) string {
	if !ev.ToolResult.IsError {
		return styleOK(" ✓")
	}
	text := ""
	for _, c := range ev.ToolResult.Content {
		text += c.Text
	}
	return styleErr(" ✗ " + field(firstLine(text), 120))
}

// callSummary is a call in one line: the tool and its main argument.
func callSummary(name string, input json.RawMessage) string {
	var v map[string]any
	_ = json.Unmarshal(input, &v)
	arg := ""
	for _, k := range []string{"command", "path", "pattern", "url", "agent", "description"} {
		if s, ok := v[k].(string); ok && s != "" {
			arg = s
			break
		}
	}
	if arg == "" {
		return "● " + esc(name)
	}
	return "● " + esc(name) + " " + field(arg, 60)
}

// ---- modes ----

var modeCycle = []policies.Mode{policies.ModeDefault, policies.ModeAcceptEdits, policies.ModePlan}

func nextMode(cur policies.Mode) policies.Mode {
	for i, m := range modeCycle {
		if m == cur {
			return modeCycle[(i+1)%len(modeCycle)]
		}
	}
	return modeCycle[0]
}

// setMode rebuilds the agent in mode; the preset's checks decide, as for
// --permission-mode.
func (m *chatModel) setMode(mode policies.Mode) tea.Cmd {
	old := m.app.f.permissionMode
	m.app.f.permissionMode = string(mode)
	if err := m.app.rebuild(); err != nil {
		m.app.f.permissionMode = old
		return m.say(styleErr("mode " + string(mode) + ": " + field(err.Error(), 300)))
	}
	return m.say(styleDim("mode: " + string(m.app.mode)))
}

// ---- approvals ----

func (m *chatModel) answer(r kernel.PermissionResult, shown string) tea.Cmd {
	a := m.approval
	m.approval = nil
	a.reply <- r
	if r.Allow && len(r.AllowRules) > 0 {
		// "For this session" outlives the turn: the kernel keeps the rule
		// for this query only, and each prompt is a query.
		m.app.sessionAllow = append(m.app.sessionAllow, r.AllowRules...)
	}
	if !r.Allow && !r.Interrupt && a.info.ToolUseID != "" {
		if m.personDenied == nil {
			m.personDenied = map[string]bool{}
		}
		m.personDenied[a.info.ToolUseID] = true
	}
	return m.say(styleDim("  " + shown + " " + callSummary(a.name, a.input)))
}

func (m *chatModel) approvalKey(k tea.KeyMsg) tea.Cmd {
	a := m.approval
	if m.approvalAt == "message" {
		switch k.Type {
		case tea.KeyEnter:
			msg := strings.TrimSpace(string(m.denyText))
			return m.answer(kernel.PermissionResult{Message: fmt.Sprintf("the user denied this call to %s: %s", a.name, msg)}, "denied with a message:")
		case tea.KeyEsc:
			m.approvalAt = ""
		case tea.KeyBackspace:
			if len(m.denyText) > 0 {
				m.denyText = m.denyText[:len(m.denyText)-1]
			}
		case tea.KeyCtrlC:
			m.approval = nil
			return m.interrupt()
		case tea.KeyRunes, tea.KeySpace:
			m.denyText = append(m.denyText, k.Runes...)
		}
		return nil
	}
	if m.approvalAt == "always" {
		return m.alwaysKey(k)
	}
	switch k.String() {
	case "y":
		return m.answer(kernel.PermissionResult{Allow: true}, "allowed once:")
	case "A":
		if len(a.info.Suggestions) == 0 {
			m.notice = "no rule can describe this call: y allows it once"
			return nil
		}
		m.approvalAt = "always"
	case "a":
		if len(a.info.Suggestions) == 0 {
			return m.answer(kernel.PermissionResult{Allow: true}, "allowed once (no rule can describe this call):")
		}
		return m.answer(kernel.PermissionResult{Allow: true, AllowRules: a.info.Suggestions}, "allowed for this session ("+esc(strings.Join(a.info.Suggestions, ", "))+"):")
	case "n":
		return m.answer(kernel.PermissionResult{Message: fmt.Sprintf("the user denied this call to %s", a.name)}, "denied:")
	case "m":
		m.approvalAt = "message"
	case "d":
		// The whole diff, into the scrollback above the question (the
		// question shows what fits the screen).
		if d, ok := m.approvalDiff(); ok {
			return m.sayFor(func(width int) string { return strings.TrimRight(colorDiff(d, width, -1, ""), "\n") })
		}
	case "esc", "ctrl+c":
		// Stops the turn: approve returns an interrupting denial when the
		// context ends.
		m.approval = nil
		return m.interrupt()
	}
	// Enter, and every other key, does nothing: nothing but y or a allows.
	return nil
}

// alwaysKey answers "allow always, in which policy file?": u the user's,
// w the workspace's (offered only where the next start would load it:
// workspaceAllowRefusal). The rules shown are written to the file, then the
// call is allowed with them for the rest of the session too (the file is
// read when a session starts).
func (m *chatModel) alwaysKey(k tea.KeyMsg) tea.Cmd {
	a := m.approval
	var write func(rule string) (string, error)
	switch k.String() {
	case "u":
		write = func(rule string) (string, error) { return policies.AddRuleToUserFile(policies.Allow, rule) }
	case "w":
		if why := m.app.workspaceAllowRefusal(); why != "" {
			// Never write a rule whose file the next start refuses.
			m.notice = "not written to the workspace's file: " + field(why, 200)
			return nil
		}
		ws := m.app.f.workspace
		write = func(rule string) (string, error) { return policies.AddRuleToWorkspaceFile(ws, policies.Allow, rule) }
	case "esc":
		m.approvalAt = ""
		return nil
	case "ctrl+c":
		m.approval = nil
		return m.interrupt()
	default:
		return nil
	}
	path := ""
	for _, rule := range a.info.Suggestions {
		p, err := write(rule)
		if err != nil {
			m.approvalAt = ""
			m.notice = "could not write the rule: " + field(err.Error(), 200)
			return nil
		}
		path = p
	}
	return m.answer(kernel.PermissionResult{Allow: true, AllowRules: a.info.Suggestions},
		"allowed always ("+esc(strings.Join(a.info.Suggestions, ", "))+" added to "+esc(path)+"):")
}

// ---- pickers ----

func (m *chatModel) pickerKey(k tea.KeyMsg) tea.Cmd {
	p := m.picker
	switch k.String() {
	case "up", "k":
		if p.at > 0 {
			p.at--
		}
		p.shown = ""
	case "down", "j":
		if p.at < len(p.values)-1 {
			p.at++
		}
		p.shown = ""
	case "d":
		if p.preview != nil && len(p.values) > 0 {
			p.shown = p.preview(m, p.values[p.at])
		}
	case p.otherKey:
		if p.other == nil {
			break
		}
		np, err := p.other()
		if err != nil {
			m.notice = field(err.Error(), 300)
			break
		}
		m.picker = np
	case "enter":
		m.picker = nil
		if len(p.values) == 0 {
			return nil
		}
		return p.pick(m, p.values[p.at])
	case "esc", "ctrl+c", "q":
		m.picker = nil
	}
	return nil
}

func sessionPicker(app *chatApp) *picker {
	p := &picker{title: "resume which session? (↑/↓, Enter; Esc: a new session)"}
	for _, h := range workspaceSessions(app.stateDir, app.f.workspace) {
		// The first prompt first (what a person knows the session by),
		// then when, then the id's start: a row cut at a narrow screen
		// keeps what tells the sessions apart.
		id := h.SessionID
		if len(id) > 8 {
			id = id[:8]
		}
		when := localTime(h.Created)
		if len(when) > 16 {
			when = when[:16] // to the minute
		}
		p.labels = append(p.labels, fmt.Sprintf("%s  %s  %s", field(oneLine(h.Prompt, 50), 200), styleDim(when), styleDim(esc(id))))
		p.values = append(p.values, h.SessionID)
	}
	p.pick = func(m *chatModel, id string) tea.Cmd {
		m.app.sessionID = id
		m.app.forgetSessionDomains()
		say := m.say(styleDim("resuming session " + esc(id)))
		return tea.Sequence(say, m.recap())
	}
	return p
}

// undoRewind is what /undo needs to take the last rewind back: the files
// go back to the checkpoint before the one that recorded the rewind (the
// store records a rewind as a checkpoint of its own, with the pre-images
// of what it overwrote), and the conversation's cut turns are appended
// back onto the transcript, if it has not moved since.
type undoRewind struct {
	sessionID string
	rewound
	to   string
	size int64
}

// undoLast undoes the last rewind of this session. It is offered only
// until the next prompt: after a new turn, going back to the state before
// the rewind would also undo that turn's work, which /rewind N says
// explicitly.
func (m *chatModel) undoLast() tea.Cmd {
	u := m.undo
	if u == nil || u.sessionID != m.app.sessionID {
		return m.say(styleErr("no rewind to undo (an undo is possible right after a /rewind, before the next prompt)"))
	}
	m.undo = nil
	var lines []string
	if u.filesCheckpoint >= 0 {
		var out, errb bytes.Buffer
		_, err := rewindCmd([]string{u.sessionID, "--to", strconv.Itoa(u.filesCheckpoint - 1), "--files-only", "--state-dir", m.app.stateDir}, &out, &errb)
		// What the rewind command says of itself (its checkpoint, its own
		// undo) would read as a second rewind here: only what it could
		// not restore is shown.
		if t := strings.TrimRight(errb.String(), "\n"); t != "" {
			lines = append(lines, t)
		}
		if err != nil {
			return m.say(strings.Join(append(lines, styleErr("undo: "+termsafe.Text(err.Error()))), "\n"))
		}
		lines = append(lines, fmt.Sprintf("files: back as before the rewind to checkpoint %s", esc(u.to)))
	}
	if u.saved != "" {
		if err := checkpoint.RestoreTranscriptCut(u.transcript, u.saved, u.size); err != nil {
			return m.say(strings.Join(append(lines, styleErr("undo of the conversation: "+termsafe.Text(err.Error()))), "\n"))
		}
		lines = append(lines, "conversation: the cut turns are back")
	}
	return m.say(strings.Join(lines, "\n"))
}
