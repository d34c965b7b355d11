// Package mcp connects agents to Model Context Protocol servers, on the
// official Go SDK (github.com/modelcontextprotocol/go-sdk): in-process
// servers whose tools are typed Go functions, and external servers over
// stdio (run inside the sandbox), streamable HTTP and legacy SSE. Every
// server tool becomes a *tools.Tool named mcp__{server}__{tool}, the name
// that permission rules, hook matchers, Tools and subagent tool lists use.
//
// # In-process servers
//
// Tools are built with the tools.New contract (schema inferred from the
// input struct, validated before the handler runs, Security declared) and
// registered on a named server:
//
//	var lookupOrder = tools.Must(tools.New("lookup_order", "Look up an order by its id.",
//		func(ctx *tools.Context, in LookupIn) (*tools.Result, error) {
//			o, err := orders.Find(ctx.Context(), in.OrderID)
//			if err != nil {
//				return tools.Errorf("order not found: %s", in.OrderID), nil
//			}
//			return tools.Text(o.JSON()), nil
//		},
//		&tools.Options{
//			Security:    &tools.Security{Network: tools.NetworkLoopback},
//			Annotations: &tools.Annotations{ReadOnlyHint: true},
//		}))
//
//	var orderTools = func() *mcp.Server {
//		s := mcp.NewServer("orders", "1.0.0")
//		mcp.AddTool(s, lookupOrder) // exposed as mcp__orders__lookup_order
//		return s
//	}()
//
//	func main() {
//		confined.Serve(orderTools.Tools()...) // the child runs only these
//		for ev, err := range kernel.Query(ctx, kernel.Options{
//			Agent: kernel.Agent{
//				CustomTools:  orderTools.Tools(),
//				AllowedTools: []string{"mcp__orders__lookup_order"},
//				...
//
// A call of an exposed tool is a genuine MCP round trip: the input is
// validated, a tools/call request goes from a go-sdk client session to the
// go-sdk server session (the JSON-RPC messages handed over in memory, see
// memconn.go), whose handler runs the original tool with
// the caller's tools.Context (Emit, RecordSnapshot, the workspace Root,
// approvals — found through a token in the request's _meta, honoured only
// on the server's own session) and the request's cancellation. Results keep
// their content blocks (text, image, audio, resource links, embedded
// resources), isError and structured content. The exposed tool carries the
// original's annotations, timeout and Security, so the strict assembler
// checks it like any custom tool, and the kernel runs it like any custom
// tool: in a confined re-execution of the program, where the MCP session is
// set up afresh and the handler runs under the policy its Security allows.
// That is why servers, like tools, are defined at package level.
//
// # Names
//
// A server name is letters, digits, '-' and '_', without "__" and without
// a leading or trailing '_', so that mcp__{server}__{tool} splits back
// unambiguously (ParseToolName); a tool name is letters, digits, '_' and
// '-'. The full name must fit the 64 characters of a tool name. AddTool and
// NewServer panic on bad names (programmer errors, reported where the tool
// is defined); tools of external servers whose names do not fit (MCP also
// allows '.') are skipped and listed in ServerStatus.Skipped.
//
// # External servers
//
// A Config is the {"mcpServers": {...}} file users already have (LoadConfig
// for --mcp-config), or the same as Go values. Entries with "command" are
// stdio servers; "type": "http" (or "streamable-http") and "sse" take a
// "url" and "headers". ${VAR} and ${VAR:-default} are expanded from the
// environment. The file is read as input an agent may have planted
// (a .mcp.json in a workspace): a regular file of at most 1 MiB, opened
// without blocking, and — with LoadConfigIn, for a path in a workspace —
// no symlink followed inside the workspace. LoadConfigIn also marks every
// entry of a file found in the workspace (ServerConfig.FromWorkspace,
// WorkspaceFile, WorkspaceDigest; ParseConfig records each entry's
// EnvRefs): local holds such an entry to the agent's own confinement
// unless the user trusted that version of the file, and its program and
// absolute arguments are granted only by their real path inside the
// workspace's real path (a symlink the agent planted there, to a key
// outside, grants nothing).
//
// A stdio server runs inside the sandbox (sandbox.Sandbox.Start, its stdin
// and stdout the transport) with the confinement its entry declares:
// "network" (none by default; loopback, private, unrestricted),
// "filesystem" (none by default: only a private temporary directory;
// workspace; unrestricted) and "sideEffects" (a workspace server is
// read-only with "none"). Its environment is the sandbox's allowlist plus
// the entry's "env" — the agent's secrets do not leak into it. The program
// (found in PATH), an absolute script argument, and for either the whole
// node_modules tree it lives in are made readable, as is
// /etc/ssl/openssl.cnf (node does not start without it); "readOnlyPaths"
// adds more. Every tool of the server declares the resulting Security, which
// the sandbox enforces: the strict assembler can judge external tools as it
// judges custom ones. Options.MaxNetwork refuses servers declaring more
// network than the preset allows (strict: loopback) before starting them.
//
// An HTTP server is reached from this process; every connection is checked
// against its network mode after name resolution (the default mode is the
// narrowest that reaches the URL's host), so a name resolving somewhere
// unexpected is refused.
//
// readOnlyHint makes the permission gate allow a tool without asking, so
// an external server's hint is believed only with "trustAnnotations", or
// when its sandbox makes it true (stdio, network none, side effects none).
// The other hints pass through.
//
// # The toolset and the kernel
//
// The kernel does not import this package: it is handed the servers as a
// tools.Toolset (kernel.Confinement.Toolsets), so that a program without MCP
// servers links no MCP client. NewToolset checks the configuration and
// builds it:
//
//	ts, err := mcp.NewToolset(&mcp.Options{Servers: cfg.Servers}) // cfg from LoadConfig
//	...
//	kernel.Query(ctx, kernel.Options{Confinement: kernel.Confinement{Toolsets: []tools.Toolset{ts}}, ...})
//
// (package local does this itself from Config.MCPServers, with the
// preset's MaxNetwork). For each session the kernel:
//
//   - opens the toolset, handing it its handler ceiling and, with
//     checkpoints, its recorder: Open starts a Manager whose stdio
//     servers run under that ceiling (with MaxNetwork's network when set)
//     narrowed per entry, passes BeforeChange so that what a server that
//     may write the workspace changes there is captured like a command's
//     changes (and, while .git is protected, captured even without
//     checkpoints, so that it may make no .git either) and the session's
//     Writers, so that a file a server opened for writing in one call
//     and writes in a later one is carried from checkpoint to checkpoint
//     (the server is paused while each is sealed), and connects every
//     server, concurrently, each bounded by
//     ConnectTimeout (default 30 s);
//   - puts the Manager's Status in the session_start event: per server,
//     connected with its tools, or failed with the reason (the program
//     not found, its exit code and the end of its stderr, a timeout, a
//     refusal by MaxNetwork); a failed server never holds up the run, and
//     rules may name its tools (MayOffer);
//   - adds Tools to the session's tools, calling those the Manager's
//     Traits mark as forwarding — an external server's and the resource
//     tools, whose handler only forwards over the session (the server is
//     confined, and a re-executed child would not have the session) —
//     with Tool.Call in this process. The mark is the Manager's, asked by
//     the kernel of the toolset it was handed, never a process-wide
//     registry, which would let a marked tool run unconfined wherever it
//     appeared;
//   - closes the Manager when the session ends: sessions are closed,
//     stdio servers get a grace period to exit, then their whole process
//     tree is killed.
//
// A program may also drive a Manager itself (NewManager, Connect, Tools,
// Close); it then calls the forwarding tools in-process itself.
//
// A stdio server that dies mid-session turns every call in flight and every
// later call into an error result with the reason (its exit status and the
// end of its stderr), at once — never a hang — and its status becomes
// failed. An HTTP server that goes away fails each call with the connection
// error. A call never outlives its context; the kernel's tool timeout
// cancels it on the server too (notifications/cancelled).
//
// # Resources
//
// When a connected server offers resources, Tools also returns
// list_mcp_resources ({server?, cursor?}: one page per server, with
// resource templates and nextCursor) and read_mcp_resource ({server, uri}:
// text as embedded resources, images and audio as image and audio blocks so
// a model can see them). They are read-only and declare the widest Security
// of the servers they reach. Resources an in-process server offers (added
// through Server.SDK) are read in this process, not confined. Their names
// are valid in rules and tool lists whenever there is a server, before it
// connects and after, resources or not (MayOffer): a deny rule for
// read_mcp_resource is no mistake in a session whose servers have none.
//
// # Cost
//
// BenchmarkToolCall runs one trivial tool plain and through an in-process
// server. Called directly, the MCP round trip costs about 0.14 ms against
// 12 µs for Tool.Call (about 11×; 19× over the go-sdk's own in-memory
// transports, which add newline-delimited JSON over a net.Pipe): the go-sdk
// decodes every message several times, and each of its decodes allocates
// a 32 KiB buffer (about 130 KB per call), which no transport can avoid.
// Called the way the kernel calls a custom tool — a confined re-execution,
// where the in-memory session is also set up — it is about 1.2× the plain
// confined call (10.7 ms against 8.7 ms, medians of 6 runs on 2 shared
// cores). A call to a Go server over stdio inside the sandbox costs about
// 0.7 ms.
//
// # Limits
//
// Not supported yet: reconnecting a server that died, refreshing tools on
// notifications/tools/list_changed (tools are listed once, at connect),
// prompts, and server-initiated requests (sampling, elicitation, roots).
package mcp
