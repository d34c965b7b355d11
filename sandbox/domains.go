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
			return d.answer(), err
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

// DomainQuestion is what Policy.OnUnknownDomain is asked: a command (or
// web_fetch) is connecting through the proxy to a host that neither
// AllowDomains nor DenyDomains names, and the proxy holds the connection
// until the answer.
type DomainQuestion struct {
	Host string // a lower-case name or an IP literal
	Port int
	// Grant is what DomainAllowSession adds to the session and what
	// DomainAllowAlways should write to allow_domains: the name (every
	// port), or IP:PORT for an IP literal.
	Grant string
	// Note, for an IP literal that is not a public address, says what it
	// is ("a loopback address"): a yes reaches it, as an explicit grant
	// would. Empty otherwise.
	Note string
}

// DomainDecision is the answer to a DomainQuestion.
type DomainDecision int

const (
	// DomainRefuse refuses the connection (HTTP 403 naming the flag),
	// as without a question, and that host:port is refused again without
	// a question for the proxy's life.
	DomainRefuse DomainDecision = iota
	// DomainAllowOnce admits the connections held for this question (its
	// host and port only).
	DomainAllowOnce
	// DomainAllowSession admits the host for the rest of the sandbox's
	// life (the kernel keeps it for the session).
	DomainAllowSession
	// DomainAllowAlways is DomainAllowSession; the one who answered keeps
	// the grant for later sessions (allow_domains in a policy file).
	DomainAllowAlways
)

func (d DomainDecision) answer() netproxy.Answer {
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
