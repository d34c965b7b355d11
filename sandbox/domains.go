package sandbox

import (
	"fmt"

	"github.com/lite-agent/lite-agent/internal/netproxy"
)

// testProxyOptions, set only by tests, adjusts the proxy's options before
// it starts (a resolver that maps a name to a test address without DNS).
var testProxyOptions func(*netproxy.Options)

// domainRules builds the proxy's one decision from the policy's grants.
// validate.go calls it too, so a malformed grant fails at New, on every
// platform, with the pattern named.
func domainRules(q Policy) (*netproxy.Rules, error) {
	opts := netproxy.Options{}
	src := func(p, def string) string {
		if s := q.DomainSources[p]; s != "" {
			return s
		}
		return def
	}
	for _, d := range q.AllowDomains {
		opts.Allow = append(opts.Allow, netproxy.Grant{Pattern: d, Source: src(d, d)})
	}
	for _, d := range q.DenyDomains {
		opts.Deny = append(opts.Deny, netproxy.Grant{Pattern: d, Source: src(d, d)})
	}
	if testProxyOptions != nil {
		testProxyOptions(&opts)
	}
	r, err := netproxy.NewRules(opts)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return r, nil
}
