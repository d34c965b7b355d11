package test

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrustStoreReachesTheSandbox: a person whose TLS clients trust a CA
// of their own (a company proxy that re-signs TLS, a private registry) by
// CURL_CA_BUNDLE or NODE_EXTRA_CA_CERTS gets the same trust inside the
// sandbox — the variable passed, its file granted read-only. A TLS server
// on loopback, signed by a certificate only that bundle holds: curl
// (and node, when installed) reach it outside and inside; without the
// variable, curl inside refuses it as outside (the bundle is what makes
// the difference, so the check is real).
func TestTrustStoreReachesTheSandbox(t *testing.T) {
	need(t, "curl", "curl")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "trusted-by-the-bundle") }))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "corp-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	script := "echo curl: $(curl -sS " + srv.URL + "/ 2>&1); command -v node >/dev/null && node -e 'fetch(process.argv[1]).then(r => r.text()).then(console.log, e => console.log(\"node:\", e.cause && e.cause.code))' " + srv.URL + "/ || echo node-absent"
	base := append(os.Environ(), "HOME="+t.TempDir())
	run := func(env []string) string {
		out, errOut := sandboxRunEnv(t, env, "--workspace", ws, "--network", "loopback", "--toolchains", "none", "--", "sh", "-c", script)
		return out + errOut
	}
	without := run(base)
	if strings.Contains(without, "curl: trusted-by-the-bundle") {
		t.Fatalf("curl reached the server without the bundle (the test would prove nothing):\n%s", without)
	}
	with := run(append(base, "CURL_CA_BUNDLE="+ca, "NODE_EXTRA_CA_CERTS="+ca))
	if !strings.HasPrefix(with, "curl: trusted-by-the-bundle\n") {
		t.Errorf("curl inside does not trust the person's CURL_CA_BUNDLE:\n%s", with)
	}
	if !strings.Contains(with, "node-absent") && strings.Count(with, "trusted-by-the-bundle") != 2 {
		t.Errorf("node inside does not trust the person's NODE_EXTRA_CA_CERTS:\n%s", with)
	}
}
