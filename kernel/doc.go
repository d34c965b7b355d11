// Package kernel is the agent loop: Query streams the events of a session in
// which a model calls tools until it answers.
//
// # The loop
//
// Query sends the conversation and the visible tools' schemas to the model,
// streams its text as text_delta events, then runs the tool calls the model
// made and sends their results back, until the model stops calling tools,
// MaxTurns is reached, the provider fails, or ctx is cancelled. The stream
// starts with session_start and ends with one result event.
//
// # Options
//
// Options has three parts, chosen by different hands: Agent is what the
// agent is (model, prompts, tools, rules, hooks, limits, workspace), and
// grants no reach; Confinement is how its commands and custom handlers
// are confined (the sandbox, the handler ceiling, toolsets, in-process
// handlers) and how its changes are recorded; Prompt, SessionID and
// Resume are what one query asks. A program calling Query sets all
// three; package local's Config embeds only Agent and builds Confinement
// from its preset.
//
// # One tool call
//
// A call to a tool outside the visible set (Options.Tools, minus the tools
// a deny rule names without an argument) gets an error result. Otherwise
// the input is validated against the tool's schema and its defaults are
// applied — input the schema refuses is an error result and never reaches
// the gate — and the permission gate decides on that validated input. The
// tool then runs; failures become error results and the loop goes on.
// Consecutive read-only calls of one turn run concurrently; others run
// alone, in order. Results reach the model in call order.
//
// # The permission gate
//
// In this order; the first layer that decides wins, and deny always wins:
//
//  1. Deny rules — Options.DisallowedTools and the deny rules of
//     Options.Rules (presets, policy files) → denied. In plan mode a tool
//     that is not read-only (by its ReadOnlyHint) is denied here too.
//  2. PreToolUse hooks (those whose Matcher matches) → deny, ask or allow;
//     a hook may rewrite the input, which is validated again and meets
//     the deny rules again. A hook that fails denies.
//  3. Ask rules → ask; allow rules and Options.AllowedTools → allowed.
//     An argument rule that cannot be proven not to match (a shell
//     command only known when it runs) asks.
//  4. The permission mode: bypassPermissions allows; acceptEdits allows
//     write_file and edit_file inside the workspace; auto allows read-only
//     tools and changes that stay in the workspace and asks for the shell
//     and network tools; default and dontAsk decide nothing here.
//  5. The tool's default: lite-agent's own read-only tools (read_file,
//     glob, grep, list_dir, bash_output, the MCP resource tools) are
//     allowed, others ask. A custom or MCP tool's ReadOnlyHint is a hint,
//     not a permission: it lets the call run concurrently with other
//     read-only calls and in plan mode, but the call still needs an allow
//     rule, a mode that allows it, a hook or CanUseTool.
//  6. An ask: dontAsk mode denies it; otherwise CanUseTool decides, else
//     the Approval handler, else (headless) it is denied with a message
//     the model sees that says how to pre-approve it.
//
// So an ask rule or a hook's ask still asks in bypassPermissions, and a
// deny is never overridden. Every decision is a permission event (which
// layer, rule, hook, mode). CanUseTool may rewrite the input (validated
// and checked against the deny rules again) and may add allow rules for
// the rest of the run ("allow always"). Permission is not confinement: an
// allowed call still runs in the sandbox.
//
// AllowedTools pre-approves; it does not restrict what the model can use —
// Tools does that, in every mode.
//
// # Tool names
//
// Everywhere a tool is named — Tools, AllowedTools, DisallowedTools,
// Rules, hook matchers, AgentDefinition.Tools — Claude Code's names of the
// built-in tools are ours ("Bash" is bash, "Read" read_file, "Agent" and
// "Task" the agent tool; policies.CanonicalTool), and a name that is
// neither a tool of the session, a wildcard, nor an mcp__ name of a server
// that failed to connect is an error before the first model call, naming
// the entry and the nearest real name (CheckToolNames checks the same
// without opening the toolsets: a name an unopened toolset may offer
// passes). A failed server's status in session_start lists
// the entries its failure left unchecked. Events and the model always see
// our names.
//
// # Hooks
//
// Options.Hooks are Go functions run at PreToolUse, PostToolUse,
// PostToolUseFailure, UserPromptSubmit, Stop, SessionStart, SessionEnd,
// PermissionDenied and PreCompact (see Hook). A hook that errors, panics, answers
// nonsense or times out is reported as a hook event and never counts as an
// allow: PreToolUse denies, PostToolUse withholds the output,
// UserPromptSubmit blocks the prompt; notification hooks are only
// reported. Command hooks from policy files are wired by package local.
//
// # Hook trust
//
// A hook is trusted, or deny-only (Hook.DenyOnly: package local marks the
// hooks of a policy file the preset does not trust to loosen the policy,
// the workspace's under strict). Each output field is permitted or not by
// the event (a field its event does not understand is an error) and by
// the trust level:
//
//	field (event)                          trusted   deny-only
//	decision "deny" (PreToolUse)           applied   applied
//	decision "ask" (PreToolUse)            applied   applied
//	decision "allow" (PreToolUse)          applied   error
//	decision "block" (UserPromptSubmit)    applied   applied
//	reason (with a decision; else unused)  applied   applied
//	updated_input (PreToolUse)             applied   error
//	updated_output (PostToolUse)           applied   error
//	additional_context (tool events but    applied   applied
//	  PermissionDenied, UserPromptSubmit,
//	  SessionStart; elsewhere an error)
//	any other key (continue, stopReason,   error     error
//	  suppressOutput, systemMessage, ...)
//
// An error is a failed hook — never silently applied, never silently
// ignored: a PreToolUse call is denied, a PostToolUse output withheld,
// and a hook event names the field. Unknown keys are refused by the JSON
// decoding of command hooks; Go hooks cannot return them. A deny-only
// hook may add context because it tightens nothing and loosens nothing:
// the text is labelled with the hook's name and added beside the real
// output, which it cannot replace, and the workspace that wrote the hook
// can already put text before the model (AGENTS.md, its files). An
// applied rewrite (updated_input, or CanUseTool's UpdatedInput) shows in
// the call's tool_call event as effective_input beside the model's input.
//
// # Toolsets
//
// Options.Toolsets are tool sources the kernel is handed (tools.Toolset),
// opened after the sandbox is prepared and before the tools are built, and
// closed when the run ends. The session's MCP servers are one, built by
// package mcp (mcp.NewToolset; package local builds it from
// Config.MCPServers): opening it connects every server, so the first model
// call waits until each has connected or failed, bounded by its connect
// timeout. A toolset's tools join the custom tools before Tools,
// AllowedTools, DisallowedTools, the rules and the hook matchers are
// applied, so mcp__{server}__{tool} names and wildcards work in all of
// them. session_start reports each server's status (mcp_servers,
// tools.ToolsetStatus): a server that failed is named there with the
// reason, and the run goes on without it; Tools may name its tools without
// error (tools.ToolOfferer). A toolset is handed the handler ceiling
// (without change capture) for the processes it starts, and with
// checkpoints a recorder of what they change in the workspace.
//
// What a toolset says of its own tools (tools.ToolTraits) is asked of the
// toolset that offered them, never of a process-wide registry: a tool that
// forwards (an external MCP server's, and the resource tools) is called in
// this process — the server is the confined part, and a confined
// re-execution would not have its connection — and a tool whose read-only
// hint the toolset vouches for (the MCP resource tools) runs by default
// like the built-in read-only tools. Every other toolset tool (an
// in-process MCP server's) runs confined like a custom tool, and must be
// handed to confined.Serve (CheckConfinedTools). Two toolsets may
// not offer one tool name.
//
// # What the kernel imports, and why
//
// The kernel imports no MCP client: a program without MCP servers links
// neither the go-sdk nor its HTTP and SSE transports (TestKernelLinksNoMCPClient
// runs go list -deps). It does import tools/builtin: the built-in tools
// are the kernel's own contract (their names are part of the API: rules,
// hooks and CheckToolNames know them, their read-only hints are
// trusted and they run in this process through the workspace's os.Root),
// and the package links no go-sdk. Subagents stay in the kernel too: the
// agent tool runs a nested loop over the session (its gate, sandbox,
// checkpointer and budget), which no package below the kernel can.
//
// # Confinement of custom handlers
//
// Every custom handler runs in a confined re-execution of the program
// (unless InProcessHandlers; package tools/confined), under
// HandlerCeiling — nil: Sandbox, what commands get — narrowed by the
// tool's declared Security (confined.HandlerPolicy). A declaration never
// widens, and asking for more network than the ceiling gives is refused
// when the session starts, naming the tool (CheckConfinedTools) — except
// unrestricted under a ceiling that grants domains, which gets the domain
// proxy as commands do; "unrestricted" filesystem reaches "/" only if the
// ceiling already lists it. A caller who means handlers to reach more
// than commands says so with HandlerCeiling (package local does, from the
// preset).
//
// # Subagents
//
// With Options.Agents, the model gets the agent tool ({agent, prompt,
// description?}), which runs a subagent: its own loop over its own
// conversation, with the definition's prompt as system prompt, its model
// name, its turn limit, its permission mode and its tools, ending with
// its final text as the call's result. What guards the main agent guards
// the subagent, because it is the same object, not a copy: the rules
// (with the allow rules added during the run), the hooks, CanUseTool
// (told which agent asks: ToolUseInfo.Agent), the approval handler, the
// sandbox, the checkpointer, the background tasks and the budget. Its
// tools are the main agent's, narrowed by the definition — never wider,
// and never the agent tool itself: subagents do not start subagents. In
// plan mode its subagents are in plan mode too. The agent tool changes
// nothing itself, so it runs without asking unless a rule or hook says
// otherwise, and agent calls run one at a time.
//
// A subagent's events are forwarded into the main stream with Agent,
// AgentID (unique in the session) and ParentToolUseID (the agent call)
// set; no session_start or result event of its own. Its tool hooks
// (PreToolUse, PostToolUse, PostToolUseFailure, PermissionDenied) run with
// HookInput.Agent set; the session hooks (SessionStart, SessionEnd,
// UserPromptSubmit, Stop) belong to the main agent. Its messages are kept
// in the transcript as agent_message records, beside the main
// conversation. An interrupt inside a subagent stops the whole run.
//
// # Budget
//
// Options.MaxBudgetTokens counts the tokens every model call reports
// (input, output, cache creation and cache reads), the main agent's and
// every subagent's. After the call that exceeds it, nothing more runs:
// the tool calls still asked for get error results ("not run"), a
// subagent returns, and the run ends with a result of subtype
// error_max_budget (ErrMaxBudget) whose usage is the whole run's — even
// when the call that exceeded it was the final answer, which is kept in
// the result. A budget in money would need prices, which no provider
// reports yet, so there is none.
//
// # Structured output
//
// Options.OutputFormat gives a JSON Schema (describing an object) that the
// final answer must match; the system prompt says so. The answer (a
// Markdown code fence around it is tolerated) is validated like tool
// input, with the schema's defaults applied, and returned compact as the
// result's StructuredOutput (structured_output). An answer that does not
// match is followed by a user message telling the model what is wrong —
// a user turn, and a rewind target, like a prompt — up to MaxRetries times
// (DefaultOutputRetries); then the run ends with a result of subtype
// error_structured_output (ErrStructuredOutput). Each answer counts as a
// turn for MaxTurns and its tokens against the budget. Subagents answer
// in free text.
//
// # What the model is told
//
// The system prompt is rendered once per session from prompt/system.md
// (embedded): how to work, the environment (workspace, OS, the session's
// start date, git repository and branch), the tools, the permission mode
// and the sandbox (what is writable, the network, what to do when a
// command is refused). Options.SystemPrompt replaces it and
// AppendSystemPrompt adds to it. Then come the project instructions: the
// user's UserInstructionsPath, and AGENTS.md and CLAUDE.md from the
// repository root down to the workspace, each at most
// InstructionFileLimit bytes, read with internal/safefile (no symlinks,
// FIFOs or devices: the workspace is agent-writable); session_start lists
// them with size and SHA-256 (NoProjectInstructions skips them). Nothing
// in the prompt changes between turns, so that providers cache it.
//
// # Context management
//
// The kernel knows the model's context window (Options.ContextWindow, else
// provider.LookupModel) and, before each call, estimates the request from
// the last call's usage plus what was added since. Past 100,000 tokens (or
// half the window) old tool results are cleared: each becomes a note
// naming the call, which can be made again; the newest results stay. Past
// 80% of the window, the older turns are summarised through the model (a
// request of its own: the conversation as sent plus an instruction, so it
// is read from the cache) and the recent turns kept verbatim. Each edit is
// a compact event and a "compact" transcript record; the messages
// themselves stay in the transcript, so Resume continues after the
// boundary and cutting the transcript before it (a conversation rewind)
// restores them. A provider's "prompt is too long"
// (provider.ErrPromptTooLong) compacts and retries once. Compact does it
// on demand. A model answer cut off by max_tokens in the middle of a tool
// call never runs it: the call is dropped and the model told to go on.
// ThinkingBudget streams thinking_delta events; WebSearch offers the
// provider's web search, refused unless the sandbox's network is
// unrestricted.
//
// # Events
//
// An Event has what every event has — Type, SessionID, and for a
// subagent's events Agent, AgentID and ParentToolUseID — and one payload:
// the pointer named after its type (ToolCall for tool_call, Permission
// for permission, Hook for hook, Result for result, ...), the others nil.
// The payloads are plain structs with JSON tags. Its JSON, which is the
// stream-json line of the CLI (a wire contract: docs/cli.md), is one flat object:
// the common fields, then the payload's, in the payload's field order —
// {"type":"tool_call","session_id":...,"id":...,"name":...,"input":...}.
// UnmarshalJSON reads it back, and an event read from a line encodes to
// the same bytes (cmd/lite-agent's golden transcript checks every line of
// it); the two values typed any, a checkpoint's description and a custom
// event's data, decode as json.RawMessage for that reason. Tool input
// that is not valid JSON is written as a JSON string, and a missing
// payload as its zero value, so that no producer's mistake breaks the
// stream. A sandbox event says the sandbox could not start a command a
// tool call asked for (sandbox.Policy.OnStartFailure): it precedes the
// call's tool_result, and the run then ends with an error wrapping
// ErrSandboxStart, whatever the model concluded; session_start says the
// sandbox's level and what it runs without here (sandbox.Enforcement's
// Lost and, under best effort, Missing). A network event reports a connection the sandbox's domain proxy
// allowed or refused, or a connect a literal IP[:PORT] grant admitted
// around the proxy (rule "<grant> (direct)", no byte counts: the bytes
// go straight to the kernel, not through the proxy), as
// sandbox.NetworkEvent, field for field. With
// Options.OnUnknownDomain set (lite-agent chat sets it), a connection to a
// domain that no allow or deny rule names is held while the callback
// answers: once (the host:port asked about), for the rest of the Query
// (every sandbox of it shares the answer), always (the caller writes the
// grant: chat writes allow_domains to the user's policy file), or no —
// kept for the Query too, for that host:port, so that a command cannot
// ask about one host again and again; the event's rule says which
// ("asked: allowed once"...). At most netproxy.MaxRecentQuestions
// questions per netproxy.QuestionWindow reach the callback for the whole
// Query (one budget over all its sandboxes' proxies); past that a new
// host is refused without a question, the 403 saying so and naming the
// flag. deny_domains is never asked about;
// without the callback (headless run) such a connection is refused with a
// 403 naming the --allow-domain that would allow it.
//
// A tool_output event carries what a running call wrote to its output
// (tools.Context.Output: the bash tool's command) since the call's last
// one, for a person watching (the interactive mode's live tail). It is
// paced so that a chatty command costs the stream little and never waits
// on its consumer: at most one per call every 100 ms, with the latest
// 8 KiB (Dropped counts the rest), cut at character boundaries; the
// last output before the call ends may not get one, and none comes after
// the call's tool_result, which carries the output the model sees.
//
// Each kind's fields are its own, even where two kinds' JSON names
// match: a hook event's outcome is HookFailureEvent.Outcome (a
// permission's reason is PermissionEvent.Reason), its event a HookEvent, a
// thinking delta's text ThinkingDeltaEvent.Thinking, a checkpoint's
// description CheckpointEvent.Checkpoint. The golden transcript pins the
// bytes of every kind.
//
// # Sessions
//
// Each session is a JSONL transcript in the state directory, outside the
// workspace ($XDG_STATE_HOME/lite-agent/sessions/ID.jsonl). Records are
// appended with one write each, so a crash leaves at most a torn last line,
// which readers ignore and a resumed session cuts off. A transcript is
// locked (flock) while a run uses it. Options.Resume continues a session.
package kernel
