package mcp

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// TestToolset: what a kernel learns of a Toolset before it opens it (the
// in-process servers' tools, the names external servers may offer) and
// what Open hands the Manager (the session's ceiling with MaxNetwork's
// network, capture off, the session's recorder).
func TestToolset(t *testing.T) {
	srv := NewServer("docs", "1")
	count := AddTool(srv, tools.Must(tools.New("count", "Count words.",
		func(*tools.Context, echoArgs) (int, error) { return 0, nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}})))
	t.Cleanup(func() { srv.Close() })
	ts, err := NewToolset(&Options{
		Servers:    map[string]ServerConfig{"docs": {Server: srv}, "ext": {Command: "/nonexistent/server"}},
		MaxNetwork: tools.NetworkLoopback,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ts.KnownTools(); len(got) != 1 || got[0] != count {
		t.Errorf("known tools %v: the in-process server's own tool values", toolNames(got))
	}
	for name, want := range map[string][]string{
		"mcp__ext__anything":  {"ext"},
		"mcp__docs__anything": nil, // its tools are known: a name it lacks is a mistake
		"mcp__other__x":       nil,
		ListResourcesTool:     {"docs", "ext"},
		"bash":                nil,
	} {
		if got := ts.MayOffer(name); !slices.Equal(got, want) {
			t.Errorf("MayOffer(%q) = %v, want %v", name, got, want)
		}
	}
	if !slices.Equal(ts.Servers(), []string{"docs", "ext"}) {
		t.Errorf("servers %v", ts.Servers())
	}

	rec := &recorder{}
	open, err := ts.Open(context.Background(), &tools.ToolsetEnv{
		Workspace: t.TempDir(),
		Sandbox:   sandbox.Policy{Network: sandbox.NetworkNone, CaptureChanges: true, ReadOnlyPaths: []string{"/opt"}},
		Snapshots: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	m := open.(*Manager)
	t.Cleanup(func() { m.Close() })
	if p := m.opts.Sandbox; p.Network != sandbox.NetworkLoopback || p.CaptureChanges || !slices.Equal(p.ReadOnlyPaths, []string{"/opt"}) {
		t.Errorf("the servers' base policy %+v: want the session's with MaxNetwork's network and capture off", p)
	}
	if m.opts.BeforeChange == nil {
		t.Error("a session with a recorder: no change hook for stdio servers")
	}
	st := m.Status()
	if len(st) != 2 || st[0].State != StateConnected || st[1].State != StateFailed {
		t.Errorf("status %+v", st)
	}
	// Once open, only the server that failed may offer unknown names.
	if got := m.MayOffer("mcp__ext__anything"); !slices.Equal(got, []string{"ext"}) {
		t.Errorf("open MayOffer = %v", got)
	}
	if got := m.MayOffer("mcp__docs__anything"); got != nil {
		t.Errorf("open MayOffer of the connected server = %v", got)
	}

	// The session's parts are the session's.
	for _, o := range []*Options{
		{Sandbox: &sandbox.Policy{}},
		{BeforeChange: func([]string) error { return nil }},
	} {
		if _, err := NewToolset(o); err == nil || !strings.Contains(err.Error(), "are the session's") {
			t.Errorf("NewToolset(%+v): %v", o, err)
		}
	}
	// A bad entry fails where the toolset is built.
	if _, err := NewToolset(&Options{Servers: map[string]ServerConfig{"bad name__": {Command: "x"}}}); err == nil {
		t.Error("a bad server name was accepted")
	}
}

// recorder takes pre-images and records nothing.
type recorder struct{}

func (*recorder) RecordSnapshot(string) error { return nil }
