package sandbox

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRefusalsReported: what a rule of the sandbox refuses a command comes
// back in ExitStatus.Refusals, explained — a change outside the writable
// paths (a directory of the test's own, granted read-only), a connect
// and a datagram to loopback services of the user's (the test's) under
// network none, the .git rule — and a command that is refused nothing has
// none. (TestEscapeFiles and TestOwnListenersEveryMode show the same
// calls succeeding unconfined.)
func TestRefusalsReported(t *testing.T) {
	outside := t.TempDir() // the test's own, outside every writable root
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "LOCAL") }))
	defer local.Close()
	port := local.Listener.Addr().(*net.TCPAddr).Port
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	udpPort := pc.LocalAddr().(*net.UDPAddr).Port
	sb, _ := newTestSandbox(t, func(p *Policy) {
		p.CaptureChanges = true
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, outside)
	})
	if sb.captureChild == nil {
		t.Skipf("no change capture here (%v): would check that refusals are reported", sb.Enforcement().Missing)
	}
	out := canonical([]string{outside})[0]
	for _, tc := range []struct {
		name, script, rule, target, allow string
	}{
		{"write outside", `echo y > "` + outside + `/f"`, "write", filepath.Join(out, "f"), "--allow-write " + out},
		{"new file outside", `mkdir "` + outside + `/d"`, "write", filepath.Join(out, "d"), "--allow-write " + out},
		{"connect", `exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(port), "network", "127.0.0.1:" + strconv.Itoa(port), "--network loopback"},
		{"udp send", `echo x > /dev/udp/127.0.0.1/` + strconv.Itoa(udpPort), "network", "127.0.0.1:" + strconv.Itoa(udpPort), "--network loopback"},
		{"git", `mkdir -p a && mkdir a/.git`, "git", "", "--git writable"},
	} {
		r := sh(t, sb, tc.script)
		if r.st.Code == 0 {
			t.Errorf("%s: not refused: %v", tc.name, r)
			continue
		}
		i := slices.IndexFunc(r.st.Refusals, func(f Refusal) bool {
			return f.Rule == tc.rule && (tc.target == "" || f.Target == tc.target)
		})
		if i < 0 {
			t.Errorf("%s: refusals %+v, want rule %s on %s", tc.name, r.st.Refusals, tc.rule, tc.target)
			continue
		}
		if note := RefusalNote(r.st.Refusals, r.st.MoreRefusals, true); !strings.HasPrefix(note, "[lite-agent] ") || !strings.Contains(note, tc.allow) || strings.Contains(note, "\n") {
			t.Errorf("%s: note %q: want one line marked as lite-agent's, naming %q", tc.name, note, tc.allow)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "x" {
		t.Errorf("the file outside changed: %q", b)
	}
	if r := sh(t, sb, `echo fine > ok && cat ok`); r.st.Code != 0 || len(r.st.Refusals) != 0 {
		t.Errorf("a command refused nothing: %v %+v", r, r.st.Refusals)
	}
	// Without change capture (as root with v1 cgroups: a sealed spawner
	// thread's server serves every command of its slot) a refused
	// connect is still the command's, and the next command's list
	// starts empty.
	plain, _ := newTestSandbox(t, nil)
	want := "127.0.0.1:" + strconv.Itoa(port)
	if r := sh(t, plain, `exec 3<>/dev/tcp/127.0.0.1/`+strconv.Itoa(port)); r.st.Code == 0 ||
		!slices.ContainsFunc(r.st.Refusals, func(f Refusal) bool { return f.Rule == "network" && f.Target == want }) {
		t.Errorf("without capture, a refused connect: %v %+v", r, r.st.Refusals)
	}
	if r := sh(t, plain, `true`); len(r.st.Refusals) != 0 {
		t.Errorf("the next command inherited refusals: %+v", r.st.Refusals)
	}
}
