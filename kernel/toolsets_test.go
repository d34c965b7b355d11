package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

type orderIn struct {
	ID string `json:"id"`
}

// orders is an in-process MCP server defined at package level, as servers
// must be: its tools run confined in a re-execution of this test binary,
// which finds them by name. The same server also serves over stdio when
// this binary is started as an external server (serveMCPStdio).
var orders = func() *mcp.Server {
	s := mcp.NewServer("orders", "1.0.0")
	sec := &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone}
	mcp.AddTool(s, tools.Must(tools.New("lookup", "Look up an order.",
		func(_ *tools.Context, in orderIn) (string, error) {
			return fmt.Sprintf("order %s: shipped (pid %d)", in.ID, os.Getpid()), nil
		}, &tools.Options{Security: sec})))
	mcp.AddTool(s, tools.Must(tools.New("cancel", "Cancel an order.",
		func(_ *tools.Context, in orderIn) (string, error) { return "cancelled " + in.ID, nil },
		&tools.Options{Security: sec})))
	mcp.AddTool(s, tools.Must(tools.New("note", "Write a note into the server's working directory.",
		func(_ *tools.Context, in orderIn) (string, error) {
			return "noted", os.WriteFile("mcp-note.txt", []byte(in.ID), 0o644)
		}, &tools.Options{Security: &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace}})))
	mcp.AddTool(s, tools.Must(tools.New("crash", "Make the server process exit (only ever called over stdio).",
		func(*tools.Context, struct{}) (string, error) {
			if os.Getenv(mcpServerEnv) == "" {
				return "", fmt.Errorf("crash only works in the stdio server")
			}
			os.Exit(3)
			return "", nil
		}, &tools.Options{Security: sec})))
	return s
}()

// mcpServerEnv makes this test binary serve orders on stdin and stdout.
const mcpServerEnv = "LITE_AGENT_KERNEL_TEST_MCP"

func serveMCPStdio() int {
	if err := orders.SDK().Run(context.Background(), &sdk.StdioTransport{}); err != nil && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "closed") {
		fmt.Fprintln(os.Stderr, "test MCP server:", err)
		return 1
	}
	return 0
}

// stdioOrders is an MCP config entry that starts this test binary as an
// external stdio server.
func stdioOrders(t *testing.T) mcp.ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{Command: exe, Env: map[string]string{mcpServerEnv: "1"}}
}

// mcpToolsets is Options.Toolsets with the MCP servers of opts
// (mcp.NewToolset), as a kernel user writes it.
func mcpToolsets(t testing.TB, opts *mcp.Options) []tools.Toolset {
	t.Helper()
	ts, err := mcp.NewToolset(opts)
	if err != nil {
		t.Fatal(err)
	}
	return []tools.Toolset{ts}
}

// TestInProcessMCPToolGatedByItsFullName: the tools of an in-process server
// are named mcp__orders__* in rules, hook matchers and Tools; an allowed
// call runs confined like any custom tool; session_start reports the
// server.
func TestInProcessMCPToolGatedByItsFullName(t *testing.T) {
	e := newEnv(t)
	calls := []string{
		call("l", "mcp__orders__lookup", `{"id": "O-1"}`),
		call("c", "mcp__orders__cancel", `{"id": "O-1"}`),
	}
	run := func(mod func(*Options)) (map[string]outcome, []Event) {
		t.Helper()
		o := e.opts(nil)
		o.InProcessHandlers = false
		o.Toolsets = mcpToolsets(t, &mcp.Options{Servers: map[string]mcp.ServerConfig{"orders": {Server: orders}}})
		o.Tools = []string{"read_file", "mcp__orders__*"}
		mod(&o)
		return runCalls(t, o, calls...)
	}

	// Not pre-approved: headless, both are denied, and the denial says
	// which rule would allow them.
	out, evs := run(func(*Options) {})
	out["l"].want(t, "l", "deny", byHeadless, `--allowed-tools "mcp__orders__lookup"`)
	start := evs[0]
	if start.Type != EventSessionStart || len(start.SessionStart.MCPServers) != 1 || start.SessionStart.MCPServers[0].State != mcp.StateConnected {
		t.Fatalf("session_start: %+v", start)
	}
	want := []string{"read_file", "mcp__orders__lookup", "mcp__orders__cancel", "mcp__orders__note", "mcp__orders__crash"}
	if !slices.Equal(start.SessionStart.Tools, want) || !slices.Equal(start.SessionStart.MCPServers[0].Tools, want[1:]) {
		t.Errorf("tools %v, server tools %v; want %v", start.SessionStart.Tools, start.SessionStart.MCPServers[0].Tools, want)
	}

	// A wildcard allow rule approves both; a PreToolUse hook matching the
	// full name of one denies it.
	var hookSaw []string
	out, _ = run(func(o *Options) {
		o.AllowedTools = []string{"mcp__orders__*"}
		o.Hooks = []Hook{{Event: HookPreToolUse, Matcher: "mcp__orders__cancel", Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
			hookSaw = append(hookSaw, in.ToolName)
			return &HookOutput{Decision: "deny", Reason: "cancelling is done by support"}, nil
		})}}
	})
	// In a confined child, not in this process.
	out["l"].want(t, "l", "allow", byRule, "order O-1: shipped (pid ")
	if strings.Contains(resultText(out["l"].result), fmt.Sprintf("(pid %d)", os.Getpid())) {
		t.Errorf("the in-process server's tool ran in this process: %s", resultText(out["l"].result))
	}
	out["c"].want(t, "c", "deny", byHook, "cancelling is done by support")
	if !slices.Equal(hookSaw, []string{"mcp__orders__cancel"}) {
		t.Errorf("the hook saw %v", hookSaw)
	}

	// A deny rule on the full name beats the wildcard allow.
	out, evs = run(func(o *Options) {
		o.AllowedTools = []string{"mcp__orders__*"}
		o.DisallowedTools = []string{"mcp__orders__cancel"}
	})
	out["l"].want(t, "l", "allow", byRule, "shipped")
	if r := out["c"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), `no tool named "mcp__orders__cancel"`) {
		t.Errorf("a tool denied whole is hidden: %+v", r)
	}
	if slices.Contains(evs[0].SessionStart.Tools, "mcp__orders__cancel") {
		t.Errorf("visible tools %v", evs[0].SessionStart.Tools)
	}
}

// TestExternalMCPServerThroughTheKernel: a stdio server (this binary) runs
// in the sandbox; its tools forward and are called in this process; a server
// that cannot start and one that never answers are reported in
// session_start without holding up the run; a server that dies
// mid-session turns its calls into error results.
func TestExternalMCPServerThroughTheKernel(t *testing.T) {
	e := newEnv(t)
	hang := mcp.ServerConfig{Command: "sleep", Args: []string{"600"}}
	o := e.opts(nil)
	o.InProcessHandlers = false // proxies run in-process anyway
	o.Toolsets = mcpToolsets(t, &mcp.Options{
		Servers: map[string]mcp.ServerConfig{
			"ext":     stdioOrders(t),
			"missing": {Command: "/nonexistent/mcp-server"},
			"hang":    hang,
		},
		ConnectTimeout: 2 * time.Second,
	})
	o.AllowedTools = []string{"mcp__ext__*"}
	began := time.Now()
	out, evs := runCalls(t, o,
		call("l", "mcp__ext__lookup", `{"id": "O-7"}`),
		call("x", "mcp__ext__crash", `{}`),
		call("after", "mcp__ext__lookup", `{"id": "O-8"}`),
		call("h", "mcp__hang__anything", `{}`),
	)
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("the run took %v", d)
	}
	states := map[string]mcp.ServerStatus{}
	for _, st := range evs[0].SessionStart.MCPServers {
		states[st.Name] = st
	}
	if st := states["ext"]; st.State != mcp.StateConnected || !slices.Contains(st.Tools, "mcp__ext__lookup") {
		t.Errorf("ext: %+v", st)
	}
	if st := states["missing"]; st.State != mcp.StateFailed || st.Error == "" {
		t.Errorf("missing: %+v", st)
	}
	if st := states["hang"]; st.State != mcp.StateFailed || !strings.Contains(st.Error, "2s") {
		t.Errorf("hang: %+v", st)
	}
	// The proxy is called in this process (a confined re-execution would
	// have no session); the tool runs in the server's process.
	out["l"].want(t, "l", "allow", byRule, "order O-7: shipped (pid ")
	if r := out["x"].result; !r.ToolResult.IsError {
		t.Errorf("crash: %+v", r)
	}
	if r := out["after"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), "exited with code 3") {
		t.Errorf("a call after the server died: %+v", r)
	}
	if r := out["h"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), "no tool named") {
		t.Errorf("a tool of the server that never answered: %+v", r)
	}
	if res := evs[len(evs)-1]; res.Result.Subtype != SubtypeSuccess {
		t.Errorf("result %+v", res)
	}
	// Tools may name a tool of a server that failed: the failure is
	// reported, not fatal. A tool a connected server lacks is a mistake.
	o = e.opts(script(t, `{"turns": [{"text": "ok"}]}`))
	o.Toolsets = mcpToolsets(t, &mcp.Options{Servers: map[string]mcp.ServerConfig{"missing": {Command: "/nonexistent/mcp-server"}, "ext": stdioOrders(t)}})
	o.Tools = []string{"mcp__missing__x", "mcp__ext__lookup"}
	o.DisallowedTools = []string{"mcp__missing__drop"}
	if evs, err := collect(t, context.Background(), o); err != nil {
		t.Errorf("Tools naming a failed server's tool: %v", err)
	} else {
		// session_start says which entries the failure left unchecked.
		var unchecked []string
		for _, st := range evs[0].SessionStart.MCPServers {
			if st.Name == "missing" {
				unchecked = st.Unchecked
			}
		}
		if strings.Join(unchecked, "; ") != "Tools: mcp__missing__x; DisallowedTools: mcp__missing__drop" {
			t.Errorf("unchecked names of the failed server: %q", unchecked)
		}
	}
	o.DisallowedTools = nil
	o.Tools = []string{"mcp__ext__nope"}
	if _, err := collect(t, context.Background(), o); err == nil || !strings.Contains(err.Error(), `Tools names "mcp__ext__nope", but there is no such tool`) {
		t.Errorf("Tools naming a tool the connected server lacks: %v", err)
	}
}

// TestMCPServerChangesAreRecorded: what a stdio server that may write the
// workspace changes there reaches the session's recorder before it
// happens, like a command's changes. A server without the workspace
// writes its note in its private directory: nothing of the workspace
// changes, and nothing is captured.
func TestMCPServerChangesAreRecorded(t *testing.T) {
	e := newEnv(t)
	writer := stdioOrders(t)
	writer.Filesystem = tools.FilesystemWorkspace
	o := e.opts(nil)
	o.Toolsets = mcpToolsets(t, &mcp.Options{Servers: map[string]mcp.ServerConfig{"w": writer, "ro": stdioOrders(t)}})
	o.AllowedTools = []string{"mcp__*"}
	snaps := &snapshotLog{}
	o.Snapshots = snaps
	out, _ := runCalls(t, o, call("n", "mcp__w__note", `{"id": "hello"}`), call("r", "mcp__ro__note", `{"id": "nope"}`))
	out["n"].want(t, "n", "allow", byRule, "noted")
	// The second call ran after the first: had it reached the workspace,
	// the note would say "nope".
	if b, err := os.ReadFile(filepath.Join(e.ws, "mcp-note.txt")); err != nil || string(b) != "hello" {
		t.Errorf("the note: %q %v", b, err)
	}
	if !slices.Equal(snaps.paths, []string{"mcp-note.txt"}) {
		t.Errorf("pre-images recorded: %v, want [mcp-note.txt]", snaps.paths)
	}
	if r := out["r"].result; r.ToolResult.IsError {
		t.Errorf("the note in a private directory: %+v", r)
	}
}

func TestSessionStartJSONWithMCPAndAgents(t *testing.T) {
	ev := Event{Type: EventSessionStart, SessionID: "s", SessionStart: &SessionStartEvent{Model: "m", Workspace: "/w", Tools: []string{"agent"},
		MCPServers: []mcp.ServerStatus{{Name: "fs", Type: "stdio", State: mcp.StateFailed, Error: "boom"}}, Agents: []string{"researcher"}}}
	b, err := json.Marshal(ev)
	want := `{"type":"session_start","session_id":"s","model":"m","workspace":"/w","tools":["agent"],"mcp_servers":[{"name":"fs","type":"stdio","status":"failed","error":"boom"}],"agents":["researcher"]}`
	if err != nil || string(b) != want {
		t.Errorf("got  %s (%v)\nwant %s", b, err, want)
	}
}

// fakeToolset is a toolset of no particular kind: what the kernel does
// with it is all the kernel knows of toolsets.
type fakeToolset struct {
	tools   []*tools.Tool
	traits  map[*tools.Tool]tools.ToolTraits
	openErr error
	opened  *int // how many sessions opened it
	closed  *int // how many of those were closed
	env     *tools.ToolsetEnv
}

func (f *fakeToolset) Open(_ context.Context, env *tools.ToolsetEnv) (tools.OpenToolset, error) {
	if f.openErr != nil {
		return nil, f.openErr
	}
	*f.opened++
	f.env = env
	return f, nil
}

func (f *fakeToolset) Tools() []*tools.Tool { return f.tools }

func (f *fakeToolset) Close() error {
	*f.closed++
	return nil
}

func (f *fakeToolset) Traits(t *tools.Tool) tools.ToolTraits { return f.traits[t] }

// pidTool says which process ran it. It is not handed to
// confined.Serve: a confined child could not run it.
var pidTool = tools.Must(tools.New("where", "Say which process runs this.",
	func(*tools.Context, struct{}) (string, error) { return fmt.Sprintf("pid %d", os.Getpid()), nil },
	&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}, Annotations: &tools.Annotations{ReadOnlyHint: true}}))

// TestToolsetTraitsAreTheToolsetsOwn: whether a tool runs in this process
// (it forwards to something confined elsewhere) and whether its read-only
// hint is trusted is said by the toolset that offers it, and by nothing
// else. Under mcp.IsProxy, a process-wide registry, a tool once marked
// ran unconfined wherever it appeared — in CustomTools, or in a toolset
// that never vouched for it; here the same *tools.Tool is confined (and,
// not handed to confined.Serve, refused before the first model call)
// everywhere but in the toolset that says it forwards.
func TestToolsetTraitsAreTheToolsetsOwn(t *testing.T) {
	e := newEnv(t)
	var opened, closed int
	vouching := func() *fakeToolset {
		return &fakeToolset{tools: []*tools.Tool{pidTool}, opened: &opened, closed: &closed,
			traits: map[*tools.Tool]tools.ToolTraits{pidTool: {Forwards: true, TrustedReadOnly: true}}}
	}
	o := e.opts(nil)
	o.InProcessHandlers = false
	o.Toolsets = []tools.Toolset{vouching()}
	// Nothing pre-approves it: it runs by default because its toolset
	// vouches for its read-only hint, and in this process because its
	// toolset says it forwards.
	out, _ := runCalls(t, o, call("w", "where", `{}`))
	out["w"].want(t, "w", "allow", byDefault, fmt.Sprintf("pid %d", os.Getpid()))
	if opened != 1 || closed != 1 {
		t.Errorf("opened %d, closed %d times; want once each", opened, closed)
	}

	for _, c := range []struct {
		name string
		mod  func(*Options)
	}{
		{"as a custom tool", func(o *Options) { o.CustomTools = []*tools.Tool{pidTool} }},
		{"in a toolset that does not vouch for it", func(o *Options) {
			o.Toolsets = []tools.Toolset{&fakeToolset{tools: []*tools.Tool{pidTool}, opened: &opened, closed: &closed}}
		}},
	} {
		o := e.opts(script(t, `{"turns": [{"text": "ok"}]}`))
		o.InProcessHandlers = false
		c.mod(&o)
		if _, err := collect(t, context.Background(), o); err == nil || !strings.Contains(err.Error(), "the where tool cannot run confined") {
			t.Errorf("%s: %v; want the tool refused as one a confined child cannot find", c.name, err)
		}
	}
	if opened != closed {
		t.Errorf("opened %d, closed %d: a session that failed left a toolset open", opened, closed)
	}

	// The read-only hint of a tool its toolset does not vouch for is a
	// hint: with handlers in this process, it asks (headless: denied).
	o = e.opts(nil)
	o.Toolsets = []tools.Toolset{&fakeToolset{tools: []*tools.Tool{pidTool}, opened: &opened, closed: &closed}}
	out, _ = runCalls(t, o, call("w", "where", `{}`))
	out["w"].want(t, "w", "deny", byHeadless, "needs approval")
}

// TestToolsetOpenFailure: a toolset that cannot open fails the session
// with its index, and the toolsets opened before it are closed.
func TestToolsetOpenFailure(t *testing.T) {
	e := newEnv(t)
	var opened, closed int
	o := e.opts(script(t, `{"turns": [{"text": "ok"}]}`))
	o.Toolsets = []tools.Toolset{
		&fakeToolset{opened: &opened, closed: &closed},
		&fakeToolset{openErr: fmt.Errorf("no such server"), opened: &opened, closed: &closed},
	}
	if _, err := collect(t, context.Background(), o); err == nil || err.Error() != "kernel: Toolsets[1]: no such server" {
		t.Errorf("error %v", err)
	}
	if opened != 1 || closed != 1 {
		t.Errorf("opened %d, closed %d: the first toolset must be closed", opened, closed)
	}
	o.Toolsets = []tools.Toolset{nil}
	if _, err := collect(t, context.Background(), o); err == nil || err.Error() != "kernel: Toolsets[0] is nil" {
		t.Errorf("a nil toolset: %v", err)
	}
}

// TestToolsetEnv: a toolset is handed the handler ceiling without change
// capture, and a recorder only when the session keeps checkpoints.
func TestToolsetEnv(t *testing.T) {
	e := newEnv(t)
	var opened, closed int
	for _, snaps := range []bool{false, true} {
		ts := &fakeToolset{opened: &opened, closed: &closed}
		o := e.opts(script(t, `{"turns": [{"text": "ok"}]}`))
		o.HandlerCeiling = &sandbox.Policy{Network: sandbox.NetworkLoopback, CaptureChanges: true}
		o.Toolsets = []tools.Toolset{ts}
		if snaps {
			o.Snapshots = &snapshotLog{}
		}
		if _, err := collect(t, context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if ts.env == nil || ts.env.Workspace == "" || ts.env.Sandbox.Network != sandbox.NetworkLoopback || ts.env.Sandbox.CaptureChanges || (ts.env.Snapshots != nil) != snaps {
			t.Errorf("snapshots %v: env %+v", snaps, ts.env)
		}
	}
}

// TestResourceToolRuleWithoutResources: DisallowedTools naming the MCP
// resource tools, in a session whose servers have no resources (orders
// has tools only), passes the check before anything connects
// (CheckToolNames, as local.New runs it) and the Query alike: one
// decision. (Before, the pre-open check let "read_mcp_resource" through
// as "any server may offer it" and the Query, with every server
// connected and no resource tool offered, refused it as unknown.)
func TestResourceToolRuleWithoutResources(t *testing.T) {
	e := newEnv(t)
	o := e.opts(script(t, `{"turns": [{"text": "done"}]}`))
	o.InProcessHandlers = false
	o.Toolsets = mcpToolsets(t, &mcp.Options{Servers: map[string]mcp.ServerConfig{"orders": {Server: orders}}})
	o.DisallowedTools = []string{mcp.ReadResourceTool, mcp.ListResourcesTool}
	if err := CheckToolNames(&o); err != nil {
		t.Fatalf("before opening: %v", err)
	}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatalf("the Query refused what the check before it let through: %v", err)
	}
	if tools := evs[0].SessionStart.Tools; slices.Contains(tools, mcp.ReadResourceTool) || len(tools) == 0 {
		t.Errorf("visible tools %v", tools)
	}
	// A misspelt name is still a mistake, before and after.
	o.DisallowedTools = []string{"read_mcp_resources"}
	if err := CheckToolNames(&o); err == nil {
		t.Error("a misspelt resource tool passed the check")
	}
}
