package mcp

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

// testServerEnv makes the test binary an MCP server instead of running the
// tests: "stdio" serves newTestSDKServer on stdin/stdout, "crash" writes to
// stderr and exits 3 before speaking, "hang" reads nothing and never
// answers.
const testServerEnv = "LITE_AGENT_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	// A confined call re-executes this binary: the handler of an in-process
	// server's tool runs there (see TestInProcessConfined).
	// It runs only the tools handed over here.
	confined.Serve(append([]*tools.Tool{benchPlain}, append(benchSrv.Tools(), confinedSrv.Tools()...)...)...)
	switch os.Getenv(testServerEnv) {
	case "":
		os.Exit(m.Run())
	case "stdio":
		err := newTestSDKServer().Run(context.Background(), &sdk.StdioTransport{})
		if err != nil && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "closed") {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "crash":
		fmt.Fprintln(os.Stderr, "test server: boom, cannot start")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown", testServerEnv)
		os.Exit(2)
	}
}

type echoArgs struct {
	Text string `json:"text"`
}

type dialArgs struct {
	Addr string `json:"addr"`
}

type pathArgs struct {
	Path string `json:"path"`
	Data string `json:"data,omitempty"`
}

type exitArgs struct {
	Code int `json:"code"`
}

type sleepArgs struct {
	MS int `json:"ms"`
}

// testPNG is a 1×1 PNG.
var testPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

// newTestSDKServer is the go-sdk server the tests talk to over stdio (a
// re-execution of this binary) and over HTTP. Its page size is 2, so that
// listing its tools takes several pages.
func newTestSDKServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "gotest", Version: "1.2.3"}, &sdk.ServerOptions{PageSize: 2})
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, Title: "Echo"}},
		func(ctx context.Context, req *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "blocks", Description: "Returns one block of each kind."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			size := int64(12)
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "hello"},
				&sdk.ImageContent{Data: testPNG, MIMEType: "image/png"},
				&sdk.AudioContent{Data: []byte("RIFF0000WAVE"), MIMEType: "audio/wav"},
				&sdk.ResourceLink{URI: "test://doc/1", Name: "doc1", Title: "Doc one", MIMEType: "text/plain", Size: &size},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://doc/2", MIMEType: "text/plain", Text: "inline text"}},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fails as a tool does."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("order not found")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "dial", Description: "Opens a TCP connection to addr."},
		func(ctx context.Context, req *sdk.CallToolRequest, in dialArgs) (*sdk.CallToolResult, any, error) {
			c, err := net.DialTimeout("tcp", in.Addr, 2*time.Second)
			if err != nil {
				return text("dial error: " + err.Error()), nil, nil
			}
			c.Close()
			return text("connected"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "read_file", Description: "Reads a file."},
		func(ctx context.Context, req *sdk.CallToolRequest, in pathArgs) (*sdk.CallToolResult, any, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return text("read error: " + err.Error()), nil, nil
			}
			return text("read: " + string(b)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "write_file", Description: "Writes a file."},
		func(ctx context.Context, req *sdk.CallToolRequest, in pathArgs) (*sdk.CallToolResult, any, error) {
			if err := os.WriteFile(in.Path, []byte(in.Data), 0o644); err != nil {
				return text("write error: " + err.Error()), nil, nil
			}
			return text("written"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "Returns the server's pid."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			return text(fmt.Sprint(os.Getpid())), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "exit", Description: "Makes the server process exit mid-call."},
		func(ctx context.Context, req *sdk.CallToolRequest, in exitArgs) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "test server: exiting on request")
			os.Exit(in.Code)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "sleep", Description: "Sleeps, or until cancelled."},
		func(ctx context.Context, req *sdk.CallToolRequest, in sleepArgs) (*sdk.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
				return text("slept"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	s.AddTool(&sdk.Tool{Name: "dotted.name", Description: "A name valid in MCP but not as a model tool name.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("dotted"), nil
		})
	s.AddResource(&sdk.Resource{URI: "test://greeting", Name: "greeting", MIMEType: "text/plain"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello from a resource"}}}, nil
		})
	s.AddResource(&sdk.Resource{URI: "test://logo", Name: "logo", MIMEType: "image/png"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: testPNG}}}, nil
		})
	return s
}

// testServerTools are the full names the test server's tools get under the
// server name srv ("dotted.name" is skipped).
func testServerTools(srv string) []string {
	var out []string
	for _, n := range []string{"echo", "blocks", "fail", "dial", "read_file", "write_file", "pid", "exit", "sleep"} {
		out = append(out, ToolName(srv, n))
	}
	return out
}
