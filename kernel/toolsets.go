package kernel

import (
	"context"
	"fmt"
	"sync"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

// openToolsets opens the session's toolsets (Options.Toolsets), in order,
// each returning once its tools are known (package mcp's: once every
// server has connected or failed, each bounded by its connect timeout). A
// part of a toolset that fails (a server) is reported in session_start
// and leaves the run going; only a toolset that cannot be used at all is
// an error, and then the toolsets opened before it are closed by the
// caller (closeToolsets).
//
// Each is handed the handler ceiling — a toolset's processes (stdio MCP
// servers) get no more than custom handlers, narrowed by what they
// declare — and, with checkpoints, a recorder for what its processes
// change in the workspace (through toolsetChanges). newRun opens the
// recorder before the toolsets, so a server's changes are recorded from
// the moment it starts, in the checkpoint open at the session's start.
func (r *run) openToolsets(ctx context.Context) error {
	o := r.opts
	for i, ts := range o.Toolsets {
		if ts == nil {
			return fmt.Errorf("kernel: Toolsets[%d] is nil", i)
		}
		env := &tools.ToolsetEnv{Workspace: r.workspace, Sandbox: r.handlerCeiling}
		env.Sandbox.CaptureChanges = false
		if o.Checkpoints != nil || o.Snapshots != nil {
			env.Snapshots = &r.toolsetChanges
		}
		open, err := ts.Open(ctx, env)
		if err != nil {
			return fmt.Errorf("kernel: Toolsets[%d]: %w", i, err)
		}
		if open == nil {
			return fmt.Errorf("kernel: Toolsets[%d]: Open returned neither a toolset nor an error", i)
		}
		ot := &openToolset{open: open, tools: open.Tools()}
		if s, ok := open.(tools.ToolsetStatus); ok {
			ot.status = s.Status()
		}
		r.toolsets = append(r.toolsets, ot)
	}
	return nil
}

// openToolset is one of the session's toolsets, opened.
type openToolset struct {
	open   tools.OpenToolset
	tools  []*tools.Tool        // its Tools, read once
	status []tools.ServerStatus // its servers at session start
}

// traits is what the toolset says of one of its own tools.
func (ot *openToolset) traits(t *tools.Tool) tools.ToolTraits {
	if tr, ok := ot.open.(tools.ToolsetTraits); ok {
		return tr.Traits(t)
	}
	return tools.ToolTraits{}
}

// mayOffer returns the servers of the toolset that failed and could have
// a tool named name (tools.ToolOfferer).
func (ot *openToolset) mayOffer(name string) []string {
	if o, ok := ot.open.(tools.ToolOfferer); ok {
		return o.MayOffer(name)
	}
	return nil
}

// toolsetsMayOffer reports whether name could be a tool of a part of a
// toolset that failed (an MCP server that did not connect): its tools are
// unknown, so naming one is not an error.
func (r *run) toolsetsMayOffer(name string) bool {
	for _, ot := range r.toolsets {
		if len(ot.mayOffer(name)) > 0 {
			return true
		}
	}
	return false
}

// serverStatus is every toolset's servers, in the order of the toolsets,
// for session_start.
func (r *run) serverStatus() []tools.ServerStatus {
	var out []tools.ServerStatus
	for _, ot := range r.toolsets {
		out = append(out, ot.status...)
	}
	return out
}

// closeToolsets closes the opened toolsets, the last opened first.
func (r *run) closeToolsets() {
	for i := len(r.toolsets) - 1; i >= 0; i-- {
		r.toolsets[i].open.Close()
	}
	r.toolsets = nil
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

// Writers passes the recorder's set of writers on (see
// confined.WritersRecorder), when it keeps one.
func (l *lateRecorder) Writers() *sandbox.Writers {
	l.mu.Lock()
	rec := l.rec
	l.mu.Unlock()
	if w, ok := rec.(confined.WritersRecorder); ok {
		return w.Writers()
	}
	return nil
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
