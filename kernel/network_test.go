package kernel

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

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
