// Command search_docs is the second seed's annotations example: a
// search_docs tool on an in-process MCP server kb, with readOnlyHint,
// destructiveHint and openWorldHint, and the seed's inputSchema (query,
// maxResults, source) as struct tags.
//
// It runs the same call twice: once with allowedTools
// ['mcp__kb__search_docs'], which runs it, and once without, which shows
// that the annotations are hints, not permissions — headless, the call is
// denied with a message saying how to pre-approve it.
//
//	go run ./examples/search_docs            # offline, scripted model
//	ANTHROPIC_API_KEY=... go run ./examples/search_docs
package main

import (
	"context"
	_ "embed"
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

// The seed's inputSchema, one tag per zod call:
//
//	query: z.string().describe('Search keywords'),
//	maxResults: z.number().int().min(1).max(10).optional().describe(...),
//	source: z.enum(['docs', 'tickets', 'wiki']).default('docs').describe(...),
type searchIn struct {
	Query      string `json:"query" jsonschema:"Search keywords"`
	MaxResults int    `json:"maxResults,omitempty" min:"1" max:"10" jsonschema:"Maximum number of snippets to return"`
	Source     string `json:"source,omitempty" enum:"docs,tickets,wiki" default:"docs" jsonschema:"Where to search"`
}

var searchDocs = tools.Must(tools.New("search_docs", "Search internal product documentation.",
	func(ctx *tools.Context, in searchIn) (string, error) {
		// source is "docs" when the model left it out: defaults are
		// applied before the handler runs.
		return fmt.Sprintf("%s: %q", in.Source, in.Query), nil
	},
	&tools.Options{
		Security: &tools.Security{Network: tools.NetworkNone},
		Annotations: &tools.Annotations{
			ReadOnlyHint:    true,
			DestructiveHint: tools.Bool(false),
			OpenWorldHint:   tools.Bool(false),
		},
	}))

// createSdkMcpServer({ name: 'kb', version: '1.0.0', tools: [searchDocs] })
var kbTools = func() *mcp.Server {
	s := mcp.NewServer("kb", "1.0.0")
	mcp.AddTool(s, searchDocs)
	return s
}()

func main() {
	// First: a confined call's child runs its handler here and exits.
	// Every tool that may run confined is handed over: the child runs
	// only these (an in-process MCP server's are its Tools()).
	confined.Serve(kbTools.Tools()...)
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "search_docs:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	ws, err := os.MkdirTemp("", "search_docs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	// The kernel is handed MCP servers as a toolset (opened per session).
	kb, err := mcp.NewToolset(&mcp.Options{Servers: map[string]mcp.ServerConfig{"kb": {Server: kbTools}}})
	if err != nil {
		return err
	}
	for _, allowed := range [][]string{{"mcp__kb__search_docs"}, nil} {
		fmt.Fprintf(out, "== allowedTools %q\n", allowed)
		model, modelName, err := example.Model(script)
		if err != nil {
			return err
		}
		for ev, err := range kernel.Query(ctx, kernel.Options{
			Agent: kernel.Agent{
				Model:        model,
				ModelName:    modelName,
				Workspace:    ws,
				AllowedTools: allowed,
			},
			Confinement: kernel.Confinement{
				Toolsets: []tools.Toolset{kb},
			},
			Prompt: "Search docs for the refund policy and summarize it.",
		}) {
			if err != nil {
				return err
			}
			example.Print(out, ev)
		}
	}
	return nil
}
