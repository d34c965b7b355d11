package mcp

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

// Toolset is a session's MCP servers as a tools.Toolset, the form in which
// the kernel is handed them (kernel.Options.Toolsets): each session opens
// it, which starts a Manager over the servers and waits until each has
// connected or failed, and closes it at the end.
type Toolset struct {
	opts  Options
	names []string
}

// NewToolset checks every server's configuration and returns the toolset
// of those servers. Of opts, Servers, MaxNetwork, ConnectTimeout,
// ShutdownGrace and Logger are the toolset's; Sandbox, BeforeChange,
// ForeignChange and Writers are the session's — Open takes them from the kernel (its
// handler ceiling, its checkpointer) — and setting them is an error.
//
// MaxNetwork both refuses servers that declare a wider network and is the
// network the ceiling gives them: a named grant, as under the permissive
// preset, whose servers may reach what commands reach. Without it a server
// gets at most the session's handler ceiling's network, whatever it
// declares.
func NewToolset(opts *Options) (*Toolset, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Sandbox != nil || o.BeforeChange != nil || o.ForeignChange != nil || o.Writers != nil {
		return nil, errors.New("mcp: NewToolset: Options.Sandbox, BeforeChange, ForeignChange and Writers are the session's (the kernel passes its handler ceiling and its checkpointer when it opens the toolset); leave them unset, or drive a Manager yourself")
	}
	// The checks NewManager makes at every Open, made once here, so that
	// a bad entry fails where the toolset is built.
	if _, err := NewManager(&o); err != nil {
		return nil, err
	}
	ts := &Toolset{opts: o}
	for name := range o.Servers {
		ts.names = append(ts.names, name)
	}
	sort.Strings(ts.names)
	return ts, nil
}

// Servers returns the names of the toolset's servers, sorted.
func (ts *Toolset) Servers() []string { return append([]string(nil), ts.names...) }

// MaxNetwork is the widest network a server may declare, and the network
// the handler ceiling gives them; empty: no cap (see NewToolset).
func (ts *Toolset) MaxNetwork() tools.Network { return ts.opts.MaxNetwork }

// Open starts the servers for one session and waits until each has
// connected or failed (each bounded by ConnectTimeout); a server that
// fails is reported in the returned Manager's Status and leaves the
// session going. Stdio servers run in the sandbox under env.Sandbox (with
// MaxNetwork's network when set), narrowed to what their entries declare;
// with env.Snapshots, what a server that may write the workspace changes
// there is recorded for checkpoints like a command's changes.
func (ts *Toolset) Open(ctx context.Context, env *tools.ToolsetEnv) (tools.OpenToolset, error) {
	if env == nil {
		env = &tools.ToolsetEnv{}
	}
	o := ts.opts
	base := env.Sandbox
	if o.MaxNetwork != "" {
		base.Network = o.MaxNetwork
	}
	// A server's changes are reported through BeforeChange, not by the
	// sandbox's own capture.
	base.CaptureChanges = false
	o.Sandbox = &base
	if env.Snapshots != nil {
		tc := &tools.Context{Workspace: env.Workspace, Snapshots: env.Snapshots}
		o.BeforeChange, o.ForeignChange, o.Writers = tc.BeforeChange(), tc.ForeignChange(), confined.Writers(tc)
	}
	m, err := NewManager(&o)
	if err != nil {
		return nil, err
	}
	m.Connect(ctx)
	return m, nil
}

// KnownTools returns the tools of the in-process servers, which are known
// before anything connects (tools.ToolsetPreview): their names can be
// checked in rules, and their handlers run confined like custom tools, so
// they must be handed to confined.Serve.
func (ts *Toolset) KnownTools() []*tools.Tool {
	var out []*tools.Tool
	for _, name := range ts.names {
		if s := ts.opts.Servers[name].Server; s != nil {
			out = append(out, s.Tools()...)
		}
	}
	return out
}

// MayOffer returns the external servers whose tools could include one
// named name (tools.ToolOfferer): their tools are only listed once they
// connect. For the resource tools, every server (mayOffer).
func (ts *Toolset) MayOffer(name string) []string {
	return mayOffer(name, ts.names, func(n string) bool { return ts.opts.Servers[n].Server == nil })
}

// String names the toolset in errors and logs.
func (ts *Toolset) String() string { return fmt.Sprintf("MCP servers %v", ts.names) }
