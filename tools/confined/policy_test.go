package confined

import (
	"context"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// TestHandlerPolicyDomainsOnlyForUnrestricted: the ceiling's domain
// proxy (its grants and its asker) reaches a handler only when the
// handler declared unrestricted network. A handler declaring none,
// loopback or private gets neither: with them it would have a proxy to
// the allowed domains and a way to put questions to the person about any
// other host.
func TestHandlerPolicyDomainsOnlyForUnrestricted(t *testing.T) {
	for _, mode := range []sandbox.NetworkMode{sandbox.NetworkNone, sandbox.NetworkPrivate} {
		ceiling := sandbox.Policy{
			Network:       mode,
			AllowDomains:  []string{"goproxy.example.com"},
			DenyDomains:   []string{"evil.example"},
			DomainSources: map[string]string{"goproxy.example.com": "--allow-domain goproxy.example.com"},
			OnUnknownDomain: func(context.Context, sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
				return sandbox.DomainAllowOnce, nil
			},
		}
		for _, tc := range []struct {
			network tools.Network
			proxy   bool
		}{
			{tools.NetworkNone, false}, {tools.NetworkLoopback, false}, {tools.NetworkPrivate, false},
			{tools.NetworkUnrestricted, true},
		} {
			if !tc.network.Within(mode) && tc.network != tools.NetworkUnrestricted {
				continue // refused: TestHandlerPolicyRefusesWiderNetwork
			}
			p, err := HandlerPolicy(ceiling, &tools.Security{Network: tc.network})
			if err != nil {
				t.Fatalf("ceiling %s, declared %s: %v", mode, tc.network, err)
			}
			got := len(p.AllowDomains) > 0 || len(p.DenyDomains) > 0 || len(p.DomainSources) > 0 || p.OnUnknownDomain != nil
			if got != tc.proxy || (tc.proxy && (len(p.AllowDomains) != 1 || len(p.DenyDomains) != 1 || p.OnUnknownDomain == nil)) {
				t.Errorf("ceiling %s, network %q: domains %v / %v, asker %v; want the proxy: %v", mode, tc.network, p.AllowDomains, p.DenyDomains, p.OnUnknownDomain != nil, tc.proxy)
			}
			if want := mode.Narrower(tc.network); p.Network != want {
				t.Errorf("ceiling %s, network %q: the handler's mode is %q, want %q", mode, tc.network, p.Network, want)
			}
		}
		// An undeclared handler gets the ceiling (the strict assembler
		// refuses such tools).
		if p, _ := HandlerPolicy(ceiling, nil); len(p.AllowDomains) != 1 || p.OnUnknownDomain == nil || p.Network != mode {
			t.Errorf("undeclared: %+v", p)
		}
	}
}

// TestHandlerPolicyRefusesWiderNetwork: a handler declaring more network
// than its ceiling gives is an error naming both, never a silent
// narrowing — its tool would otherwise pass every check and then fail at
// its first connection. (HandlerPolicy used to return the ceiling's mode
// for it without a word.) Unrestricted under a ceiling that grants
// domains is within it: the proxy is that ceiling's way out, as it is
// its commands'.
func TestHandlerPolicyRefusesWiderNetwork(t *testing.T) {
	domains := []string{"goproxy.example.com"}
	for _, tc := range []struct {
		ceiling  sandbox.NetworkMode
		domains  []string
		declared tools.Network
		ok       bool
	}{
		{"", nil, tools.NetworkNone, true},
		{"", nil, tools.NetworkLoopback, false},
		{sandbox.NetworkNone, nil, tools.NetworkLoopback, false},
		{sandbox.NetworkNone, nil, tools.NetworkPrivate, false},
		{sandbox.NetworkNone, nil, tools.NetworkUnrestricted, false},
		{sandbox.NetworkNone, domains, tools.NetworkUnrestricted, true},
		{sandbox.NetworkNone, domains, tools.NetworkLoopback, false},
		{sandbox.NetworkLoopback, nil, tools.NetworkLoopback, true},
		{sandbox.NetworkLoopback, nil, tools.NetworkPrivate, false},
		{sandbox.NetworkPrivate, nil, tools.NetworkLoopback, true},
		{sandbox.NetworkUnrestricted, nil, tools.NetworkUnrestricted, true},
		// A word nobody knows is within nothing (Security.Validate
		// refuses it at tools.New; this is the last line).
		{sandbox.NetworkUnrestricted, nil, "sideways", false},
	} {
		ceiling := sandbox.Policy{Network: tc.ceiling, AllowDomains: tc.domains}
		sec := &tools.Security{Network: tc.declared}
		p, err := HandlerPolicy(ceiling, sec)
		if cerr := CheckNetwork(ceiling, sec); (cerr == nil) != (err == nil) {
			t.Errorf("ceiling %q %v, declared %q: CheckNetwork %v but HandlerPolicy %v", tc.ceiling, tc.domains, tc.declared, cerr, err)
		}
		if tc.ok {
			if err != nil {
				t.Errorf("ceiling %q %v, declared %q: %v", tc.ceiling, tc.domains, tc.declared, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("ceiling %q %v, declared %q: accepted, the handler narrowed to %q", tc.ceiling, tc.domains, tc.declared, p.Network)
			continue
		}
		limit := string(tc.ceiling)
		if limit == "" {
			limit = "none"
		}
		for _, want := range []string{`declares network "` + string(tc.declared) + `"`, `beyond the "` + limit + `" its handler ceiling allows`, "HandlerCeiling"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ceiling %q, declared %q: %q lacks %q", tc.ceiling, tc.declared, err, want)
			}
		}
	}
	if err := CheckNetwork(sandbox.Policy{}, nil); err != nil {
		t.Errorf("an undeclared tool: %v", err)
	}
}
