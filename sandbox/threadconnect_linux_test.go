package sandbox

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// threadConnectPy connects from a thread that is not the thread-group
// leader, as Go's resolver and dialer and libuv's pool do, and prints the
// outcome: "ok" or the errno name.
const threadConnectPy = `
import errno, socket, sys, threading
kind, addr = sys.argv[1], sys.argv[2]
out = []
def run():
    try:
        if kind == "unix":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(addr)
        else:
            host, port = addr.rsplit(":", 1)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if kind == "udp" else socket.SOCK_STREAM)
            s.connect((host, int(port)))
        out.append("ok")
    except OSError as e:
        out.append(errno.errorcode.get(e.errno, str(e.errno)))
t = threading.Thread(target=run)
t.start(); t.join()
print(out[0])
`

var (
	goCallerOnce sync.Once
	goCallerDir  string
	goCallerErr  error
)

// goCallerEnv names a prebuilt Go caller (TestAsUnprivilegedUser's).
const goCallerEnv = "LITE_AGENT_TEST_GO_CALLER"

// goCaller builds testdata/threadconnect (the Go caller) once per test
// binary and returns its path, or skips.
func goCaller(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(goCallerEnv); p != "" {
		return p
	}
	goCallerOnce.Do(func() {
		if _, err := exec.LookPath("go"); err != nil {
			goCallerErr = err
			return
		}
		if goCallerDir, goCallerErr = os.MkdirTemp("", "lite-agent-gocaller-"); goCallerErr != nil {
			return
		}
		os.Chmod(goCallerDir, 0o755)
		out, err := exec.Command("go", "build", "-o", filepath.Join(goCallerDir, "threadconnect"), "./testdata/threadconnect").CombinedOutput()
		if err != nil {
			goCallerErr = err
			t.Logf("go build: %s", out)
		}
	})
	if goCallerErr != nil {
		t.Skipf("cannot build the Go caller (%v): would check connects and listeners from Go's own threads", goCallerErr)
	}
	return filepath.Join(goCallerDir, "threadconnect")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if goCallerDir != "" {
		os.RemoveAll(goCallerDir)
	}
	if probeDir != "" {
		os.RemoveAll(probeDir)
	}
	os.Exit(code)
}

// outsideServers starts, outside any sandbox, a TCP listener and a UDP
// socket on 127.0.0.1: the user's local services.
func outsideServers(t *testing.T) (tcp, udp string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return ln.Addr().String(), pc.LocalAddr().String()
}

// threadEnv is an escape env whose policy also lets the Go caller run.
func threadEnv(t *testing.T, n netSetting, goBin string) *escapeEnv {
	return newEscapeEnv(t, func(p *Policy) {
		n.apply(p)
		if goBin != "" {
			p.ReadOnlyPaths = append(p.ReadOnlyPaths, filepath.Dir(goBin))
		}
	})
}

// TestConnectFromThreadInEveryMode: a seccomp notification names the
// calling thread. The connect supervisor used to open its pidfd with that
// id as if it were a process, which fails for any thread but the leader:
// with the network granted, every connect a program made from a thread of
// its own got EPERM (go mod download: "dial udp …:53: connect: operation
// not permitted"), and a unix-socket connect from a thread failed in mode
// none. Each setting must give a thread what it gives the main thread —
// to a C caller (pthreads), a Go caller (net.Dial from a goroutine kept
// off the main thread) and a Python one — for TCP, UDP and unix sockets.
// Under none the loopback servers here are the user's, not the
// command's: refused (TestOwnListenersEveryMode has the command's own).
func TestConnectFromThreadInEveryMode(t *testing.T) {
	tcp, udp := outsideServers(t)
	goBin := goCaller(t)
	_, pyErr := exec.LookPath("python3")
	forEachMode(t, func(t *testing.T, n netSetting) {
		e := threadEnv(t, n, goBin)
		sock := filepath.Join(e.ws, "app.sock")
		unixServer(t, sock)
		inet := "ok"
		if n.mode == NetworkNone {
			inet = "EPERM"
		}
		callers := map[string]func(kind, addr string) string{
			"c": func(kind, addr string) string {
				out, _ := e.probe(t, "thread-connect", kind, addr)
				return out
			},
			"go": func(kind, addr string) string {
				return strings.TrimSpace(runConfined(t, e.sb, goBin, kind, addr))
			},
		}
		if pyErr == nil {
			callers["python"] = func(kind, addr string) string {
				r := sh(t, e.sb, "python3 -c '"+threadConnectPy+"' "+kind+" "+addr)
				return strings.TrimSpace(r.out)
			}
		}
		for name, call := range callers {
			for _, tc := range []struct{ kind, addr, want string }{
				{"unix", sock, "ok"},
				{"tcp", tcp, inet},
				{"udp", udp, inet},
			} {
				if got := call(tc.kind, tc.addr); got != tc.want {
					t.Errorf("network %s, %s caller: %s connect to %s from a thread: %q, want %s", n, name, tc.kind, tc.addr, got, tc.want)
				}
			}
		}
	})
}

// runConfined runs path with args in sb and returns its stdout.
func runConfined(t *testing.T, sb *Sandbox, path string, args ...string) string {
	t.Helper()
	var out strings.Builder
	if _, err := sb.Run(t.Context(), &Command{Path: path, Args: append([]string{filepath.Base(path)}, args...), Stdout: &out, Stderr: &out}); err != nil {
		t.Fatalf("%s %v: %v", path, args, err)
	}
	return out.String()
}

// TestOwnListenersEveryMode: tests that open servers work under every
// network setting, none included. A command's own server — bound to the
// wildcard on port 0 as httptest, supertest and python's http.server do —
// keeps the wildcard, as unconfined (only local clients reach it: notify's
// TestWildcardListenerLocalOnly), and the command reaches it from another thread, over TCP and UDP, in C
// and in Go. Under none that is all it reaches: the user's loopback
// services (servers this test starts outside the sandbox), a resolver,
// any other address are refused, while unconfined they are reachable.
func TestOwnListenersEveryMode(t *testing.T) {
	tcp, udp := outsideServers(t)
	_, tcpPort, _ := net.SplitHostPort(tcp)
	goBin := goCaller(t)
	forEachMode(t, func(t *testing.T, n netSetting) {
		e := threadEnv(t, n, goBin)
		// Go's ":0" is a dual-stack IPv6 socket bound to ::.
		bound, goBound := "0.0.0.0", "::"
		for _, kind := range []string{"tcp", "udp"} {
			if got, _ := e.probe(t, "own-server", kind); got != "ok bound="+bound {
				t.Errorf("network %s: the command's own %s server (C): %q, want ok bound=%s", n, kind, got, bound)
			}
		}
		if got := strings.TrimSpace(runConfined(t, e.sb, goBin, "serve")); got != "ok bound="+goBound {
			t.Errorf("network %s: the command's own HTTP server (Go, net.Listen(\":0\")): %q, want ok bound=%s", n, got, goBound)
		}
		if n.mode != NetworkNone {
			return
		}
		// The attacks: each works unconfined, and each is refused here.
		for _, tc := range []struct{ what, kind, addr string }{
			{"the user's loopback TCP service", "tcp", tcp},
			{"the user's loopback UDP service", "udp", udp},
			{"a resolver on loopback", "udp", "127.0.0.53:53"},
			{"another loopback address", "tcp", "127.0.0.2:" + tcpPort},
			{"a remote address", "udp", "192.0.2.1:53"},
		} {
			if got, _ := e.probe(t, "thread-connect", tc.kind, tc.addr); got != "EPERM" {
				t.Errorf("network %s: %s (%s %s): %q, want EPERM", n, tc.what, tc.kind, tc.addr, got)
			}
			if free := e.free(t, "thread-connect", tc.kind, tc.addr); free == "EPERM" || (tc.addr == tcp || tc.addr == udp) && free != "ok" {
				t.Errorf("unconfined %s (%s %s): %q: the refusal above proves nothing", tc.what, tc.kind, tc.addr, free)
			}
		}
		r := sh(t, e.sb, "exec 3<>/dev/tcp/127.0.0.1/"+tcpPort+" && echo connected")
		if r.st.Code == 0 {
			t.Errorf("network %s: bash /dev/tcp to the user's service: %v", n, r)
		}
	})
}

// ownAddrProbe binds, in one process, a socket of its own where the
// user's service is not — same port number, another protocol or another
// loopback address — and then reaches for the user's service. Each line
// is "NAME ok" or "NAME <errno name>".
const ownAddrProbe = `
import socket, sys, errno
tcp_port, udp_port = int(sys.argv[1]), int(sys.argv[2])
def attempt(name, bind_family, bind_type, bind_addr, reach):
    b = socket.socket(bind_family, bind_type)
    try:
        b.bind(bind_addr)
    except OSError as e:
        print(name, "bind", errno.errorcode.get(e.errno, e.errno)); return
    try:
        reach()
        print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
    finally:
        b.close()
def tcp_connect():
    c = socket.create_connection(("127.0.0.1", tcp_port), timeout=5); c.close()
def udp_send():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b"x", ("127.0.0.1", udp_port)); u.close()
def mapped_send():
    u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.sendto(b"x", ("::ffff:127.0.0.1", udp_port)); u.close()
attempt("udp-bind-then-tcp", socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", tcp_port), tcp_connect)
attempt("other-loopback-bind", socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.2", tcp_port), tcp_connect)
attempt("ipv6-loopback-bind", socket.AF_INET6, socket.SOCK_STREAM, ("::1", tcp_port), tcp_connect)
attempt("tcp-bind-then-udp", socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", udp_port), udp_send)
attempt("tcp-bind-then-mapped-udp", socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", udp_port), mapped_send)
`

// outsideServersCrossFree is outsideServers where the TCP service's port
// is free for UDP and the UDP service's port free for TCP, as the probe
// needs (each binds the other protocol at the service's port). Ports are
// taken by tests running beside this one: a few tries.
func outsideServersCrossFree(t *testing.T) (tcp, udp string) {
	t.Helper()
	free := func(network, addr string) bool {
		if network == "udp" {
			c, err := net.ListenPacket(network, addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		}
		l, err := net.Listen(network, addr)
		if err == nil {
			l.Close()
		}
		return err == nil
	}
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if free("udp", ln.Addr().String()) && free("tcp", pc.LocalAddr().String()) {
			t.Cleanup(func() { ln.Close(); pc.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			return ln.Addr().String(), pc.LocalAddr().String()
		}
		ln.Close()
		pc.Close()
	}
	t.Fatal("no pair of loopback ports free for the other protocol in 20 tries")
	return "", ""
}

// TestOwnAddressIsTheWholeAddress: under none, what a command bound opens
// exactly that address (type, address, port) to it, not the port number:
// keyed on the port alone, each probe below reached the user's service
// (a security review's finding). Unconfined each reaches it; confined
// each is refused.
func TestOwnAddressIsTheWholeAddress(t *testing.T) {
	const py = "/usr/bin/python3" // under the default system paths
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 not found: this test would check that binding another protocol or loopback address at the port of a user's service does not open it")
	}
	tcp, udp := outsideServersCrossFree(t)
	_, tcpPort, _ := net.SplitHostPort(tcp)
	_, udpPort, _ := net.SplitHostPort(udp)
	probes := []string{"udp-bind-then-tcp", "other-loopback-bind", "ipv6-loopback-bind", "tcp-bind-then-udp", "tcp-bind-then-mapped-udp"}
	free, err := exec.Command(py, "-c", ownAddrProbe, tcpPort, udpPort).CombinedOutput()
	if err != nil {
		t.Fatalf("unconfined probe: %v\n%s", err, free)
	}
	for _, p := range probes {
		if !strings.Contains(string(free), p+" ok\n") {
			t.Fatalf("unconfined, %s did not reach the user's service, so the confined run would prove nothing:\n%s", p, free)
		}
	}
	sb, _ := newTestSandbox(t, func(p *Policy) { p.Network = NetworkNone })
	if sb.notify != notifyNet {
		t.Skip("no seccomp user notification: under none IP sockets are refused outright, so no own listener exists to widen")
	}
	got := runConfined(t, sb, py, "-c", ownAddrProbe, tcpPort, udpPort)
	for _, p := range probes {
		if !strings.Contains(got, p+" EPERM\n") {
			t.Errorf("network none: %s: want the bind to work and the user's service refused (EPERM):\n%s", p, got)
		}
	}
}

// reusePortProbe binds the user's listener's address with SO_REUSEPORT:
// "bound" when the kernel accepted the second listener (it would then get
// a share of the user's connections), else the failing step and errno.
const reusePortProbe = `
import socket, sys, errno
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
except OSError as e:
    print("setsockopt", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
try:
    s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
    print("bound")
except OSError as e:
    print("bind", errno.errorcode.get(e.errno, e.errno))
`

// withSocketOption is a ListenConfig whose sockets get the SOL_SOCKET
// option opt set to 1 before they bind: a user's service that shares its
// address.
func withSocketOption(opt int) *net.ListenConfig {
	return &net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
}

// TestReusePortRefused: a listener of the user's with SO_REUSEPORT (same
// uid) shares its address with any socket of that uid that sets it too;
// the kernel then splits the user's incoming connections between them.
// Unconfined the probe binds beside it; confined, in every mode but
// unrestricted, SO_REUSEPORT itself is refused.
func TestReusePortRefused(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 not found: this test would check that SO_REUSEPORT, which shares a user's listener's address, is refused")
	}
	ln, err := withSocketOption(unix.SO_REUSEPORT).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if out, err := exec.Command(py, "-c", reusePortProbe, port).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "bound" {
		t.Fatalf("unconfined, the probe did not bind beside the user's listener (%v): %s — the refusal below would prove nothing", err, out)
	}
	for _, mode := range []NetworkMode{NetworkNone, NetworkLoopback, NetworkPrivate} {
		sb, _ := newTestSandbox(t, func(p *Policy) { p.Network = mode })
		if got := strings.TrimSpace(runConfined(t, sb, py, "-c", reusePortProbe, port)); got != "setsockopt EPERM" {
			t.Errorf("network %s: SO_REUSEPORT beside the user's listener: %q, want setsockopt EPERM", mode, got)
		}
	}
}

// udpReuseAddrProbe binds the user's UDP service's address with
// SO_REUSEADDR (argv[1] its port), then waits for one datagram: "got X"
// when it took one, else the failing step and errno. argv[2] "own" binds
// a fresh port instead and sends itself a datagram (its own UDP server,
// which must keep working).
const udpReuseAddrProbe = `
import socket, sys, errno
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
port = 0 if sys.argv[2] == "own" else int(sys.argv[1])
try:
    s.bind(("127.0.0.1", port))
except OSError as e:
    print("bind", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
if sys.argv[2] == "own":
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.sendto(b"mine", s.getsockname())
print("bound", flush=True)
s.settimeout(10)
try:
    print("got", s.recvfrom(64)[0].decode())
except socket.timeout:
    print("nothing")
`

// TestUDPReuseAddrCannotTakeAService: on UDP, SO_REUSEADDR lets a socket
// of any user bind an address and port that another socket with the
// option holds, and the latest bind receives the datagrams. Unconfined,
// the probe (as uid 65534, another user) takes the user's service's
// query; confined, in every mode but unrestricted, its bind gets
// EADDRINUSE, and its own UDP server with SO_REUSEADDR still works.
func TestUDPReuseAddrCannotTakeAService(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 not found: this test would check that SO_REUSEADDR cannot share a user's UDP service's address")
	}
	svc, err := withSocketOption(unix.SO_REUSEADDR).ListenPacket(t.Context(), "udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	_, port, _ := net.SplitHostPort(svc.LocalAddr().String())
	// probe runs the probe (confined when sb is set), sends the
	// service's address a query once the probe has bound, and returns
	// what the probe printed.
	probe := func(sb *Sandbox, argv ...string) string {
		pr, pw := io.Pipe()
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		if sb == nil {
			if os.Geteuid() != 0 {
				t.Skip("needs root to run the unconfined probe as another user (uid 65534)")
			}
			cmd := exec.Command(py, append([]string{"-c", udpReuseAddrProbe}, argv...)...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			cmd.Stdout, cmd.Stderr = pw, pw
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { cmd.Wait(); pw.Close() }()
		} else {
			p, err := sb.Start(t.Context(), &Command{Path: py, Args: append([]string{py, "-c", udpReuseAddrProbe}, argv...), Stdout: pw, Stderr: pw})
			if err != nil {
				t.Fatal(err)
			}
			go func() { p.Wait(); pw.Close() }()
		}
		var out []string
		for l := range lines {
			out = append(out, l)
			if l == "bound" && argv[1] == "theirs" {
				c, err := net.Dial("udp4", svc.LocalAddr().String())
				if err != nil {
					t.Fatal(err)
				}
				c.Write([]byte("query"))
				c.Close()
			}
		}
		return strings.Join(out, "\n")
	}
	if got := probe(nil, port, "theirs"); got != "bound\ngot query" {
		t.Fatalf("unconfined, another user's probe did not take the service's query: %q — the refusal below would prove nothing", got)
	}
	for _, mode := range []NetworkMode{NetworkNone, NetworkLoopback, NetworkPrivate} {
		sb, _ := newTestSandbox(t, func(p *Policy) { p.Network = mode })
		if got := probe(sb, port, "theirs"); got != "bind EADDRINUSE" {
			t.Errorf("network %s: SO_REUSEADDR on the user's UDP service's address: %q, want bind EADDRINUSE", mode, got)
		}
		if got := probe(sb, port, "own"); got != "bound\ngot mine" {
			t.Errorf("network %s: the command's own UDP server with SO_REUSEADDR: %q, want it to work", mode, got)
		}
	}
}

// TestSealedThreadServesEveryCommand pins what keeps spawn under none as
// cheap as it was with the connect-only supervisor: where the spawner
// thread is sealed (root with v1 cgroups) and capture is off, the thread's
// program carries the notification server's calls and one server per
// thread serves its commands — a command loads no program of its own and
// starts no server.
func TestSealedThreadServesEveryCommand(t *testing.T) {
	for _, n := range allSettings {
		sb, _ := newTestSandbox(t, n.apply)
		if !sb.sealed {
			t.Logf("network %s: spawner threads not sealed here (namespaces or cgroup v2): each command has its own server", n)
			continue
		}
		if !sb.threadNotifies || sb.rawPieces.ChildNotifies || len(sb.rawPieces.ChildBPF) != 0 {
			t.Errorf("network %s, sealed: thread notifies %v, child program %d bytes (notifies %v): want the thread's listener only",
				n, sb.threadNotifies, len(sb.rawPieces.ChildBPF), sb.rawPieces.ChildNotifies)
		}
		sb.spMu.Lock()
		for _, sp := range sb.spAll {
			if !sp.t.Supervised() {
				t.Errorf("network %s: a sealed spawner thread without its server", n)
			}
		}
		sb.spMu.Unlock()
	}
}
