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

// ownServersPy is a test suite's fixture, as a user's tests start one: an
// HTTP server on the wildcard address and port 0 (http.server, like
// httptest or supertest), fetched through 127.0.0.1 from another thread,
// and a UDP socket that sends to itself. Then it tries the user's local
// service at argv[1] (another loopback port, not the command's own).
const ownServersPy = `
import http.server, socket, sys, threading, urllib.request
srv = http.server.ThreadingHTTPServer(("", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
port = srv.server_address[1]
try:
    urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=10).read()
    print("own-http: ok bound=%s" % srv.server_address[0])
except Exception as e:
    print("own-http:", e)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("", 0))
try:
    u.sendto(b"y", ("127.0.0.1", u.getsockname()[1]))
    print("own-udp:", "ok" if u.recv(1) == b"y" else "bad")
except OSError as e:
    print("own-udp:", e)
try:
    print("local:", urllib.request.urlopen("http://" + sys.argv[1] + "/", timeout=10).read().decode())
except Exception as e:
    print("local:", e)
`

// TestSandboxRunOwnServersUnderNone: through the CLI as a user runs it,
// under the default network none, a command's own test servers work and
// the user's local services stay out of reach (the same script run
// unconfined reaches them: the refusal is the sandbox's).
func TestSandboxRunOwnServersUnderNone(t *testing.T) {
	// The system's python3: a pyenv shim would need the python profile.
	python, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("/usr/bin/python3 not installed: would check a command's own loopback servers under network none")
	}
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "LOCAL-SECRET") }))
	defer local.Close()
	addr := local.Listener.Addr().(*net.TCPAddr).String()

	free, _ := exec.Command(python, "-c", ownServersPy, addr).CombinedOutput()
	if !strings.Contains(string(free), "local: LOCAL-SECRET") {
		t.Fatalf("unconfined, the script does not reach the local service, so the test proves nothing:\n%s", free)
	}
	out, errOut := sandboxRunEnv(t, nil, "--workspace", t.TempDir(), "--toolchains", "none", "--", python, "-c", ownServersPy, addr)
	for _, want := range []string{"own-http: ok bound=0.0.0.0\n", "own-udp: ok\n", "local: <urlopen error [Errno 1] Operation not permitted>\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("sandbox run (network none): missing %q in\n%s%s", want, out, errOut)
		}
	}
	if strings.Contains(out, "LOCAL-SECRET") {
		t.Errorf("network none reached the user's local service:\n%s", out)
	}
}
