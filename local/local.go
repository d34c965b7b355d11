package local

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// Config is what a hardened agent is built from. Model is required; every
// other zero value is the strict choice.
type Config struct {
	// Preset is strict (the default), standard or permissive: the sandbox
	// of commands, what custom tools may declare, the default permission
	// mode and the default rules (see policies.Presets).
	Preset string
	// Workspace is the directory the agent works in; the current
	// directory when empty.
	Workspace string

	// Model answers; ModelName is passed to it.
	Model        provider.Model
	ModelName    string
	SystemPrompt string
	MaxTokens    int
	MaxTurns     int
	ToolTimeout  time.Duration
	// The model settings of kernel.Options of the same names: what the
	// model is told, its context window, thinking and web search (which
	// the kernel refuses unless the preset's network is unrestricted).
	AppendSystemPrompt    string
	NoProjectInstructions bool
	ContextWindow         int
	ThinkingBudget        int
	WebSearch             *provider.WebSearch

	// CustomTools are checked against the preset: each must declare its
	// Security, with Network at most loopback (what the preset allows),
	// and under strict neither Filesystem "unrestricted" nor SideEffects
	// "external". Each handler runs in the sandbox under the profile its
	// Security allows, in a re-execution of the program: define custom
	// tools at package level and call tools.ServeConfinedCall() first in
	// main.
	CustomTools []*tools.Tool

	// Tools narrows what the model sees; AllowedTools pre-approves (allow
	// rules); DisallowedTools denies (deny rules; whole tools are hidden).
	// See kernel.Options.
	Tools           []string
	AllowedTools    []string
	DisallowedTools []string
	// Rules are added after the preset's and the policy files' (the
	// options layer). Deny wins wherever it comes from.
	Rules []policies.Rule
	// PermissionMode overrides the mode the preset and the policy files
	// chose. bypassPermissions needs AllowDangerouslySkipPermissions and a
	// preset that allows it (not strict).
	PermissionMode                  kernel.PermissionMode
	AllowDangerouslySkipPermissions bool
	// Hooks (Go functions) run after the policy files' command hooks.
	Hooks []kernel.Hook
	// CanUseTool, Approval and UserInput reach a person (kernel.Options);
	// with none, a call that asks is denied with a message the model sees.
	CanUseTool kernel.CanUseToolFunc
	Approval   tools.ApprovalFunc
	UserInput  tools.UserInputFunc

	// PolicyFiles chooses the policy files read (nil: the user's and the
	// workspace's; see policies.Load for the merge order).
	PolicyFiles *policies.LoadOptions

	// StateDir holds sessions and checkpoints ($XDG_STATE_HOME/lite-agent
	// when empty).
	StateDir string
	// NoCheckpoints turns checkpointing off (it is on by default: every
	// change the agent makes can be rewound).
	NoCheckpoints bool

	// MCPServers are the MCP servers of every session (mcp.LoadConfig for
	// a --mcp-config file; {Server: srv} for an in-process server). The
	// tools of an in-process server are checked like CustomTools; an
	// external server is judged by the network its entry declares (see
	// CheckMCPServers). MCPConnectTimeout bounds connecting each one.
	MCPServers        map[string]mcp.ServerConfig
	MCPConnectTimeout time.Duration

	// Agents are the subagents the agent tool can start (see
	// kernel.AgentDefinition); a definition's bypassPermissions mode is
	// refused where the preset refuses the mode.
	Agents map[string]kernel.AgentDefinition
	// MaxBudgetTokens bounds the tokens of a run and its subagents
	// (kernel.Options.MaxBudgetTokens).
	MaxBudgetTokens int64
	// OutputFormat asks for a final answer in JSON matching a schema
	// (kernel.Options.OutputFormat).
	OutputFormat *kernel.OutputFormat

	// InProcessHandlers must be false: the assembler refuses to run custom
	// handlers unconfined. It is here so that a configuration carried over
	// from kernel.Options fails loudly instead of losing it silently; use
	// kernel.Query directly for unconfined handlers.
	InProcessHandlers bool
}

// Agent is a hardened agent. Its Query is kernel.Query with the preset's
// sandbox, the merged rules and hooks, and checkpoints wired in. An Agent
// is immutable and safe for concurrent queries (each its own session).
type Agent struct {
	opts   kernel.Options
	preset policies.Preset
	policy *policies.Policy
}

// New checks cfg against its preset and builds the agent. It refuses, with
// an error naming the tool and the field, any custom tool whose Security is
// missing or broader than the preset allows, any MCP server beyond the
// preset (CheckMCPServers, naming the server), and refuses
// InProcessHandlers and a bypassPermissions the preset forbids. A policy
// file with a bad rule is an error naming the file and the line.
func New(cfg Config) (*Agent, error) {
	preset, err := policies.PresetByName(cfg.Preset)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if cfg.Model == nil {
		return nil, errors.New("local: Config.Model is required")
	}
	if cfg.InProcessHandlers {
		return nil, errors.New("local: InProcessHandlers: the strict assembler runs every custom handler confined in the sandbox and refuses to run them unconfined; use kernel.Query directly if you must")
	}
	if err := CheckTools(preset, cfg.CustomTools); err != nil {
		return nil, err
	}
	if err := CheckMCPServers(preset, cfg.MCPServers); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
		if m := cfg.Agents[name].PermissionMode; m == kernel.PermissionBypass && !preset.AllowBypassPermissions {
			return nil, fmt.Errorf("local: agent %q: field PermissionMode is bypassPermissions, which the %s preset does not allow", name, preset.Name)
		}
	}
	ws, err := kernel.ResolveWorkspace(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	pol, err := policies.Load(preset, ws, cfg.PolicyFiles)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	mode := pol.Mode
	if cfg.PermissionMode != "" {
		if mode, err = policies.ParseMode(string(cfg.PermissionMode)); err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
	}
	if mode == kernel.PermissionBypass {
		if !preset.AllowBypassPermissions {
			return nil, fmt.Errorf("local: the %s preset does not allow bypassPermissions; choose --preset standard or permissive to use it", preset.Name)
		}
		if !cfg.AllowDangerouslySkipPermissions {
			return nil, errors.New("local: bypassPermissions needs AllowDangerouslySkipPermissions (--dangerously-skip-permissions)")
		}
	}
	sb := preset.Policy(ws)
	var hooks []kernel.Hook
	for _, h := range pol.Hooks {
		hooks = append(hooks, CommandHook(h, sb))
	}
	hooks = append(hooks, cfg.Hooks...)
	opts := kernel.Options{
		Model:                           cfg.Model,
		ModelName:                       cfg.ModelName,
		SystemPrompt:                    cfg.SystemPrompt,
		MaxTokens:                       cfg.MaxTokens,
		AppendSystemPrompt:              cfg.AppendSystemPrompt,
		NoProjectInstructions:           cfg.NoProjectInstructions,
		ContextWindow:                   cfg.ContextWindow,
		ThinkingBudget:                  cfg.ThinkingBudget,
		WebSearch:                       cfg.WebSearch,
		MaxTurns:                        cfg.MaxTurns,
		ToolTimeout:                     cfg.ToolTimeout,
		Workspace:                       ws,
		CustomTools:                     cfg.CustomTools,
		Tools:                           cfg.Tools,
		AllowedTools:                    cfg.AllowedTools,
		DisallowedTools:                 cfg.DisallowedTools,
		Rules:                           append(append([]policies.Rule(nil), pol.Rules...), cfg.Rules...),
		PermissionMode:                  mode,
		AllowDangerouslySkipPermissions: cfg.AllowDangerouslySkipPermissions,
		Hooks:                           hooks,
		CanUseTool:                      cfg.CanUseTool,
		Approval:                        cfg.Approval,
		UserInput:                       cfg.UserInput,
		StateDir:                        cfg.StateDir,
		Sandbox:                         &sb,
		MCPServers:                      cfg.MCPServers,
		MCPMaxNetwork:                   MCPMaxNetwork(preset),
		MCPConnectTimeout:               cfg.MCPConnectTimeout,
		Agents:                          cfg.Agents,
		MaxBudgetTokens:                 cfg.MaxBudgetTokens,
		OutputFormat:                    cfg.OutputFormat,
	}
	if !cfg.NoCheckpoints {
		opts.Checkpoints = Checkpoints(cfg.StateDir)
	}
	return &Agent{opts: opts, preset: preset, policy: pol}, nil
}

// CheckTools checks custom tools against a preset, returning every
// refusal (errors.Join), each naming the tool and the field.
func CheckTools(preset policies.Preset, ts []*tools.Tool) error {
	var errs []error
	for i, t := range ts {
		if t == nil {
			errs = append(errs, fmt.Errorf("local: CustomTools[%d] is nil", i))
			continue
		}
		sec := t.Security()
		if sec == nil {
			errs = append(errs, fmt.Errorf("local: custom tool %q: field Security is missing; declare what it touches (tools.Options.Security: Network, Filesystem, SideEffects)", t.Name()))
			continue
		}
		if !preset.NetworkAllowed(sandboxNetwork(sec.Network)) {
			errs = append(errs, fmt.Errorf("local: custom tool %q: field Security.Network is %q, beyond what the %s preset allows custom tools (at most %s)", t.Name(), sec.Network, preset.Name, preset.CustomToolMaxNetwork))
		}
		if sec.Filesystem == tools.FilesystemUnrestricted && !preset.CustomToolUnrestrictedFilesystem {
			errs = append(errs, fmt.Errorf("local: custom tool %q: field Security.Filesystem is %q; the %s preset confines custom tools to the workspace", t.Name(), sec.Filesystem, preset.Name))
		}
		if sec.SideEffects == tools.SideEffectsExternal && !preset.CustomToolExternalSideEffects {
			errs = append(errs, fmt.Errorf("local: custom tool %q: field Security.SideEffects is %q; the %s preset allows no side effects outside the workspace", t.Name(), sec.SideEffects, preset.Name))
		}
	}
	return errors.Join(errs...)
}

// MCPMaxNetwork is the widest network an external MCP server may declare
// under preset: loopback, or what the preset lets commands reach when that
// is wider (permissive: unrestricted). So under strict and standard a
// server reaches at most a local service, as a custom tool may; under
// permissive, a remote MCP server is no wider than what bash can reach.
func MCPMaxNetwork(preset policies.Preset) tools.Network {
	if networkWider(preset.Sandbox.Network, sandbox.NetworkLoopback) {
		return tools.Network(preset.Sandbox.Network)
	}
	return tools.NetworkLoopback
}

// CheckMCPServers checks MCP servers against a preset, returning every
// refusal (errors.Join), each naming the server (or the tool) and the
// field:
//
//   - the tools of an in-process server, like custom tools (CheckTools);
//   - an external server by the network its entry declares (for an HTTP
//     server, by default the narrowest that reaches its URL): at most
//     MCPMaxNetwork. Its side effects are judged by that network — a
//     server without network reaches nothing outside its sandbox, one
//     with loopback only local services — which is why an entry's derived
//     "sideEffects": "external" is not refused as a custom tool's is;
//   - under a preset that confines custom tools to the workspace
//     (strict), a stdio server declaring "filesystem": "unrestricted".
//
// The kernel is given the same network cap, so a server that slipped past
// would be refused again before it starts.
func CheckMCPServers(preset policies.Preset, servers map[string]mcp.ServerConfig) error {
	var errs []error
	limit := MCPMaxNetwork(preset)
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		sc := servers[name]
		if sc.Server != nil {
			if err := CheckTools(preset, sc.Server.Tools()); err != nil {
				errs = append(errs, fmt.Errorf("local: MCP server %q: %w", name, err))
			}
			continue
		}
		if err := sc.Check(name); err != nil {
			errs = append(errs, fmt.Errorf("local: MCP %w", err))
			continue
		}
		sec := sc.Security()
		if networkWider(sandbox.NetworkMode(sec.Network), sandbox.NetworkMode(limit)) {
			errs = append(errs, fmt.Errorf("local: MCP server %q: field network is %q, beyond what the %s preset allows MCP servers (at most %s); declare a narrower \"network\" or choose a wider preset", name, sec.Network, preset.Name, limit))
		}
		if sec.Filesystem == tools.FilesystemUnrestricted && !preset.CustomToolUnrestrictedFilesystem {
			errs = append(errs, fmt.Errorf("local: MCP server %q: field filesystem is %q; the %s preset confines MCP servers to the workspace", name, sec.Filesystem, preset.Name))
		}
	}
	return errors.Join(errs...)
}

// networkWider reports whether a reaches further than b, by the order the
// presets use for custom tools (none < loopback < private < unrestricted).
func networkWider(a, b sandbox.NetworkMode) bool {
	return !policies.Preset{CustomToolMaxNetwork: b}.NetworkAllowed(a)
}

// Preset returns the agent's preset.
func (a *Agent) Preset() policies.Preset { return a.preset }

// Policy returns the preset merged with the policy files that were read.
func (a *Agent) Policy() *policies.Policy { return a.policy }

// Options returns a copy of the kernel options every query starts from.
func (a *Agent) Options() kernel.Options { return a.opts }

// QueryOption changes one query.
type QueryOption func(*kernel.Options)

// Resume continues the session with this id.
func Resume(sessionID string) QueryOption {
	return func(o *kernel.Options) { o.Resume = sessionID }
}

// SessionID names the new session.
func SessionID(id string) QueryOption {
	return func(o *kernel.Options) { o.SessionID = id }
}

// Query runs the agent on prompt: kernel.Query with the agent's options.
func (a *Agent) Query(ctx context.Context, prompt string, opts ...QueryOption) iter.Seq2[kernel.Event, error] {
	o := a.opts
	o.Prompt = prompt
	for _, f := range opts {
		f(&o)
	}
	return kernel.Query(ctx, o)
}

// Run runs the agent on prompt to the end and returns the result event.
func (a *Agent) Run(ctx context.Context, prompt string, opts ...QueryOption) (kernel.Event, error) {
	var last kernel.Event
	var runErr error
	for ev, err := range a.Query(ctx, prompt, opts...) {
		if err != nil {
			runErr = err
		}
		if ev.Type == kernel.EventResult {
			last = ev
		}
	}
	return last, runErr
}
