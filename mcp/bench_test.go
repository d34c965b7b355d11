package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

// The same trivial tool, plain and through an in-process MCP server; at
// package level so that the confined re-execution has both.
var (
	benchPlain = tools.Must(tools.New("bench_echo", "Echoes text.",
		func(ctx *tools.Context, in echoArgs) (string, error) { return in.Text, nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))
	benchSrv     = NewServer("bench", "1")
	benchExposed = AddTool(benchSrv, benchPlain)
)

var benchInput = json.RawMessage(`{"text": "hello"}`)

func benchCall(b *testing.B, call func() *tools.Result) {
	b.Helper()
	for b.Loop() {
		if r := call(); r.IsError || r.TextOf() != "hello" {
			b.Fatalf("%+v", r)
		}
	}
}

// BenchmarkToolCall compares one call of the same tool: plain (Tool.Call)
// and through the in-process MCP server (a tools/call round trip over the
// in-memory connection of memconn.go); then both the way the kernel runs a
// custom tool, in a confined re-execution of the program (where the MCP
// session is set up afresh in each child); and a call to the go-sdk
// server over stdio inside the sandbox, for scale.
//
//	go test -run '^$' -bench ToolCall -count 6 ./mcp/
func BenchmarkToolCall(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		benchCall(b, func() *tools.Result { return benchPlain.Call(nil, benchInput) })
	})
	b.Run("in-process-mcp", func(b *testing.B) {
		benchCall(b, func() *tools.Result { return benchExposed.Call(nil, benchInput) })
	})
	sb, err := sandbox.New(sandbox.Policy{})
	if errors.Is(err, sandbox.ErrUnsupported) {
		b.Logf("no sandbox here (%v): the confined and stdio cases are skipped", err)
		return
	}
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	for _, tc := range []struct {
		name string
		t    *tools.Tool
	}{{"confined-plain", benchPlain}, {"confined-in-process-mcp", benchExposed}} {
		pol, err := confined.HandlerPolicy(sandbox.Policy{}, tc.t.Security())
		if err != nil {
			b.Fatal(err)
		}
		hsb, err := sandbox.New(pol)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			ctx := &tools.Context{Call: tools.Call{ID: "b", Name: tc.t.Name(), Input: benchInput}}
			benchCall(b, func() *tools.Result { return confined.Call(ctx, tc.t, hsb, "") })
		})
		hsb.Close()
	}
	b.Run("stdio-go-server", func(b *testing.B) {
		m, err := NewManager(&Options{Servers: map[string]ServerConfig{"go": goServer("stdio")}})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		if st := m.Connect(context.Background()); st[0].State != StateConnected {
			b.Fatalf("%+v", st)
		}
		var echo *tools.Tool
		for _, t := range m.Tools() {
			if t.Name() == "mcp__go__echo" {
				echo = t
			}
		}
		for b.Loop() {
			if r := echo.Call(nil, benchInput); r.IsError || r.TextOf() != "echo: hello" {
				b.Fatalf("%+v", r)
			}
		}
	})
}
