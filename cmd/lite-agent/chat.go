package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/netproxy"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
)

// The interactive mode (issue 16): `lite-agent` with no command, or
// `lite-agent chat`, in a terminal. It is a Bubble Tea program in the
// terminal's normal screen (no alternate screen): what is finished — the
// prompt, the model's answers, one line per tool call — is printed above
// the program's view and stays in the scrollback; the view holds what is
// live: the text streaming in, the running calls, an approval, the input
// and the status line. Each prompt is one local.Agent.Query resuming the
// session, so a session of the TUI is a session of `run`: `sessions`,
// `checkpoints`, `rewind` and `run --resume` all work on it.
//
// Every string the agent controls (model text, tool names and inputs,
// results, file names, diffs) is escaped with termsafe before it reaches
// the screen: chat_view.go is the one place the TUI renders them.

// chatApp is what the session needs beyond the screen: the flags (to
// rebuild the agent when the mode or the rules change), the agent, the
// session id.
type chatApp struct {
	f         runFlags
	set       map[string]bool
	model     provider.Model
	modelName string
	stateDir  string
	agent     *local.Agent
	mode      policies.Mode
	sessionID string // "" until the first turn starts one
	// opts are the agent's options, copied once per rebuild (Options
	// deep-copies; the status line reads them at every frame).
	opts kernel.Options

	prog *tea.Program
	// approveMu makes approvals one at a time: parallel calls would
	// otherwise answer each other's questions.
	approveMu sync.Mutex
	// sessionDomains are the unknown domains allowed for the session or
	// always (chat_domains.go), by grant; refusedDomains the host:ports
	// refused, refused again without a question for the session.
	domainMu       sync.Mutex
	sessionDomains map[string]sandbox.DomainDecision
	refusedDomains map[string]bool
	// domainBudget bounds the questions of the whole chat: the kernel's
	// budget is per Query, and chat runs one Query per prompt, so an
	// injection that survives from prompt to prompt would get a fresh
	// budget with each. Not reset by /clear (only the answers are).
	domainBudget netproxy.QuestionBudget
	// firstPrompt, from the command line (lite-agent "fix the bug"), is
	// sent as the session's first prompt once the screen is up.
	firstPrompt string
	// sessionAllow are the rules answered "allow for this session" (or
	// always) during the last turn, added to the agent's allow rules
	// before the next (keepSessionAllows).
	sessionAllow []string
}

// keepSessionAllows adds the rules allowed for the session during the
// last turn to the agent's allow rules, between turns (the agent is
// rebuilt, as for /allow), so that the next prompt does not ask again.
func (a *chatApp) keepSessionAllows() error {
	if len(a.sessionAllow) == 0 {
		return nil
	}
	old := a.f.allowedTools
	for _, r := range a.sessionAllow {
		if slices.Contains(commaList(a.f.allowedTools), r) {
			continue
		}
		if a.f.allowedTools != "" {
			a.f.allowedTools += ","
		}
		a.f.allowedTools += r
	}
	a.sessionAllow = nil
	if a.f.allowedTools == old {
		return nil
	}
	if err := a.rebuild(); err != nil {
		a.f.allowedTools = old
		return fmt.Errorf("the rules allowed for this session could not be kept: %w", err)
	}
	return nil
}

// chatSkipsFlags are run's flags that chat refuses (run's one-prompt
// output), left out of chat --help.
var chatSkipsFlags = []string{"p", "output-format", "verbose"}

func cmdChat(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f runFlags
	fs := runFlagSet("chat", &f, stderr)
	cont := &f.cont
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lite-agent [chat] [flags] [PROMPT]   (an interactive session, starting with PROMPT if given; --resume with no id picks a session)")
		printFlags(stderr, fs, chatSkipsFlags...)
	}
	// "--resume" with no id (at the end, or before another flag) opens a
	// picker; the flag package would take the next flag as the id.
	original := args
	args, pick := resumeWithoutID(args)
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		return err // -h, or a usage error (exit 2) in one line
	}
	if f.prompt != "" {
		return usageErrorf("-p runs one prompt and exits: lite-agent -p PROMPT (or lite-agent run PROMPT); the interactive session takes its first prompt as an argument: lite-agent PROMPT")
	}
	if f.outputFormat != "text" {
		return usageErrorf("--output-format applies to run; chat is interactive")
	}
	if f.verbose {
		return usageErrorf("--verbose applies to run's text output; chat always shows tool calls")
	}
	first := strings.Join(positional, " ")
	if !isTerminal(stdin) || !isTerminalWriter(stdout) {
		if first != "" {
			// lite-agent [flags] PROMPT without a terminal: run it.
			return cmdRun(original, stdin, stdout, stderr)
		}
		return usageErrorf("the interactive mode needs a terminal; without one use: lite-agent run [flags] PROMPT")
	}
	if pick && first != "" {
		return usageErrorf("--resume without an id opens a picker, which would drop the prompt: give the id (lite-agent sessions lists them) or type the prompt once the session is picked")
	}
	if *cont && (pick || f.resume != "") {
		return usageErrorf("--continue and --resume exclude each other")
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	model, modelName, err := buildModel(&f)
	if err != nil {
		return err
	}
	ws, notice, err := resolveWorkspace(f.workspace, f.stateDir)
	if err != nil {
		return err
	}
	f.workspace = ws
	if notice != "" {
		fmt.Fprintln(stderr, notice)
	}
	stateDir, err := stateDirOf(f.stateDir)
	if err != nil {
		return err
	}
	// The state dir, resolved, for every command of the session.
	f.stateDir = stateDir
	app := &chatApp{f: f, set: set, model: model, modelName: modelName, stateDir: stateDir, sessionID: f.resume, firstPrompt: first}
	if *cont {
		sessions := workspaceSessions(stateDir, ws)
		if len(sessions) == 0 {
			return failf("no session of %s to continue in %s; start one with: lite-agent", esc(ws), esc(stateDir))
		}
		app.sessionID = sessions[0].SessionID
	}
	if err := app.rebuild(); err != nil {
		return err
	}
	// Set, so that lipgloss never asks the terminal for its background
	// (an OSC 11 query a terminal that does not answer makes wait for
	// seconds before the first screen).
	lipgloss.SetHasDarkBackground(true)
	if os.Getenv("NO_COLOR") != "" {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
	m := newChatModel(app, pick)
	// The terminal's size now: the first lines are printed before Bubble
	// Tea reports it, and must be wrapped to it too.
	if f, ok := stdout.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			m.width, m.height = max(20, int(ws.Col)), int(ws.Row)
			m.input.SetWidth(m.width - 1)
		}
	}
	p := tea.NewProgram(m, tea.WithInput(stdin), tea.WithOutput(stdout))
	app.prog = p
	if _, err := p.Run(); err != nil {
		return failf("the terminal UI stopped: %v", err)
	}
	if app.sessionID != "" {
		fmt.Fprintln(stdout, wrapText(fmt.Sprintf("session %s — continue with: lite-agent --continue", app.sessionID), m.width))
	}
	return nil
}

// resumeWithoutID takes a bare "--resume" (last, or followed by a flag)
// out of args and reports it.
func resumeWithoutID(args []string) ([]string, bool) {
	out := make([]string, 0, len(args))
	pick := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if (a == "--resume" || a == "-resume" || a == "-r" || a == "--r") && (i+1 == len(args) || strings.HasPrefix(args[i+1], "-")) {
			pick = true
			continue
		}
		out = append(out, a)
	}
	return out, pick
}

// workspaceSessions are the sessions of workspace ws, newest first.
func workspaceSessions(stateDir, ws string) []kernel.Record {
	headers, _ := kernel.ListSessions(stateDir)
	var out []kernel.Record
	for _, h := range headers {
		if h.Workspace == ws {
			out = append(out, h)
		}
	}
	return out
}

// rebuild makes the agent from the flags: at the start, and after /mode,
// /allow or /deny changed them. The agent is rebuilt rather than changed
// so that New checks the new mode and rules against the preset as it
// checks the flags of run: there is one path to a hardened agent.
func (a *chatApp) rebuild() error {
	a.f.canUseTool = a.approve
	a.f.onUnknownDomain = a.askDomain
	agent, err := buildAgent(&a.f, a.set, a.model, a.modelName, nil, io.Discard)
	if err != nil {
		return err
	}
	a.agent = agent
	a.opts = agent.Options()
	a.mode = policies.Mode(a.opts.PermissionMode)
	if a.mode == "" {
		a.mode = policies.ModeDefault
	}
	return nil
}

// workspaceAllowRefusal says why an allow rule written to the
// workspace's policy file would stop the next start (the preset never
// trusts the file, or it exists untrusted), "" when it would load. The
// preset is the agent's; before the first build, the flag's.
func (a *chatApp) workspaceAllowRefusal() string {
	var preset policies.Preset
	if a.agent != nil {
		preset = a.agent.Preset()
	} else {
		p, err := policies.PresetByName(a.f.preset)
		if err != nil {
			return err.Error()
		}
		preset = p
	}
	return policies.WorkspaceAllowRefusal(preset, a.f.workspace)
}

// approvalMsg asks the screen about one call; the answer comes back on reply.
type approvalMsg struct {
	name   string
	input  json.RawMessage
	info   kernel.ToolUseInfo
	reply  chan kernel.PermissionResult
	cancel <-chan struct{}
}

// approve is the agent's CanUseTool: it hands the call to the screen and
// waits for the person's answer, or for the turn to be interrupted.
func (a *chatApp) approve(ctx context.Context, name string, input json.RawMessage, info kernel.ToolUseInfo) (kernel.PermissionResult, error) {
	interrupted := kernel.PermissionResult{Interrupt: true,
		Message: fmt.Sprintf("the call to %s was denied: the user interrupted the turn at the approval prompt", name)}
	a.approveMu.Lock()
	defer a.approveMu.Unlock()
	if ctx.Err() != nil {
		return interrupted, nil
	}
	reply := make(chan kernel.PermissionResult, 1)
	a.prog.Send(approvalMsg{name: name, input: input, info: info, reply: reply, cancel: ctx.Done()})
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return interrupted, nil
	}
}

// chatHistoryPath is the file of the prompts typed, across sessions.
func chatHistoryPath(stateDir string) string { return filepath.Join(stateDir, "chat_history.jsonl") }
