// Command orders is the second seed's custom-tool example: lookup_order on
// an in-process MCP server named orders, pre-approved by its full name
// mcp__orders__lookup_order, a CanUseTool that refuses everything else,
// and the order-support subagent that uses the tool.
//
//	go run ./examples/orders            # offline, scripted model
//	ANTHROPIC_API_KEY=... go run ./examples/orders
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/lite-agent/lite-agent/examples/internal/example"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

//go:embed script.json
var script []byte

type order struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
	ETA     string `json:"eta"`
}

// orders stands for the seed's `orders.find`. The handler runs confined in
// a re-execution of this program: what it reads must be built there too —
// here, by this package-level initialisation (see "Run-time state" in the
// tools package documentation).
var orders = map[string]order{
	"O-1001": {OrderID: "O-1001", Status: "shipped", ETA: "2026-05-20"},
}

type lookupIn struct {
	OrderID string `json:"orderId" jsonschema:"Order ID, such as O-1001" pattern:"^O-[0-9]+$"`
}

// tool('lookup_order', 'Look up an order by order ID.', {orderId: ...},
// handler, { annotations: { readOnlyHint: true } })
var lookupOrder = tools.Must(tools.New("lookup_order", "Look up an order by order ID.",
	func(ctx *tools.Context, in lookupIn) (*tools.Result, error) {
		o, ok := orders[in.OrderID]
		if !ok {
			// A business failure: isError, and the model sees why.
			return &tools.Result{IsError: true, Content: []tools.Content{tools.TextContent("Order not found: " + in.OrderID)}}, nil
		}
		b, _ := json.Marshal(o)
		return tools.Text(string(b)), nil
	},
	&tools.Options{
		Security:    &tools.Security{Network: tools.NetworkNone},
		Annotations: &tools.Annotations{ReadOnlyHint: true},
	}))

// createSdkMcpServer({ name: 'orders', tools: [lookupOrder] })
var orderTools = func() *mcp.Server {
	s := mcp.NewServer("orders", "1.0.0")
	mcp.AddTool(s, lookupOrder)
	return s
}()

func main() {
	// First: a confined call's child runs its handler here and exits.
	// Every tool that may run confined is handed over: the child runs
	// only these (an in-process MCP server's are its Tools()).
	confined.Serve(orderTools.Tools()...)
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	model, modelName, err := example.Model(script)
	if err != nil {
		return err
	}
	ws, err := os.MkdirTemp("", "orders-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	// The kernel is handed MCP servers as a toolset: it opens them for
	// the session and closes them at its end.
	orders, err := mcp.NewToolset(&mcp.Options{Servers: map[string]mcp.ServerConfig{"orders": {Server: orderTools}}})
	if err != nil {
		return err
	}
	for ev, err := range kernel.Query(ctx, kernel.Options{
		Agent: kernel.Agent{
			Model:     model,
			ModelName: modelName,
			Workspace: ws,
			// The full name, and Claude Code's name of the agent tool.
			AllowedTools: []string{"mcp__orders__lookup_order", "Agent"},
			CanUseTool: func(_ context.Context, toolName string, input json.RawMessage, info kernel.ToolUseInfo) (kernel.PermissionResult, error) {
				if toolName != "mcp__orders__lookup_order" {
					return kernel.PermissionResult{Message: "Only order lookup is allowed in this workflow."}, nil
				}
				return kernel.PermissionResult{Allow: true, UpdatedInput: input}, nil
			},
			Agents: map[string]kernel.AgentDefinition{
				"order-support": {
					Description: "Handles order lookup and explains order status.",
					Prompt:      "Use order tools to answer order status questions clearly.",
					Tools:       []string{"mcp__orders__lookup_order"},
				},
			},
		},
		Confinement: kernel.Confinement{
			Toolsets: []tools.Toolset{orders},
		},
		Prompt: "Use the order-support agent to check order O-1001.",
	}) {
		if err != nil {
			return err
		}
		example.Print(out, ev)
	}
	return nil
}
