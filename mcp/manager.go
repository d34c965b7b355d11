package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// State is where a server's connection stands (tools.ServerState: the
// kernel reports it without importing this package).
type State = tools.ServerState

// The states of a server.
const (
	// StatePending: still starting or initialising.
	StatePending = tools.ServerPending
	// StateConnected: initialised, tools listed.
	StateConnected = tools.ServerConnected
	// StateFailed: did not start, did not answer in time, was refused by
	// the configuration, or died mid-session. Error says which.
	StateFailed = tools.ServerFailed
	// StateClosed: the manager was closed.
	StateClosed = tools.ServerClosed
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 30 * time.Second
	// DefaultShutdownGrace is how long Close waits for a stdio server to
	// exit after its stdin is closed before killing its process tree.
	DefaultShutdownGrace = 2 * time.Second
	// maxToolsPerServer bounds the tools listed from one server, so that a
	// server paging forever cannot hold up the session.
	maxToolsPerServer = 1000
)

// Options configure a Manager.
type Options struct {
	// Servers are the servers to connect, by name (the {server} of
	// mcp__{server}__{tool}). Config.Servers from LoadConfig fits here.
	Servers map[string]ServerConfig
	// Sandbox is the base policy of stdio servers: the workspace, the
	// environment allowlist, the limits, BestEffort, and the most network
	// and filesystem a server may have. Each server's declared network
	// mode and file-system access narrow it, never widen it (the narrower
	// network wins; "unrestricted" reaches "/" only where the base lists
	// it). nil means the zero policy: no workspace, no network.
	Sandbox *sandbox.Policy
	// BeforeChange, when set, is called before a stdio server that may
	// write the workspace changes a path in it (sandbox.Command.
	// BeforeChange), so that a checkpoint can save the pre-image: the
	// kernel passes its checkpointer's. The Sandbox policy's own
	// CaptureChanges is ignored.
	BeforeChange sandbox.ChangeFunc
	// ForeignChange, with BeforeChange, is told when another process
	// writes a path such a server announced while it runs
	// (sandbox.Command.ForeignChange): the kernel passes its
	// checkpointer's.
	ForeignChange sandbox.ForeignFunc
	// Writers, with BeforeChange, is the session's set of writers
	// (sandbox.Command.Writers): a file a server opened for writing in one
	// call and writes in a later one is carried from checkpoint to
	// checkpoint, and the server is paused while one is sealed. The
	// kernel passes its checkpointer's.
	Writers *sandbox.Writers
	// MaxNetwork refuses, without starting them, servers that declare a
	// wider network (strict: loopback). Empty means no cap.
	MaxNetwork tools.Network
	// ConnectTimeout bounds starting and initialising each server; zero
	// means DefaultConnectTimeout. Servers connect concurrently.
	ConnectTimeout time.Duration
	// ShutdownGrace: see DefaultShutdownGrace; zero means the default.
	ShutdownGrace time.Duration
	// Logger receives one line per server state change; nil means none.
	Logger *slog.Logger
}

// ServerStatus is one server's state, for the session_start event and for
// logs (tools.ServerStatus: the kernel reports it without importing this
// package).
type ServerStatus = tools.ServerStatus

// Manager connects a session's MCP servers, exposes their tools as
// mcp__{server}__{tool} *tools.Tool values, and shuts them down. Its
// methods are safe for concurrent use.
//
// A Manager is the tools.OpenToolset that Toolset.Open returns: the kernel
// offers its Tools, reports its Status in session_start, calls the tools
// its Traits mark as forwarding in this process, asks MayOffer about names
// of failed servers' tools, and Closes it when the session ends. A program
// that drives a Manager itself calls Connect (or Start, then Wait) first.
type Manager struct {
	opts   Options
	names  []string
	conns  map[string]*conn
	client *sdk.Client

	// connectCtx ends connection attempts (Close); procCtx is the lifetime
	// of server processes, ended after their graceful shutdown.
	connectCtx, procCtx       context.Context
	cancelConnect, cancelProc context.CancelFunc

	startOnce sync.Once
	done      chan struct{} // closed when every connection attempt ended

	mu        sync.Mutex
	closed    bool
	resources []*tools.Tool // list_mcp_resources, read_mcp_resource
	// resourcesInProcess: an in-process server offers resources, so a
	// read runs that server's own Go handler here, unconfined — the
	// resource tools' read-only hint is then not trusted (Traits).
	resourcesInProcess bool
	// forwards are the tools whose handler only talks to an MCP session
	// (see Traits): this manager's, not a process-wide set, so that only
	// the toolset the kernel was handed can say a tool runs unconfined.
	forwards map[*tools.Tool]bool
}

// NewManager checks every server's configuration and returns a manager
// that has connected nothing yet.
func NewManager(opts *Options) (*Manager, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.MaxNetwork != "" {
		if err := (&tools.Security{Network: o.MaxNetwork}).Validate(); err != nil {
			return nil, fmt.Errorf("mcp: MaxNetwork: %w", err)
		}
	}
	m := &Manager{
		opts:     o,
		conns:    map[string]*conn{},
		client:   sdk.NewClient(clientImpl, nil),
		done:     make(chan struct{}),
		forwards: map[*tools.Tool]bool{},
	}
	for name, sc := range o.Servers {
		if err := sc.Check(name); err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		c := &conn{m: m, name: name, cfg: sc, kind: sc.kind(), state: StatePending, exited: make(chan struct{})}
		if c.kind != TypeSDK {
			c.sec = sc.security()
		}
		m.conns[name] = c
		m.names = append(m.names, name)
	}
	sort.Strings(m.names)
	m.connectCtx, m.cancelConnect = context.WithCancel(context.Background())
	m.procCtx, m.cancelProc = context.WithCancel(context.Background())
	return m, nil
}

// Start begins connecting every server, concurrently, and returns at once.
// Each attempt is bounded by ConnectTimeout; ending ctx abandons the
// attempts still running (their servers fail). Calling Start again does
// nothing.
func (m *Manager) Start(ctx context.Context) {
	m.startOnce.Do(func() {
		var wg sync.WaitGroup
		for _, name := range m.names {
			c := m.conns[name]
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(m.connectCtx, m.opts.ConnectTimeout)
				defer cancel()
				stop := context.AfterFunc(ctx, cancel)
				defer stop()
				c.connect(cctx)
			}()
		}
		go func() {
			wg.Wait()
			m.buildResourceTools()
			close(m.done)
		}()
	})
}

// Wait waits until every server has connected or failed (or ctx ends) and
// returns their status. It starts them if Start was not called.
func (m *Manager) Wait(ctx context.Context) []ServerStatus {
	m.Start(ctx)
	select {
	case <-m.done:
	case <-ctx.Done():
	}
	return m.Status()
}

// Connect is Start followed by Wait: what the kernel calls before the first
// turn. A server that fails is reported in the status and leaves the others
// usable; Connect itself never fails.
func (m *Manager) Connect(ctx context.Context) []ServerStatus { return m.Wait(ctx) }

// Status returns every server's current status, by name.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.names))
	for _, name := range m.names {
		out = append(out, m.conns[name].status())
	}
	return out
}

// Tools returns the tools of every connected server, by server name and
// then in the order the server listed them, followed by
// list_mcp_resources and read_mcp_resource when a connected server offers
// resources. Call it after Connect or Wait: a server still pending
// contributes nothing.
func (m *Manager) Tools() []*tools.Tool {
	var out []*tools.Tool
	for _, name := range m.names {
		out = append(out, m.conns[name].exposedTools()...)
	}
	m.mu.Lock()
	out = append(out, m.resources...)
	m.mu.Unlock()
	return out
}

// Close shuts every server down: sessions are closed, stdio servers get
// ShutdownGrace to exit after their stdin closes and then their whole
// process tree is killed, sandboxes are released. When Close returns, no
// server process is left. Calls of the servers' tools after Close return
// error results. Close is idempotent and returns nil: a server that does
// not shut down cleanly is killed, which is logged, not an error.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.cancelConnect()
	var wg sync.WaitGroup
	for _, name := range m.names {
		c := m.conns[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.close(m.opts.ShutdownGrace)
		}()
	}
	wg.Wait()
	// Ending procCtx kills any process tree still there, including one a
	// connection attempt started while Close was running.
	m.cancelProc()
	m.startOnce.Do(func() { close(m.done) })
	<-m.done
	for _, name := range m.names {
		c := m.conns[name]
		c.mu.Lock()
		started := c.proc != nil
		c.mu.Unlock()
		if started {
			<-c.exited
		}
		c.releaseSandbox()
	}
	return nil
}

func (m *Manager) logf(level slog.Level, msg string, args ...any) {
	if m.opts.Logger != nil {
		m.opts.Logger.Log(context.Background(), level, msg, args...)
	}
}

// Traits says which of the manager's tools the kernel must call in this
// process (tools.ToolTraits.Forwards): those of an external server and the
// resource tools. Their handler only forwards the call over an MCP session
// — the server's own confinement is its sandbox (stdio) or the network
// check on its connections (HTTP) — and a confined re-execution of the
// program would not have the session. The resource tools' read-only hint
// is trusted (TrustedReadOnly) when every server with resources is
// external: their code is then this package's and only lists and reads.
// With an in-process server among them a read runs that server's own
// handler in this process, so the hint is not trusted and the permission
// rules decide (default mode asks). Tools of in-process servers are
// neither: their handlers are ordinary custom tools and run confined like
// any other.
func (m *Manager) Traits(t *tools.Tool) tools.ToolTraits {
	m.mu.Lock()
	defer m.mu.Unlock()
	tr := tools.ToolTraits{Forwards: m.forwards[t]}
	for _, r := range m.resources {
		if r == t {
			tr.TrustedReadOnly = !m.resourcesInProcess
		}
	}
	return tr
}

// forward records that t forwards over an MCP session (see Traits).
func (m *Manager) forward(t *tools.Tool) {
	m.mu.Lock()
	m.forwards[t] = true
	m.mu.Unlock()
}

// MayOffer returns the servers that did not connect and whose unknown
// tools could include one named name (tools.ToolOfferer); for the
// resource tools, every server (mayOffer).
func (m *Manager) MayOffer(name string) []string {
	return mayOffer(name, m.names, func(n string) bool {
		c := m.conns[n]
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.state != StateConnected
	})
}

// mayOffer returns those of servers that could offer a tool named name:
// an mcp__SERVER__TOOL name only SERVER's, and only while SERVER's tools
// are unknown (unknown: before an external server connects, or after it
// failed to); the resource tools (list_mcp_resources, read_mcp_resource)
// every server's, whatever is known of it. The resource tools are this
// package's own names: a rule naming them (DisallowedTools:
// ["read_mcp_resource"]) is no misspelling when, once connected, no
// server turns out to have resources — denying what is not there denies
// nothing. A Toolset before it opens and a Manager after answer by this
// one rule, so a rule that passes kernel.CheckToolNames does not then
// fail the Query.
func mayOffer(name string, servers []string, unknown func(server string) bool) []string {
	if name == ListResourcesTool || name == ReadResourceTool {
		return slices.Clone(servers)
	}
	server, _, isMCP := ParseToolName(name)
	var out []string
	for _, n := range servers {
		if isMCP && server == n && unknown(n) {
			out = append(out, n)
		}
	}
	return out
}

// conn is one server's connection.
type conn struct {
	m    *Manager
	name string
	cfg  ServerConfig
	kind string
	sec  tools.Security

	mu       sync.Mutex
	state    State
	reason   string
	closing  bool
	cs       *sdk.ClientSession
	info     *sdk.Implementation
	caps     *sdk.ServerCapabilities
	exposed  []*tools.Tool
	skipped  []string
	notes    []string // where it runs with less than it declares
	httpDone func()   // closes idle HTTP connections

	// stdio
	proc   *sandbox.Process
	sb     *sandbox.Sandbox
	stderr *tailBuffer
	exited chan struct{} // closed when the process tree is gone (or never started)
}

func (c *conn) status() ServerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := ServerStatus{Name: c.name, Type: c.kind, State: c.state, Error: c.reason, Skipped: append([]string(nil), c.skipped...), Notes: append([]string(nil), c.notes...), Security: c.sec}
	if c.info != nil {
		st.ServerInfo = c.info.Name
		if c.info.Version != "" {
			st.ServerInfo += " " + c.info.Version
		}
	}
	for _, t := range c.exposed {
		st.Tools = append(st.Tools, t.Name())
	}
	return st
}

func (c *conn) exposedTools() []*tools.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != StateConnected {
		return nil
	}
	return append([]*tools.Tool(nil), c.exposed...)
}

// fail records why the server is unusable; the first reason wins.
func (c *conn) fail(format string, args ...any) {
	c.mu.Lock()
	if c.state == StateFailed || c.state == StateClosed {
		c.mu.Unlock()
		return
	}
	c.state = StateFailed
	c.reason = fmt.Sprintf(format, args...)
	reason := c.reason
	c.mu.Unlock()
	c.m.logf(slog.LevelWarn, "MCP server failed", "server", c.name, "error", reason)
}

// connect starts and initialises the server and lists its tools.
func (c *conn) connect(ctx context.Context) {
	if limit := c.m.opts.MaxNetwork; limit != "" && c.kind != TypeSDK && !c.sec.Network.Within(limit) {
		close(c.exited)
		c.fail("declares network %q; this session allows at most %q", c.sec.Network, limit)
		return
	}
	var cs *sdk.ClientSession
	var err error
	switch c.kind {
	case TypeSDK:
		close(c.exited)
		cs, err = c.cfg.Server.session()
	case TypeStdio:
		cs, err = c.connectStdio(ctx)
	case TypeHTTP, TypeSSE:
		close(c.exited)
		cs, err = c.connectHTTP(ctx)
	}
	if err != nil {
		c.fail("%s", c.explain(ctx, err))
		c.killProcess()
		return
	}
	var exposed []*tools.Tool
	var skipped []string
	if c.kind == TypeSDK {
		exposed = c.cfg.Server.Tools()
	} else {
		exposed, skipped, err = c.listTools(ctx, cs)
		if err != nil {
			c.fail("listing tools: %s", c.explain(ctx, err))
			cs.Close()
			c.killProcess()
			return
		}
	}
	init := cs.InitializeResult()
	c.mu.Lock()
	if c.state != StatePending {
		// Closed (or died) while connecting.
		c.mu.Unlock()
		if c.kind != TypeSDK {
			cs.Close()
		}
		return
	}
	c.state = StateConnected
	c.cs = cs
	c.exposed, c.skipped = exposed, skipped
	if init != nil {
		c.info, c.caps = init.ServerInfo, init.Capabilities
	}
	c.mu.Unlock()
	c.m.logf(slog.LevelInfo, "MCP server connected", "server", c.name, "tools", len(exposed))
	if c.kind != TypeSDK {
		// A session that ends while we did not close it (the server
		// closed its end, the process died) makes the server failed.
		go func() {
			cs.Wait()
			c.lost()
		}()
	}
}

// explain turns a connection error into a reason a person can act on,
// preferring what the process's exit and stderr say.
func (c *conn) explain(ctx context.Context, err error) string {
	c.mu.Lock()
	started := c.proc != nil
	c.mu.Unlock()
	if started {
		// If the process is exiting, its status is the real story.
		select {
		case <-c.exited:
		case <-time.After(200 * time.Millisecond):
		}
		c.mu.Lock()
		why := c.reason
		c.mu.Unlock()
		if why != "" {
			return why
		}
	}
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("did not finish starting within %s%s", c.m.opts.ConnectTimeout, c.stderrTail())
	}
	if ctx.Err() != nil {
		return "connection abandoned (the session ended)"
	}
	return err.Error() + c.stderrTail()
}

func (c *conn) stderrTail() string {
	c.mu.Lock()
	buf := c.stderr
	c.mu.Unlock()
	if buf == nil {
		return ""
	}
	if s := buf.tail(); s != "" {
		return "; its stderr ends with: " + s
	}
	return ""
}

// listTools lists every tool of the server (following pagination) and
// exposes those whose names and schemas can be used.
func (c *conn) listTools(ctx context.Context, cs *sdk.ClientSession) ([]*tools.Tool, []string, error) {
	var exposed []*tools.Tool
	var skipped []string
	seen := map[string]bool{}
	n := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		if n++; n > maxToolsPerServer {
			skipped = append(skipped, fmt.Sprintf("tools after the first %d (the server lists more)", maxToolsPerServer))
			break
		}
		if seen[t.Name] {
			skipped = append(skipped, fmt.Sprintf("%s: listed twice", t.Name))
			continue
		}
		seen[t.Name] = true
		et, err := c.expose(t)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", t.Name, err))
			continue
		}
		exposed = append(exposed, et)
	}
	return exposed, skipped, nil
}

// expose builds the *tools.Tool for one of the server's tools.
func (c *conn) expose(t *sdk.Tool) (*tools.Tool, error) {
	if err := checkToolName(c.name, t.Name); err != nil {
		return nil, err
	}
	schema, err := inputSchema(t.InputSchema)
	if err != nil {
		return nil, err
	}
	desc := t.Description
	if desc == "" {
		desc = fmt.Sprintf("The %s tool of the MCP server %s.", t.Name, c.name)
	}
	ann := fromSDKAnnotations(t, c.cfg.readOnlyTrusted())
	sec := c.sec
	name := t.Name
	handler := func(ctx *tools.Context, input json.RawMessage) (*tools.Result, error) {
		return c.callTool(ctx, name, input)
	}
	opts := &tools.Options{Security: &sec, Annotations: &ann}
	et, err := tools.NewRaw(ToolName(c.name, name), desc, schema, handler, opts)
	if err != nil && schema.Schema != "" {
		// The schema names a draft (often draft-07, from zod) that the
		// validator does not know; the keywords in practice are the same.
		schema.Schema = ""
		et, err = tools.NewRaw(ToolName(c.name, name), desc, schema, handler, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("its input schema cannot be used: %v", err)
	}
	c.m.forward(et)
	return et, nil
}

// inputSchema converts the schema a client received (a map) to ours.
func inputSchema(v any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding its input schema: %v", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("its input schema is not a JSON Schema this client understands: %v", err)
	}
	if s.Type == "" && len(s.Types) == 0 {
		s.Type = "object"
	}
	return &s, nil
}

// live returns the session, or why the server cannot be called.
func (c *conn) live() (*sdk.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case StateConnected:
		return c.cs, nil
	case StateClosed:
		return nil, fmt.Errorf("the MCP server %s was shut down with the session", c.name)
	case StateFailed:
		return nil, fmt.Errorf("the MCP server %s is not available: %s", c.name, c.reason)
	}
	return nil, fmt.Errorf("the MCP server %s is still starting", c.name)
}

// callTool is the handler of every exposed tool of an external server. It
// never outlives its context, and a server that dies mid-call makes it
// return at once with the reason.
func (c *conn) callTool(tctx *tools.Context, name string, input json.RawMessage) (*tools.Result, error) {
	cs, err := c.live()
	if err != nil {
		return nil, err
	}
	ctx := tctx.Context()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: input})
	if err != nil {
		return nil, c.callError(ctx, "calling "+name, err)
	}
	r, err := fromCallToolResult(res)
	if err != nil {
		return nil, fmt.Errorf("the MCP server %s returned a result this client cannot read: %w", c.name, err)
	}
	return r, nil
}

// callError explains a failed request.
func (c *conn) callError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s on the MCP server %s: %w", what, c.name, context.Cause(ctx))
	}
	if errors.Is(err, sdk.ErrConnectionClosed) || c.kind == TypeStdio && c.processGone() {
		// Give the exit watcher a moment to record why.
		select {
		case <-c.exited:
		case <-time.After(200 * time.Millisecond):
		}
		c.lost()
		if _, lerr := c.live(); lerr != nil {
			return fmt.Errorf("%s: %w", what, lerr)
		}
	}
	return fmt.Errorf("%s on the MCP server %s failed: %w", what, c.name, err)
}

// lost marks a connected server failed when its session ended without
// Close, and makes sure no process of it is left.
func (c *conn) lost() {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return
	}
	if c.kind == TypeStdio {
		select {
		case <-c.exited:
		case <-time.After(200 * time.Millisecond):
		}
	}
	c.fail("the connection to the server was lost mid-session%s", c.stderrTail())
	c.killProcess()
}

func (c *conn) processGone() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

func (c *conn) killProcess() {
	c.mu.Lock()
	p := c.proc
	c.mu.Unlock()
	if p != nil {
		p.Kill()
	}
}

// close shuts the connection down (see Manager.Close).
func (c *conn) close(grace time.Duration) {
	c.mu.Lock()
	c.closing = true
	cs, proc, httpDone := c.cs, c.proc, c.httpDone
	c.state = StateClosed
	c.reason = ""
	c.mu.Unlock()
	if cs != nil && c.kind != TypeSDK {
		// Closing stdin asks a stdio server to exit; an HTTP session is
		// deleted (bounded by the SDK's own timeout).
		if err := cs.Close(); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
			c.m.logf(slog.LevelDebug, "closing an MCP session", "server", c.name, "error", err)
		}
	}
	if httpDone != nil {
		httpDone()
	}
	if proc != nil {
		select {
		case <-c.exited:
		case <-time.After(grace):
			c.m.logf(slog.LevelInfo, "MCP server did not exit in time; killing it", "server", c.name, "grace", grace)
			proc.Kill()
			<-c.exited
		}
	}
}

func (c *conn) releaseSandbox() {
	c.mu.Lock()
	sb := c.sb
	c.sb = nil
	c.mu.Unlock()
	if sb != nil {
		sb.Close()
	}
}

// headerTransport adds the configured headers to every request that does
// not set them itself (the protocol's own headers win).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	for k, v := range t.headers {
		if r.Header.Get(k) == "" {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}
