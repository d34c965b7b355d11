package sandbox

import (
	"context"
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
	if ask := q.OnUnknownDomain; ask != nil {
		opts.Ask = func(ctx context.Context, nq netproxy.Question) (netproxy.Answer, error) {
			d, err := ask(ctx, DomainQuestion(nq))
			return decisionAnswer(d), err
		}
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

// decisionAnswer is the proxy's answer for d; a value not named in
// package policy refuses.
func decisionAnswer(d DomainDecision) netproxy.Answer {
	switch d {
	case DomainAllowOnce:
		return netproxy.AllowOnce
	case DomainAllowSession:
		return netproxy.AllowSession
	case DomainAllowAlways:
		return netproxy.AllowAlways
	}
	return netproxy.Refuse // and any value not named above
}

// ProxyVariables are the variables that point each ecosystem's HTTP
// client at the proxy u, loopback excepted: the domain proxy's URL when
// domains are granted (proxyEnv), and policies' offline marker — a proxy
// URL that cannot resolve and names the grant — when the network is
// none. One list, so the two cannot drift.
func ProxyVariables(u string) [][2]string {
	// Loopback stays direct: the command's own test servers (and, under
	// loopback/private, the local services the mode allows) are reached
	// without the proxy, which would refuse them.
	const noProxy = "localhost,127.0.0.1,::1"
	return [][2]string{
		{"HTTP_PROXY", u}, {"HTTPS_PROXY", u}, {"http_proxy", u}, {"https_proxy", u},
		{"NO_PROXY", noProxy}, {"no_proxy", noProxy},
		{"npm_config_proxy", u}, {"npm_config_https_proxy", u}, {"npm_config_noproxy", noProxy},
		{"YARN_HTTP_PROXY", u}, {"YARN_HTTPS_PROXY", u},
		{"PIP_PROXY", u},
		{"CARGO_HTTP_PROXY", u},
		// Node 24+: fetch and http(s) honour HTTP(S)_PROXY with it.
		{"NODE_USE_ENV_PROXY", "1"},
	}
}
