package local

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// Config is what a hardened agent is built from: what the agent is
// (kernel.Agent, embedded: cfg.Model, cfg.Hooks, …) plus what only the
// assembler knows (the preset, the policy files, checkpoints on or off)
// and the MCP servers. Model is required; every other zero value is the
// strict choice.
//
// Config cannot say how the agent is confined: kernel.Confinement (the
// sandbox, the handler ceiling, toolsets, in-process handlers,
// checkpoints) is New's to set from the preset, and a query's prompt and
// session are Query's argument and its QueryOptions — none of them is a
// field here. New checks the agent against the preset (see the package
// documentation):
//
//   - CustomTools are checked against the preset: each must declare its
//     Security, with Network at most loopback (what the preset allows),
//     and under strict neither Filesystem "unrestricted" nor SideEffects
//     "external". Each handler runs in the sandbox under the profile its
//     Security allows, in a re-execution of the program: define custom
//     tools at package level and hand them to confined.Serve
//     first in main.
//   - Rules come after the preset's and the policy files' (the options
//     layer), Hooks after the policy files' command hooks; deny wins
//     wherever it comes from.
//   - PermissionMode overrides the mode the preset and the policy files
//     chose; bypassPermissions needs AllowDangerouslySkipPermissions and
//     a preset that allows it (not strict).
//   - MCPServers (Config's own) are judged like custom tools (in-process
//     servers) or by the network their entries declare
//     (CheckMCPServers), then handed to the kernel as one toolset;
//     Agents' bypassPermissions is refused where the preset refuses the
//     mode.
//   - StateDir holds sessions and checkpoints ($XDG_STATE_HOME/lite-agent
//     when empty); Workspace is the current directory when empty.
//   - WebSearch is refused by the kernel unless the preset's network is
//     unrestricted.
type Config struct {
	// Preset is strict (the default), standard or permissive: the sandbox
	// of commands, what custom tools may declare, the default permission
	// mode and the default rules (see policies.Presets).
	Preset string
	// SandboxGrants are the options layer of the sandbox of commands
	// (the CLI's --network, --allow-read, --allow-write, --env,
	// --allow-domain, --toolchains, --git, --sandbox-level: Level
	// sandbox.LevelContainer runs commands without namespaces, for hosts
	// that cannot make them, and the session says at its start what
	// that gives up), laid over the preset's and the
	// policy files' [sandbox] settings; each Grant's Source says where it
	// came from. Toolchains nil means auto. Host is the machine the
	// toolchain profiles are resolved on (nil: this one, MachineHost).
	SandboxGrants policies.SandboxSettings
	Host          policies.Host
	// PolicyFiles chooses the policy files read (nil: the user's and the
	// workspace's; see policies.Load for the merge order).
	PolicyFiles *policies.LoadOptions
	// NoCheckpoints turns checkpointing off (it is on by default: every
	// change the agent makes can be rewound).
	NoCheckpoints bool
	// CheckpointMaxSize caps the checkpoint store in bytes
	// (checkpoint.Options.MaxStoreSize): zero is
	// checkpoint.DefaultMaxStoreSize, negative no cap. When the cap acts,
	// the person is told on stderr.
	CheckpointMaxSize int64
	// MCPServers are the agent's MCP servers, by name (the {server} of
	// mcp__{server}__{tool}): mcp.Config.Servers from mcp.LoadConfig, and
	// an in-process server as an entry {Server: srv}. New checks them
	// against the preset (CheckMCPServers) and hands them to the kernel
	// as one toolset (mcp.NewToolset) capped at MCPMaxNetwork(preset).
	MCPServers map[string]mcp.ServerConfig
	// MCPConnectTimeout bounds connecting each server; zero means
	// mcp.DefaultConnectTimeout.
	MCPConnectTimeout time.Duration

	kernel.Agent
}

// Agent is a hardened agent. Its Query is kernel.Query with the preset's
// sandbox, the merged rules and hooks, and checkpoints wired in. An Agent
// is immutable and safe for concurrent queries (each its own session).
type Agent struct {
	opts kernel.Options
	// mcpServers are the names of Config.MCPServers.
	mcpServers []string
	preset     policies.Preset
	policy     *policies.Policy
	sandbox    *policies.SandboxReport
}

// New checks cfg against its preset and builds the agent. It refuses, with
// an error naming the tool and the field, any custom tool whose Security is
// missing or broader than the preset allows, any MCP server beyond the
// preset (CheckMCPServers, naming the server), and a bypassPermissions the
// preset forbids; a policy file with a bad rule is an error naming the
// file and the line. The agent's confinement is New's alone: it builds
// kernel.Confinement from the preset.
func New(cfg Config) (*Agent, error) {
	preset, err := policies.PresetByName(cfg.Preset)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if cfg.Model == nil {
		return nil, errors.New("local: Config.Model is required")
	}
	// The checks below judge a deep copy: a caller that changes its
	// Config's slices or maps after New (a tool swapped in, a server
	// added, an agent's mode changed) changes nothing of the agent. The
	// agent is taken whole, so a new field of kernel.Agent needs no line
	// here (TestAgentFieldsReachTheAgent).
	opts := kernel.Options{Agent: cloneAgent(cfg.Agent)}
	servers := cloneServers(cfg.MCPServers)
	if err := CheckTools(preset, opts.CustomTools); err != nil {
		return nil, err
	}
	if cfg.MCPConnectTimeout < 0 {
		return nil, errors.New("local: Config.MCPConnectTimeout is negative")
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Agents)) {
		// Parsed, not compared as text: "yolo" is bypassPermissions too.
		if m, _ := policies.ParseMode(string(opts.Agents[name].PermissionMode)); m == kernel.PermissionBypass && !preset.AllowBypassPermissions {
			return nil, fmt.Errorf("local: agent %q: field PermissionMode is bypassPermissions, which the %s preset does not allow", name, preset.Name)
		}
	}
	ws, err := kernel.ResolveWorkspace(opts.Workspace)
	if err != nil {
		return nil, err
	}
	pol, err := policies.Load(preset, ws, cfg.PolicyFiles)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	trustWorkspaceServers(preset, ws, cfg.PolicyFiles, servers)
	if err := CheckMCPServers(preset, servers); err != nil {
		return nil, err
	}
	mode := pol.Mode
	if opts.PermissionMode != "" {
		if mode, err = policies.ParseMode(string(opts.PermissionMode)); err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
	}
	if mode == kernel.PermissionBypass {
		if !preset.AllowBypassPermissions {
			return nil, fmt.Errorf("local: the %s preset does not allow bypassPermissions; choose --preset standard or permissive to use it", preset.Name)
		}
		if !opts.AllowDangerouslySkipPermissions {
			return nil, errors.New("local: bypassPermissions needs AllowDangerouslySkipPermissions (--dangerously-skip-permissions)")
		}
	}
	host := cfg.Host
	if host == nil {
		host = &MachineHost{}
	}
	sb, sbReport, err := pol.SandboxPolicy(ws, cfg.SandboxGrants, host)
	if err != nil {
		return nil, fmt.Errorf("local: the sandbox: %w", err)
	}
	if err := ownFilesOutsideWritable(sb, cfg.PolicyFiles); err != nil {
		return nil, fmt.Errorf("local: the sandbox: %w", err)
	}
	var hooks []kernel.Hook
	for _, h := range pol.Hooks {
		hooks = append(hooks, CommandHook(h, sb))
	}
	hooks = append(hooks, opts.Hooks...)
	// What the assembler decides over the caller's agent: the resolved
	// workspace and the layered rules, hooks and mode.
	opts.Workspace = ws
	opts.Rules = append(slices.Clone(pol.Rules), opts.Rules...)
	opts.Hooks = hooks
	opts.PermissionMode = mode
	// And the whole confinement, from the preset: every custom handler
	// confined (InProcessHandlers stays false), under the preset's
	// ceiling, the MCP servers as New's own toolset, checkpoints unless
	// turned off.
	opts.Confinement = kernel.Confinement{Sandbox: &sb, HandlerCeiling: HandlerCeiling(preset, ws)}
	if len(servers) > 0 {
		// The kernel is handed the servers as a toolset; the same network
		// cap CheckMCPServers applied refuses, again, a server that
		// slipped past before it starts, and is the network the handler
		// ceiling gives them (mcp.NewToolset).
		ts, err := mcp.NewToolset(&mcp.Options{Servers: servers, MaxNetwork: MCPMaxNetwork(preset), ConnectTimeout: cfg.MCPConnectTimeout})
		if err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
		opts.Toolsets = []tools.Toolset{ts}
	}
	if !cfg.NoCheckpoints {
		opts.Checkpoints = checkpointsCapped(opts.StateDir, cfg.CheckpointMaxSize)
	}
	// A rule, matcher or tool list naming no tool fails here, not at the
	// first query (a deny rule that matches nothing is a silent hole).
	if err := kernel.CheckToolNames(&opts); err != nil {
		return nil, err
	}
	if err := kernel.CheckConfinedTools(&opts); err != nil {
		return nil, err
	}
	return &Agent{opts: cloneOptions(opts), preset: preset, policy: pol, sandbox: sbReport, mcpServers: slices.Sorted(maps.Keys(servers))}, nil
}

// CheckTools checks custom tools against a preset, returning every
// refusal (errors.Join), each naming the tool and the field.
func CheckTools(preset policies.Preset, ts []*tools.Tool) error {
	return errors.Join(checkTools(preset, ts, "local: ")...)
}

// checkTools is CheckTools with each error prefixed by prefix, so that an
// in-process MCP server's refusals carry one "local: " only.
func checkTools(preset policies.Preset, ts []*tools.Tool, prefix string) []error {
	var errs []error
	for i, t := range ts {
		if t == nil {
			errs = append(errs, fmt.Errorf("%sCustomTools[%d] is nil", prefix, i))
			continue
		}
		sec := t.Security()
		if sec == nil {
			errs = append(errs, fmt.Errorf("%scustom tool %q: field Security is missing; declare what it touches (tools.Options.Security: Network, Filesystem, SideEffects)", prefix, t.Name()))
			continue
		}
		if !preset.NetworkAllowed(sec.Network) {
			errs = append(errs, fmt.Errorf("%scustom tool %q: field Security.Network is %q, beyond what the %s preset allows custom tools (at most %s)", prefix, t.Name(), sec.Network, preset.Name, preset.CustomToolMaxNetwork))
		}
		if sec.Filesystem == tools.FilesystemUnrestricted && !preset.CustomToolUnrestrictedFilesystem {
			errs = append(errs, fmt.Errorf("%scustom tool %q: field Security.Filesystem is %q; the %s preset confines custom tools to the workspace", prefix, t.Name(), sec.Filesystem, preset.Name))
		}
		if sec.SideEffects == tools.SideEffectsExternal && !preset.CustomToolExternalSideEffects {
			errs = append(errs, fmt.Errorf("%scustom tool %q: field Security.SideEffects is %q; the %s preset allows no side effects outside the workspace", prefix, t.Name(), sec.SideEffects, preset.Name))
		}
	}
	return errs
}

// HandlerCeiling is the most a custom tool's handler may run with under
// preset: the commands' policy, with the network the preset lets custom
// tools declare (CustomToolMaxNetwork: loopback in every preset, so a
// local test server or language server is reachable under strict although
// bash gets no network — and under permissive a handler gets loopback,
// not bash's whole network), and "/" read-write where the preset lets
// them declare Filesystem "unrestricted" (standard, permissive). Each
// handler gets this narrowed by its own declaration (confined.HandlerPolicy),
// so a tool declaring less gets less; CheckTools has already refused one
// declaring more.
func HandlerCeiling(preset policies.Preset, workspace string) *sandbox.Policy {
	p := preset.Policy(workspace)
	p.Network = preset.CustomToolMaxNetwork
	if preset.CustomToolUnrestrictedFilesystem {
		p.ReadWritePaths = append(p.ReadWritePaths, "/")
	}
	return &p
}

// MCPMaxNetwork is the widest network an external MCP server may declare
// under preset: loopback, or what the preset lets commands reach when that
// is wider (permissive: unrestricted). So under strict and standard a
// server reaches at most a local service, as a custom tool may; under
// permissive, a remote MCP server is no wider than what bash can reach.
func MCPMaxNetwork(preset policies.Preset) tools.Network {
	return preset.Sandbox.Network.Wider(tools.NetworkLoopback)
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
		// The entry itself first (for an in-process server: its key must
		// be its name, or its tools' mcp__ names would not be the key's).
		if err := sc.Check(name); err != nil {
			errs = append(errs, fmt.Errorf("local: MCP %w", err))
			continue
		}
		if sc.Server != nil {
			for _, err := range checkTools(preset, sc.Server.Tools(), "") {
				errs = append(errs, fmt.Errorf("local: MCP server %q: %w", name, err))
			}
			continue
		}
		sec := sc.Security()
		if sc.FromWorkspace {
			errs = append(errs, untrustedServerErrors(preset, name, sc, sec)...)
		}
		if !sec.Network.Within(limit) {
			errs = append(errs, fmt.Errorf("local: MCP server %q: field network is %q, beyond what the %s preset allows MCP servers (at most %s); declare a narrower \"network\" or choose a wider preset", name, sec.Network, preset.Name, limit))
		}
		if sec.Filesystem == tools.FilesystemUnrestricted && !preset.CustomToolUnrestrictedFilesystem {
			errs = append(errs, fmt.Errorf("local: MCP server %q: field filesystem is %q; the %s preset confines MCP servers to the workspace", name, sec.Filesystem, preset.Name))
		}
	}
	return errors.Join(errs...)
}

// trustWorkspaceServers clears FromWorkspace of the entries whose file the
// user trusted in the version read (`lite-agent policy trust FILE`),
// under a preset that lets the workspace's files loosen: the rule of the
// workspace's policy file (policies.Load), applied to an MCP config.
func trustWorkspaceServers(preset policies.Preset, ws string, lo *policies.LoadOptions, servers map[string]mcp.ServerConfig) {
	if !preset.TrustWorkspacePolicy {
		return
	}
	store := ""
	if lo != nil {
		store = lo.TrustStore
	}
	for name, sc := range servers {
		if sc.FromWorkspace && sc.WorkspaceFile != "" && policies.FileTrusted(store, ws, sc.WorkspaceFile, sc.WorkspaceDigest) {
			sc.FromWorkspace = false
			servers[name] = sc
		}
	}
}

// untrustedServerErrors refuses what an entry from an untrusted workspace
// file (mcp.ServerConfig.FromWorkspace) declares beyond the agent's own
// commands: the agent could have written the file in an earlier session,
// and its server starts with the session, before any permission is
// asked. So such a server gets no more than the agent's bash has — the
// workspace, the preset's command network, the environment commands see
// — and the file's fields that would widen that (extra read paths, the
// whole filesystem, more network, the user's other variables) are
// refused by name until the user trusts that version of the file.
func untrustedServerErrors(preset policies.Preset, name string, sc mcp.ServerConfig, sec tools.Security) []error {
	var fields []string
	if len(sc.ReadOnlyPaths) > 0 {
		fields = append(fields, fmt.Sprintf("field readOnlyPaths %v", sc.ReadOnlyPaths))
	}
	if sec.Filesystem == tools.FilesystemUnrestricted {
		fields = append(fields, fmt.Sprintf("field filesystem %q", sec.Filesystem))
	}
	if commands := preset.Sandbox.Network; !sec.Network.Within(commands) {
		fields = append(fields, fmt.Sprintf("field network %q (the agent's commands have %q)", sec.Network, commands))
	}
	// Believing the server's readOnlyHint lets its tools past plan mode
	// and run them concurrently as reads: the agent's own server would be
	// vouching for itself.
	if sc.TrustAnnotations {
		fields = append(fields, "field trustAnnotations")
	}
	// The variables the agent's commands see anyway (sandbox.DefaultEnv)
	// may be referenced; any other would hand the server the user's
	// environment.
	var refs []string
	for _, v := range sc.EnvRefs {
		if !slices.Contains(sandbox.DefaultEnv(), v) {
			refs = append(refs, "${"+v+"}")
		}
	}
	if len(refs) > 0 {
		fields = append(fields, fmt.Sprintf("the reference to %s (the user's environment)", strings.Join(refs, ", ")))
	}
	if len(fields) == 0 {
		return nil
	}
	how := "check the file, then trust this version of it with `lite-agent policy trust FILE` (a change to the file untrusts it)"
	if !preset.TrustWorkspacePolicy {
		how = fmt.Sprintf("the %s preset never lets such a file widen a server's sandbox: move the configuration outside the workspace (your own --mcp-config file), or choose --preset standard and trust the file", preset.Name)
	}
	var errs []error
	for _, f := range fields {
		errs = append(errs, fmt.Errorf("local: MCP server %q: %s comes from a file in the workspace, which an agent can write, and may not widen the server's sandbox beyond the agent's own commands: %s", name, f, how))
	}
	return errs
}

// MCPServers returns the names of the agent's MCP servers (Config.
// MCPServers), sorted.
func (a *Agent) MCPServers() []string { return slices.Clone(a.mcpServers) }

// Preset returns the agent's preset.
func (a *Agent) Preset() policies.Preset { return a.preset }

// Policy returns the preset merged with the policy files that were read.
func (a *Agent) Policy() *policies.Policy { return a.policy }

// SandboxReport is the sandbox of commands and where each grant came
// from (the preset, a policy file line, a flag, a toolchain profile).
func (a *Agent) SandboxReport() *policies.SandboxReport { return a.sandbox }

// Options returns a deep copy of the kernel options every query starts
// from: changing it (its slices, maps, the sandbox policies) changes
// nothing of the agent.
func (a *Agent) Options() kernel.Options { return cloneOptions(a.opts) }

// QueryOption changes one query. It acts only on what one query may
// safely choose — which session it is (Resume, SessionID) — never on the
// kernel options New checked against the preset: a per-query option that
// received the whole kernel.Options could set bypassPermissions, drop the
// sandbox or the hooks and undo every check (the reason adk-go's
// RunOption targets an unexported struct). Everything else is chosen
// once, in Config, and checked by New.
type QueryOption func(*queryOptions)

// queryOptions are the fields a QueryOption may set.
type queryOptions struct {
	resume    string
	sessionID string
}

// Resume continues the session with this id.
func Resume(sessionID string) QueryOption {
	return func(q *queryOptions) { q.resume = sessionID }
}

// SessionID names the new session.
func SessionID(id string) QueryOption {
	return func(q *queryOptions) { q.sessionID = id }
}

// Query runs the agent on prompt: kernel.Query with the agent's options.
func (a *Agent) Query(ctx context.Context, prompt string, opts ...QueryOption) iter.Seq2[kernel.Event, error] {
	var q queryOptions
	for _, f := range opts {
		f(&q)
	}
	// A deep copy: nothing the kernel or a hook does to this query's
	// options reaches the agent's, or the next query's.
	o := cloneOptions(a.opts)
	o.Prompt, o.Resume, o.SessionID = prompt, q.resume, q.sessionID
	return kernel.Query(ctx, o)
}

// cloneOptions copies o so that it shares no slice, map or policy with
// the original: an Agent's options cannot be changed through a copy
// handed out (Options) or kept (a Config's slices and maps after New).
// Tools, toolsets, in-process MCP servers and the model are shared: they
// are the caller's objects (or, for the toolset, New's, which nothing
// changes).
func cloneOptions(o kernel.Options) kernel.Options {
	o.Agent = cloneAgent(o.Agent)
	o.Sandbox = clonePolicy(o.Sandbox)
	o.HandlerCeiling = clonePolicy(o.HandlerCeiling)
	// A toolset is configuration the kernel opens per session; the
	// agent's is built by New and never changed.
	o.Toolsets = slices.Clone(o.Toolsets)
	return o
}

// cloneAgent is cloneOptions' copy of what the caller chose.
func cloneAgent(a kernel.Agent) kernel.Agent {
	a.CustomTools = slices.Clone(a.CustomTools)
	a.Tools = slices.Clone(a.Tools)
	a.AllowedTools = slices.Clone(a.AllowedTools)
	a.DisallowedTools = slices.Clone(a.DisallowedTools)
	a.Rules = slices.Clone(a.Rules)
	a.Hooks = slices.Clone(a.Hooks)
	a.WebSearch = cloneWebSearch(a.WebSearch)
	a.Agents = cloneAgents(a.Agents)
	if a.OutputFormat != nil {
		f := *a.OutputFormat
		a.OutputFormat = &f
	}
	return a
}

func clonePolicy(p *sandbox.Policy) *sandbox.Policy {
	if p == nil {
		return nil
	}
	c := *p
	c.ReadOnlyPaths = slices.Clone(p.ReadOnlyPaths)
	c.ReadWritePaths = slices.Clone(p.ReadWritePaths)
	c.SystemPaths = slices.Clone(p.SystemPaths)
	c.CredentialPatterns = slices.Clone(p.CredentialPatterns)
	c.Env = slices.Clone(p.Env)
	c.AllowDomains = slices.Clone(p.AllowDomains)
	c.DenyDomains = slices.Clone(p.DenyDomains)
	c.DomainSources = maps.Clone(p.DomainSources)
	return &c
}

func cloneServers(m map[string]mcp.ServerConfig) map[string]mcp.ServerConfig {
	if m == nil {
		return nil
	}
	out := make(map[string]mcp.ServerConfig, len(m))
	for name, sc := range m {
		sc.Args = slices.Clone(sc.Args)
		sc.Env = maps.Clone(sc.Env)
		sc.Headers = maps.Clone(sc.Headers)
		sc.ReadOnlyPaths = slices.Clone(sc.ReadOnlyPaths)
		out[name] = sc
	}
	return out
}

func cloneAgents(m map[string]kernel.AgentDefinition) map[string]kernel.AgentDefinition {
	if m == nil {
		return nil
	}
	out := make(map[string]kernel.AgentDefinition, len(m))
	for name, def := range m {
		def.Tools = slices.Clone(def.Tools)
		out[name] = def
	}
	return out
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

// cloneWebSearch copies the web-search grant, so that its domains cannot
// be widened after New.
func cloneWebSearch(w *provider.WebSearch) *provider.WebSearch {
	if w == nil {
		return nil
	}
	c := *w
	c.AllowedDomains = slices.Clone(w.AllowedDomains)
	return &c
}
