package kernel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/netproxy"
	"github.com/lite-agent/lite-agent/sandbox"
)

// TestNetworkEventsReachTheStream: the domain proxy's decisions are
// yielded as network events, one per connection, allowed and refused, with
// the rule that decided — and the caller's own OnNetwork still hears them.
func TestNetworkEventsReachTheStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><body><p>hello from the test server</p></body></html>")
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// The second address is the same server on a port nobody granted: a
	// grant for 127.0.0.1:PORT reaches that port only.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go http.Serve(other, srv.Config.Handler)
	_, otherPort, _ := net.SplitHostPort(other.Addr().String())

	e := newEnv(t)
	m := script(t, `{"turns": [
	  {"tool_calls": [{"id": "f1", "name": "web_fetch", "input": {"url": "http://`+host+`:`+port+`/"}}]},
	  {"tool_calls": [{"id": "f2", "name": "web_fetch", "input": {"url": "http://`+host+`:`+otherPort+`/"}}]},
	  {"text": "done"}
	]}`)
	o := e.opts(m)
	o.AllowedTools = []string{"web_fetch"}
	var heard []sandbox.NetworkEvent
	o.Sandbox = &sandbox.Policy{
		AllowDomains: []string{host + ":" + port},
		OnNetwork:    func(n sandbox.NetworkEvent) { heard = append(heard, n) },
	}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	results := byType(evs, EventToolResult)
	if len(results) != 2 || results[0].ToolResult.IsError || !results[1].ToolResult.IsError {
		t.Fatalf("results = %+v, want the granted fetch to succeed and the other refused", results)
	}
	net := byType(evs, EventNetwork)
	if len(net) != 2 {
		t.Fatalf("network events = %+v, want 2 (one per connection)", net)
	}
	allow, deny := net[0].Network, net[1].Network
	if allow.Decision != "allow" || allow.Host != host || strconv.Itoa(allow.Port) != port || allow.BytesDown == 0 {
		t.Errorf("first network event = %+v, want an allowed connection to %s:%s with bytes", allow, host, port)
	}
	if deny.Decision != "deny" || strconv.Itoa(deny.Port) != otherPort || deny.Rule == "" {
		t.Errorf("second network event = %+v, want a refusal of port %s naming the rule", deny, otherPort)
	}
	// Each event comes before the result of the call that caused it.
	idx := func(typ EventType, n int) int {
		for i, ev := range evs {
			if ev.Type == typ {
				if n == 0 {
					return i
				}
				n--
			}
		}
		return -1
	}
	if idx(EventNetwork, 0) > idx(EventToolResult, 0) || idx(EventNetwork, 1) > idx(EventToolResult, 1) {
		t.Errorf("network events come after the results of their calls: %v", evs)
	}
	if len(heard) != 2 {
		t.Errorf("the caller's OnNetwork heard %d decisions, want 2", len(heard))
	}
}

// TestUnknownDomainAsked: with OnUnknownDomain, a host no grant names is
// asked about while its connection is held: "once" admits that fetch and
// the next one asks again, "session" is asked once for the rest of the
// session, a refusal is the usual 403 naming the flag (and is not asked
// about again), and a deny_domains entry is never asked about. Each network event's rule says how it was
// decided. (The hosts are loopback servers named by IP:PORT: a yes to a
// non-public literal is the explicit grant, with a note saying so.)
func TestUnknownDomainAsked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><body><p>hello from the test server</p></body></html>")
	}))
	defer srv.Close()
	listen := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go http.Serve(ln, srv.Config.Handler)
		return ln.Addr().String()
	}
	granted, once, session, refused, denied := srv.Listener.Addr().String(), listen(), listen(), listen(), listen()
	answers := map[string]sandbox.DomainDecision{once: sandbox.DomainAllowOnce, session: sandbox.DomainAllowSession, refused: sandbox.DomainRefuse}

	fetch := func(id, addr string) string {
		return `{"tool_calls": [{"id": "` + id + `", "name": "web_fetch", "input": {"url": "http://` + addr + `/"}}]}`
	}
	e := newEnv(t)
	m := script(t, `{"turns": [`+fetch("f1", once)+`,`+fetch("f2", once)+`,`+fetch("f3", session)+`,`+fetch("f4", session)+`,`+
		fetch("f5", refused)+`,`+fetch("f5b", refused)+`,`+fetch("f6", denied)+`, {"text": "done"}]}`)
	o := e.opts(m)
	o.AllowedTools = []string{"web_fetch"}
	heard := make(chan sandbox.NetworkEvent, 16)
	o.Sandbox = &sandbox.Policy{AllowDomains: []string{granted}, DenyDomains: []string{denied}, OnNetwork: func(n sandbox.NetworkEvent) { heard <- n }}
	var asked []sandbox.DomainQuestion
	o.OnUnknownDomain = func(ctx context.Context, q sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
		asked = append(asked, q) // the fetches are one at a time
		return answers[q.Grant], nil
	}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	results := byType(evs, EventToolResult)
	wantErr := []bool{false, false, false, false, true, true, true}
	if len(results) != len(wantErr) {
		t.Fatalf("results = %+v", results)
	}
	for i, r := range results {
		if r.ToolResult.IsError != wantErr[i] {
			t.Errorf("fetch %d: is_error = %v, want %v: %+v", i+1, r.ToolResult.IsError, wantErr[i], r.ToolResult)
		}
	}
	if txt := fmt.Sprint(results[4].ToolResult); !strings.Contains(txt, "--allow-domain "+refused) {
		t.Errorf("the refused fetch does not name the flag: %s", txt)
	}
	if txt := fmt.Sprint(results[5].ToolResult); !strings.Contains(txt, "refused it when asked earlier") || !strings.Contains(txt, "--allow-domain "+refused) {
		t.Errorf("the second fetch of the refused host does not say it was refused before: %s", txt)
	}
	var grants []string
	for _, q := range asked {
		grants = append(grants, q.Grant)
		if q.Note != "a loopback address" {
			t.Errorf("question %+v: want the loopback note", q)
		}
	}
	if want := []string{once, once, session, refused}; !slices.Equal(grants, want) {
		t.Fatalf("asked about %v, want %v (once twice, session once, the refused host once, the denied host never)", grants, want)
	}
	// An allowed plain-HTTP request is reported after its response is
	// relayed, so its event may trail the fetch's result (and the run's
	// end): the caller's OnNetwork hears every one; the stream carries
	// the refusals, reported before the 403, in order.
	rules := map[string]int{}
	for range 7 {
		select {
		case n := <-heard:
			rules[n.Rule]++
		case <-time.After(10 * time.Second):
			t.Fatalf("heard only %v", rules)
		}
	}
	if want := map[string]int{"asked: allowed once": 2, "asked: allowed for the session": 2, "asked: denied": 1, "asked earlier: denied": 1, denied: 1}; !maps.Equal(rules, want) {
		t.Fatalf("network event rules = %v, want %v", rules, want)
	}
	var streamed []string
	for _, ev := range byType(evs, EventNetwork) {
		if ev.Network.Decision == "deny" {
			streamed = append(streamed, ev.Network.Rule)
		}
	}
	if want := []string{"asked: denied", "asked earlier: denied", denied}; !slices.Equal(streamed, want) {
		t.Fatalf("refusals in the stream = %q, want %q", streamed, want)
	}
}

// TestDomainAnswersKeptForTheQuery: the session's sandboxes each run a
// proxy of their own; an answer "session" or "always" given to one is
// given again to the others without asking, and so is a refusal (for that
// host:port: the same host on another port is asked about); "once" is not.
func TestDomainAnswersKeptForTheQuery(t *testing.T) {
	var q networkQueue
	var asked []string
	answers := map[string]sandbox.DomainDecision{"s.example": sandbox.DomainAllowSession, "a.example": sandbox.DomainAllowAlways, "o.example": sandbox.DomainAllowOnce, "n.example": sandbox.DomainRefuse}
	ask := q.asker(func(_ context.Context, dq sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
		asked = append(asked, dq.Grant)
		return answers[dq.Grant], nil
	}, nil)
	for range 2 {
		for _, g := range []string{"s.example", "a.example", "o.example", "n.example"} {
			if d, err := ask(context.Background(), sandbox.DomainQuestion{Host: g, Port: 443, Grant: g}); err != nil || d != answers[g] {
				t.Fatalf("%s: %v %v", g, d, err)
			}
		}
	}
	if want := []string{"s.example", "a.example", "o.example", "n.example", "o.example"}; !slices.Equal(asked, want) {
		t.Fatalf("asked %v, want %v", asked, want)
	}
	if d, _ := ask(context.Background(), sandbox.DomainQuestion{Host: "n.example", Port: 80, Grant: "n.example"}); d != sandbox.DomainRefuse || len(asked) != 6 {
		t.Fatalf("n.example:80 after a no to :443: %v, asked %v; want a question of its own", d, asked)
	}
	if q.asker(nil, nil) != nil {
		t.Fatal("no asker: the policy must keep refusing without a question")
	}
}

// TestLateDomainAnswerNotKept: a "session" answer that arrives after the
// connection stopped waiting (the proxy's timeout, the command gone) is
// not kept for the Query: the next connection to that host asks again.
func TestLateDomainAnswerNotKept(t *testing.T) {
	var q networkQueue
	calls := 0
	ask := q.asker(func(ctx context.Context, dq sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
		calls++
		if calls == 1 {
			<-ctx.Done() // the proxy gave up; then the person pressed 'a'
		}
		return sandbox.DomainAllowSession, nil
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ask(ctx, sandbox.DomainQuestion{Host: "late.example", Port: 443, Grant: "late.example"})
	if d, _ := ask(context.Background(), sandbox.DomainQuestion{Host: "late.example", Port: 443, Grant: "late.example"}); d != sandbox.DomainAllowSession || calls != 2 {
		t.Errorf("after a late answer: decision %v, asked %d times; want the second connection asked again (2)", d, calls)
	}
	// An answer in time is kept: a third connection is not asked.
	ask(context.Background(), sandbox.DomainQuestion{Host: "late.example", Port: 443, Grant: "late.example"})
	if calls != 2 {
		t.Errorf("an answer given in time was not kept: asked %d times", calls)
	}
}

// TestDomainQuestionsBudgetedForTheQuery: a flood of fresh hosts (a
// random subdomain each time, every one refused) reaches the person at
// most netproxy.MaxRecentQuestions times for the whole session — however
// many sandboxes (proxies) ask — and the rest are refused without asking,
// with the error the proxy shows as "not asked about". A refused host
// asked again is refused at once and spends nothing.
func TestDomainQuestionsBudgetedForTheQuery(t *testing.T) {
	var q networkQueue
	asked := 0
	person := func(context.Context, sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
		asked++
		return sandbox.DomainRefuse, nil
	}
	// Two sandboxes' askers, as prepareSandbox makes for the commands and
	// the handlers.
	askers := []func(context.Context, sandbox.DomainQuestion) (sandbox.DomainDecision, error){q.asker(person, nil), q.asker(person, nil)}
	var last error
	for i := range 40 {
		h := fmt.Sprintf("x%d.evil.example", i)
		d, err := askers[i%2](context.Background(), sandbox.DomainQuestion{Host: h, Port: 443, Grant: h})
		if d != sandbox.DomainRefuse {
			t.Fatalf("%s: %v", h, d)
		}
		last = err
	}
	if asked != netproxy.MaxRecentQuestions || !errors.Is(last, netproxy.ErrTooManyQuestions) {
		t.Fatalf("a flood of 40 hosts asked the person %d times (want %d), last error %v", asked, netproxy.MaxRecentQuestions, last)
	}
	if d, err := askers[1](context.Background(), sandbox.DomainQuestion{Host: "x0.evil.example", Port: 443, Grant: "x0.evil.example"}); d != sandbox.DomainRefuse || err != nil || asked != netproxy.MaxRecentQuestions {
		t.Fatalf("a host refused before: %v %v (asked %d)", d, err, asked)
	}
}
