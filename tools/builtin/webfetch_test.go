package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// Upstreams are loopback servers granted by IP:PORT; web_fetch reaches
// them only through the sandbox's domain proxy.

func webFetchContext(t *testing.T, allow ...string) *tools.Context {
	t.Helper()
	ws := t.TempDir()
	sb, err := sandbox.New(sandbox.Policy{Workspace: ws, AllowDomains: allow})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return &tools.Context{Ctx: context.Background(), Workspace: ws, Sandbox: sb}
}

func fetch(t *testing.T, ctx *tools.Context, u string) *tools.Result {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"url": u})
	return WebFetch().Call(ctx, raw)
}

func TestWebFetch(t *testing.T) {
	via := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		via <- r.Header.Get("User-Agent")
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><body><h1>Install</h1><p>Run <code>go get</code>, see <a href="/docs">the docs</a>.</p></body></html>`)
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, strings.Repeat("x", webFetchMaxOutput+10))
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2})
		case "/redirect":
			http.Redirect(w, r, "/page", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "LOCAL-SECRET") }))
	defer other.Close()
	otherTLS := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "LOCAL-SECRET") }))
	defer otherTLS.Close()
	ctx := webFetchContext(t, srv.Listener.Addr().String())

	r := fetch(t, ctx, srv.URL+"/page")
	want := "# Install\n\nRun `go get`, see [the docs](" + srv.URL + "/docs)."
	if r.IsError || !strings.Contains(r.TextOf(), want) || !strings.HasPrefix(r.TextOf(), "URL: "+srv.URL+"/page\nStatus: 200 OK") {
		t.Fatalf("HTML page: IsError=%v %q, want it to contain %q", r.IsError, r.TextOf(), want)
	}
	if ua := <-via; ua != "lite-agent web_fetch" {
		t.Errorf("User-Agent %q", ua)
	}
	if r = fetch(t, ctx, srv.URL+"/redirect"); r.IsError || !strings.Contains(r.TextOf(), "URL: "+srv.URL+"/page") {
		t.Errorf("redirect: %q", r.TextOf())
	}
	if r = fetch(t, ctx, srv.URL+"/big"); r.IsError || !strings.Contains(r.TextOf(), "[truncated: 100000 of 100010 characters shown]") {
		t.Errorf("big page: IsError=%v, tail %q", r.IsError, r.TextOf()[max(0, len(r.TextOf())-80):])
	}
	if r = fetch(t, ctx, srv.URL+"/bin"); !r.IsError || !strings.Contains(r.TextOf(), "not text") {
		t.Errorf("binary: %q", r.TextOf())
	}
	if r = fetch(t, ctx, srv.URL+"/missing"); !r.IsError || !strings.Contains(r.TextOf(), "404") {
		t.Errorf("404: %q", r.TextOf())
	}
	// Not granted: the proxy's refusal, plain and through CONNECT, names
	// the grant that would allow it; nothing of the server comes back.
	for _, u := range []string{other.URL, otherTLS.URL} {
		r = fetch(t, ctx, u)
		host := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
		if !r.IsError || strings.Contains(r.TextOf(), "LOCAL-SECRET") || !strings.Contains(r.TextOf(), "--allow-domain "+host) {
			t.Errorf("%s not granted: IsError=%v %q", u, r.IsError, r.TextOf())
		}
	}
	if r = fetch(t, ctx, "file:///etc/passwd"); !r.IsError || !strings.Contains(r.TextOf(), "http:// or https://") {
		t.Errorf("file URL: %q", r.TextOf())
	}
}

// TestWebFetchWithoutDomains: with no domain granted and the network not
// unrestricted (strict, standard), web_fetch fetches nothing.
func TestWebFetchWithoutDomains(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "LOCAL-SECRET") }))
	defer srv.Close()
	r := fetch(t, webFetchContext(t), srv.URL)
	if !r.IsError || strings.Contains(r.TextOf(), "LOCAL-SECRET") || !strings.Contains(r.TextOf(), "--allow-domain") {
		t.Fatalf("no domains: IsError=%v %q", r.IsError, r.TextOf())
	}
	if sec := WebFetch().Security(); sec == nil || sec.Network != tools.NetworkUnrestricted {
		t.Errorf("web_fetch must declare the network: %+v", sec)
	}
}
