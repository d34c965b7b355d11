package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/internal/termsafe"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/provider/openai"
	"github.com/lite-agent/lite-agent/provider/scripted"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/builtin"
)

const defaultAnthropicModel = "claude-sonnet-4-6"

type runFlags struct {
	prompt          string
	workspace       string
	providerName    string
	baseURL         string
	apiKey          string
	model           string
	script          string
	maxTurns        int
	maxTokens       int
	tools           string
	allowedTools    string
	disallowedTools string
	outputFormat    string
	systemPrompt    string
	stateDir        string
	resume          string
	cont            bool // --continue: resume the workspace's newest session
	verbose         bool
	noCheckpoints   bool
	checkpointMax   string
	// Bounds of a quiet model connection; unset takes the environment's
	// value, else the provider's default (provider.Timeouts).
	firstByteTimeout  timeoutFlag
	streamIdleTimeout timeoutFlag
	// Permissions (permissions.go).
	preset          string
	permissionMode  string
	skipPermissions bool
	// MCP servers, subagents, budget, structured output (extras.go).
	mcpConfig       string
	mcpTimeout      time.Duration
	agents          string
	maxBudgetTokens int64
	outputSchema    string
	// What the model is told, context, thinking, web search (model.go).
	modelSettings modelFlagValues
	// The sandbox of commands (sandboxflags.go), shared with sandbox run.
	sandboxGrants sandboxGrantFlags
	// canUseTool, when set, answers the calls that ask instead of the
	// line prompt (the interactive mode's approvals, chat.go).
	canUseTool kernel.CanUseToolFunc
	// onUnknownDomain, when set, is asked about a domain no grant names
	// (the interactive mode, chat_domains.go); without it such a domain
	// is refused.
	onUnknownDomain func(context.Context, sandbox.DomainQuestion) (sandbox.DomainDecision, error)
}

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f runFlags
	fs := runFlagSet("run", &f, stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lite-agent run [flags] PROMPT   (also: lite-agent -p PROMPT [flags])")
		printFlags(stderr, fs)
	}
	args, pick := resumeWithoutID(printIsMode(args))
	if pick {
		return usageErrorf("run --resume needs a session id (lite-agent sessions lists them; --continue takes the newest)")
	}
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		return err // -h, or a usage error (exit 2) in one line
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })

	prompt, err := resolvePrompt(f.prompt, positional, stdin)
	if err != nil {
		return err
	}
	switch f.outputFormat {
	case "text", "json", "stream-json":
	default:
		return usageErrorf("--output-format must be text, json or stream-json, not %q", f.outputFormat)
	}
	model, modelName, err := buildModel(&f)
	if err != nil {
		return err
	}
	// The workspace, resolved once and checked (workspace.go).
	ws, notice, err := resolveWorkspace(f.workspace, f.stateDir)
	if err != nil {
		return err
	}
	f.workspace = ws
	if notice != "" && f.outputFormat == "text" {
		fmt.Fprintln(stderr, notice) // before anything else the run prints
	}
	if f.cont {
		if f.resume != "" {
			return usageErrorf("--continue and --resume exclude each other")
		}
		stateDir, err := stateDirOf(f.stateDir)
		if err != nil {
			return err
		}
		sessions := workspaceSessions(stateDir, ws)
		if len(sessions) == 0 {
			return failf("no session of %s to continue in %s; start one with: lite-agent run PROMPT", esc(ws), esc(stateDir))
		}
		f.resume = sessions[0].SessionID
	}
	agent, err := buildAgent(&f, set, model, modelName, stdin, stderr)
	if err != nil {
		return err
	}
	warnWithheld(agent.SandboxReport(), stderr)
	var queryOpts []local.QueryOption
	if f.resume != "" {
		queryOpts = append(queryOpts, local.Resume(f.resume))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return render(f.outputFormat, f.verbose, agent.Query(ctx, prompt, queryOpts...), stdout, stderr)
}

// runFlagSet is the flags of run, which chat shares.
func runFlagSet(name string, f *runFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.prompt, "p", "", "the prompt (instead of the PROMPT argument; \"-\" reads stdin)")
	fs.StringVar(&f.workspace, "workspace", "", "the directory the agent works in (default: the current directory)")
	fs.StringVar(&f.providerName, "provider", "", "the model provider: anthropic, openai (or any OpenAI-compatible server) or scripted (default: anthropic, or scripted with --script)")
	fs.StringVar(&f.model, "model", "", "the model name (default: "+defaultAnthropicModel+" for anthropic; required for openai)")
	fs.StringVar(&f.baseURL, "base-url", "", "the API base URL, e.g. http://localhost:11434/v1 (default: $OPENAI_BASE_URL or $ANTHROPIC_BASE_URL, else the vendor's)")
	fs.StringVar(&f.apiKey, "api-key", "", "the API key (default: $OPENAI_API_KEY or $ANTHROPIC_API_KEY; prefer those, a flag shows in ps)")
	fs.StringVar(&f.script, "script", "", "a scripted-model JSON file; implies --provider scripted")
	fs.IntVar(&f.maxTurns, "max-turns", 0, "stop after N model calls (0: no limit)")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "bound one model answer to N tokens (0: the provider's default)")
	fs.StringVar(&f.tools, "tools", "", "comma list of the tools the model sees (names or wildcards; default: all, \"\" for none)")
	fs.StringVar(&f.allowedTools, "allowed-tools", "", "comma list of allow rules: tools or calls pre-approved to run without asking (\"read_file,bash(git status),bash(npm run test:*)\"); does not hide other tools")
	fs.StringVar(&f.disallowedTools, "disallowed-tools", "", "comma list of deny rules (\"bash(curl:*),write_file(/etc/**)\"); a tool named without an argument is also removed from the model's view")
	fs.StringVar(&f.outputFormat, "output-format", "text", "text, json or stream-json")
	fs.StringVar(&f.systemPrompt, "system-prompt", "", "replace the default system prompt (what the model is told about its work, environment and sandbox) with this text")
	fs.StringVar(&f.stateDir, "state-dir", "", "where sessions are kept (default: $XDG_STATE_HOME/lite-agent)")
	fs.StringVar(&f.resume, "resume", "", "continue the session with this id")
	fs.StringVar(&f.resume, "r", "", "the same as --resume")
	fs.BoolVar(&f.cont, "continue", false, "continue the newest session of this workspace")
	fs.BoolVar(&f.cont, "c", false, "the same as --continue")
	fs.BoolVar(&f.verbose, "verbose", false, "in text output, show tool calls and results on stderr")
	fs.BoolVar(&f.noCheckpoints, "no-checkpoints", false, "do not record checkpoints (the session cannot be rewound)")
	fs.StringVar(&f.checkpointMax, "checkpoint-max-size", "", "cap the checkpoint store (e.g. 500M, 10G, or none; default 2G): at session start the oldest checkpoints of other sessions go until it fits")
	fs.Var(&f.firstByteTimeout, "first-byte-timeout", "how long a model request may wait for the first byte of its answer before it is retried: a `duration` such as 90s or 5m, 0 for no bound (default $"+provider.EnvFirstByteTimeout+", else 2m)")
	fs.Var(&f.streamIdleTimeout, "stream-idle-timeout", "how long a model's streamed answer may pause before it is retried: a `duration`, 0 for no bound (default $"+provider.EnvIdleTimeout+", else 1m)")
	permissionFlags(fs, f)
	extraFlags(fs, f)
	modelFlags(fs, &f.modelSettings)
	f.sandboxGrants.Register(fs)
	return fs
}

// timeoutFlag is a duration flag that knows whether it was given, so that
// "0" can mean "no bound" while an absent flag leaves the choice to the
// environment and the provider's default.
type timeoutFlag struct {
	d   time.Duration
	set bool
}

func (t *timeoutFlag) String() string {
	if t == nil || !t.set {
		return ""
	}
	return t.d.String()
}

func (t *timeoutFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if s == "0" {
		d, err = 0, nil
	}
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 90s or 5m, or 0 for no bound")
	}
	t.d, t.set = d, true
	return nil
}

// value is the provider option: 0 when unset (environment, then
// default), negative for "no bound".
func (t timeoutFlag) value() time.Duration {
	if t.set && t.d == 0 {
		return -1
	}
	return t.d
}

func resolvePrompt(flagPrompt string, positional []string, stdin io.Reader) (string, error) {
	if flagPrompt != "" && len(positional) > 0 {
		return "", usageErrorf("give the prompt either with -p or as an argument, not both")
	}
	prompt := flagPrompt
	if prompt == "" {
		prompt = strings.Join(positional, " ")
	}
	if prompt == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", failf("reading the prompt from stdin: %v", err)
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return "", usageErrorf("no prompt: lite-agent run [flags] PROMPT (or -p PROMPT, or - to read stdin)")
	}
	return prompt, nil
}

func buildModel(f *runFlags) (provider.Model, string, error) {
	name := f.providerName
	if name == "" {
		name = "anthropic"
		if f.script != "" {
			name = "scripted"
		}
	}
	switch name {
	case "scripted":
		if f.script == "" {
			return nil, "", usageErrorf("--provider scripted needs --script FILE")
		}
		if f.firstByteTimeout.set || f.streamIdleTimeout.set {
			return nil, "", usageErrorf("--first-byte-timeout and --stream-idle-timeout do not apply to --provider scripted")
		}
		if f.baseURL != "" || f.apiKey != "" {
			return nil, "", usageErrorf("--base-url and --api-key do not apply to --provider scripted")
		}
		m, err := scripted.Load(f.script)
		if err != nil {
			return nil, "", failf("%v", err)
		}
		model := f.model
		if model == "" {
			model = "scripted"
		}
		return m, model, nil
	case "anthropic":
		if f.script != "" {
			return nil, "", usageErrorf("--script only works with --provider scripted")
		}
		m, err := anthropic.New(&anthropic.Options{APIKey: f.apiKey, BaseURL: f.baseURL,
			FirstByteTimeout: f.firstByteTimeout.value(), IdleTimeout: f.streamIdleTimeout.value()})
		if errors.Is(err, anthropic.ErrNoAPIKey) {
			return nil, "", failf("no Anthropic API key: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a proxy), or run offline with --script FILE")
		}
		if err != nil {
			return nil, "", failf("%v", err)
		}
		model := f.model
		if model == "" {
			model = defaultAnthropicModel
		}
		return m, model, nil
	case "openai":
		if f.script != "" {
			return nil, "", usageErrorf("--script only works with --provider scripted")
		}
		if f.model == "" {
			return nil, "", usageErrorf("--provider openai needs --model NAME (e.g. gpt-4.1, or a model your server serves)")
		}
		m, err := openai.New(&openai.Options{APIKey: f.apiKey, BaseURL: f.baseURL,
			FirstByteTimeout: f.firstByteTimeout.value(), IdleTimeout: f.streamIdleTimeout.value()})
		if errors.Is(err, openai.ErrNoAPIKey) {
			return nil, "", failf("no OpenAI API key: set OPENAI_API_KEY, or point --base-url (or OPENAI_BASE_URL) at a local server such as http://localhost:11434/v1")
		}
		if err != nil {
			return nil, "", failf("%v", err)
		}
		return m, f.model, nil
	}
	return nil, "", usageErrorf("unknown provider %q (anthropic, openai or scripted)", name)
}

// render writes the event stream in the chosen format and turns the run's
// outcome into the CLI's error.
func render(format string, verbose bool, events func(func(kernel.Event, error) bool), stdout, stderr io.Writer) error {
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	// JSON goes to out as is (the exact bytes, for programs); text mode
	// writes model text through text, which escapes it for a terminal.
	enc := json.NewEncoder(out)
	text := termsafe.NewWriter(out)
	var runErr error
	var last kernel.Event
	wroteText := false
	var refusals refusalSummary
	for ev, err := range events {
		if err != nil {
			runErr = err
		}
		switch format {
		case "stream-json":
			// WriteJSON: the bytes json.Encoder would write, without
			// copying a large event twice more.
			if e := ev.WriteJSON(out); e != nil {
				return failf("writing output: %v", e)
			}
			// Flush per event: a consumer reads the stream as it happens.
			out.Flush()
		case "text":
			renderText(ev, verbose, out, text, stderr, &wroteText)
		}
		if ev.Type == kernel.EventResult {
			last = ev
		}
		if ev.Type == kernel.EventSessionStart && ev.AgentID == "" {
			warnNotRewindable(ev.SessionStart, stderr)
			warnSandboxLost(ev.SessionStart, stderr)
			warnMCPServers(ev.SessionStart, stderr)
		}
		if ev.Type == kernel.EventCustom {
			refusals.add(ev.Custom) // a subagent's commands' too
		}
		if ev.Type == kernel.EventSandbox && ev.Sandbox != nil {
			// In every format: the person must see it, not only the
			// model (and a stream-json consumer has the event).
			out.Flush()
			fmt.Fprintf(stderr, "lite-agent: sandbox: a command could not be started (the run will end with exit %d): %s\n", exitSandbox, esc(ev.Sandbox.Error))
		}
	}
	if format == "json" {
		if e := enc.Encode(last); e != nil {
			return failf("writing output: %v", e)
		}
	}
	if format == "text" && wroteText {
		text.Flush()
		fmt.Fprintln(out)
	}
	out.Flush()
	refusals.print(stderr)
	if res := last.Result; runErr != nil || res != nil && res.IsError {
		msg := ""
		if res != nil {
			msg = res.Error
		}
		if msg == "" && runErr != nil {
			msg = runErr.Error()
		}
		if sandboxCannotRun(runErr) {
			return &exitError{code: exitSandbox, msg: firstLine(msg) + sandboxRefusalHint(runErr)}
		}
		return failf("%s", firstLine(msg))
	}
	return nil
}

// warnNotRewindable tells the person, at the start, which writable roots
// no rewind covers (kernel.SessionStartEvent.NotRewindable), in every
// output format: stream-json carries the list in the session_start event
// as well. A toolchain's per-workspace cache is emptied by rewind --to 0
// instead (local.ResetWorkspaceCaches).
func warnNotRewindable(start *kernel.SessionStartEvent, stderr io.Writer) {
	for _, n := range notRewindableNotes(start) {
		fmt.Fprintln(stderr, "note: "+n)
	}
}

// notRewindableNotes are the sentences, one per root, that run and chat
// show at the start for kernel.SessionStartEvent.NotRewindable (paths
// escaped for a terminal).
func notRewindableNotes(start *kernel.SessionStartEvent) []string {
	if start == nil {
		return nil
	}
	cacheRoot, _ := local.CacheRoot()
	var out []string
	for _, p := range start.NotRewindable {
		if cacheRoot != "" && paths.Within(p, cacheRoot) {
			out = append(out, esc(p)+" is a toolchain cache outside the workspace: checkpoints do not record it; rewind --to 0 empties it")
			continue
		}
		out = append(out, esc(p)+" is writable but outside the workspace: changes there are not recorded in checkpoints and no rewind undoes them")
	}
	return out
}

// renderText shows one event in text mode. Every string of an event comes
// from the agent (model text, tool names, input and output, hook reasons,
// subagent names): each goes through termsafe before it reaches stdout or
// stderr. Model text keeps its lines and tabs (termsafe.Text, through
// text); one-line fields are escaped whole (field).
func renderText(ev kernel.Event, verbose bool, out *bufio.Writer, text *termsafe.Writer, stderr io.Writer, wroteText *bool) {
	if ev.AgentID != "" {
		renderSubagent(ev, verbose, out, stderr)
		return
	}
	switch ev.Type {
	case kernel.EventTextDelta:
		text.WriteString(ev.TextDelta.Text)
		out.Flush()
		*wroteText = true
	case kernel.EventSessionStart, kernel.EventThinkingDelta, kernel.EventCompact:
		renderModelEvent(ev, verbose, out, stderr)
	case kernel.EventRetry:
		out.Flush()
		fmt.Fprintf(stderr, "\n[%s]\n", termsafe.Escape(ev.Retry.Describe()))
	case kernel.EventAssistantMessage:
		if *wroteText {
			text.Flush()
			out.WriteString("\n")
			out.Flush()
			*wroteText = false
		}
	case kernel.EventToolCall:
		if verbose {
			out.Flush()
			fmt.Fprintf(stderr, "→ %s %s\n", termsafe.Escape(ev.ToolCall.Name), jsonField(ev.ToolCall.Input, 200))
			if len(ev.ToolCall.EffectiveInput) > 0 {
				fmt.Fprintf(stderr, "  ran with (a hook or CanUseTool changed the input): %s\n", jsonField(ev.ToolCall.EffectiveInput, 200))
			}
		}
	case kernel.EventPermission, kernel.EventHook:
		renderPermission(ev, verbose, out, stderr)
	case kernel.EventToolResult:
		if verbose {
			fmt.Fprintln(stderr, resultLine(ev))
		}
	case kernel.EventNetwork:
		if verbose {
			out.Flush()
			fmt.Fprintln(stderr, networkLine(ev))
		}
	}
}

// networkLine is one of the domain proxy's decisions for --verbose: a
// refusal names the rule that would allow it.
func networkLine(ev kernel.Event) string {
	n := ev.Network
	if n.Decision == "allow" {
		return fmt.Sprintf("⇄ network: %s:%d allowed (%s; %d bytes up, %d down)", termsafe.Escape(n.Host), n.Port, termsafe.Escape(n.Rule), n.BytesUp, n.BytesDown)
	}
	return fmt.Sprintf("⇄ network: %s:%d refused (%s)", termsafe.Escape(n.Host), n.Port, termsafe.Escape(n.Rule))
}

// resultLine is a tool result in one line for --verbose.
func resultLine(ev kernel.Event) string {
	status := "ok"
	if ev.ToolResult.IsError {
		status = "error"
	}
	text := ""
	for _, c := range ev.ToolResult.Content {
		text += c.Text
	}
	return fmt.Sprintf("← %s [%s] %s", termsafe.Escape(ev.ToolResult.Name), status, field(text, 300))
}

// renderSubagent shows a subagent's work in text output: stdout is the
// main agent's answer, so a subagent's text and calls go to stderr with
// --verbose; its denials and hook failures always do.
func renderSubagent(ev kernel.Event, verbose bool, out *bufio.Writer, stderr io.Writer) {
	out.Flush()
	who := "[" + termsafe.Escape(ev.AgentID) + "] "
	switch ev.Type {
	case kernel.EventAssistantMessage:
		if verbose && ev.AssistantMessage.Message != nil && ev.AssistantMessage.Message.Text() != "" {
			fmt.Fprintf(stderr, "%s%s\n", who, field(ev.AssistantMessage.Message.Text(), 300))
		}
	case kernel.EventToolCall:
		if verbose {
			fmt.Fprintf(stderr, "%s→ %s %s\n", who, termsafe.Escape(ev.ToolCall.Name), jsonField(ev.ToolCall.Input, 200))
			if len(ev.ToolCall.EffectiveInput) > 0 {
				fmt.Fprintf(stderr, "%s  ran with (a hook or CanUseTool changed the input): %s\n", who, jsonField(ev.ToolCall.EffectiveInput, 200))
			}
		}
	case kernel.EventPermission, kernel.EventHook:
		if verbose || ev.Type == kernel.EventHook || ev.Permission.Decision == "deny" {
			fmt.Fprint(stderr, who)
			renderPermission(ev, verbose, out, stderr)
		}
	case kernel.EventToolResult:
		if verbose {
			fmt.Fprintln(stderr, who+resultLine(ev))
		}
	}
}

// truncate shortens s to at most n bytes (and "…"), cut at a character
// boundary. Its callers escape the result, which makes it one line:
// newlines become \n there (a "⏎" put in here read the same as the
// character ⏎ in the text).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// field is an agent-controlled string as one line of at most about n
// bytes, safe for a terminal: truncated first, at a character boundary,
// then escaped, so that no cut can leave half an escape sequence or half a
// character raw.
func field(s string, n int) string { return termsafe.Escape(truncate(s, n)) }

// jsonField is field for JSON text (a tool call's input): escaped as
// JSON (termsafe.JSON), so that its own \n and \u escapes read as they
// are instead of shown doubled.
func jsonField(raw []byte, n int) string { return termsafe.JSON(truncate(string(raw), n)) }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// refusalSummary collects what the sandbox refused the session's
// commands (the bash tool's SandboxRefusalEvent), so that the person
// learns it at the end of a run, in every format, with what allows each
// — not only the model, in the tool results.
type refusalSummary struct {
	notes []string
	more  int
}

// maxRefusalNotes bounds the summary: a command refused in a loop must not
// fill the person's terminal.
const maxRefusalNotes = 10

// refusalNote is the line of a SandboxRefusalEvent, if c is one.
func refusalNote(c *kernel.CustomEvent) (string, bool) {
	if c == nil || c.Name != builtin.SandboxRefusalEvent {
		return "", false
	}
	var note string
	switch d := c.Data.(type) {
	case map[string]any:
		note, _ = d["note"].(string)
	case json.RawMessage:
		var v struct {
			Note string `json:"note"`
		}
		if json.Unmarshal(d, &v) == nil {
			note = v.Note
		}
	}
	return note, note != ""
}

func (r *refusalSummary) add(c *kernel.CustomEvent) {
	note, ok := refusalNote(c)
	if !ok {
		return
	}
	note = strings.TrimPrefix(note, "[lite-agent] the sandbox refused ")
	if i := strings.LastIndex(note, " (and "); i >= 0 && strings.HasSuffix(note, ")") {
		note = note[:i] // how many others, for that command
	}
	if note == "" || slices.Contains(r.notes, note) {
		return
	}
	if len(r.notes) == maxRefusalNotes {
		r.more++
		return
	}
	r.notes = append(r.notes, note)
}

func (r *refusalSummary) print(stderr io.Writer) {
	if len(r.notes) == 0 {
		return
	}
	fmt.Fprintln(stderr, "note: the sandbox refused the agent's commands, during this run:")
	for _, n := range r.notes {
		fmt.Fprintf(stderr, "  - %s\n", esc(n))
	}
	if r.more > 0 {
		fmt.Fprintf(stderr, "  - and %d more\n", r.more)
	}
}

// warnWithheld says at the start what of the person's own settings the
// session's commands do not get (policies.SandboxReport.Withheld: a
// trust store they cannot read), in every output format: a TLS failure
// inside would otherwise come unexplained.
func warnWithheld(rep *policies.SandboxReport, stderr io.Writer) {
	if rep == nil {
		return
	}
	for _, n := range rep.Withheld {
		fmt.Fprintln(stderr, "note: the sandbox is "+esc(n))
	}
}

// warnSandboxLost says at the start what the session's sandbox runs
// without here (kernel.SessionStartEvent.SandboxLost, and what best
// effort does not enforce), in every output format: the list
// `lite-agent sandbox check` prints for the same level.
func warnSandboxLost(start *kernel.SessionStartEvent, stderr io.Writer) {
	if start == nil || len(start.SandboxLost) == 0 && len(start.SandboxNotEnforced) == 0 {
		return
	}
	fmt.Fprintf(stderr, "note: the sandbox (level %s) runs commands here without:\n", esc(string(start.SandboxLevel)))
	for _, l := range start.SandboxNotEnforced {
		fmt.Fprintf(stderr, "  - NOT enforced (best effort): %s\n", esc(l))
	}
	for _, l := range start.SandboxLost {
		fmt.Fprintf(stderr, "  - %s\n", esc(l))
	}
}

// warnMCPServers says at the start, in every output format, which MCP
// servers failed (their tools are not offered: the model only sees them
// missing) and where a server runs with less than it declares
// (tools.ServerStatus.Notes).
func warnMCPServers(start *kernel.SessionStartEvent, stderr io.Writer) {
	if start == nil {
		return
	}
	for _, s := range start.MCPServers {
		if s.State == tools.ServerFailed {
			fmt.Fprintf(stderr, "lite-agent: MCP server %s failed, its tools are not offered: %s\n", esc(s.Name), esc(s.Error))
		}
		for _, n := range s.Notes {
			fmt.Fprintf(stderr, "note: MCP server %s %s (--network widens the session's)\n", esc(s.Name), esc(n))
		}
	}
}

// sandboxRefusalHint is what the person can do about a sandbox the
// session's level cannot have here.
func sandboxRefusalHint(err error) string {
	var refused *sandbox.RefusedError
	if errors.As(err, &refused) && refused.Level != sandbox.LevelContainer {
		return "\n`lite-agent sandbox check` shows what holds here; --sandbox-level container (or [sandbox] level in your policy file) runs commands without namespaces, and says at the start what that gives up"
	}
	if errors.Is(err, kernel.ErrSandboxStart) {
		return ""
	}
	return "\n`lite-agent sandbox check` shows what holds here"
}

// exitSandbox is the exit code of a run whose sandbox cannot run the
// agent's commands on this host (docs/cli.md, "Exit codes"): the work was not
// done, and rerunning will not help until `lite-agent sandbox check` says
// the preset holds.
const exitSandbox = 3

// sandboxCannotRun: err says the session's sandbox was refused, its
// trial command failed, or it could not start a command mid-session.
func sandboxCannotRun(err error) bool {
	return err != nil && (errors.Is(err, sandbox.ErrUnsupported) || errors.Is(err, sandbox.ErrTrialFailed) || errors.Is(err, kernel.ErrSandboxStart))
}
