package kernel

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// Options configure one Query: what the agent is (Agent), how it is
// confined (Confinement), and what this query asks (Prompt, SessionID,
// Resume). The three are apart because they are chosen by different
// hands: a program describes its agent once; whoever is responsible for
// the agent's safety chooses its confinement (package local: the preset,
// never the caller); each query chooses its prompt and its session. The
// zero value of every field but Model and Prompt is usable.
type Options struct {
	Agent
	Confinement

	// Prompt is the user's message that starts (or, with Resume, continues)
	// the session.
	Prompt string
	// SessionID names a new session; a random id when empty.
	SessionID string
	// Resume continues the session with this id: its transcript is loaded
	// and Prompt is appended as the next user message.
	Resume string
}

// Agent is what an agent is: its model and prompts, where it works, its
// tools and who decides their calls (rules, hooks, the permission mode,
// the person's answers), its limits and where its sessions are kept. What
// commands and handlers can reach is Confinement's (built around
// Workspace); the person's answers (CanUseTool, Approval,
// OnUnknownDomain) decide only what Confinement leaves to a person. So
// package local's Config embeds Agent whole and checks it against the
// preset (custom tools' declarations, a mode the preset forbids,
// subagents' modes).
type Agent struct {
	// Model answers; ModelName is passed to it (e.g. "claude-sonnet-4-6").
	Model     provider.Model
	ModelName string
	// SystemPrompt replaces the default system prompt (kernel/prompt/
	// system.md: how to work, the environment, the tools, the permission
	// mode and the sandbox); empty means the default.
	SystemPrompt string
	// AppendSystemPrompt is added after the system prompt, default or not.
	AppendSystemPrompt string
	// NoProjectInstructions leaves out the project instructions (AGENTS.md
	// and CLAUDE.md from the repository root down to the workspace, and
	// the user's UserInstructionsPath), which are otherwise added to the
	// system prompt.
	NoProjectInstructions bool
	// ContextWindow is the model's context window in tokens; zero means
	// the model family's (provider.LookupModel), and for a model the
	// table does not know, compaction only when the provider refuses a
	// request as too long.
	ContextWindow int
	// ThinkingBudget turns on extended thinking with this many tokens per
	// answer (at least 1024) for models that support it; zero means off.
	ThinkingBudget int
	// WebSearch offers the provider's server-side web search (the
	// Anthropic API's web_search tool). It is a network tool: the run
	// fails unless the sandbox's network is unrestricted, and the
	// searches are limited to WebSearch.AllowedDomains when set.
	WebSearch *provider.WebSearch
	// MaxTokens bounds one model answer; zero lets the provider choose.
	MaxTokens int

	// Workspace is the directory the agent works in; the current directory
	// when empty. File tools cannot reach outside it.
	Workspace string

	// CustomTools are appended after the built-in tools (and are followed
	// by the Toolsets' tools and the agent tool).
	CustomTools []*tools.Tool
	// Tools narrows the set of tools the model sees, by name or wildcard
	// ("mcp__orders__*"). Here and in every rule, matcher and subagent
	// tool list, Claude Code's names are ours ("Read", "Bash", "Agent"),
	// and a name that is no tool is an error (see "Tool names" in the
	// package documentation). nil means every tool; an empty non-nil slice means
	// none. A call to a tool outside this set gets an error result. This,
	// not AllowedTools, is how to restrict what the model can use — in
	// every permission mode, bypassPermissions included.
	Tools []string
	// AllowedTools pre-approves calls: allow rules ("read_file",
	// "mcp__orders__*", "bash(git status)", "bash(npm run test:*)",
	// "write_file(src/**)"). It does not hide the others — Tools does
	// that — and it does not beat a deny or ask rule.
	AllowedTools []string
	// DisallowedTools are deny rules. An entry without an argument pattern
	// also removes the tool from the model's view. Deny wins over
	// everything, in every mode.
	DisallowedTools []string
	// Rules are more permission rules (allow, ask and deny; see
	// policies.ParseRule): presets' and policy files' rules arrive here.
	Rules []policies.Rule

	// PermissionMode decides what no rule or hook decided; "" is default.
	// "yolo" is bypassPermissions, with the same opt-in.
	PermissionMode PermissionMode
	// AllowDangerouslySkipPermissions must be set for PermissionMode
	// bypassPermissions: the run fails otherwise. Deny rules, ask rules,
	// hooks and the sandbox still apply.
	AllowDangerouslySkipPermissions bool
	// Hooks run at the points of the session their Event names (see Hook).
	Hooks []Hook

	// CanUseTool decides calls that would otherwise ask. When nil,
	// Approval is asked; with neither, such calls are denied with a
	// message the model sees (headless runs).
	CanUseTool CanUseToolFunc
	// Approval and UserInput reach a person; nil when headless.
	Approval  tools.ApprovalFunc
	UserInput tools.UserInputFunc
	// OnUnknownDomain is asked, in an interactive session with domains
	// granted (Sandbox.AllowDomains, hence a proxy), about a host no
	// allow or deny entry names, while the proxy holds the connection:
	// allow once (the host:port asked about), for the session, always
	// (the caller keeps that one, e.g. in a policy file's allow_domains),
	// or refuse. A Query remembers "session" and "always" answers, and
	// refusals (by host:port), for all its sandboxes (a caller that
	// continues a session over several Queries, as chat does, keeps them
	// itself), and calls it at most netproxy.MaxRecentQuestions (12)
	// times in any ten minutes: past that a new host is refused without a
	// question. That budget is the Query's: a caller running one Query
	// per prompt bounds its own questions across them (chat keeps a
	// netproxy.QuestionBudget; returning an error wrapping
	// netproxy.ErrTooManyQuestions refuses with "not asked about"). nil
	// (headless) refuses at once, the 403 naming the --allow-domain
	// that would allow it.
	// deny_domains wins and is never asked about. It replaces
	// Sandbox.OnUnknownDomain and HandlerCeiling's when set.
	OnUnknownDomain func(ctx context.Context, q sandbox.DomainQuestion) (sandbox.DomainDecision, error)

	// MaxTurns bounds the number of model calls; zero means no limit.
	MaxTurns int
	// ToolTimeout is the default deadline of one tool call (a tool's own
	// Timeout wins); zero means 15 minutes.
	ToolTimeout time.Duration

	// StateDir holds session transcripts. Empty means $XDG_STATE_HOME/
	// lite-agent (or ~/.local/state/lite-agent). It must be outside the
	// workspace, so that nothing the agent runs can rewrite history.
	StateDir string

	// Agents are the subagents the agent tool can start, by name (see
	// "Subagents" in the package documentation). The agent tool exists
	// only when Agents is not empty, and Tools, rules and hooks see it as
	// AgentTool like any other tool.
	Agents map[string]AgentDefinition

	// MaxBudgetTokens ends the run with a result of subtype
	// error_max_budget once the model calls of the run and of all its
	// subagents have used more tokens than this (input, output and cache
	// tokens together); zero means no limit. A budget in money needs
	// prices, which no provider reports yet.
	MaxBudgetTokens int64

	// OutputFormat asks for a final answer that is JSON matching a
	// schema; nil means free text.
	OutputFormat *OutputFormat
}

// Confinement is how an agent's commands and custom handlers are confined,
// what runs beside its own tools, and how its changes are recorded. It is
// the part of Options that decides what the agent can reach: package
// local sets all of it from the preset (a caller of local.New cannot set
// it); a program calling Query directly sets it itself.
type Confinement struct {
	// Sandbox is the confinement of every command and custom handler. nil
	// means sandbox.Policy{} — the workspace read-write, the system's
	// toolchain read-only, no network, default limits. Its Workspace, when
	// empty, is the session's workspace. If the kernel cannot enforce the
	// policy the run fails (fail closed) unless the policy says BestEffort.
	Sandbox *sandbox.Policy
	// HandlerCeiling is the most a custom tool's handler (and a
	// toolset's: an in-process MCP server's tool, an external stdio MCP
	// server) may run with; nil means Sandbox — handlers get no more than
	// commands.
	// A tool's declared Security only narrows it (confined.HandlerPolicy):
	// a declared network wider than the ceiling's is refused when the
	// session starts (CheckConfinedTools) — except unrestricted under a
	// ceiling that grants domains, which gets the domain proxy — and
	// Filesystem "unrestricted" reaches "/" only where the ceiling lists
	// it in ReadOnlyPaths or ReadWritePaths. Set it when handlers are
	// meant to reach more than commands (package local fills it from the
	// preset: under strict, loopback for custom tools where bash gets no
	// network). Its Workspace must be empty or Sandbox's; changes are
	// captured as for Sandbox.
	HandlerCeiling *sandbox.Policy

	// InProcessHandlers runs custom tool handlers in this process,
	// unconfined, instead of in a sandboxed child. It is for tests and for
	// handlers that need this process's state; behind the strict assembler
	// it is always false. By default each custom handler runs in a
	// confined re-execution of this program, under the profile its
	// Security declares — which requires the program to call
	// confined.Serve(its tools...) at the start of main (package
	// tools/confined).
	InProcessHandlers bool

	// Checkpoints opens the session's checkpointer: with it, the pre-image
	// of every change is recorded, a checkpoint is sealed at every user turn
	// and after every tool call that changed something, and each one is a
	// checkpoint event. nil: no checkpoints.
	Checkpoints CheckpointerFunc
	// Snapshots records pre-images when Checkpoints is nil (tests, custom
	// recorders).
	Snapshots tools.SnapshotRecorder

	// Toolsets are opened when the session starts and closed when it ends;
	// their tools join the custom tools (see "Toolsets" in the package
	// documentation). The session's MCP servers are one:
	// mcp.NewToolset(&mcp.Options{Servers: cfg.Servers}), with cfg from
	// mcp.LoadConfig, and an in-process server an entry {Server: srv}.
	Toolsets []tools.Toolset
}

// AgentDefinition describes a subagent. Its JSON form is what
// `lite-agent run --agents` reads.
type AgentDefinition struct {
	// Description tells the main agent when to use this subagent.
	Description string `json:"description"`
	// Prompt is the subagent's system prompt.
	Prompt string `json:"prompt"`
	// Tools narrows the tools the subagent sees, by name or wildcard, like
	// Options.Tools; nil means every tool the main agent sees. It never
	// widens: a tool the main agent cannot see is not given, and the agent
	// tool itself is never given (subagents do not start subagents).
	Tools []string `json:"tools,omitempty"`
	// Model is the model name the subagent's calls use; "" or "inherit"
	// means Options.ModelName. The provider is the main agent's.
	Model string `json:"model,omitempty"`
	// MaxTurns bounds the subagent's model calls; zero means no limit.
	MaxTurns int `json:"maxTurns,omitempty"`
	// PermissionMode is the subagent's mode; "" means the main agent's.
	// bypassPermissions needs Options.AllowDangerouslySkipPermissions, and
	// when the main agent is in plan mode its subagents are too.
	PermissionMode PermissionMode `json:"permissionMode,omitempty"`
}

// OutputFormat asks for structured output.
type OutputFormat struct {
	// Schema is the JSON Schema the final answer must match.
	Schema *jsonschema.Schema
	// MaxRetries is how many times the model is told what is wrong with
	// its answer and asked again; zero means DefaultOutputRetries, and a
	// negative value means none.
	MaxRetries int
}

// DefaultOutputRetries is OutputFormat.MaxRetries when zero.
const DefaultOutputRetries = 2
