package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// The sandbox flags of lite-agent run, as a user runs them: --allow-write
// and a bash curl through the domain proxy (its network event in
// stream-json), and lite-agent gc --caches.

// TestRunAllowWrite: the agent's bash writes a directory outside the
// workspace only when --allow-write grants it; without the flag the
// write is refused and the directory stays empty.
func TestRunAllowWrite(t *testing.T) {
	u := newFakeUser(t)
	ws, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "written.txt")
	write := "echo from-the-sandbox > " + target + " && echo WROTE"
	res, _ := u.bashSession(t, ws, []string{"--toolchains", "none"}, write)
	if strings.Contains(res[0].text, "WROTE") {
		t.Fatalf("without --allow-write bash wrote outside the workspace:\n%s", res[0].text)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatalf("without --allow-write %s exists", target)
	}
	res, _ = u.bashSession(t, ws, []string{"--toolchains", "none", "--allow-write", outside}, write)
	if b, err := os.ReadFile(target); err != nil || string(b) != "from-the-sandbox\n" || !strings.Contains(res[0].text, "WROTE") {
		t.Fatalf("with --allow-write %s: %q %v\n%s", outside, b, err, res[0].text)
	}
}

// TestRunBashCurlNetworkEvent: bash's curl through the domain proxy — an
// upstream on loopback granted by IP:PORT, curl sent to the proxy
// explicitly (-x "$HTTP_PROXY", and an empty --noproxy list: curl
// applies the sandbox's NO_PROXY=127.0.0.1 to -x too), so the request goes through
// it whether or not a literal IP grant is also reachable directly — gives one
// network event per connection in stream-json: allowed with its rule and
// byte counts, and for an address no grant names, refused (the server
// never reached).
func TestRunBashCurlNetworkEvent(t *testing.T) {
	need(t, "curl", "curl")
	serve := func(hits *atomic.Int32) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			fmt.Fprint(w, "hello from upstream")
		}))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	var grantedHits, otherHits atomic.Int32
	granted, other := serve(&grantedHits), serve(&otherHits)
	curl := func(addr string) string {
		return `curl -sS --noproxy '' -x "$HTTP_PROXY" -w ' code=%{http_code}' http://` + addr + `/`
	}
	u := newFakeUser(t)
	res, evs, _ := u.bashSessionEvents(t, t.TempDir(), []string{"--toolchains", "none", "--allow-domain", granted}, curl(granted), curl(other))
	var nets []event
	for _, ev := range evs {
		if ev["type"] == "network" {
			nets = append(nets, ev)
		}
	}
	if !strings.Contains(res[0].text, "hello from upstream code=200") || !strings.Contains(res[1].text, "code=403") {
		t.Fatalf("curl through the proxy: %+v", res)
	}
	find := func(addr string) event {
		host, port, _ := strings.Cut(addr, ":")
		for _, ev := range nets {
			if ev["host"] == host && fmt.Sprint(ev["port"]) == port {
				return ev
			}
		}
		t.Fatalf("no network event for %s in %v", addr, nets)
		return nil
	}
	if ev := find(granted); ev["decision"] != "allow" || !strings.Contains(fmt.Sprint(ev["rule"]), granted) ||
		ev["bytes_up"].(float64) <= 0 || ev["bytes_down"].(float64) <= 0 {
		t.Errorf("the granted connection's event: %v", ev)
	}
	if ev := find(other); ev["decision"] != "deny" {
		t.Errorf("the refused connection's event: %v", ev)
	}
	if grantedHits.Load() != 1 || otherHits.Load() != 0 {
		t.Errorf("upstream hits: granted %d (want 1), other %d (want 0)", grantedHits.Load(), otherHits.Load())
	}
}

// TestGCCaches: `lite-agent gc` removes the toolchain cache of a
// workspace that no longer exists and keeps a live workspace's;
// `gc --caches --dry-run` names the live one and removes nothing;
// `gc --caches` removes it.
func TestGCCaches(t *testing.T) {
	need(t, "Go", "go")
	u := newFakeUser(t)
	root := filepath.Join(u.home, ".cache", "lite-agent", "workspaces")
	mkws := func() (string, string) {
		ws := t.TempDir()
		writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/gc\n\ngo 1.26.0\n")
		writeFile(t, filepath.Join(ws, "gc.go"), "package gc\n\nfunc F() int { return 1 }\n")
		before, _ := filepath.Glob(filepath.Join(root, "*"))
		res, _ := u.bashSession(t, ws, nil, "go build ./... && echo BUILT")
		if !strings.Contains(res[0].text, "BUILT") {
			t.Fatalf("go build in the sandbox:\n%s", res[0].text)
		}
		after, _ := filepath.Glob(filepath.Join(root, "*"))
		if len(after) != len(before)+1 {
			t.Fatalf("one new workspace cache expected: before %v, after %v", before, after)
		}
		for _, d := range after {
			if !slices.Contains(before, d) {
				return ws, d
			}
		}
		return ws, ""
	}
	live, liveCache := mkws()
	gone, goneCache := mkws()
	os.RemoveAll(gone)
	gc := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"gc", "--state-dir", filepath.Join(u.home, ".state")}, args...)...)
		cmd.Env = u.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gc %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	out := gc()
	if !strings.Contains(out, "removed the workspace cache "+goneCache) || strings.Contains(out, liveCache) {
		t.Errorf("gc: want %s removed and %s (of %s) kept:\n%s", goneCache, liveCache, live, out)
	}
	if exists(goneCache) || !exists(liveCache) {
		t.Fatalf("after gc: %s exists %v (want false), %s exists %v (want true)", goneCache, exists(goneCache), liveCache, exists(liveCache))
	}
	out = gc("--caches", "--dry-run")
	if !strings.Contains(out, "would remove the workspace cache "+liveCache) || !exists(liveCache) {
		t.Errorf("gc --caches --dry-run:\n%s", out)
	}
	out = gc("--caches")
	if !strings.Contains(out, "removed the workspace cache "+liveCache) || exists(liveCache) {
		t.Errorf("gc --caches: %s exists %v:\n%s", liveCache, exists(liveCache), out)
	}
}
