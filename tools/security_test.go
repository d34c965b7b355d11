package tools

import (
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/policy"
)

// TestSecurityLevelsOrdering: each declaration's words in their order
// (none < workspace < unrestricted / external; "" is none), a word nobody
// knows failing closed, and a tool's network the sandbox's own mode — one
// type, so there is no second ordering to drift from
// policy.NetworkMode.Within (sandbox.NetworkMode).
func TestSecurityLevelsOrdering(t *testing.T) {
	fs := []struct {
		a, b   Filesystem
		within bool
		wider  Filesystem
	}{
		{FilesystemNone, FilesystemWorkspace, true, FilesystemWorkspace},
		{FilesystemWorkspace, FilesystemNone, false, FilesystemWorkspace},
		{FilesystemWorkspace, FilesystemUnrestricted, true, FilesystemUnrestricted},
		{FilesystemUnrestricted, FilesystemWorkspace, false, FilesystemUnrestricted},
		{"", FilesystemNone, true, FilesystemNone},
		{FilesystemWorkspace, "", false, FilesystemWorkspace},
		// Before, mcp's fsRank ranked an unknown word as none (tools.New
		// refuses one, so it did not show; the ordering fails closed now
		// whoever calls it).
		{"everything", FilesystemUnrestricted, false, "everything"},
		{FilesystemNone, "everything", false, "everything"},
	}
	for _, c := range fs {
		if got := c.a.Within(c.b); got != c.within {
			t.Errorf("Filesystem %q.Within(%q) = %v", c.a, c.b, got)
		}
		if got := c.a.Wider(c.b); got != c.wider {
			t.Errorf("Filesystem %q.Wider(%q) = %q", c.a, c.b, got)
		}
	}
	se := []struct {
		a, b   SideEffects
		within bool
		wider  SideEffects
	}{
		{SideEffectsNone, SideEffectsWorkspace, true, SideEffectsWorkspace},
		{SideEffectsExternal, SideEffectsWorkspace, false, SideEffectsExternal},
		{SideEffectsWorkspace, SideEffectsExternal, true, SideEffectsExternal},
		{"", SideEffectsNone, true, SideEffectsNone},
		{"worldwide", SideEffectsExternal, false, "worldwide"},
	}
	for _, c := range se {
		if got := c.a.Within(c.b); got != c.within {
			t.Errorf("SideEffects %q.Within(%q) = %v", c.a, c.b, got)
		}
		if got := c.a.Wider(c.b); got != c.wider {
			t.Errorf("SideEffects %q.Wider(%q) = %q", c.a, c.b, got)
		}
	}
	// One type: a declaration is a sandbox mode without conversion.
	var declared Network = NetworkLoopback
	var mode policy.NetworkMode = declared
	if !mode.Within(policy.NetworkPrivate) || policy.NetworkUnrestricted.Narrower(declared) != policy.NetworkLoopback {
		t.Errorf("tools.Network and sandbox.NetworkMode disagree on %q", declared)
	}
}
