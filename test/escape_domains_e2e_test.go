package test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
)

// TestSandboxRunDomainEscapes: the bypasses of network by domain, through
// `lite-agent sandbox run --allow-domain` as a user runs it, each shown
// working unconfined first. Two loopback services of the test's stand for
// the user's machine: a mirror the user granted by IP:PORT, and a local
// service nothing grants.
func TestSandboxRunDomainEscapes(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: this test would check, through sandbox run --allow-domain, a raw connect, an IP literal and a rebinding name against loopback services")
	}
	serve := func(body string) (url, addr, port string) {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) }))
		t.Cleanup(s.Close)
		addr = s.Listener.Addr().String()
		_, port, _ = net.SplitHostPort(addr)
		return s.URL, addr, port
	}
	grantedURL, grantedAddr, grantedPort := serve("GRANTED-MIRROR")
	localURL, localAddr, localPort := serve("LOCAL-SECRET")
	r := newSBRig(t)
	r.env = append(r.env, "TERM=dumb")
	free := func(script string) string {
		out, _ := exec.Command("bash", "-c", script).CombinedOutput()
		return string(out)
	}
	// What curl is told to do to go through the proxy for loopback (the
	// sandbox's NO_PROXY keeps loopback direct).
	viaProxy := "NO_PROXY= no_proxy= "

	t.Run("raw connect to a loopback service not granted", func(t *testing.T) {
		raw := "(exec 3<>/dev/tcp/127.0.0.1/" + grantedPort + ") && echo GRANTED-CONNECTED; (exec 4<>/dev/tcp/127.0.0.1/" + localPort + ") && echo LOCAL-CONNECTED; curl -sS " + grantedURL + "/; echo; curl -sS " + localURL + "/; echo; echo DONE"
		if out := free(raw); !strings.Contains(out, "GRANTED-CONNECTED") || !strings.Contains(out, "LOCAL-CONNECTED") || !strings.Contains(out, "LOCAL-SECRET") {
			t.Fatalf("unconfined, both services should be reachable:\n%s", out)
		}
		res := r.run("", "--allow-domain", grantedAddr, "--", "bash", "-c", raw)
		if !strings.Contains(res.stdout, "DONE") {
			t.Fatalf("the script did not finish: %v", res)
		}
		// The granted IP:PORT is reached directly (no proxy for
		// loopback), from bash and from curl.
		if !strings.Contains(res.stdout, "GRANTED-CONNECTED") || !strings.Contains(res.stdout, "GRANTED-MIRROR") {
			t.Errorf("the granted loopback service was not reached: %v", res)
		}
		// The other one: EPERM at connect.
		if strings.Contains(res.stdout, "LOCAL-CONNECTED") || strings.Contains(res.stdout, "LOCAL-SECRET") || !strings.Contains(res.stderr, "Operation not permitted") {
			t.Errorf("the service not granted was reached, or not refused with EPERM: %v", res)
		}
	})

	t.Run("IP literal not granted", func(t *testing.T) {
		script := viaProxy + "curl -sS " + localURL + "/; echo; curl -sS " + localURL + "/; echo DONE"
		if out := free("curl -sS " + localURL + "/"); out != "LOCAL-SECRET" {
			t.Fatalf("unconfined: %q", out)
		}
		res := r.run("", "--allow-domain", grantedAddr, "--", "bash", "-c", script)
		// Through the proxy: 403 naming the grant that would allow it;
		// direct: refused at connect.
		if strings.Contains(res.stdout, "LOCAL-SECRET") || !strings.Contains(res.stdout, "--allow-domain "+localAddr) || !strings.Contains(res.stdout, "DONE") {
			t.Errorf("an IP literal not granted: %v", res)
		}
	})

	t.Run("a granted name that resolves to loopback", func(t *testing.T) {
		// localhost is in /etc/hosts: a name that resolves to 127.0.0.1,
		// as a rebinding name does.
		u := "http://localhost:" + localPort + "/"
		if out := free("curl -sS " + u); out != "LOCAL-SECRET" {
			t.Skipf("unconfined, %s gave %q (localhost does not resolve to 127.0.0.1 here): would check that a granted name resolving to loopback is refused by the proxy", u, out)
		}
		script := viaProxy + "curl -sS " + u + "; echo; curl -sS --noproxy '*' " + u + "; echo DONE"
		res := r.run("", "--allow-domain", "localhost", "--", "bash", "-c", script)
		// The proxy resolves the name itself and refuses the loopback
		// answer; going around it, the connect is refused (a name
		// grant is no direct grant).
		if strings.Contains(res.stdout, "LOCAL-SECRET") || !strings.Contains(res.stdout, "a loopback address") || !strings.Contains(res.stdout, "DONE") {
			t.Errorf("a granted name resolving to loopback: %v", res)
		}
	})
}
