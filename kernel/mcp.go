package kernel

import (
	"context"
	"fmt"
	"sync"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// connectMCP starts the session's MCP servers and waits until each has
// connected or failed, each bounded by its connect timeout. A server that
// fails is reported in session_start and leaves the run going; only a
// configuration that cannot be used at all is an error.
//
// Stdio servers run in the sandbox under the handler ceiling (with
// MCPMaxNetwork's network when set), narrowed to what their entries
// declare (see package mcp). With
// checkpoints, what a server that may write the workspace changes there
// is captured like a command's changes: its pre-images go to the
// session's recorder (through mcpChanges, since the recorder is opened
// after the servers start; a change made before that is not captured).
func (r *run) connectMCP(ctx context.Context) error {
	o := r.opts
	if len(o.MCPServers) == 0 {
		return nil
	}
	// Servers are narrowed from the handler ceiling, like custom
	// handlers; MCPMaxNetwork, when set, is the network a server may
	// declare, so it is the ceiling's network too (servers declaring
	// more are refused before they start).
	base := r.handlerCeiling
	if o.MCPMaxNetwork != "" {
		base.Network = sandbox.NetworkMode(o.MCPMaxNetwork)
	}
	base.CaptureChanges = false
	mo := &mcp.Options{
		Servers:        o.MCPServers,
		Sandbox:        &base,
		MaxNetwork:     o.MCPMaxNetwork,
		ConnectTimeout: o.MCPConnectTimeout,
	}
	if o.Checkpoints != nil || o.Snapshots != nil {
		tc := &tools.Context{Workspace: r.workspace, Snapshots: &r.mcpChanges}
		mo.BeforeChange, mo.ForeignChange = tc.BeforeChange(), tc.ForeignChange()
	}
	m, err := mcp.NewManager(mo)
	if err != nil {
		return fmt.Errorf("kernel: MCPServers: %w", err)
	}
	r.mcp = m
	r.mcpStatus = m.Connect(ctx)
	return nil
}

// mcpMayOffer reports whether name could be a tool of an MCP server that
// did not connect: its tools are unknown, so naming one is not an error.
func (r *run) mcpMayOffer(name string) bool {
	server, _, isMCP := mcp.ParseToolName(name)
	resources := name == mcp.ListResourcesTool || name == mcp.ReadResourceTool
	for _, st := range r.mcpStatus {
		if st.State == mcp.StateConnected {
			continue
		}
		if resources || isMCP && server == st.Name {
			return true
		}
	}
	return false
}

// lateRecorder passes pre-images on to a recorder set later; until then
// it records nothing.
type lateRecorder struct {
	mu  sync.Mutex
	rec tools.SnapshotRecorder
}

func (l *lateRecorder) set(rec tools.SnapshotRecorder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec = rec
}

func (l *lateRecorder) RecordSnapshot(path string) error {
	l.mu.Lock()
	rec := l.rec
	l.mu.Unlock()
	if rec == nil {
		return nil
	}
	return rec.RecordSnapshot(path)
}

// RecordForeignChange passes a third party's write on (see
// tools.ForeignChangeRecorder), when the recorder takes them.
func (l *lateRecorder) RecordForeignChange(path, why string) {
	l.mu.Lock()
	rec := l.rec
	l.mu.Unlock()
	if f, ok := rec.(tools.ForeignChangeRecorder); ok {
		f.RecordForeignChange(path, why)
	}
}
