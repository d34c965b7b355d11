package tools

import (
	"context"

	"github.com/lite-agent/lite-agent/sandbox/policy"
)

// A Toolset is a source of tools that lives as long as a session: the
// kernel opens it when a session starts, offers the tools it returns like
// custom tools, and closes it when the session ends. Package mcp's
// Toolset (a session's MCP servers) is one.
//
// It is an interface the kernel is handed (kernel.Confinement.Toolsets), not a
// package the kernel imports, so that a program without MCP servers does
// not link an MCP client and its transports, and so that a toolset's
// properties (which of its tools run in this process) are asked of the
// toolset the session was handed, never of a process-wide registry.
//
// A Toolset is configuration: it is opened once per session (a program
// that runs several queries with one Options opens it several times), and
// Open must not change it.
//
// Optional abilities are found by type assertion: ToolsetPreview on a
// Toolset, ToolsetTraits, ToolsetStatus and ToolOfferer on the OpenToolset
// it returns.
type Toolset interface {
	// Open starts the toolset for one session and returns once its tools
	// are known: the first model call waits for it, so Open must bound
	// itself (package mcp: each server's connect timeout). An error is a
	// configuration that cannot be used at all and fails the session; a
	// part that fails (an MCP server that does not connect) should be
	// reported by ToolsetStatus and leave the rest usable.
	Open(ctx context.Context, env *ToolsetEnv) (OpenToolset, error)
}

// ToolsetEnv is what the kernel gives a toolset it opens.
type ToolsetEnv struct {
	// Workspace is the session's workspace (a real path).
	Workspace string
	// Sandbox is the most a process the toolset starts may have: the
	// session's handler ceiling (kernel.Confinement.HandlerCeiling, else its
	// Sandbox), with CaptureChanges off — what such a process changes is
	// reported through Snapshots instead. A toolset narrows it for each
	// process; widening it is the toolset's own, explicit grant (package
	// mcp: Options.MaxNetwork).
	Sandbox policy.Policy
	// Snapshots, when not nil, records the pre-image of every workspace
	// path a process of the toolset is about to change (Context's
	// BeforeChange and ForeignChange build the sandbox's hooks from it),
	// so that checkpoints cover those changes. nil: the session keeps no
	// checkpoints. The session's checkpointer may open after Open returns;
	// until then nothing is recorded.
	Snapshots SnapshotRecorder
}

// OpenToolset is a toolset opened for one session.
type OpenToolset interface {
	// Tools are the toolset's tools for the session, in the order the
	// model is offered them. Their names must not collide with any other
	// tool of the session. Unless ToolsetTraits says otherwise, each runs
	// like a custom tool: its handler in a confined re-execution of the
	// program, so it must be handed to confined.Serve.
	Tools() []*Tool
	// Close ends the toolset's session: no process it started may be left
	// when Close returns. The kernel calls it once, when the session ends.
	Close() error
}

// ToolTraits is what a toolset says about one of its tools that the tool
// itself cannot say: the kernel believes it because it was handed the
// toolset (as it believes its Options), and never asks it of a tool that
// came from anywhere else.
type ToolTraits struct {
	// Forwards: the handler only forwards the call to something confined
	// elsewhere — an external MCP server (its own sandbox, or a dial
	// filter on its connections) — so the kernel calls it in this
	// process: a confined re-execution of the program would not have the
	// connection it forwards over.
	Forwards bool
	// TrustedReadOnly: the tool's ReadOnlyHint is the toolset's own code's
	// promise (package mcp's resource tools), so the permission gate may
	// let it run without asking, as it does lite-agent's built-in
	// read-only tools. Other tools' hints are hints, never permissions.
	TrustedReadOnly bool
}

// ToolsetTraits is implemented by an open toolset some of whose tools are
// not plain custom tools (see ToolTraits).
type ToolsetTraits interface {
	Traits(t *Tool) ToolTraits
}

// ToolsetStatus is implemented by an open toolset made of servers: the
// kernel reports their status in the session_start event (mcp_servers).
type ToolsetStatus interface {
	Status() []ServerStatus
}

// ToolOfferer is implemented by a toolset (before it opens) or an open
// toolset whose tools are not all known: MayOffer returns the servers
// (ServerStatus.Name) whose tools, not known, could include one named
// name — before opening, the servers whose tools are only listed when
// they connect; once open, those that failed to. A name the toolset owns
// whatever its servers turn out to offer (mcp's resource tools) is
// offered by every server, before and after opening, so that a rule
// naming it passes the check before opening and the Query alike. A rule
// or tool list may name such a tool without error; the kernel records
// the entry in the failed server's ServerStatus.Unchecked.
type ToolOfferer interface {
	MayOffer(name string) []string
}

// ToolsetPreview is implemented by a toolset that knows some of its tools
// before it opens (package mcp: an in-process server's). Their names are
// checked in rules and tool lists before anything connects
// (kernel.CheckToolNames), and, since they run like custom tools, that a
// confined child can find them (kernel.CheckConfinedTools).
type ToolsetPreview interface {
	KnownTools() []*Tool
}

// ServerState is where a toolset's server stands.
type ServerState string

// The states of a server.
const (
	// ServerPending: still starting or initialising.
	ServerPending ServerState = "pending"
	// ServerConnected: initialised, tools listed.
	ServerConnected ServerState = "connected"
	// ServerFailed: did not start, did not answer in time, was refused by
	// the configuration, or died mid-session. Error says which.
	ServerFailed ServerState = "failed"
	// ServerClosed: the session is over.
	ServerClosed ServerState = "closed"
)

// ServerStatus is one server's state, for the session_start event and for
// logs. Its JSON form is part of the stream-json contract.
type ServerStatus struct {
	Name  string      `json:"name"`
	Type  string      `json:"type"`
	State ServerState `json:"status"`
	// Error says why a server failed.
	Error string `json:"error,omitempty"`
	// ServerInfo is the name and version the server gave, if connected.
	ServerInfo string `json:"server_info,omitempty"`
	// Tools are the full names of the server's tools.
	Tools []string `json:"tools,omitempty"`
	// Skipped lists tools the server offered that are not exposed, each
	// with the reason (an invalid name, a schema that cannot be used).
	Skipped []string `json:"skipped,omitempty"`
	// Notes say where the server runs with less than it declares: a
	// stdio server's network narrowed to the session's.
	Notes []string `json:"notes,omitempty"`
	// Unchecked lists the entries of the session's configuration (rules,
	// Tools, hook matchers) that name a tool of this server, which failed:
	// its tools are unknown, so whether they name a real tool could not
	// be checked. Set by the kernel.
	Unchecked []string `json:"unchecked,omitempty"`
	// Security is what the server's tools declare (and, for stdio
	// servers, what the sandbox enforces). Zero for in-process servers,
	// whose tools declare their own.
	Security Security `json:"security,omitzero"`
}
