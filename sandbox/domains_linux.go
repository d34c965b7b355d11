//go:build linux

package sandbox

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/lite-agent/lite-agent/internal/netproxy"
	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
)

// startDomainProxy starts the proxy for q, reporting to q.OnNetwork.
func startDomainProxy(q Policy) (*netproxy.Proxy, error) {
	r, err := domainRules(q)
	if err != nil {
		return nil, err
	}
	var on func(netproxy.Event)
	if f := q.OnNetwork; f != nil {
		on = func(e netproxy.Event) {
			d := "deny"
			if e.Allow {
				d = "allow"
			}
			f(NetworkEvent{Host: e.Host, Port: e.Port, Decision: d, Rule: e.Rule, BytesUp: e.BytesUp, BytesDown: e.BytesDown})
		}
	}
	p, err := netproxy.Start(r, on)
	if err != nil {
		return nil, fmt.Errorf("sandbox: domain proxy: %w", err)
	}
	return p, nil
}

// withDomains adds the domain proxy's part to a notification server's
// options: the proxy's address, and the proxy's own decision for a
// connection around it (netproxy.Rules.Direct: the literal IP[:PORT]
// grants, minus deny entries), so that a client that goes direct to a
// granted loopback mirror — NO_PROXY names loopback, and Go never proxies
// it — reaches it under network none too. Such a connect is reported to
// OnNetwork as allowed, with the grant and "(direct)" for its rule and no
// byte counts: its bytes pass around the proxy. Without a proxy (no
// domains) o is unchanged: nothing beyond the mode.
func (s *Sandbox) withDomains(o notify.Options) notify.Options {
	if s.proxy == nil {
		return o
	}
	o.Proxy = s.proxy.Addr()
	o.DirectGrant = s.proxy.Rules().Direct
	if f := s.pol.OnNetwork; f != nil {
		o.OnDirect = func(ap netip.AddrPort, rule string) {
			f(NetworkEvent{Host: ap.Addr().String(), Port: int(ap.Port()), Decision: "allow", Rule: rule + " (direct)"})
		}
	}
	return o
}

// HTTPProxy is the URL of the sandbox's domain proxy ("http://127.0.0.1:PORT"),
// or "" when the policy grants no domains. In-process tools that fetch on
// the agent's behalf (web_fetch) go through it, so that they follow the
// same allowlist as the commands.
func (s *Sandbox) HTTPProxy() string {
	if s.proxy == nil {
		return ""
	}
	return s.proxy.URL()
}

// proxyEnv points every ecosystem's proxy setting at the proxy. They
// override what the command was given: nothing else is reachable anyway,
// and a stale proxy setting would only fail slower.
func (s *Sandbox) proxyEnv(env []string) []string {
	if s.proxy == nil {
		return env
	}
	u := s.proxy.URL()
	a := s.proxy.Addr()
	host, port := a.Addr().String(), strconv.Itoa(int(a.Port()))
	for _, kv := range append(ProxyVariables(u),
		// What a program that went around the proxy is told (its
		// connect fails with EPERM at once).
		[2]string{"LITE_AGENT_NETWORK", "sandboxed: only the allowed domains, through the proxy in HTTPS_PROXY; direct connections are refused (EPERM)"},
	) {
		env = envSet(env, kv[0], kv[1])
	}
	// Java ignores the variables above; its system properties, appended
	// to what the command already asks for.
	java := "-Dhttp.proxyHost=" + host + " -Dhttp.proxyPort=" + port + " -Dhttps.proxyHost=" + host + " -Dhttps.proxyPort=" + port + " -Dhttp.nonProxyHosts=localhost|127.0.0.1|[::1]"
	if old, ok := envGet(env, "JAVA_TOOL_OPTIONS"); ok && strings.TrimSpace(old) != "" {
		java = old + " " + java
	}
	env = envSet(env, "JAVA_TOOL_OPTIONS", java)
	// git: http.proxy through GIT_CONFIG_COUNT/KEY_n/VALUE_n, after the
	// entries the command may already have.
	n := 0
	if c, ok := envGet(env, "GIT_CONFIG_COUNT"); ok {
		if v, err := strconv.Atoi(c); err == nil && v > 0 {
			n = v
		}
	}
	env = envSet(env, "GIT_CONFIG_KEY_"+strconv.Itoa(n), "http.proxy")
	env = envSet(env, "GIT_CONFIG_VALUE_"+strconv.Itoa(n), u)
	env = envSet(env, "GIT_CONFIG_COUNT", strconv.Itoa(n+1))
	return env
}
