package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestChatRemembersDomainRefusal (issue 13's asking, through the binary):
// a host:port the person refused in chat is refused again in the next
// turn — a Query with a proxy of its own — without a new question, so a
// command (or an agent obeying an injected prompt) cannot ask about one
// host again and again until a tired yes. Another port of the same host
// is a question of its own. (The upstreams are loopback servers, asked
// about as IP:PORT; a name on two ports is netproxy's
// TestAskOnceCoversThePortAsked.) Before, every turn asked again: the
// second turn then waits on a second question and the test fails.
func TestChatRemembersDomainRefusal(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello")
	}))
	t.Cleanup(srv.Close)
	other := httptest.NewServer(srv.Config.Handler)
	t.Cleanup(other.Close)
	granted := httptest.NewServer(srv.Config.Handler)
	t.Cleanup(granted.Close)
	refused, otherPort := srv.Listener.Addr().String(), other.Listener.Addr().String()
	curl := func(id, addr string) map[string]any {
		return map[string]any{"tool_calls": []any{call(id, "bash", map[string]any{"command": "NO_PROXY= no_proxy= curl -s -o /dev/null -w 'code=%{http_code}\\n' http://" + addr + "/"})}}
	}
	ws, state, config := t.TempDir(), t.TempDir(), t.TempDir()
	script := scriptFile(t,
		curl("c1", refused), map[string]any{"text": "First try."},
		curl("c2", refused), map[string]any{"text": "Second try."},
		curl("c3", otherPort), map[string]any{"text": "Other port."})
	s := startPTYWith(t, ws, ptyOptions{answer: true, env: []string{"XDG_CONFIG_HOME=" + config}},
		"--workspace", ws, "--state-dir", state, "--script", script, "--allow-domain", granted.Listener.Addr().String())
	s.waitFor("ready · ")

	s.send("fetch\r")
	s.waitFor("? bash wants to run")
	s.send("y")
	s.waitFor("? a command wants to reach " + refused)
	s.send("n")
	s.waitFor("denied: "+refused, "First try.")

	s.send("again\r")
	s.waitFor("? bash wants to run")
	s.send("y")
	if scr := s.waitFor("Second try."); strings.Contains(scr, "wants to reach") {
		t.Fatalf("asked again about a host:port refused in this session:\n%s", scr)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the refused server saw %d requests", n)
	}

	// The "no" was for that port: another one asks.
	s.send("other\r")
	s.waitFor("? bash wants to run")
	s.send("y")
	s.waitFor("? a command wants to reach " + otherPort)
	s.send("n")
	s.waitFor("denied: "+otherPort, "Other port.")
}
