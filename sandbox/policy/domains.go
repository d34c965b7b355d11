package policy

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
