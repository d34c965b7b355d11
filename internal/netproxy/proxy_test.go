package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// fakeNet resolves test names and sends "public" test addresses to local
// servers, so that the name-grant path runs without DNS or the internet.
type fakeNet struct {
	names map[string][]netip.Addr
	route map[string]string // "203.0.113.7:80" -> "127.0.0.1:PORT"
}

func (f *fakeNet) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	if a, ok := f.names[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %q (test resolver)", host)
}

func (f *fakeNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if to, ok := f.route[addr]; ok {
		addr = to
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func TestRulesCheck(t *testing.T) {
	fn := &fakeNet{names: map[string][]netip.Addr{
		"example.com":        {netip.MustParseAddr("203.0.113.7")},
		"api.example.com":    {netip.MustParseAddr("203.0.113.8")},
		"deep.a.example.com": {netip.MustParseAddr("203.0.113.9")},
		"evil.example":       {netip.MustParseAddr("127.0.0.1")},
		"mixed.example":      {netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("10.0.0.1")},
		"meta.example":       {netip.MustParseAddr("169.254.169.254")},
		"mapped.example":     {netip.MustParseAddr("::ffff:127.0.0.1")},
		"nat64.example":      {netip.MustParseAddr("64:ff9b::a00:1")},
		"zero.example":       {netip.MustParseAddr("0.0.0.0")},
		"cgnat.example":      {netip.MustParseAddr("100.100.100.200")},
		"ula.example":        {netip.MustParseAddr("fd00:ec2::254")},
		"v6.example":         {netip.MustParseAddr("2606:4700::1111")},
	}}
	r, err := NewRules(Options{
		Allow: []Grant{
			{Pattern: "example.com"}, {Pattern: "*.example.com"}, {Pattern: "evil.example"},
			{Pattern: "mixed.example"}, {Pattern: "meta.example"}, {Pattern: "mapped.example"},
			{Pattern: "nat64.example"}, {Pattern: "zero.example"}, {Pattern: "cgnat.example"},
			{Pattern: "ula.example"}, {Pattern: "v6.example:443"},
			{Pattern: "127.0.0.1:8080", Source: "policy.toml:3"}, {Pattern: "[::1]:9000"}, {Pattern: "10.1.2.3"},
			{Pattern: "blocked.example.com"},
		},
		Deny:    []Grant{{Pattern: "*.a.example.com"}, {Pattern: "blocked.example.com", Source: "deny_domains in policy.toml:7"}},
		Resolve: fn.resolve,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host  string
		port  int
		allow bool
		want  string // in the rule or the refusal
	}{
		{"example.com", 443, true, "example.com"},
		{"EXAMPLE.com.", 80, true, "example.com"},
		{"api.example.com", 443, true, "*.example.com"},
		{"deep.a.example.com", 443, false, `denied by "*.a.example.com"`},
		{"blocked.example.com", 443, false, "deny_domains in policy.toml:7"},
		{"notexample.com", 443, false, "--allow-domain notexample.com"},
		{"example.org", 443, false, "not in the sandbox's allowed domains"},
		// DNS rebinding and its relatives: a granted name, a bad answer.
		{"evil.example", 443, false, "127.0.0.1, a loopback address"},
		{"mixed.example", 443, false, "10.0.0.1, a private address"},
		{"meta.example", 80, false, "link-local"},
		{"mapped.example", 80, false, "loopback"},
		{"nat64.example", 80, false, "NAT64"},
		{"zero.example", 80, false, "unspecified"},
		{"cgnat.example", 80, false, "shared"},
		{"ula.example", 80, false, "metadata"},
		{"v6.example", 443, true, "v6.example:443"},
		{"v6.example", 80, false, "not in the sandbox's allowed domains"},
		// IP literals: only an IP grant admits them, and it may be local.
		{"127.0.0.1", 8080, true, "policy.toml:3"},
		{"127.0.0.1", 8081, false, "--allow-domain 127.0.0.1:8081"},
		{"::1", 9000, true, "[::1]:9000"},
		{"[::1]", 9000, true, "[::1]:9000"},
		{"10.1.2.3", 22, true, "10.1.2.3"},
		{"203.0.113.7", 443, false, "not in the sandbox's allowed domains"},
		{"ex ample.com", 443, false, "not a host name"},
		{"example.com", 0, false, "not valid"},
		// Names that end in a number are addresses to the C resolver
		// (01.2.3.4 is 1.2.3.4, 2130706433 and 0x7f000001 127.0.0.1):
		// refused as names, so no grant or question covers them.
		{"01.2.3.4", 443, false, "not a host name"},
		{"2130706433", 80, false, "not a host name"},
		{"0x7f000001", 80, false, "not a host name"},
		{"a.0x7f", 80, false, "not a host name"},
		{"123.example.com", 443, false, "resolving 123.example.com"}, // a name: resolved, not refused as a number
	} {
		d, err := r.Check(context.Background(), tc.host, tc.port)
		got := d.Rule
		if err != nil {
			got = err.Error()
		}
		if d.Allow != tc.allow || !strings.Contains(got, tc.want) {
			t.Errorf("Check(%q, %d) = allow %v, %q; want allow %v, containing %q", tc.host, tc.port, d.Allow, got, tc.allow, tc.want)
		}
		if !tc.allow && d.Allow {
			t.Errorf("Check(%q, %d) allowed", tc.host, tc.port)
		}
	}
}

// TestRulesDirect: a connection around the proxy is admitted only by a
// literal IP or IP:PORT allow entry (an IP alone: every port), never by a
// name (not even one that resolves to the address) or an earlier answer,
// and a deny entry wins as it does in Check.
func TestRulesDirect(t *testing.T) {
	asked := false
	r, err := NewRules(Options{
		Allow: []Grant{
			{Pattern: "127.0.0.1:8080", Source: "--allow-domain 127.0.0.1:8080"},
			{Pattern: "10.1.2.3"}, {Pattern: "[::1]:9000"}, {Pattern: "10.9.9.9"},
			{Pattern: "local.example"}, {Pattern: "*.example.com"},
		},
		Deny: []Grant{{Pattern: "10.1.2.3:22", Source: "policy.toml:4"}, {Pattern: "10.9.9.9"}},
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
		},
		Ask: func(context.Context, Question) (Answer, error) {
			asked = true
			return AllowSession, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ap   string
		ok   bool
		rule string
	}{
		{"127.0.0.1:8080", true, "--allow-domain 127.0.0.1:8080"},
		{"[::ffff:127.0.0.1]:8080", true, "--allow-domain 127.0.0.1:8080"}, // v4-mapped: the same address
		{"127.0.0.1:8081", false, ""},
		{"10.1.2.3:443", true, "10.1.2.3"}, // an IP without a port: every port
		{"10.1.2.3:22", false, ""},         // ... but the deny entry wins
		{"10.9.9.9:80", false, ""},         // denied whole
		{"[::1]:9000", true, "[::1]:9000"},
		{"[::1%lo]:9000", true, "[::1]:9000"}, // a zone does not change the address
		{"[::1]:9001", false, ""},
		{"127.0.0.2:80", false, ""}, // what local.example resolves to: a name never admits
		{"127.0.0.1:0", false, ""},
	} {
		rule, ok := r.Direct(netip.MustParseAddrPort(tc.ap))
		if ok != tc.ok || rule != tc.rule {
			t.Errorf("Direct(%s) = %q, %v; want %q, %v", tc.ap, rule, ok, tc.rule, tc.ok)
		}
	}
	if asked {
		t.Error("Direct asked about an address")
	}
	// A session answer given through the proxy does not admit a direct
	// connection: only a configured grant does.
	if d, _ := r.Check(context.Background(), "127.0.0.3", 80); !d.Allow {
		t.Fatalf("the asker's session answer: %+v", d)
	}
	if _, ok := r.Direct(netip.MustParseAddrPort("127.0.0.3:80")); ok {
		t.Error("a session answer admitted a direct connection")
	}
}

func TestNewRulesRefusesBadPatterns(t *testing.T) {
	for _, p := range []string{"", "*", "*.", "01.2.3.4", "2130706433", "0x7f000001", "exa*mple.com", "a..b", "example.com:0", "example.com:http", "1.2.3.4:0", "ex ample.com", "*.*.example.com"} {
		if _, err := NewRules(Options{Allow: []Grant{{Pattern: p}}}); err == nil {
			t.Errorf("NewRules(%q) accepted", p)
		}
	}
}

// harness is a proxy in front of local servers, with the events it sent.
type harness struct {
	p      *Proxy
	r      *Rules
	mu     sync.Mutex
	events []Event
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	r, err := NewRules(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{r: r}
	h.p, err = Start(r, func(e Event) { h.mu.Lock(); h.events = append(h.events, e); h.mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.p.Close() })
	return h
}

func (h *harness) client() *http.Client {
	u, _ := url.Parse(h.p.URL())
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

func (h *harness) snapshot() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

func hello(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.Host) }

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProxyPlainHTTPAndConnect(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(hello))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(hello))
	defer tlsSrv.Close()
	pAddr := plain.Listener.Addr().String()
	tAddr := tlsSrv.Listener.Addr().String()
	fn := &fakeNet{
		names: map[string][]netip.Addr{"docs.example.com": {netip.MustParseAddr("203.0.113.7")}},
		route: map[string]string{"203.0.113.7:80": pAddr, "203.0.113.7:443": tAddr},
	}
	h := newHarness(t, Options{Allow: []Grant{{Pattern: pAddr}, {Pattern: tAddr}, {Pattern: "*.example.com", Source: "--allow-domain *.example.com"}}, Resolve: fn.resolve, Dial: fn.dial})
	c := h.client()
	if code, body := get(t, c, plain.URL+"/x"); code != 200 || !strings.HasPrefix(body, "hello") {
		t.Fatalf("plain through the proxy: %d %q", code, body)
	}
	if code, body := get(t, c, tlsSrv.URL+"/x"); code != 200 || !strings.HasPrefix(body, "hello") {
		t.Fatalf("CONNECT through the proxy: %d %q", code, body)
	}
	if code, body := get(t, c, "http://docs.example.com/x"); code != 200 || body != "hello from docs.example.com" {
		t.Fatalf("name grant, plain: %d %q", code, body)
	}
	if code, body := get(t, c, "https://docs.example.com/x"); code != 200 || body != "hello from docs.example.com" {
		t.Fatalf("name grant, CONNECT: %d %q", code, body)
	}
	code, body := get(t, c, "http://other.test/")
	if code != 403 || !strings.Contains(body, "other.test:80") || !strings.Contains(body, "--allow-domain other.test") {
		t.Fatalf("refusal: %d %q", code, body)
	}
	c.CloseIdleConnections()
	h.p.Close() // waits for the handlers: every event is in
	ev := h.snapshot()
	var allowed, denied int
	for _, e := range ev {
		if e.Allow {
			allowed++
			if e.BytesDown == 0 || e.BytesUp == 0 {
				t.Errorf("event without bytes: %+v", e)
			}
		} else {
			denied++
			if e.Host != "other.test" || e.Port != 80 {
				t.Errorf("deny event: %+v", e)
			}
		}
	}
	if allowed != 4 || denied != 1 {
		t.Fatalf("events: %+v", ev)
	}
}

// TestProxyRebinding: a granted name that resolves to 127.0.0.1 must not
// reach the local service listening there. Without the proxy's check the
// same service answers (first half: shown working).
func TestProxyRebinding(t *testing.T) {
	local := httptest.NewServer(http.HandlerFunc(hello))
	defer local.Close()
	_, port, _ := net.SplitHostPort(local.Listener.Addr().String())
	// The attack without the check: dialling what evil.example resolves
	// to reaches the local service.
	if code, _ := get(t, http.DefaultClient, "http://127.0.0.1:"+port+"/"); code != 200 {
		t.Fatalf("local service not reachable directly: %d", code)
	}
	fn := &fakeNet{names: map[string][]netip.Addr{"evil.example": {netip.MustParseAddr("127.0.0.1")}}}
	h := newHarness(t, Options{Allow: []Grant{{Pattern: "evil.example"}}, Resolve: fn.resolve})
	for _, u := range []string{"http://evil.example:" + port + "/", "https://evil.example:" + port + "/"} {
		resp, err := h.client().Get(u)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 403 || !strings.Contains(string(b), "loopback") {
				t.Fatalf("%s: %d %q", u, resp.StatusCode, b)
			}
			continue
		}
		// CONNECT refused: net/http reports the status as an error.
		if !strings.Contains(err.Error(), "Forbidden") {
			t.Fatalf("%s: %v", u, err)
		}
	}
}

// rawProxy opens a client connection to the proxy for hand-written
// requests.
func rawProxy(t *testing.T, h *harness) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", h.p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func readResp(t *testing.T, br *bufio.Reader) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// TestProxyKeepAliveSecondRequest: the first request on a connection is
// allowed; a second on the same connection to a host not granted is
// refused, not carried to the first one's upstream.
func TestProxyKeepAliveSecondRequest(t *testing.T) {
	allowed := httptest.NewServer(http.HandlerFunc(hello))
	defer allowed.Close()
	other := httptest.NewServer(http.HandlerFunc(hello))
	defer other.Close()
	h := newHarness(t, Options{Allow: []Grant{{Pattern: allowed.Listener.Addr().String()}}})
	c, br := rawProxy(t, h)
	fmt.Fprintf(c, "GET %s/a HTTP/1.1\r\nHost: %s\r\n\r\n", allowed.URL, allowed.Listener.Addr())
	if code, body := readResp(t, br); code != 200 || !strings.HasPrefix(body, "hello") {
		t.Fatalf("first request: %d %q", code, body)
	}
	fmt.Fprintf(c, "GET %s/b HTTP/1.1\r\nHost: %s\r\n\r\n", other.URL, other.Listener.Addr())
	if code, body := readResp(t, br); code != 403 || !strings.Contains(body, "--allow-domain "+other.Listener.Addr().String()) {
		t.Fatalf("second request to another host: %d %q", code, body)
	}
}

// TestProxyHostMismatch: a plain-HTTP request for an allowed URL whose
// Host header names another host is refused. The attack: a server that
// routes by Host (shown here: this one answers with the Host it got) would
// serve the other host.
func TestProxyHostMismatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(hello))
	defer srv.Close()
	// Unproxied, the server trusts the Host line.
	d, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(d, "GET /x HTTP/1.1\r\nHost: internal.corp\r\n\r\n")
	if code, body := readResp(t, bufio.NewReader(d)); code != 200 || body != "hello from internal.corp" {
		t.Fatalf("direct: %d %q", code, body)
	}
	d.Close()
	h := newHarness(t, Options{Allow: []Grant{{Pattern: srv.Listener.Addr().String()}}})
	c, br := rawProxy(t, h)
	fmt.Fprintf(c, "GET %s/x HTTP/1.1\r\nHost: internal.corp\r\n\r\n", srv.URL)
	if code, body := readResp(t, br); code != 403 || !strings.Contains(body, "internal.corp") {
		t.Fatalf("Host mismatch: %d %q", code, body)
	}
	// Matching Host (case and default port aside) passes.
	c2, br2 := rawProxy(t, h)
	fmt.Fprintf(c2, "GET %s/x HTTP/1.1\nHost: %s\n\n", srv.URL, strings.ToUpper(srv.Listener.Addr().String()))
	if code, _ := readResp(t, br2); code != 200 {
		t.Fatalf("matching Host, LF line ends: %d", code)
	}
}

// TestProxyRefusesOriginForm: the proxy is not a web server: a request
// with a path only is refused (it would otherwise be forwarded by Host).
func TestProxyRefusesOriginForm(t *testing.T) {
	h := newHarness(t, Options{Allow: []Grant{{Pattern: "example.com"}}})
	c, br := rawProxy(t, h)
	fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if code, body := readResp(t, br); code != 400 || !strings.Contains(body, "absolute") {
		t.Fatalf("origin form: %d %q", code, body)
	}
}

// TestProxyCloseEndsTunnels: Close returns with a tunnel open.
func TestProxyCloseEndsTunnels(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	h := newHarness(t, Options{Allow: []Grant{{Pattern: ln.Addr().String()}}})
	c, br := rawProxy(t, h)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", ln.Addr())
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	h.p.Close()
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("tunnel still open after Close")
	}
}

// TestEventBeforeLastByte: a plain-HTTP exchange's event is out before
// the client has the body's last byte, so an observer that waits for the
// response (the kernel yields a call's events before its result) never
// misses it; the byte counts are the whole exchange's. Bodies small
// enough to arrive with the head and large enough to be spliced, and a
// chunked one (size -N: N bytes, no Content-Length).
func TestEventBeforeLastByte(t *testing.T) {
	for _, size := range []int{1, 64, 3 << 20, -100000} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if size < 0 {
				for range 4 {
					w.Write(make([]byte, -size/4))
					w.(http.Flusher).Flush()
				}
				return
			}
			w.Header().Set("Content-Length", fmt.Sprint(size))
			w.Write(make([]byte, size))
		}))
		h := newHarness(t, Options{Allow: []Grant{{Pattern: srv.Listener.Addr().String()}}})
		c := h.client()
		for i := range 3 { // kept alive: each request its own event
			code, body := get(t, c, srv.URL+"/")
			if code != 200 || len(body) != max(size, -size) {
				t.Fatalf("size %d: %d, %d bytes", size, code, len(body))
			}
			ev := h.snapshot()
			if len(ev) != i+1 {
				t.Fatalf("size %d, request %d: %d events when the body was read, want %d", size, i, len(ev), i+1)
			}
			if e := ev[i]; e.BytesDown < int64(max(size, -size)) || e.BytesUp == 0 {
				t.Fatalf("size %d: event %+v", size, e)
			}
		}
		srv.Close()
	}
}
