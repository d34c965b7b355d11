package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/tools"
)

// metaCallKey names the _meta entry by which an in-process call finds the
// caller's tools.Context on the server side (see Server.serve).
const metaCallKey = "lite-agent/call"

// metaSecurityKey carries a tool's Security in the MCP tool definition's
// _meta, so that any MCP client listing an in-process server sees it too.
const metaSecurityKey = "lite-agent/security"

// clientImpl is how this package introduces itself to servers.
var clientImpl = &sdk.Implementation{Name: "lite-agent", Version: "1"}

// Server is an in-process MCP server: a named set of tools built with the
// tools.New contract, served by the official MCP Go SDK and called through a
// real MCP client session, connected in memory (memconn.go).
//
// Each tool added with AddTool is exposed as a *tools.Tool named
// mcp__{server}__{tool} (see Tools), with the original's description,
// schema, annotations, Security and timeout. Those are the values to give
// the kernel as custom tools: permission rules, hook matchers and subagent
// tool lists use the full name, and the strict assembler checks the
// Security they carry.
//
// Define servers and add their tools at package level (or in init), like
// every custom tool: a confined call re-executes the program, and the
// confined copy finds the exposed tool, and through it the server, by name.
type Server struct {
	name string
	sdk  *sdk.Server

	mu      sync.Mutex
	exposed []*tools.Tool
	added   map[string]bool

	// The in-memory session, connected at the first call. cs is read
	// without the lock on every call; connMu serialises connecting and
	// closing.
	connMu sync.Mutex
	cs     atomic.Pointer[sdk.ClientSession]
	ss     atomic.Pointer[sdk.ServerSession]

	// pending maps a call token to the caller's Context for the duration
	// of one call.
	pending   sync.Map // string → *tools.Context
	nextToken atomic.Uint64
}

// NewServer returns an empty in-process server. name becomes part of every
// tool's full name: keep it short and stable. It panics if name is not a
// valid server name (see CheckServerName) — a programmer error, reported
// where the server is defined.
func NewServer(name, version string) *Server {
	if err := CheckServerName(name); err != nil {
		panic(fmt.Errorf("mcp.NewServer: %w", err))
	}
	if version == "" {
		version = "0"
	}
	return &Server{
		name:  name,
		sdk:   sdk.NewServer(&sdk.Implementation{Name: name, Version: version}, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{}}),
		added: map[string]bool{},
	}
}

// Name is the server's name, the {server} of mcp__{server}__{tool}.
func (s *Server) Name() string { return s.name }

// SDK returns the underlying go-sdk server, to add resources or prompts
// (resources are listed and read by the Manager's list_mcp_resources and
// read_mcp_resource tools) or to serve the same tools over another
// transport. Add tools with AddTool, not through it.
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Tools returns the exposed tools, mcp__{server}__{tool}, in the order they
// were added.
func (s *Server) Tools() []*tools.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*tools.Tool(nil), s.exposed...)
}

// AddTool registers t on s and returns the exposed tool,
// mcp__{server}__{t.Name()}, which is also in s.Tools(). It panics when t
// is nil, when s already has a tool of that name, or when the full name is
// longer than the 64 characters a tool name may have: programmer errors,
// reported where the tool is added.
//
// A call of the exposed tool validates its input, sends a tools/call
// request over the in-memory MCP session, and the server side runs t.Call
// with the caller's tools.Context (its Emit, RecordSnapshot, workspace
// Root, approvals) and the request's cancellation. The result comes back
// with its content blocks, isError and structured content.
func AddTool(s *Server, t *tools.Tool) *tools.Tool {
	if s == nil || t == nil {
		panic("mcp.AddTool: nil server or tool")
	}
	name := t.Name()
	if err := checkToolName(s.name, name); err != nil {
		panic(fmt.Errorf("mcp.AddTool %q on server %q: %w", name, s.name, err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.added[name] {
		panic(fmt.Errorf("mcp.AddTool: server %q already has a tool named %q", s.name, name))
	}
	def := &sdk.Tool{
		Name:        name,
		Description: t.Description(),
		InputSchema: t.InputSchemaJSON(),
		Annotations: toSDKAnnotations(t.Annotations()),
	}
	if sec := t.Security(); sec != nil {
		def.Meta = sdk.Meta{metaSecurityKey: sec}
	}
	s.sdk.AddTool(def, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return s.serve(ctx, req, t), nil
	})
	ann := t.Annotations()
	exposed, err := tools.NewRaw(ToolName(s.name, name), t.Description(), t.InputSchema(),
		func(ctx *tools.Context, input json.RawMessage) (*tools.Result, error) {
			return s.call(ctx, name, input)
		},
		&tools.Options{Security: t.Security(), Annotations: &ann, Timeout: t.Timeout()})
	if err != nil {
		// t was built by tools.New from the same schema and name, so
		// this cannot fail unless the tools contract changed.
		panic(fmt.Errorf("mcp.AddTool %q: %w", name, err))
	}
	s.added[name] = true
	s.exposed = append(s.exposed, exposed)
	return exposed
}

// call is the client side of one exposed call.
func (s *Server) call(ctx *tools.Context, name string, input json.RawMessage) (*tools.Result, error) {
	cs, err := s.session()
	if err != nil {
		return nil, err
	}
	token := strconv.FormatUint(s.nextToken.Add(1), 10)
	s.pending.Store(token, ctx)
	defer s.pending.Delete(token)
	res, err := cs.CallTool(ctx.Context(), &sdk.CallToolParams{
		Name:      name,
		Arguments: input,
		Meta:      sdk.Meta{metaCallKey: token},
	})
	if err != nil {
		return nil, fmt.Errorf("MCP call to %s failed: %w", ToolName(s.name, name), err)
	}
	return fromCallToolResult(res)
}

// serve is the server side of one call: it runs t with the caller's
// Context when the request comes from this server's own in-memory session,
// and with a bare one otherwise (a client reaching the server through
// SDK() on another transport gets no access to a caller's services).
func (s *Server) serve(ctx context.Context, req *sdk.CallToolRequest, t *tools.Tool) *sdk.CallToolResult {
	var tctx tools.Context
	if req.Session != nil && req.Session == s.ss.Load() {
		if tok, ok := req.Params.Meta[metaCallKey].(string); ok {
			if c, ok := s.pending.Load(tok); ok {
				tctx = *c.(*tools.Context)
			}
		}
	}
	// The request's context is cancelled when the caller gives up (the
	// client sends notifications/cancelled): that is the one the handler
	// must watch.
	tctx.Ctx = ctx
	return toCallToolResult(t.Call(&tctx, req.Params.Arguments))
}

// session returns the in-memory client session, connecting it first if
// needed.
func (s *Server) session() (*sdk.ClientSession, error) {
	if cs := s.cs.Load(); cs != nil {
		return cs, nil
	}
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if cs := s.cs.Load(); cs != nil {
		return cs, nil
	}
	ct, st := memTransports()
	ctx := context.Background()
	ss, err := s.sdk.Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("starting the in-process MCP server %q: %w", s.name, err)
	}
	// The server session must be known before the first request arrives
	// (serve compares against it).
	s.ss.Store(ss)
	cs, err := sdk.NewClient(clientImpl, nil).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		ss.Close()
		s.ss.Store(nil)
		return nil, fmt.Errorf("connecting to the in-process MCP server %q: %w", s.name, err)
	}
	s.cs.Store(cs)
	return cs, nil
}

// Close ends the in-memory session, if one was started. A later call
// starts a new one, so Close is only needed to release its goroutines (in
// tests, or a program that builds servers dynamically).
func (s *Server) Close() error {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	var err error
	if cs := s.cs.Swap(nil); cs != nil {
		err = cs.Close()
	}
	if ss := s.ss.Swap(nil); ss != nil {
		ss.Close()
	}
	return err
}
