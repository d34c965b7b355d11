package tools

import (
	"context"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
)

// TestSecurityLevelsOrdering: each declaration's words in their order
// (none < workspace < unrestricted / external; "" is none), a word nobody
// knows failing closed, and a tool's network the sandbox's own mode — one
// type, so there is no second ordering to drift from
// sandbox.NetworkMode.Within.
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
	var mode sandbox.NetworkMode = declared
	if !mode.Within(sandbox.NetworkPrivate) || NarrowerNetwork(sandbox.NetworkUnrestricted, declared) != sandbox.NetworkLoopback {
		t.Errorf("tools.Network and sandbox.NetworkMode disagree on %q", declared)
	}
}

// TestHandlerPolicyDomainsOnlyForUnrestricted: the ceiling's domain
// proxy (its grants and its asker) reaches a handler only when the
// handler declared unrestricted network. A handler declaring none,
// loopback or private, or a word nobody knows, gets neither: before, it
// kept the ceiling's AllowDomains (a proxy to them) and OnUnknownDomain
// (questions to the person about any other host).
func TestHandlerPolicyDomainsOnlyForUnrestricted(t *testing.T) {
	ceiling := sandbox.Policy{
		Network:       sandbox.NetworkNone,
		AllowDomains:  []string{"goproxy.example.com"},
		DenyDomains:   []string{"evil.example"},
		DomainSources: map[string]string{"goproxy.example.com": "--allow-domain goproxy.example.com"},
		OnUnknownDomain: func(context.Context, sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
			return sandbox.DomainAllowOnce, nil
		},
	}
	for _, tc := range []struct {
		network Network
		proxy   bool
	}{
		{NetworkNone, false}, {NetworkLoopback, false}, {NetworkPrivate, false}, {"sideways", false},
		{NetworkUnrestricted, true},
	} {
		p, err := HandlerPolicy(ceiling, &Security{Network: tc.network})
		if err != nil {
			t.Fatal(err)
		}
		got := len(p.AllowDomains) > 0 || len(p.DenyDomains) > 0 || len(p.DomainSources) > 0 || p.OnUnknownDomain != nil
		if got != tc.proxy || (tc.proxy && (len(p.AllowDomains) != 1 || len(p.DenyDomains) != 1 || p.OnUnknownDomain == nil)) {
			t.Errorf("network %q: domains %v / %v, asker %v; want the proxy: %v", tc.network, p.AllowDomains, p.DenyDomains, p.OnUnknownDomain != nil, tc.proxy)
		}
		if p.Network != sandbox.NetworkNone {
			t.Errorf("network %q under a ceiling of none: %q", tc.network, p.Network)
		}
	}
	// An undeclared handler gets the ceiling, as before (the strict
	// assembler refuses such tools).
	if p, _ := HandlerPolicy(ceiling, nil); len(p.AllowDomains) != 1 || p.OnUnknownDomain == nil {
		t.Errorf("undeclared: %+v", p)
	}
}
