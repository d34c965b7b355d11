package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/tools"
)

type LookupIn struct {
	OrderID string `json:"orderId" jsonschema:"the order id, such as O-1001"`
}

// An in-process MCP server: typed tools built with tools.New, registered on
// a named server, and exposed as mcp__{server}__{tool}. A call goes through
// a real MCP session to the go-sdk server and back. In a program, define the
// server at package level, like every custom tool.
func ExampleAddTool() {
	lookup := tools.Must(tools.New("lookup_order", "Look up an order by its id.",
		func(ctx *tools.Context, in LookupIn) (*tools.Result, error) {
			if in.OrderID != "O-1001" {
				return tools.Errorf("order not found: %s", in.OrderID), nil
			}
			return tools.Text(`{"orderId": "O-1001", "status": "shipped"}`), nil
		},
		&tools.Options{
			Security:    &tools.Security{Network: tools.NetworkNone},
			Annotations: &tools.Annotations{ReadOnlyHint: true},
		}))
	orders := mcp.NewServer("orders", "1.0.0")
	exposed := mcp.AddTool(orders, lookup)
	defer orders.Close()

	fmt.Println(exposed.Name(), exposed.ReadOnly(), exposed.Security().Network)
	res := exposed.Call(nil, json.RawMessage(`{"orderId": "O-1001"}`))
	fmt.Println(res.IsError, res.TextOf())
	res = exposed.Call(nil, json.RawMessage(`{"orderId": "O-9"}`))
	fmt.Println(res.IsError, res.TextOf())
	// Output:
	// mcp__orders__lookup_order true none
	// false {"orderId": "O-1001", "status": "shipped"}
	// true order not found: O-9
}

// The --mcp-config file: the {"mcpServers": {...}} shape, with the
// confinement of each server declared next to it.
func ExampleParseConfig() {
	os.Setenv("DOCS_TOKEN", "t0k")
	cfg, err := mcp.ParseConfig([]byte(`{"mcpServers": {
	  "fs":   {"command": "mcp-server-filesystem", "args": ["/work"], "filesystem": "workspace"},
	  "docs": {"type": "http", "url": "http://127.0.0.1:8080/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
	}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Servers["fs"].Command, cfg.Servers["fs"].Filesystem)
	fmt.Println(cfg.Servers["docs"].Type, cfg.Servers["docs"].Headers["Authorization"])
	// Output:
	// mcp-server-filesystem workspace
	// http Bearer t0k
}

// A Manager connects a session's servers concurrently and reports each
// one's status; it is what Toolset.Open returns to the kernel, whose
// session offers its Tools beside the custom tools.
func ExampleManager() {
	kb := mcp.NewServer("kb", "1")
	mcp.AddTool(kb, tools.Must(tools.New("search_docs", "Search the product docs.",
		func(ctx *tools.Context, in struct {
			Query string `json:"query"`
		}) (string, error) {
			return "3 pages mention " + in.Query, nil
		},
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}})))
	defer kb.Close()

	m, err := mcp.NewManager(&mcp.Options{
		Servers: map[string]mcp.ServerConfig{
			"kb":     {Server: kb},
			"broken": {Command: "/nonexistent/mcp-server"},
		},
		ConnectTimeout: 10 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	for _, st := range m.Connect(context.Background()) {
		fmt.Println(st.Name, st.State, st.Tools)
	}
	for _, t := range m.Tools() {
		fmt.Println(t.Name(), t.Call(nil, json.RawMessage(`{"query": "refunds"}`)).TextOf())
	}
	// Output:
	// broken failed []
	// kb connected [mcp__kb__search_docs]
	// mcp__kb__search_docs 3 pages mention refunds
}

// A Toolset is how the kernel is handed MCP servers:
// kernel.Confinement{Toolsets: []tools.Toolset{ts}}. Each session opens it —
// here by hand, as the kernel does — which connects the servers under the
// session's sandbox, and closes it at the end. Whether a tool runs in this
// process is the open toolset's word (Traits), not a property any tool
// carries elsewhere.
func ExampleNewToolset() {
	kb := mcp.NewServer("kb", "1")
	mcp.AddTool(kb, tools.Must(tools.New("search_docs", "Search the product docs.",
		func(ctx *tools.Context, in struct {
			Query string `json:"query"`
		}) (string, error) {
			return "3 pages mention " + in.Query, nil
		},
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}})))
	defer kb.Close()

	ts, err := mcp.NewToolset(&mcp.Options{
		Servers: map[string]mcp.ServerConfig{
			"kb":     {Server: kb},
			"broken": {Command: "/nonexistent/mcp-server"},
		},
		ConnectTimeout: 10 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Before it opens: the tools known already, and who may offer a name.
	fmt.Println(len(ts.KnownTools()), ts.MayOffer("mcp__broken__anything"))

	open, err := ts.Open(context.Background(), &tools.ToolsetEnv{Workspace: os.TempDir()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer open.Close()
	for _, st := range open.(tools.ToolsetStatus).Status() {
		fmt.Println(st.Name, st.State)
	}
	for _, t := range open.Tools() {
		fmt.Println(t.Name(), "forwards:", open.(tools.ToolsetTraits).Traits(t).Forwards)
	}
	// Output:
	// 1 [broken]
	// broken failed
	// kb connected
	// mcp__kb__search_docs forwards: false
}
