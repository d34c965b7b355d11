// Package local is the strict assembler: New builds a hardened agent from a
// preset, refusing anything that would weaken it, and wires the kernel, the
// sandbox, checkpoints, the permission rules and the hooks together. The
// agent's Query is kernel.Query with all of that already in place; the
// package has no loop of its own.
//
// # Config is kernel.Agent
//
// kernel.Options has three parts: what the agent is (kernel.Agent), how
// it is confined (kernel.Confinement), and what one query asks (the
// prompt and the session). Config embeds kernel.Agent and adds only what
// the assembler knows (the preset, the policy files, NoCheckpoints) and
// the MCP servers (MCPServers, MCPConnectTimeout). It has no field for
// the confinement, which New builds from the preset — the sandbox, the
// handler ceiling, the toolset of the MCP servers checked against the
// preset, checkpoints, every custom handler confined — nor for a query's
// prompt and session (Query's argument and its QueryOptions): a program
// cannot ask for what New would have to refuse, because it does not
// compile. The agent is passed on whole as a deep copy, checked against
// the preset where it could widen anything, so a new field of
// kernel.Agent reaches the agent at once; a test fails until this package
// has said how the preset bounds it.
//
// # What New refuses
//
// Every refusal is an error that names the tool and the field, or the file
// and the line:
//
//   - a custom tool without Security;
//   - a custom tool whose Security.Network is beyond what the preset
//     allows custom tools (loopback, in every preset);
//   - under strict, a custom tool with Security.Filesystem "unrestricted"
//     or Security.SideEffects "external";
//   - an MCP server beyond the preset (CheckMCPServers): the tools of an
//     in-process server as custom tools; an external server declaring
//     more network than MCPMaxNetwork(preset) (loopback under strict and
//     standard; what commands may reach under permissive), or, under
//     strict, the whole filesystem;
//   - a subagent definition with bypassPermissions where the preset
//     forbids the mode;
//   - bypassPermissions under a preset that forbids it (strict), or
//     without AllowDangerouslySkipPermissions;
//   - a policy file with a bad rule, mode, hook or key; under strict, a
//     workspace policy file that would loosen the policy;
//   - an MCPServers key that is not its in-process server's own name;
//   - a rule, hook matcher, Tools entry or subagent tool list naming no
//     tool (kernel.CheckToolNames; Claude Code's names are ours), and a
//     custom tool a confined child could not find (not handed to
//     confined.Serve: kernel.CheckConfinedTools).
//
// # What New wires
//
//   - the sandbox policy for commands: the preset's, the policy files'
//     [sandbox] tables, then Config.SandboxGrants, with the toolchain
//     profiles resolved on Config.Host (MachineHost: the user's PATH, the
//     tools' own queries, per-workspace caches under CacheRoot, whose Go
//     module sources and cargo crate sources it checks against go.sum
//     and Cargo.lock before each session: internal/machine;
//     policies.Policy.SandboxPolicy documents the merge, and
//     Agent.SandboxReport says where each grant came from); each custom
//     handler runs
//     in a confined re-execution of the program (so call
//     confined.Serve(tools...) first in main) under HandlerCeiling — what
//     the preset lets custom tools have beyond commands: loopback, and
//     under standard and permissive "/" — narrowed by its own Security;
//   - rules: the preset's, the user's policy file's, the workspace's
//     policy file's, then Config.Rules, AllowedTools and DisallowedTools
//     (policies.Load documents the merge; deny wins wherever it is);
//   - the permission mode: Config.PermissionMode, else the last policy
//     file that sets one, else the preset's;
//   - hooks: the policy files' command hooks (run in the sandbox, see
//     CommandHook), then Config.Hooks;
//   - checkpoints in the state directory, unless NoCheckpoints;
//   - MCP servers as one toolset (mcp.NewToolset, kernel.Confinement.Toolsets:
//     stdio servers in the preset's handler ceiling, narrowed per entry,
//     with MCPMaxNetwork(preset) as the cap the toolset enforces again
//     before a server starts); subagents, the token budget and structured
//     output as the caller's kernel.Agent says.
//
// # What cannot change after New
//
// An Agent's options are fixed by New: it copies the Config's slices and
// maps before checking them (changing them afterwards changes nothing),
// Options returns a deep copy, and a QueryOption acts on an unexported
// struct that holds only the session's choices (Resume, SessionID) — it
// cannot set the permission mode, rules, hooks, CanUseTool, the sandbox,
// tools, MCP servers, agents, in-process handlers or checkpoints. Code
// that needs other options per query builds another Agent, or calls
// kernel.Query itself, outside the assembler's guarantees.
package local
