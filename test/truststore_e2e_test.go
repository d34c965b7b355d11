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
// sandbox when commands can read the bundle (the system's, or one the
// person grants with --allow-read): the variable is passed. A TLS server
// on loopback, signed by a certificate only that bundle holds: curl (and
// node, when installed) reach it inside with the variable and the grant;
// without the variable, or with it and no grant (nothing is granted for
// it: a file granted by path could be swapped for a link to a secret
// before the sandbox grants it), curl inside refuses it.
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
	run := func(env []string, flags ...string) string {
		args := append([]string{"--workspace", ws, "--network", "loopback", "--toolchains", "none"}, flags...)
		out, errOut := sandboxRunEnv(t, env, append(args, "--", "sh", "-c", script)...)
		return out + errOut
	}
	without := run(base, "--allow-read", ca)
	if strings.Contains(without, "curl: trusted-by-the-bundle") {
		t.Fatalf("curl reached the server without the bundle (the test would prove nothing):\n%s", without)
	}
	vars := append(base, "CURL_CA_BUNDLE="+ca, "NODE_EXTRA_CA_CERTS="+ca)
	if ungranted := run(vars); strings.Contains(ungranted, "curl: trusted-by-the-bundle") {
		t.Errorf("the bundle reached the sandbox without a grant:\n%s", ungranted)
	}
	with := run(vars, "--allow-read", ca)
	if !strings.HasPrefix(with, "curl: trusted-by-the-bundle\n") {
		t.Errorf("curl inside does not trust the person's CURL_CA_BUNDLE:\n%s", with)
	}
	if !strings.Contains(with, "node-absent") && strings.Count(with, "trusted-by-the-bundle") != 2 {
		t.Errorf("node inside does not trust the person's NODE_EXTRA_CA_CERTS:\n%s", with)
	}
}
