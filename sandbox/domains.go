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
	// as without a question; the next connection asks again.
	DomainRefuse DomainDecision = iota
	// DomainAllowOnce admits the connections held for this question.
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
