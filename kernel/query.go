package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/builtin"
	"github.com/lite-agent/lite-agent/tools/confined"
)

// ErrMaxTurns is wrapped by the error of a run that hit Options.MaxTurns.
var ErrMaxTurns = errors.New("reached the maximum number of turns")

// ErrInterrupted is wrapped by the error of a run stopped by a permission
// decision that asked to interrupt.
var ErrInterrupted = errors.New("run interrupted")

// ErrMaxBudget is wrapped by the error of a run that used more tokens than
// Options.MaxBudgetTokens.
var ErrMaxBudget = errors.New("exceeded the token budget")

// ErrStructuredOutput is wrapped by the error of a run whose final answer
// did not match Options.OutputFormat.
var ErrStructuredOutput = errors.New("the final answer does not match the output schema")

const defaultToolTimeout = 15 * time.Minute

// Query runs the agent loop and streams its events. The stream starts with
// session_start and ends with exactly one result event. When the run fails
// (bad options, provider error, max turns, cancellation) the result event is
// yielded together with a non-nil error; tool failures are not run failures
// — they become error results the model sees, and the loop goes on.
//
// Stopping the iteration early cancels the run: running tools are
// cancelled, background tasks are killed, the transcript is closed.
func Query(ctx context.Context, opts Options) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		start := time.Now()
		r, err := newRun(ctx, &opts)
		if err != nil {
			yield(Event{Type: EventResult, Result: &ResultEvent{Subtype: SubtypeErrorDuringExecution, IsError: true, Error: err.Error(), DurationMS: time.Since(start).Milliseconds()}}, err)
			return
		}
		r.start = start
		defer r.close()
		r.loop(yield)
	}
}

// session is what the main agent and its subagents share: one workspace
// and root, one sandbox, one transcript, one checkpointer, one task
// registry, one set of opened toolsets (MCP servers), one token budget. A
// subagent gets none of these afresh — it uses the parent's — so that
// nothing the parent enforces is weaker inside it.
type session struct {
	opts  *Options // the caller's
	start time.Time

	sessionID string
	workspace string
	root      *os.Root
	resumed   bool

	file         *sessionFile
	tasks        *tools.Tasks
	checkpointer Checkpointer
	snapshots    tools.SnapshotRecorder

	// sandbox confines bash; handlerSandboxes confine custom handlers, one
	// per declared security profile, built on first use.
	basePolicy       sandbox.Policy
	handlerCeiling   sandbox.Policy // Options.HandlerCeiling, or basePolicy
	sandbox          *sandbox.Sandbox
	builtins         map[*tools.Tool]bool
	handlerMu        sync.Mutex
	handlerSandboxes map[handlerProfile]*sandbox.Sandbox
	toolTimeout      time.Duration
	// network holds the domain proxy's decisions until the loop that
	// iterates can yield them as network events (network.go).
	network networkQueue
	// startFailures are the commands the sandbox could not start during
	// the loop (sandboxfail.go); sandboxEnforcement is what the
	// session's sandbox enforces, said at the start.
	startFailures      startFailures
	sandboxEnforcement sandbox.Enforcement

	toolsets       []*openToolset // Options.Toolsets, opened
	toolsetChanges lateRecorder   // where the toolsets' processes' changes are recorded
	// forwards are the toolsets' tools that only forward a call to
	// something confined elsewhere (tools.ToolTraits.Forwards): called in
	// this process. Only a toolset's word about its own tools counts.
	forwards  map[*tools.Tool]bool
	agentTool *tools.Tool // nil without Agents
	output    *outputCheck

	// created is when the session began (the date the system prompt
	// states); instructions are the project-instruction files loaded.
	created      time.Time
	instructions []InstructionFile

	mu    sync.Mutex
	usage provider.Usage // every model call, the main agent's and the subagents'
	halt  *ending        // set when the whole run must stop (budget, a subagent's interrupt)
}

// run is one agent's loop: the main agent's, or a subagent's (see
// subagent.go), with its own conversation and tools over the shared
// session.
type run struct {
	*session
	ctx    context.Context
	cancel context.CancelFunc

	// What differs between the main agent and a subagent.
	prompt    string
	system    string
	modelName string
	maxTurns  int
	// agent, agentID and parentCallID name a subagent ("" for the main
	// agent).
	agent, agentID, parentCallID string
	parentTurn                   int

	visible map[string]*tools.Tool
	names   []string
	specs   []provider.ToolSpec
	gate    gate

	messages []provider.Message
	turns    int
	ended    bool // SessionEnd hooks have run

	// ctx tracks the context size and what was cleared or compacted
	// (context.go).
	window contextState
}

// ending is how an agent's loop ended.
type ending struct {
	subtype    string
	err        error
	text       string
	stop       provider.StopReason
	structured json.RawMessage
}

func newRun(ctx context.Context, o *Options) (_ *run, err error) {
	if confined.InChild() {
		return nil, errors.New("kernel: this process was started to run one confined tool call, but its main did not call confined.Serve(its tools...) first")
	}
	if o.Model == nil {
		return nil, errors.New("kernel: Options.Model is required")
	}
	if strings.TrimSpace(o.Prompt) == "" {
		return nil, errors.New("kernel: Options.Prompt is empty")
	}
	if o.MaxBudgetTokens < 0 {
		return nil, errors.New("kernel: Options.MaxBudgetTokens is negative")
	}
	r := &run{session: &session{opts: o, toolTimeout: o.ToolTimeout}, prompt: o.Prompt, system: o.SystemPrompt, modelName: o.ModelName, maxTurns: o.MaxTurns}
	if r.toolTimeout <= 0 {
		r.toolTimeout = defaultToolTimeout
	}
	if r.workspace, err = ResolveWorkspace(o.Workspace); err != nil {
		return nil, err
	}
	stateDir, err := resolveStateDir(o.StateDir, r.workspace)
	if err != nil {
		return nil, err
	}
	if r.gate.mode, err = permissionMode(o); err != nil {
		return nil, err
	}
	if err := r.buildRules(); err != nil {
		return nil, err
	}
	if err := checkAgents(o); err != nil {
		return nil, err
	}
	if err := CheckConfinedTools(o); err != nil {
		return nil, err
	}
	if r.output, err = newOutputCheck(o.OutputFormat); err != nil {
		return nil, err
	}
	if err := r.prepareSandbox(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.closeSandboxes()
		}
	}()
	// The transcript and the checkpoint store are opened before any
	// process of the session starts: a stdio MCP server is a writer from
	// the moment it is started, and what it changes while the session
	// starts is recorded in the open checkpoint like a command's change,
	// so that a rewind to checkpoint 0 undoes it.
	if err := r.openSession(stateDir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.file.close()
		}
	}()
	r.ctx, r.cancel = context.WithCancel(ctx)
	defer func() {
		if err != nil {
			r.cancel()
		}
	}()
	r.snapshots = o.Snapshots
	if o.Checkpoints != nil {
		cp, err := o.Checkpoints(r.ctx, r.sessionID, r.workspace)
		if err != nil {
			return nil, fmt.Errorf("kernel: opening the checkpoint store: %w", err)
		}
		r.checkpointer, r.snapshots = cp, cp
		defer func() {
			if err != nil {
				cp.Close()
			}
		}()
	}
	if r.snapshots != nil {
		r.toolsetChanges.set(r.snapshots)
	}
	// Toolsets (MCP servers) are opened before the tools are built, so
	// that their tools are named in Tools, rules and hook matchers like
	// any other.
	defer func() {
		if err != nil {
			r.closeToolsets()
		}
	}()
	if err := r.openToolsets(ctx); err != nil {
		return nil, err
	}
	if err := r.buildTools(); err != nil {
		return nil, err
	}
	if r.root, err = os.OpenRoot(r.workspace); err != nil {
		return nil, fmt.Errorf("kernel: opening the workspace: %w", err)
	}
	defer func() {
		if err != nil {
			r.root.Close()
		}
	}()
	if r.system, err = r.systemPrompt(r.created); err != nil {
		return nil, err
	}
	if r.output != nil {
		r.system = r.output.instruct(r.system)
	}
	if err = r.checkModelOptions(); err != nil {
		return nil, err
	}
	r.tasks = tools.NewTasks()
	r.gate.sessionID = r.sessionID
	r.gate.workspace = r.workspace
	r.gate.canUseTool = o.CanUseTool
	r.gate.approval = o.Approval
	r.gate.delegate = r.agentTool
	r.gate.trusted = r.trustedReadOnly()
	return r, nil
}

// permissionMode checks the mode and its opt-in.
func permissionMode(o *Options) (PermissionMode, error) {
	m, err := policies.ParseMode(string(o.PermissionMode))
	if err != nil {
		return "", fmt.Errorf("kernel: PermissionMode: %w", err)
	}
	if m == PermissionBypass && !o.AllowDangerouslySkipPermissions {
		return "", errors.New("kernel: PermissionMode bypassPermissions needs AllowDangerouslySkipPermissions (--dangerously-skip-permissions): it runs every call without asking, except what deny rules, ask rules and hooks say")
	}
	return m, nil
}

// buildRules compiles the session's rules: Options.Rules (presets, policy
// files), AllowedTools as allow rules, DisallowedTools as deny rules.
func (r *run) buildRules() error {
	o := r.opts
	rules := append([]policies.Rule(nil), o.Rules...)
	allow, err := policies.ParseRules(policies.Allow, "AllowedTools", o.AllowedTools...)
	if err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	deny, err := policies.ParseRules(policies.Deny, "DisallowedTools", o.DisallowedTools...)
	if err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	rules = append(append(rules, allow...), deny...)
	if r.gate.rules, err = policies.Compile(rules, r.workspace); err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	if r.gate.hooks, err = compileHooks(o.Hooks, r.workspace); err != nil {
		return err
	}
	return nil
}

// ResolveWorkspace returns the real (absolute, symlink-free) path of the
// workspace ws, the current directory when empty, and checks that it is a
// directory.
func ResolveWorkspace(ws string) (string, error) {
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("kernel: no workspace given and the current directory is unknown: %w", err)
		}
		ws = wd
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", fmt.Errorf("kernel: workspace %s: %w", ws, err)
	}
	// Resolve symlinks once, so that every later comparison (is this path
	// inside the workspace?) is between real paths.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("kernel: workspace %s: %w", ws, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("kernel: workspace %s: %w", ws, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("kernel: workspace %s is not a directory", ws)
	}
	return real, nil
}

func resolveStateDir(dir, workspace string) (string, error) {
	if dir == "" {
		d, err := DefaultStateDir()
		if err != nil {
			return "", err
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("kernel: state directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("kernel: creating the state directory: %w", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if paths.Within(abs, workspace) {
		return "", fmt.Errorf("kernel: the state directory %s is inside the workspace %s; it must be outside, so that nothing the agent runs can rewrite the session history", abs, workspace)
	}
	return abs, nil
}

// buildTools computes the tools the model sees: built-ins, custom tools,
// the toolsets' tools (the connected MCP servers') and the agent tool,
// narrowed by Options.Tools, minus the tools a deny rule denies whole.
func (r *run) buildTools() error {
	o := r.opts
	r.builtins = map[*tools.Tool]bool{}
	for _, t := range builtin.All() {
		r.builtins[t] = true
	}
	all := append(builtin.All(), o.CustomTools...)
	r.forwards = map[*tools.Tool]bool{}
	for i, ot := range r.toolsets {
		for _, t := range ot.tools {
			if t == nil {
				return fmt.Errorf("kernel: Toolsets[%d] offers a nil tool", i)
			}
			if ot.traits(t).Forwards {
				r.forwards[t] = true
			} else if err := checkConfinable(o, t); err != nil {
				// It runs like a custom tool: a confined child must find
				// it (for an in-process MCP server's tools,
				// CheckConfinedTools has said so before anything opened).
				return err
			}
		}
		all = append(all, ot.tools...)
	}
	if len(o.Agents) > 0 {
		t, err := newAgentTool(o.Agents)
		if err != nil {
			return err
		}
		r.agentTool = t
		all = append(all, t)
	}
	byName := make(map[string]*tools.Tool, len(all))
	for _, t := range all {
		if t == nil {
			return errors.New("kernel: Options.CustomTools contains a nil tool")
		}
		if _, dup := byName[t.Name()]; dup {
			return fmt.Errorf("kernel: two tools are named %q; tool names must be unique (custom tools cannot replace built-ins, an in-process MCP server's tools come either through a toolset (mcp.NewToolset) or through CustomTools, not both, and two toolsets may not offer one name: put all MCP servers in one mcp.Toolset)", t.Name())
		}
		byName[t.Name()] = t
	}
	visibleNames, err := compileNamePatterns("Tools", o.Tools)
	if err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	if err := checkCustomNames(o.CustomTools); err != nil {
		return err
	}
	known := knownTools{names: map[string]bool{}, mayOffer: r.toolsetsMayOffer, agents: len(o.Agents) > 0, unchecked: r.noteUnchecked}
	for n := range byName {
		known.names[n] = true
	}
	if err := checkNames(o, known); err != nil {
		return err
	}
	r.visible = map[string]*tools.Tool{}
	for _, t := range all {
		if o.Tools != nil && !visibleNames.match(t.Name()) {
			continue
		}
		// A deny rule for the whole tool (DisallowedTools "bash", a policy
		// file's deny = ["bash"]) hides it: the model is not offered what
		// it can never use.
		if _, denied := r.gate.rules.DeniesWholeTool(t.Name()); denied {
			continue
		}
		r.addVisible(t)
	}
	return nil
}

func (r *run) addVisible(t *tools.Tool) {
	r.visible[t.Name()] = t
	r.names = append(r.names, t.Name())
	r.specs = append(r.specs, provider.ToolSpec{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchemaJSON()})
}

func (r *run) openSession(stateDir string) error {
	o := r.opts
	if o.Resume != "" {
		path, err := SessionPath(stateDir, o.Resume)
		if err != nil {
			return fmt.Errorf("kernel: %w", err)
		}
		tr, err := ReadTranscript(path)
		if err != nil {
			return fmt.Errorf("kernel: resuming: %w", err)
		}
		if tr.Header.Workspace != r.workspace {
			return fmt.Errorf("kernel: session %s belongs to workspace %s, not %s", o.Resume, tr.Header.Workspace, r.workspace)
		}
		validLen := int64(-1)
		if tr.Torn {
			validLen = tr.ValidLen
		}
		if r.file, err = openSessionFile(path, false, validLen); err != nil {
			return fmt.Errorf("kernel: %w", err)
		}
		r.sessionID, r.resumed = o.Resume, true
		r.created = tr.Header.Created
		r.messages = tr.Messages
		r.window.restore(tr.Context, r.messages)
		if repaired := repairMessages(r.messages); len(repaired) > len(r.messages) {
			if err := r.appendMessage(repaired[len(repaired)-1]); err != nil {
				r.file.close()
				return err
			}
		}
		return nil
	}
	r.sessionID = o.SessionID
	if r.sessionID == "" {
		r.sessionID = newSessionID()
	}
	path, err := SessionPath(stateDir, r.sessionID)
	if err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	if r.file, err = openSessionFile(path, true, -1); err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	r.created = time.Now().UTC()
	err = r.file.append(Record{Type: "session", SessionID: r.sessionID, Workspace: r.workspace, Model: o.ModelName, Created: r.created, Prompt: o.Prompt})
	if err != nil {
		r.file.close()
		return err
	}
	return nil
}

// sessionEnd runs the SessionEnd hooks once.
func (r *run) sessionEnd(how string, report func(Event)) {
	if r.ended {
		return
	}
	r.ended = true
	in := r.gate.hookInput()
	in.Event, in.Reason = HookSessionEnd, how
	// The run's context may be cancelled already (an interrupt); the hooks
	// still get their own timeout.
	r.gate.hooks.notify(context.WithoutCancel(r.ctx), in, nil, report)
}

func (r *run) close() {
	// A consumer that stopped early ended the run: SessionEnd hooks still
	// run, with nowhere to report to.
	r.sessionEnd("stopped", func(Event) {})
	r.tasks.KillAll(5 * time.Second)
	r.closeToolsets()
	r.closeSandboxes()
	if r.checkpointer != nil {
		r.checkpointer.Close()
	}
	r.cancel()
	r.file.close()
	r.root.Close()
}

// appendMessage records a message of the conversation. A subagent's
// messages are kept in the transcript as "agent_message" records, which
// are not part of the main conversation a resumed session reloads.
func (r *run) appendMessage(m provider.Message) error {
	rec := Record{Type: "message", Message: &m}
	if r.agentID != "" {
		rec.Type, rec.Agent, rec.AgentID = "agent_message", r.agent, r.agentID
	}
	if err := r.file.append(rec); err != nil {
		return err
	}
	r.messages = append(r.messages, m)
	return nil
}

// event stamps an event with the session and, in a subagent, the agent.
func (r *run) event(e Event) Event {
	e.SessionID = r.sessionID
	if r.agentID != "" {
		e.Agent, e.AgentID, e.ParentToolUseID = r.agent, r.agentID, r.parentCallID
	}
	return e
}

// addUsage counts a model call against the run's budget. When the budget
// is exceeded the whole run must stop: every agent's loop sees it through
// halted.
func (r *run) addUsage(u provider.Usage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.usage.Add(u)
	if budget := r.opts.MaxBudgetTokens; budget > 0 && r.halt == nil {
		if used := totalTokens(r.usage); used > budget {
			r.halt = &ending{subtype: SubtypeErrorMaxBudget, err: fmt.Errorf("%w: %d tokens used, the budget is %d", ErrMaxBudget, used, budget)}
		}
	}
}

func totalTokens(u provider.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// halted returns why the whole run must stop, or nil.
func (r *run) halted() *ending {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.halt
}

// haltAll makes the whole run stop with end, unless it is stopping already.
func (r *run) haltAll(end ending) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.halt == nil {
		r.halt = &end
	}
}

func (r *run) totalUsage() provider.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usage
}

// userTurn is the index of the user turn the current tool calls belong to:
// a subagent's calls belong to the turn of the parent's call that started it.
func (r *run) userTurn() int {
	if r.agentID != "" {
		return r.parentTurn
	}
	return userTurns(r.messages) - 1
}

// notRewindable lists the commands' writable roots outside the workspace
// (SessionStartEvent.NotRewindable), when the session records
// checkpoints: change capture records pre-images beneath the workspace
// only.
func (r *run) notRewindable() []string {
	if r.opts.Checkpoints == nil || r.opts.Sandbox == nil {
		return nil
	}
	var out []string
	for _, p := range r.opts.Sandbox.ReadWritePaths {
		if paths.Within(p, r.workspace) {
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (r *run) loop(yield func(Event, error) bool) {
	start := &SessionStartEvent{Model: r.opts.ModelName, Workspace: r.workspace, Tools: r.names, Resumed: r.resumed, MCPServers: r.serverStatus(), Instructions: r.instructions,
		NotRewindable: r.notRewindable(), SandboxLevel: r.sandboxEnforcement.Level,
		SandboxLost: r.sandboxEnforcement.Lost, SandboxNotEnforced: r.sandboxEnforcement.Missing}
	for name := range r.opts.Agents {
		start.Agents = append(start.Agents, name)
	}
	slices.Sort(start.Agents)
	if !yield(r.event(Event{Type: EventSessionStart, SessionStart: start}), nil) {
		return
	}
	// From here on a command the sandbox cannot start fails the run (an
	// MCP server's failed start is in session_start already).
	r.startFailures.arm()
	live := true // the consumer still listens
	report := func(e Event) {
		if live && !yield(r.event(e), nil) {
			live = false
		}
	}
	source := "startup"
	if r.resumed {
		source = "resume"
	}
	base := r.gate.hookInput()
	in := base
	in.Event, in.Source = HookSessionStart, source
	extra := r.gate.hooks.notify(r.ctx, in, nil, report)
	in = base
	in.Event, in.Prompt = HookUserPromptSubmit, r.prompt
	more, blocked := r.gate.hooks.promptSubmit(r.ctx, in, report)
	if !live {
		return
	}
	if blocked != nil {
		r.finish(yield, ending{subtype: SubtypeErrorDuringExecution, err: blocked})
		return
	}
	extra = append(extra, more...)
	// Every user turn is a rewind target: "before this prompt".
	if !r.checkpoint(yield, CheckpointCause{Reason: "user_turn", UserTurn: userTurns(r.messages)}) {
		return
	}
	prompt := provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText, Text: r.prompt}}}
	if len(extra) > 0 {
		prompt.Content = append(prompt.Content, provider.Block{Type: provider.BlockText, Text: "Additional context from hooks:\n" + strings.Join(extra, "\n")})
	}
	if err := r.appendMessage(prompt); err != nil {
		r.finish(yield, ending{subtype: SubtypeErrorDuringExecution, err: err})
		return
	}
	end, ok := r.converse(yield)
	if !ok {
		return
	}
	if end.subtype == SubtypeSuccess {
		in := r.gate.hookInput()
		in.Event, in.Result = HookStop, end.text
		r.gate.hooks.notify(r.ctx, in, nil, report)
		if !live {
			return
		}
	}
	r.finish(yield, end)
}

// converse calls the model and runs the tools it asks for until it gives
// a final answer or something ends the loop: the main agent's loop and
// every subagent's. The conversation so far must end with a user message.
// ok is false when the consumer stopped the iteration.
func (r *run) converse(yield func(Event, error) bool) (end ending, ok bool) {
	retries := 0
	for {
		if r.maxTurns > 0 && r.turns >= r.maxTurns {
			return ending{subtype: SubtypeErrorMaxTurns, err: fmt.Errorf("%w (%d)", ErrMaxTurns, r.maxTurns)}, true
		}
		msg, stop, err, ok := r.callModel(yield)
		if !ok {
			return ending{}, false
		}
		if err != nil {
			return ending{subtype: SubtypeErrorDuringExecution, err: err}, true
		}
		r.turns++
		// A call cut off by max_tokens is never run (context.go).
		var cutNote string
		if stop == provider.StopMaxTokens {
			msg, cutNote = dropTruncatedCall(msg)
		}
		stored := storable(msg)
		if err := r.appendMessage(stored); err != nil {
			return ending{subtype: SubtypeErrorDuringExecution, err: err, stop: stop}, true
		}
		if !yield(r.event(Event{Type: EventAssistantMessage, AssistantMessage: &AssistantMessageEvent{Message: &stored, Usage: r.window.last}}), nil) {
			return ending{}, false
		}
		// The calls get the raw input, so a malformed one is reported as such.
		uses := msg.ToolUses()
		if len(uses) == 0 && cutNote != "" {
			if err := r.appendMessage(provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText, Text: cutNote}}}); err != nil {
				return ending{subtype: SubtypeErrorDuringExecution, err: err, stop: stop}, true
			}
			continue
		}
		if len(uses) == 0 && stop == provider.StopPauseTurn {
			// The API paused a long server-tool turn (web_search): sent
			// back as it is, the turn goes on.
			continue
		}
		if len(uses) == 0 {
			if h := r.halted(); h != nil {
				// This answer used up the budget (or a subagent stopped
				// the run): the run ends as that says, answer kept.
				e := *h
				e.text, e.stop = msg.Text(), stop
				return e, true
			}
			if r.output == nil || r.agentID != "" {
				return ending{subtype: SubtypeSuccess, text: msg.Text(), stop: stop}, true
			}
			structured, problem := r.output.check(msg.Text())
			if problem == "" {
				return ending{subtype: SubtypeSuccess, text: msg.Text(), stop: stop, structured: structured}, true
			}
			if retries >= r.output.retries {
				return ending{subtype: SubtypeErrorStructuredOutput, text: msg.Text(), stop: stop,
					err: fmt.Errorf("%w (answers given: %d): %s", ErrStructuredOutput, retries+1, problem)}, true
			}
			retries++
			// The correction is a user turn like a prompt, and a rewind
			// target like one.
			if !r.checkpoint(yield, CheckpointCause{Reason: "user_turn", UserTurn: userTurns(r.messages)}) {
				return ending{}, false
			}
			if err := r.appendMessage(correction(problem)); err != nil {
				return ending{subtype: SubtypeErrorDuringExecution, err: err, stop: stop}, true
			}
			continue
		}
		results, interrupt, ok := r.runTools(yield, uses)
		if cutNote != "" {
			results = append(results, provider.Block{Type: provider.BlockText, Text: cutNote})
		}
		// The results are recorded even when the consumer has gone, so that
		// the transcript never ends with unanswered tool calls.
		if err := r.appendMessage(provider.Message{Role: provider.RoleUser, Content: results}); err != nil {
			if ok {
				return ending{subtype: SubtypeErrorDuringExecution, err: err, stop: stop}, true
			}
			return ending{}, false
		}
		if !ok {
			return ending{}, false
		}
		if interrupt != "" {
			return ending{subtype: SubtypeErrorDuringExecution, err: fmt.Errorf("%w: %s", ErrInterrupted, interrupt), stop: stop}, true
		}
		if h := r.halted(); h != nil {
			e := *h
			e.stop = stop
			return e, true
		}
		if err := r.ctx.Err(); err != nil {
			return ending{subtype: SubtypeErrorDuringExecution, err: fmt.Errorf("%w: %w", ErrInterrupted, err), stop: stop}, true
		}
	}
}

// streamModel streams one assistant turn (callModel, in context.go,
// decides what it is sent). ok is false when the consumer stopped the
// iteration.
func (r *run) streamModel(yield func(Event, error) bool, req *provider.Request) (msg *provider.Message, stop provider.StopReason, err error, ok bool) {
	for ch, err := range r.opts.Model.Stream(r.ctx, req) {
		if err != nil {
			if ctxErr := r.ctx.Err(); ctxErr != nil {
				return nil, "", fmt.Errorf("%w: %w", ErrInterrupted, ctxErr), true
			}
			return nil, "", fmt.Errorf("model: %w", err), true
		}
		switch ch.Type {
		case provider.ChunkTextDelta:
			if !yield(r.event(Event{Type: EventTextDelta, TextDelta: &TextDeltaEvent{Text: ch.Text}}), nil) {
				return nil, "", nil, false
			}
		case provider.ChunkThinkingDelta:
			if !yield(r.event(Event{Type: EventThinkingDelta, ThinkingDelta: &ThinkingDeltaEvent{Thinking: ch.Text}}), nil) {
				return nil, "", nil, false
			}
		case provider.ChunkRetry:
			e := &RetryEvent{Attempt: ch.Attempt, MaxAttempts: ch.MaxAttempts, WaitMS: ch.Wait.Milliseconds()}
			if ch.Err != nil {
				e.Error = ch.Err.Error()
			}
			if !yield(r.event(Event{Type: EventRetry, Retry: e}), nil) {
				return nil, "", nil, false
			}
		case provider.ChunkMessage:
			r.addUsage(ch.Usage)
			r.window.observe(ch.Usage)
			if ch.Message == nil {
				return nil, "", fmt.Errorf("model: %w", provider.ErrNoMessage), true
			}
			m := *ch.Message
			m.Role = provider.RoleAssistant
			fixToolUseIDs(&m, r.turns)
			return &m, ch.StopReason, nil, true
		}
	}
	return nil, "", fmt.Errorf("model: %w", provider.ErrNoMessage), true
}

// storable returns a copy of m that can be encoded and sent back to a
// model: a tool_use input that is not valid JSON (a model's garbage) is
// kept as a JSON string. The call itself still sees the raw text, so the
// model is told exactly what was wrong with it.
func storable(m *provider.Message) provider.Message {
	c := *m
	c.Content = append([]provider.Block(nil), m.Content...)
	for i := range c.Content {
		if c.Content[i].Type == provider.BlockToolUse {
			c.Content[i].Input = rawOrString(c.Content[i].Input)
		}
	}
	return c
}

// fixToolUseIDs gives every tool_use a unique id: results are matched to
// calls by id, and a provider that sends none or repeats one would
// otherwise make the conversation invalid.
func fixToolUseIDs(m *provider.Message, turn int) {
	seen := map[string]bool{}
	for i := range m.Content {
		b := &m.Content[i]
		if b.Type != provider.BlockToolUse {
			continue
		}
		if b.ID == "" || seen[b.ID] {
			b.ID = fmt.Sprintf("toolu_lite_%d_%d", turn+1, i+1)
		}
		seen[b.ID] = true
	}
}

func (r *run) finish(yield func(Event, error) bool, end ending) {
	if err := r.startFailures.err(); err != nil {
		// The work was not done as the model may believe: the run fails,
		// whatever the model concluded (its text is kept).
		if end.subtype == SubtypeSuccess {
			end.subtype = SubtypeErrorDuringExecution
		}
		end.err = errors.Join(err, end.err)
	}
	usage := r.totalUsage()
	res := &ResultEvent{
		Subtype: end.subtype, IsError: end.subtype != SubtypeSuccess,
		NumTurns: r.turns, Usage: usage, StopReason: end.stop, Result: end.text,
		StructuredOutput: end.structured,
		DurationMS:       time.Since(r.start).Milliseconds(),
	}
	e := r.event(Event{Type: EventResult, Result: res})
	err := end.err
	if err != nil {
		res.Error = err.Error()
	}
	// SessionEnd hooks run before the result event, so that their
	// failures are still reported in the stream.
	consumer := true
	r.sessionEnd(end.subtype, func(ev Event) {
		if consumer && !yield(r.event(ev), nil) {
			consumer = false
		}
	})
	if !consumer {
		return
	}
	rec := Record{Type: "result", Subtype: end.subtype, Usage: usage, Error: res.Error, Time: time.Now().UTC()}
	if werr := r.file.append(rec); werr != nil && err == nil {
		err = werr
		res.Subtype, res.IsError, res.Error = SubtypeErrorDuringExecution, true, werr.Error()
	}
	yield(e, err)
}

// pendingCall is a gated call waiting to run.
type pendingCall struct {
	index int
	tool  *tools.Tool
	call  tools.Call
	// context is what PreToolUse hooks added for the model.
	context []string
	// prepared is call.Input validated and decoded, unless a hook or
	// CanUseTool rewrote the input after that.
	prepared *tools.Prepared
}

// permissionEvent describes a gate decision for the stream.
func permissionEvent(call tools.Call, mode PermissionMode, d decision) Event {
	p := &PermissionEvent{ID: call.ID, Name: call.Name, Decision: "deny", DecidedBy: d.by, Hook: d.hook, Mode: mode, Asked: d.asked, Reason: d.reason}
	if d.allow {
		p.Decision = "allow"
	} else if d.message != "" {
		p.Reason = d.message
	}
	if d.rule != nil {
		p.Rule, p.RuleSource = d.rule.Text, d.rule.Source
	}
	return Event{Type: EventPermission, Permission: p}
}

// postHooks runs the PostToolUse (or, for an error result,
// PostToolUseFailure) hooks of a call.
func (r *run) postHooks(yield func(Event, error) bool, call tools.Call, res *tools.Result, ok *bool) *tools.Result {
	return r.gate.hooks.post(r.ctx, r.gate.hookInput(), call, res, func(e Event) {
		if *ok && !yield(r.event(e), nil) {
			*ok = false
		}
	})
}

// runTools gates and runs the calls of one assistant turn and returns their
// results in call order. Consecutive read-only calls run concurrently; any
// other call runs alone, in order. interrupt is set when a permission
// decision asked to stop the run; ok is false when the consumer stopped.
func (r *run) runTools(yield func(Event, error) bool, uses []provider.Block) (results []provider.Block, interrupt string, ok bool) {
	results = make([]provider.Block, len(uses))
	ok = true
	var batch []pendingCall
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if !ok {
			for _, p := range batch {
				results[p.index] = toolResultBlock(p.call.ID, tools.Errorf("not run: the run was stopped before this call"))
			}
			batch = batch[:0]
			return
		}
		out := r.execute(yield, batch, &ok)
		r.yieldStartFailures(yield, &ok)
		for j, p := range batch {
			res := withContext(r.postHooks(yield, p.call, out[j], &ok), p.context)
			results[p.index] = r.deliver(yield, p.call, res, &ok)
		}
		if ok && !r.checkpoint(yield, batchCause(batch, r.userTurn())) {
			ok = false
		}
		batch = batch[:0]
	}
	for i, u := range uses {
		call := tools.Call{ID: u.ID, Name: u.Name, Input: u.Input}
		// announce emits the call's tool_call event: at once for a call
		// that never reaches the gate, and for one that does once the gate
		// has decided, so that the event can show the input the tool will
		// really run with (effective) beside the model's.
		announce := func(effective json.RawMessage) {
			if ok && !yield(r.event(Event{Type: EventToolCall, ToolCall: &ToolCallEvent{ID: call.ID, Name: call.Name, Input: u.Input, EffectiveInput: effective}}), nil) {
				ok = false
			}
		}
		if !ok || interrupt != "" {
			// The consumer has gone or the run was interrupted: record the
			// call as not run, so that the transcript stays answerable.
			announce(nil)
			results[i] = toolResultBlock(call.ID, tools.Errorf("not run: the run was stopped before this call"))
			continue
		}
		if h := r.halted(); h != nil {
			// The budget is spent (or a subagent stopped the run): nothing
			// more runs, and the model is told why.
			announce(nil)
			flush()
			results[i] = r.deliver(yield, call, tools.Errorf("not run: %v", h.err), &ok)
			continue
		}
		t := r.visible[call.Name]
		if t == nil {
			announce(nil)
			flush()
			results[i] = r.deliver(yield, call, r.unknownTool(call.Name), &ok)
			continue
		}
		// The input is validated (and defaulted) before the gate, so that
		// rules, hooks, CanUseTool and the handler all see the same input;
		// a call the schema refuses never reaches the gate.
		prepared, bad := t.Prepare(call.Input)
		if bad != nil {
			announce(nil)
			flush()
			results[i] = r.deliver(yield, call, r.postHooks(yield, call, bad, &ok), &ok)
			continue
		}
		call.Input = prepared.JSON()
		if !t.ReadOnly() {
			// Earlier read-only calls run before this one is decided (and
			// perhaps asked about).
			flush()
		}
		report := func(e Event) {
			if ok && !yield(r.event(e), nil) {
				ok = false
			}
		}
		// The gate's hook events wait for the tool_call event, which
		// waits for the decision: the stream stays tool_call → hook →
		// permission → tool_result.
		var held []Event
		d := r.gate.decide(r.ctx, t, call, func(e Event) { held = append(held, e) })
		var effective json.RawMessage
		if d.allow && d.input != nil && !jsonEqual(d.input, call.Input) {
			effective = d.input
		}
		announce(effective)
		for _, e := range held {
			report(e)
		}
		report(permissionEvent(call, r.gate.mode, d))
		if !d.allow {
			flush()
			in := r.gate.hookInput()
			in.Event, in.ToolName, in.ToolUseID, in.ToolInput, in.Reason = HookPermissionDenied, call.Name, call.ID, call.Input, d.message
			r.gate.hooks.notify(r.ctx, in, &call, report)
			res := withContext(tools.Errorf("permission denied: %s", d.message), d.context)
			results[i] = r.deliver(yield, call, res, &ok)
			if d.interrupt {
				interrupt = d.message
			}
			continue
		}
		pc := pendingCall{index: i, tool: t, call: call, context: d.context, prepared: prepared}
		if d.input != nil {
			pc.call.Input, pc.prepared = d.input, nil
		}
		batch = append(batch, pc)
		if !t.ReadOnly() {
			flush()
		}
	}
	flush()
	return results, interrupt, ok
}

// jsonEqual reports whether two JSON texts are the same value, so that a
// rewrite that changed nothing (or only spacing) is not reported as one.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

func (r *run) unknownTool(name string) *tools.Result {
	return tools.Errorf("there is no tool named %q in this session; available tools: %s", name, strings.Join(r.names, ", "))
}

// deliver emits the tool_result event of a call and returns the block the
// model will see.
func (r *run) deliver(yield func(Event, error) bool, call tools.Call, res *tools.Result, ok *bool) provider.Block {
	if *ok && !yield(r.event(Event{Type: EventToolResult, ToolResult: &ToolResultEvent{ID: call.ID, Name: call.Name, IsError: res.IsError, Content: res.Content}}), nil) {
		*ok = false
	}
	return toolResultBlock(call.ID, res)
}

// execute runs calls concurrently and returns their results in order. Custom
// events the handlers emit are yielded from this goroutine while they run:
// the consumer only ever sees events from the goroutine that iterates.
func (r *run) execute(yield func(Event, error) bool, calls []pendingCall, ok *bool) []*tools.Result {
	results := make([]*tools.Result, len(calls))
	events := make(chan Event)
	done := make(chan struct{}, len(calls))
	callCtx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	for j, p := range calls {
		go func() {
			var mu sync.Mutex
			finished := false
			// forward delivers an event from the call's goroutine: a custom
			// event of its handler, or any event of the subagent it runs.
			// It returns false once the consumer has stopped.
			forward := func(e Event) bool {
				mu.Lock()
				defer mu.Unlock()
				// A handler abandoned at its deadline may still emit; after
				// its call has finished nobody listens, so drop the event.
				if finished {
					return false
				}
				events <- e
				return callCtx.Err() == nil
			}
			emit := func(name string, data any) {
				forward(r.event(Event{Type: EventCustom, Custom: &CustomEvent{ID: p.call.ID, Name: name, Data: data}}))
			}
			if r.agentTool != nil && p.tool == r.agentTool {
				// A subagent's loop has no deadline of its own: each of
				// its tool calls has one, and its turns are bounded.
				results[j] = r.runSubagent(callCtx, p.call, forward)
			} else {
				live := newLiveOutput(p.call, func(e Event) bool { return forward(r.event(e)) })
				results[j] = r.callTool(callCtx, p, emit, live.write)
				// Its last events are out before the result's.
				live.stop()
			}
			mu.Lock()
			finished = true
			mu.Unlock()
			done <- struct{}{}
		}()
	}
	for remaining := len(calls); remaining > 0; {
		select {
		case e := <-events:
			if *ok && !yield(e, nil) {
				*ok = false
				cancel()
			}
		case <-r.network.ready():
			r.yieldNetwork(yield, ok, cancel)
		case <-done:
			remaining--
		}
	}
	r.yieldNetwork(yield, ok, cancel)
	return results
}

func (r *run) callTool(ctx context.Context, p pendingCall, emit func(string, any), output func([]byte)) *tools.Result {
	if p.tool.Timeout() == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.toolTimeout)
		defer cancel()
	}
	tctx := &tools.Context{
		Ctx:       ctx,
		SessionID: r.sessionID,
		Workspace: r.workspace,
		Root:      r.root,
		Call:      p.call,
		Tasks:     r.tasks,
		Approval:  r.opts.Approval,
		UserInput: r.opts.UserInput,
		EmitFunc:  emit,
		Snapshots: r.snapshots,
	}
	tctx.OutputFunc = output
	// Set only when there is one: a nil *sandbox.Sandbox in the interface
	// would not compare equal to nil, and tools would take it for one.
	if r.sandbox != nil {
		tctx.Sandbox = r.sandbox
	}
	// A toolset's forwarding tool (an external MCP server's) only
	// forwards the call over its connection (the server itself is
	// confined): a confined re-execution would not have the connection.
	// The toolset that offered it said so (buildTools); tools of
	// in-process servers do not forward and run confined like any custom
	// tool.
	if r.builtins[p.tool] || r.opts.InProcessHandlers || r.forwards[p.tool] {
		// The input was prepared before the gate (and again when a hook
		// or CanUseTool rewrote it): not decoded and validated once more.
		if p.prepared != nil {
			return p.tool.CallPrepared(tctx, p.prepared)
		}
		return p.tool.Call(tctx, p.call.Input)
	}
	sb, workspace, err := r.handlerSandbox(p.tool)
	if err != nil {
		return tools.Errorf("the %s tool cannot run: %v", p.tool.Name(), err)
	}
	return confined.Call(tctx, p.tool, sb, workspace)
}

// toolResultBlock converts a tool result to what the model is sent. Blocks a
// model API cannot take (audio, resource links, embedded resources) are
// described in text so that nothing is silently dropped.
func toolResultBlock(id string, res *tools.Result) provider.Block {
	b := provider.Block{Type: provider.BlockToolResult, ToolUseID: id, IsError: res.IsError}
	for _, c := range res.Content {
		switch c.Type {
		case tools.ContentText:
			b.Content = append(b.Content, provider.Block{Type: provider.BlockText, Text: c.Text})
		case tools.ContentImage:
			b.Content = append(b.Content, provider.Block{Type: provider.BlockImage, MIMEType: c.MIMEType, Data: c.Data})
		default:
			one := tools.Result{Content: []tools.Content{c}}
			b.Content = append(b.Content, provider.Block{Type: provider.BlockText, Text: one.TextOf()})
		}
	}
	if len(b.Content) == 0 {
		b.Content = []provider.Block{{Type: provider.BlockText, Text: "(no output)"}}
	}
	return b
}
