// Command heldserver is a stdio MCP server that keeps a workspace file
// writable from one tool call to the next (TestMCPHeldFileWritesRewound):
// "open" opens the file and keeps the descriptor (mode "fd"), or maps it
// shared and writable and closes the descriptor (mode "map"); "write"
// writes text at the start of the file through what "open" kept.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type openArgs struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
}

type writeArgs struct {
	Text string `json:"text"`
}

func main() {
	var file *os.File
	var mapping []byte
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "heldserver", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "open", Description: "Opens a file and keeps it writable."},
		func(ctx context.Context, req *sdk.CallToolRequest, in openArgs) (*sdk.CallToolResult, any, error) {
			f, err := os.OpenFile(in.Path, os.O_RDWR, 0)
			if err != nil {
				return nil, nil, err
			}
			switch in.Mode {
			case "fd":
				file = f
			case "map":
				fi, err := f.Stat()
				if err != nil {
					return nil, nil, err
				}
				mapping, err = syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
				f.Close() // the mapping outlives the descriptor
				if err != nil {
					return nil, nil, err
				}
			default:
				return nil, nil, fmt.Errorf("mode %q: want fd or map", in.Mode)
			}
			return text("kept " + in.Path), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "write", Description: "Writes text at the start of the file kept open."},
		func(ctx context.Context, req *sdk.CallToolRequest, in writeArgs) (*sdk.CallToolResult, any, error) {
			switch {
			case file != nil:
				if _, err := file.WriteAt([]byte(in.Text), 0); err != nil {
					return nil, nil, err
				}
			case mapping != nil:
				copy(mapping, in.Text)
			default:
				return nil, nil, fmt.Errorf("nothing was opened")
			}
			return text("wrote"), nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "heldserver:", err)
	}
}
