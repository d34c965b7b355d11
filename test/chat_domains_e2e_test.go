package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestChatAsksUnknownDomain (issue 13, "interactively, an unknown domain
// can ask"): in chat, with a domain granted (so commands reach the
// network only through the proxy), a command's connection to a host no
// grant names is held while the approval box asks. y lets that one
// connection through and the next one asks again; n refuses it (the
// server is never reached); A then u writes the grant to the user's
// policy file's allow_domains and the host is not asked about again.
// Upstreams are loopback servers, asked about as IP:PORT (curl is told
// to send loopback through the proxy too: NO_PROXY keeps it direct).
func TestChatAsksUnknownDomain(t *testing.T) {
	server := func(hits *atomic.Int32) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			fmt.Fprint(w, "hello")
		}))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	var grantedHits, onceHits, alwaysHits atomic.Int32
	granted, once, always := server(&grantedHits), server(&onceHits), server(&alwaysHits)
	curl := func(id, addr string) map[string]any {
		return map[string]any{"tool_calls": []any{call(id, "bash", map[string]any{"command": "NO_PROXY= no_proxy= curl -s -o /dev/null -w 'code=%{http_code}\\n' http://" + addr + "/"})}}
	}
	ws, state, config := t.TempDir(), t.TempDir(), t.TempDir()
	script := scriptFile(t,
		curl("c1", once), map[string]any{"text": "Fetched once."},
		curl("c2", once), map[string]any{"text": "Fetched twice."},
		curl("c3", always), map[string]any{"text": "Fetched always."},
		curl("c4", always), map[string]any{"text": "Fetched again."})
	s := startPTYWith(t, ws, ptyOptions{answer: true, env: []string{"XDG_CONFIG_HOME=" + config}},
		"--workspace", ws, "--state-dir", state, "--script", script, "--allow-domain", granted)
	s.waitFor("ready · ")

	s.send("fetch\r")
	s.waitFor("? bash wants to run")
	s.send("y")
	s.waitFor("? a command wants to reach "+once, "a loopback address", "domains "+granted, "[y] allow once")
	if n := onceHits.Load(); n != 0 {
		t.Fatalf("the server was reached before the answer (%d requests)", n)
	}
	s.send("\r") // Enter never allows
	s.send("y")
	s.waitFor("allowed once: "+once, "Fetched once.")
	if n := onceHits.Load(); n != 1 {
		t.Fatalf("allowed once: the server saw %d requests, want 1", n)
	}

	s.send("again\r")
	s.waitFor("? bash wants to run")
	s.send("y")
	s.waitFor("? a command wants to reach " + once) // once was once
	s.send("n")
	s.waitFor("denied: "+once, "Fetched twice.")
	if n := onceHits.Load(); n != 1 {
		t.Fatalf("denied: the server saw %d requests, want still 1", n)
	}

	s.send("always\r")
	s.waitFor("? bash wants to run")
	s.send("y")
	s.waitFor("? a command wants to reach " + always)
	s.send("A")
	s.waitFor("write it to allow_domains in", "[u] your policy file")
	s.send("u")
	policy := filepath.Join(config, "lite-agent", "policy.toml")
	s.waitFor("allowed always", "Fetched always.")
	if b, err := os.ReadFile(policy); err != nil || !strings.Contains(string(b), `allow_domains = ["`+always+`"]`) {
		t.Fatalf("the user's policy file after A: %q %v", b, err)
	}

	s.send("and again\r")
	s.waitFor("? bash wants to run")
	s.send("y")
	scr := s.waitFor("Fetched again.")
	if strings.Contains(scr, "wants to reach") {
		t.Fatalf("asked again about a host allowed always:\n%s", scr)
	}
	if n := alwaysHits.Load(); n != 2 {
		t.Fatalf("allowed always: the server saw %d requests, want 2", n)
	}
	if n := grantedHits.Load(); n != 0 {
		t.Fatalf("the granted server saw %d requests, want 0", n)
	}
}
