package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Grant is one entry of an allow or deny list, with where it came from.
type Grant struct {
	// Pattern is "example.com" (that name), "*.example.com" (its
	// subdomains, not the name itself), either with ":PORT" to admit one
	// port only, or a literal "IP" / "IP:PORT" / "[IPv6]:PORT".
	Pattern string
	// Source says where the grant came from, as the person would write it
	// ("--allow-domain example.com", "policy.toml:12"). Empty means the
	// pattern itself. It is what refusals and events show.
	Source string
}

// rule is a parsed Grant.
type rule struct {
	g        Grant
	name     string     // lower-case name without the "*." ("" for an IP)
	wildcard bool       // "*.name": subdomains of name
	ip       netip.Addr // valid for a literal IP grant
	port     int        // 0: any port
}

// Rules is the one decision of the domain proxy: which host and port a
// confined program (or the web_fetch tool) may reach, and at which
// address. It is safe for concurrent use.
type Rules struct {
	allow, deny []rule
	resolve     func(ctx context.Context, host string) ([]netip.Addr, error)
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	asking      *asking // nil: an unknown host is refused without asking
}

// Decision is the outcome of Rules.Check.
type Decision struct {
	Allow bool
	// Rule is the grant that allowed (its Source), or the reason for a
	// refusal: the deny entry's source, or what would allow it.
	Rule string
	// Addrs are the addresses to dial, already checked (allowed only).
	Addrs []netip.Addr
}

// ErrRefused wraps every refusal by Check/Dial.
var ErrRefused = errors.New("refused by the sandbox's domain allowlist")

// RefusedError is a refusal, with the text the person and the model see.
type RefusedError struct {
	Host string
	Port int
	Msg  string // a full sentence: what was refused, why, and what would allow it
	Rule string
}

func (e *RefusedError) Error() string { return e.Msg }
func (e *RefusedError) Unwrap() error { return ErrRefused }

func parseRule(g Grant) (rule, error) {
	p := strings.TrimSpace(g.Pattern)
	if g.Source == "" {
		g.Source = p
	}
	r := rule{g: g}
	if p == "" {
		return r, fmt.Errorf("empty domain grant")
	}
	// A literal IP, with or without a port.
	if ip, err := netip.ParseAddr(strings.Trim(p, "[]")); err == nil {
		r.ip = ip.Unmap().WithZone("")
		return r, nil
	}
	if ap, err := netip.ParseAddrPort(p); err == nil {
		if ap.Port() == 0 {
			return r, fmt.Errorf("domain grant %q: port 0", p)
		}
		r.ip, r.port = ap.Addr().Unmap().WithZone(""), int(ap.Port())
		return r, nil
	}
	name := p
	if h, port, err := net.SplitHostPort(p); err == nil {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 {
			return r, fmt.Errorf("domain grant %q: bad port %q", p, port)
		}
		name, r.port = h, n
	}
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		r.wildcard, name = true, rest
	}
	name = canonicalName(name)
	if !validName(name) {
		return r, fmt.Errorf("domain grant %q: not a domain name, *.domain, IP or IP:PORT", p)
	}
	r.name = name
	return r, nil
}

// canonicalName lower-cases a name and drops one trailing dot, so that
// "Example.COM." and "example.com" are the same host for every rule.
func canonicalName(s string) string {
	return strings.TrimSuffix(strings.ToLower(s), ".")
}

// validName accepts LDH labels (and '_', which some registries' hosts
// use). Anything else — a '*' inside, empty labels, spaces, non-ASCII —
// is refused rather than matched in some surprising way.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	// A name that ends in a number is an address to the C resolver
	// (glibc's inet_aton: 01.2.3.4 is 1.2.3.4, 010.0.0.1 is 8.0.0.1,
	// 2130706433 and 0x7f000001 are 127.0.0.1) while it is a name to the
	// rules — an IP deny entry would not match it. Refused, as the URL
	// standard refuses such hosts; no top-level domain is numeric.
	if endsInNumber(labels[len(labels)-1]) {
		return false
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// endsInNumber says whether a last label is a number to inet_aton:
// decimal digits, or 0x followed by hex digits (or nothing).
func endsInNumber(label string) bool {
	if h, ok := strings.CutPrefix(label, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}

// Options configure NewRules.
type Options struct {
	Allow, Deny []Grant
	// Resolve replaces DNS (tests: a name resolves to a test address with
	// no DNS server). nil uses the system resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial replaces net.Dialer.DialContext for the upstream connections
	// (tests). It is given a checked IP:PORT, never a name.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Ask, when set, is asked about a host that no allow or deny entry
	// names, instead of refusing it at once (an interactive session);
	// the connection is held until the answer. Deny entries still win
	// and are never asked about, and an allowed name is still refused if
	// it resolves to a non-public address. nil refuses, as without a
	// person to ask.
	Ask Asker
	// AskTimeout bounds the wait for an answer (DefaultAskTimeout when
	// zero); no answer refuses.
	AskTimeout time.Duration
}

// NewRules parses the grants. A malformed pattern is an error naming it.
func NewRules(opts Options) (*Rules, error) {
	r := &Rules{resolve: opts.Resolve, dial: opts.Dial}
	if opts.Ask != nil {
		r.asking = &asking{ask: opts.Ask, timeout: opts.AskTimeout, flights: map[string]*flight{}, refused: map[string]bool{}}
		if r.asking.timeout <= 0 {
			r.asking.timeout = DefaultAskTimeout
		}
	}
	for _, g := range opts.Allow {
		x, err := parseRule(g)
		if err != nil {
			return nil, err
		}
		r.allow = append(r.allow, x)
	}
	for _, g := range opts.Deny {
		x, err := parseRule(g)
		if err != nil {
			return nil, err
		}
		r.deny = append(r.deny, x)
	}
	if r.resolve == nil {
		r.resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if r.dial == nil {
		d := &net.Dialer{}
		r.dial = d.DialContext
	}
	return r, nil
}

// matches says whether rule x covers the host (a canonical name, or an IP
// when ip is valid) and port.
func (x rule) matches(host string, ip netip.Addr, port int) bool {
	if x.port != 0 && x.port != port {
		return false
	}
	if x.ip.IsValid() {
		return ip.IsValid() && ip == x.ip
	}
	if ip.IsValid() {
		return false // a name grant never admits an IP literal
	}
	if x.wildcard {
		return strings.HasSuffix(host, "."+x.name)
	}
	return host == x.name
}

// Check decides host:port: deny entries first (deny wins), then the allow
// list, then — for names — the addresses the name resolves to. Only a
// literal IP grant reaches a loopback, private, link-local, multicast,
// unspecified or otherwise non-public address: a granted name that
// resolves to one (DNS rebinding) is refused. The addresses returned are
// the only ones to dial: the name is never resolved again, so the answer
// cannot change between the check and the connection.
func (r *Rules) Check(ctx context.Context, host string, port int) (Decision, error) {
	if port < 1 || port > 65535 {
		return r.refuse(host, port, "", fmt.Sprintf("port %d is not valid", port))
	}
	h, ip, valid := canonicalHost(host)
	if !valid {
		return r.refuse(host, port, "", fmt.Sprintf("%q is not a host name", host))
	}
	deny, grant := r.lookup(h, ip, port)
	if deny != nil {
		return r.refuse(h, port, deny.g.Source, fmt.Sprintf("%s is denied by %q", h, deny.g.Source))
	}
	if grant == nil && r.asking != nil {
		var d Decision
		var err error
		if grant, d, err = r.ask(ctx, h, ip, port); grant == nil {
			return d, err
		}
	}
	if grant == nil {
		// The event's rule says what would allow it, as the 403 body does.
		return r.refuse(h, port, "not allowed (--allow-domain "+suggest(h, ip, port)+" would allow it)", fmt.Sprintf("%s is not in the sandbox's allowed domains; allow it with --allow-domain %s (or allow_domains in the [sandbox] table of a policy file)", hostPort(h, port), suggest(h, ip, port)))
	}
	if ip.IsValid() {
		// An explicit IP grant: the person named this very address.
		return Decision{Allow: true, Rule: grant.g.Source, Addrs: []netip.Addr{ip}}, nil
	}
	addrs, err := r.resolve(ctx, h)
	if err != nil {
		return Decision{Rule: grant.g.Source}, fmt.Errorf("resolving %s: %w", h, err)
	}
	var ok []netip.Addr
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		if why := nonPublic(a); why != "" {
			// One bad answer refuses the name: a resolver that mixes a
			// public and a loopback answer is an attack, not a fallback.
			return r.refuse(h, port, grant.g.Source, fmt.Sprintf("%s resolves to %s, %s; only an explicit IP grant (--allow-domain %s) reaches such an address", h, a, why, hostPort(a.String(), port)))
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return Decision{Rule: grant.g.Source}, fmt.Errorf("resolving %s: no addresses", h)
	}
	return Decision{Allow: true, Rule: grant.g.Source, Addrs: ok}, nil
}

// lookup is the grants' part of every decision (Check, Direct): the
// first deny entry that covers the host and port (it wins), else the
// first allow entry, else neither.
func (r *Rules) lookup(h string, ip netip.Addr, port int) (deny, grant *rule) {
	for i := range r.deny {
		if r.deny[i].matches(h, ip, port) {
			return &r.deny[i], nil
		}
	}
	for i := range r.allow {
		if r.allow[i].matches(h, ip, port) {
			return nil, &r.allow[i]
		}
	}
	return nil, nil
}

// Direct decides a connection that a confined command makes itself, not
// through the proxy, to the literal address ap: what a client does for a
// loopback registry mirror (NO_PROXY names loopback, and Go's net/http
// never proxies it). It admits ap only under a literal IP or IP:PORT
// allow entry (an IP without a port covers every port), and no deny
// entry may cover it — the lookup Check makes for an IP literal, so a
// grant reaches the same addresses through the proxy and around it. A
// name grant never admits a direct connection: the name would have to be
// resolved inside the sandbox, where nothing resolves, and its answer is
// checked for rebinding only by the proxy. Nobody is asked and session
// answers do not count: the connection is a system call held in the
// kernel, and a question belongs to the proxy, where the 403 explains a
// refusal. rule is the grant's Source, for the event.
func (r *Rules) Direct(ap netip.AddrPort) (rule string, ok bool) {
	ip := ap.Addr().Unmap().WithZone("")
	if !ip.IsValid() || ap.Port() == 0 {
		return "", false
	}
	deny, grant := r.lookup(ip.String(), ip, int(ap.Port()))
	if deny != nil || grant == nil || !grant.ip.IsValid() {
		return "", false
	}
	return grant.g.Source, true
}

// ask decides a host no entry names by an earlier answer of this session
// or by asking, and returns the grant that admits it, or nil and the
// refusal. The refusal's text still names the flag that would allow it
// without asking.
func (r *Rules) ask(ctx context.Context, h string, ip netip.Addr, port int) (*rule, Decision, error) {
	q := Question{Host: h, Port: port, Grant: suggest(h, ip, port)}
	if ip.IsValid() {
		// A yes to a non-public IP:PORT is the explicit grant that
		// reaches it: the person is told what the address is.
		q.Note = nonPublic(ip)
	}
	// A "no" to this very host:port wins over a "session" yes to the
	// name given since: the person refused what they were shown.
	var ans Answer
	var err error
	rl, why := answerRule(Refuse), "you refused it when asked"
	if r.asking.refusedBefore(q) {
		rl, why = "asked earlier: denied", "you refused it when asked earlier in this session"
	} else {
		if x := r.asking.sessionGrant(h, ip, port); x != nil {
			return x, Decision{}, nil
		}
		ans, err = r.asking.decide(ctx, q)
		if ans != Refuse {
			return &rule{g: Grant{Pattern: q.Grant, Source: answerRule(ans)}}, Decision{}, nil
		}
	}
	switch {
	case errors.Is(err, ErrTooManyQuestions):
		rl, why = "not asked: "+err.Error(), "it was not asked about ("+err.Error()+")"
	case err != nil:
		rl, why = "asked: no answer ("+err.Error()+")", "it was asked about and got no answer ("+err.Error()+")"
	}
	d, rerr := r.refuse(h, port, rl, fmt.Sprintf("%s is not in the sandbox's allowed domains and %s; allow it with --allow-domain %s (or allow_domains in the [sandbox] table of a policy file)", hostPort(h, port), why, q.Grant))
	return nil, d, rerr
}

func (r *Rules) refuse(host string, port int, rule, why string) (Decision, error) {
	msg := "lite-agent sandbox: connection to " + hostPort(host, port) + " refused: " + why
	if rule == "" {
		rule = "not allowed"
	}
	return Decision{Rule: rule}, &RefusedError{Host: host, Port: port, Msg: msg, Rule: rule}
}

// suggest is the grant to propose for a refused host.
func suggest(h string, ip netip.Addr, port int) string {
	if ip.IsValid() {
		return hostPort(ip.String(), port)
	}
	return h
}

func hostPort(h string, port int) string {
	return net.JoinHostPort(h, strconv.Itoa(port))
}

// Special-purpose ranges a name must not resolve to, beyond what netip's
// predicates cover (see nonPublic).
var (
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")     // carrier-grade NAT; Alibaba's metadata 100.100.100.200
	thisNet     = netip.MustParsePrefix("0.0.0.0/8")         // "this network": 0.x.y.z reaches the local host
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")       // reserved, and broadcast
	benchmark4  = netip.MustParsePrefix("198.18.0.0/15")     // benchmarking, often lab networks
	nat64       = netip.MustParsePrefix("64:ff9b::/96")      // embeds an IPv4 address
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48")    // local-use NAT64
	sixToFour   = netip.MustParsePrefix("2002::/16")         // 6to4: embeds an IPv4 address
	ietf4       = netip.MustParsePrefix("192.0.0.0/24")      // IETF protocol assignments
	discard6    = netip.MustParsePrefix("100::/64")          // discard-only
	siteLocal6  = netip.MustParsePrefix("fec0::/10")         // deprecated site-local, still routed locally
	documentIP6 = netip.MustParsePrefix("2001:db8::/32")     // documentation
	teredo      = netip.MustParsePrefix("2001::/32")         // Teredo: embeds an (obfuscated) IPv4 address
	metadataV6  = netip.MustParsePrefix("fd00:ec2::254/128") // AWS's IPv6 metadata (also in fc00::/7)
)

// nonPublic says why a resolved address must not be reached through a
// name grant, or "" when it is a public unicast address. Metadata services
// (169.254.169.254, fd00:ec2::254, 100.100.100.200) fall in the
// link-local, private and shared ranges.
func nonPublic(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "not an address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified() || thisNet.Contains(a):
		return "an unspecified address (it reaches this machine's own services)"
	case a.IsLinkLocalUnicast():
		return "a link-local address (cloud metadata services live there)"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return "a multicast address"
	case metadataV6.Contains(a):
		return "a cloud metadata address"
	case a.IsPrivate():
		return "a private address"
	case sharedSpace.Contains(a):
		return "a shared (carrier-grade NAT) address"
	case reserved4.Contains(a), benchmark4.Contains(a), ietf4.Contains(a), discard6.Contains(a), siteLocal6.Contains(a), documentIP6.Contains(a), teredo.Contains(a):
		return "a reserved address"
	case nat64.Contains(a), nat64Local.Contains(a):
		b := a.As16()
		if why := nonPublic(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
			return "a NAT64 address of " + why
		}
	case sixToFour.Contains(a):
		b := a.As16()
		if why := nonPublic(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
			return "a 6to4 address of " + why
		}
	}
	return ""
}

// Dial checks host:port and connects to the first checked address that
// answers. It is the only way the proxy (and web_fetch) reach upstream.
func (r *Rules) Dial(ctx context.Context, host string, port int) (net.Conn, Decision, error) {
	d, err := r.Check(ctx, host, port)
	if err != nil {
		return nil, d, err
	}
	var last error
	for _, a := range d.Addrs {
		c, err := r.dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, d, nil
		}
		last = err
	}
	return nil, d, last
}

// Pattern is one grant pattern on its own, matched by name without
// resolving: what a permission rule such as web_fetch(domain:*.example.com)
// needs. It is the same grammar and the same matching as Rules (one
// implementation); the addresses are still checked by Rules when the
// connection is made.
type Pattern struct{ r rule }

// ParsePattern parses a grant pattern (see Grant.Pattern).
func ParsePattern(p string) (*Pattern, error) {
	r, err := parseRule(Grant{Pattern: p})
	if err != nil {
		return nil, err
	}
	return &Pattern{r}, nil
}

// Matches reports whether host (a name or an IP literal, any case, with
// or without brackets or a trailing dot) and port fall under the pattern.
func (p *Pattern) Matches(host string, port int) bool {
	h, ip, ok := canonicalHost(host)
	return ok && p.r.matches(h, ip, port)
}

// canonicalHost is the one reading of a requested host: an IP literal
// (brackets, zone and IPv4 mapping dropped) or a lower-case name without
// a trailing dot. ok is false for anything else.
func canonicalHost(host string) (h string, ip netip.Addr, ok bool) {
	h = canonicalName(strings.Trim(host, "[]"))
	if a, err := netip.ParseAddr(h); err == nil {
		ip = a.Unmap().WithZone("")
		return ip.String(), ip, true
	}
	return h, netip.Addr{}, validName(h)
}
