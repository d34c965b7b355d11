package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Tests of the main seccomp program's network rules (internal/seccomp) and
// of the unix-socket rule shared by every network mode. Each runs the probe
// program (testdata/escape.c) confined in every network mode, and — where
// that is meaningful — unconfined, to show that the kernel would have done
// what the filter refuses.

// netSetting is one row of the network settings every table of network
// attacks runs through: the four modes, and none with a domain grant
// (the notification server with the proxy as the one extra destination).
type netSetting struct {
	mode    NetworkMode
	domains bool
}

var allSettings = []netSetting{
	{mode: NetworkNone}, {mode: NetworkLoopback}, {mode: NetworkPrivate},
	{mode: NetworkUnrestricted}, {mode: NetworkNone, domains: true},
}

func (n netSetting) String() string {
	if n.domains {
		return string(n.mode) + "+domains"
	}
	return string(n.mode)
}

// apply sets the network of p (a newEscapeEnv mutator).
func (n netSetting) apply(p *Policy) {
	p.Network = n.mode
	if n.domains {
		p.AllowDomains = []string{"pkg.test"}
	}
}

// forEachMode runs f in a subtest per network setting. Without the
// notification server (netSupervisor nil) only mode none runs, refusing
// connect(2) outright: every other setting fails closed
// (TestLoopbackFailsClosedWithoutSupervisor).
func forEachMode(t *testing.T, f func(t *testing.T, n netSetting)) {
	for _, n := range allSettings {
		t.Run(n.String(), func(t *testing.T) {
			if netSupervisor == nil && (n.mode != NetworkNone || n.domains) {
				t.Skipf("no notification server linked in: would check network %s", n)
			}
			f(t, n)
		})
	}
}

// parsePairs splits "a=x b=y" into a map.
func parsePairs(s string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

// TestEscapeRoutingSockopts: outside mode unrestricted, no socket option
// that would send a socket's traffic elsewhere than the (supervised)
// destination can be set: source routes, a forced egress interface.
func TestEscapeRoutingSockopts(t *testing.T) {
	// Options the filter refuses in none, loopback and private.
	denied := []string{
		"ip_options", "ip_options_high", "ip_options_lsrr", "ip_unicast_if",
		"ipv6_rthdr", "ipv6_rthdr_high", "ipv6_2292rthdr", "ipv6_2292pktoptions",
		"ipv6_pktinfo", "ipv6_unicast_if",
		"so_bindtodevice", "so_bindtoifindex", "so_mark",
	}
	// Options some kernels grant only with a capability (CAP_NET_RAW,
	// CAP_NET_ADMIN), which every mode drops: the filter's refusal cannot
	// be told from the kernel's there, nor compared in mode unrestricted.
	capped := map[string]bool{"ip_options_lsrr": true, "so_mark": true}
	controls := []string{"ip_tos", "ip_pktinfo", "ip_multicast_if", "ipv6_recvpktinfo", "ipv6_tclass", "so_reuseaddr", "so_keepalive"}
	forEachMode(t, func(t *testing.T, n netSetting) {
		mode := n.mode
		e := newEscapeEnv(t, n.apply)
		out, _ := e.probe(t, "sockopts")
		got := parsePairs(out)
		free := parsePairs(e.free(t, "sockopts"))
		for _, name := range denied {
			switch {
			case mode == NetworkUnrestricted && capped[name]:
			case mode == NetworkUnrestricted:
				if got[name] != free[name] {
					t.Errorf("network unrestricted: %s = %q, unconfined %q: unrestricted must not filter it", name, got[name], free[name])
				}
			case got[name] != "EPERM":
				t.Errorf("network %s: setsockopt %s = %q, want EPERM", n, name, got[name])
			}
			if free[name] != "ok" {
				if capped[name] && !root() {
					t.Logf("unconfined %s: %q (not meaningful without capabilities)", name, free[name])
				} else {
					t.Errorf("unconfined setsockopt %s: %q, want ok: the test proves nothing", name, free[name])
				}
			}
		}
		for _, name := range controls {
			switch {
			case mode == NetworkNone && netSupervisor == nil:
				// On the AF_UNIX stand-in: whatever the kernel says, as
				// long as the filter did not refuse it.
				if got[name] == "EPERM" || got[name] == "" {
					t.Errorf("network none: harmless %s refused by the filter: %q", name, got[name])
				}
			case got[name] != "ok":
				t.Errorf("network %s: harmless setsockopt %s = %q, want ok", n, name, got[name])
			}
		}
	})
}

// allowedInet is what an AF_INET/AF_INET6 socket may be outside mode
// unrestricted: stream or datagram, of protocol 0, TCP, UDP or MPTCP.
func allowedInet(typ int, proto int64) bool {
	return (typ == unix.SOCK_STREAM || typ == unix.SOCK_DGRAM) &&
		(proto == 0 || proto == unix.IPPROTO_TCP || proto == unix.IPPROTO_UDP || proto == unix.IPPROTO_MPTCP)
}

// TestEscapeSocketProtocols: outside mode unrestricted, IP sockets are TCP,
// UDP or MPTCP (SCTP connects with addresses in memory the supervisor never
// sees; UDP-Lite, DCCP, ping sockets and the rest are not needed), and only
// stream or datagram (SOCK_SEQPACKET with protocol 0 is SCTP where loaded).
func TestEscapeSocketProtocols(t *testing.T) {
	var free map[string]string // unconfined, once: it takes a second or so
	forEachMode(t, func(t *testing.T, n netSetting) {
		mode := n.mode
		e := newEscapeEnv(t, n.apply)
		// Under none the notification server lets IP sockets exist (for
		// the tree's own loopback listeners), as under loopback; without
		// it there are none.
		noInet := mode == NetworkNone && netSupervisor == nil
		out, _ := e.probe(t, "socket-protos")
		got := parsePairs(out)
		if free == nil {
			free = parsePairs(e.free(t, "socket-protos"))
			if free["2/2/136"] != "ok" {
				t.Logf("unconfined UDP-Lite socket: %q (kernel without it: one refusal less to prove)", free["2/2/136"])
			}
		}
		if mode == NetworkUnrestricted {
			// Left as it was: what the kernel answers (raw and packet
			// types are refused in every mode: not probed).
			for k, v := range free {
				if got[k] != v {
					t.Errorf("network unrestricted: socket %s = %q, unconfined %q", k, got[k], v)
				}
			}
			return
		}
		for k, v := range got {
			parts := strings.Split(k, "/")
			if len(parts) != 3 {
				t.Fatalf("bad probe output %q", out)
			}
			typ, _ := strconv.Atoi(parts[1])
			proto, _ := strconv.ParseInt(parts[2], 10, 64)
			if noInet || !allowedInet(typ, proto) {
				t.Errorf("network %s: socket(family %s, type %d, protocol %d) = %s, want EPERM (filter)", n, parts[0], typ, proto, v)
			}
		}
		if noInet {
			return
		}
		for _, fam := range []string{"2", "10"} {
			for _, tp := range []string{"1/0", "1/6", "2/0", "2/17", "1/262"} {
				k := fam + "/" + tp
				if free[k] == "ok" && got[k] != "ok" {
					t.Errorf("network %s: socket %s = %q, want ok", n, k, got[k])
				}
			}
		}
		for _, k := range []string{"2/2/136", "2/2/1", "10/2/58", "2/1/132", "2/5/0", "2/5/132"} {
			if _, ok := got[k]; ok {
				t.Errorf("network %s: socket %s not refused by the filter: %q", n, k, got[k])
			}
		}
	})
}

// TestEscapeUnixModes: pathname unix sockets beneath the read-write roots
// (workspace, TMPDIR, read-write paths) can be connected to and bound in
// every network mode, and nowhere else; abstract ones are refused.
//
// The one table of unix-socket attacks, through every network setting
// (it replaces the per-supervisor tables of the two servers there were).
func TestEscapeUnixModes(t *testing.T) {
	forEachMode(t, func(t *testing.T, n netSetting) {
		mode := n
		tmp, rw := t.TempDir(), t.TempDir()
		e := newEscapeEnv(t, func(p *Policy) {
			n.apply(p)
			p.TempDir = tmp
			p.ReadWritePaths = append(p.ReadWritePaths, rw)
		})
		outside := filepath.Join(e.secretDir, "docker.sock")
		unixServer(t, outside)
		inside := filepath.Join(e.ws, "app.sock")
		unixServer(t, inside)
		unixServer(t, filepath.Join(tmp, "tmp.sock"))
		unixServer(t, filepath.Join(rw, "rw.sock"))
		abstract := fmt.Sprintf("@lite-agent-test-%d-%s", os.Getpid(), n)
		unixServer(t, abstract)
		if err := os.Symlink(outside, filepath.Join(e.ws, "link.sock")); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ addr, want string }{
			{inside, "ok"},
			{"app.sock", "ok"}, // relative to the working directory
			{filepath.Join(tmp, "tmp.sock"), "ok"},
			{filepath.Join(rw, "rw.sock"), "ok"},
			{outside, "EACCES"},
			{"link.sock", "EACCES"}, // a symlink in the workspace to outside
			{abstract, "EPERM"},
		} {
			// Under a root skeleton a path outside the granted ones
			// does not exist inside (ENOENT, spawn's rootfs_linux.go).
			if got, _ := e.probe(t, "unix-connect", tc.addr); got != tc.want && !(tc.want == "EACCES" && absentInside(e.sb, got)) {
				t.Errorf("network %s: connect to %s: %q, want %s", mode, tc.addr, got, tc.want)
			}
		}
		// The attacks work unconfined: the refusals above are the sandbox's.
		for _, addr := range []string{outside, abstract} {
			if free := e.free(t, "unix-connect", addr); free != "ok" {
				t.Errorf("unconfined connect to %s: %q, want ok", addr, free)
			}
		}
		for _, tc := range []struct{ path, want string }{
			{filepath.Join(e.ws, "made.sock"), "ok"},
			{"rel.sock", "ok"},
			{filepath.Join(rw, "made.sock"), "ok"},
			{filepath.Join(e.secretDir, "planted.sock"), "EACCES"},
		} {
			// Outside the roots the kernel's own bind meets the
			// read-only mount (EROFS) before Landlock (EACCES).
			if got, _ := e.probe(t, "unix-bind", tc.path); got != tc.want && !(tc.want == "EACCES" && (got == "EROFS" || absentInside(e.sb, got))) {
				t.Errorf("network %s: bind %s: %q, want %s", mode, tc.path, got, tc.want)
			}
		}
		for _, p := range []string{filepath.Join(e.ws, "made.sock"), filepath.Join(e.ws, "rel.sock")} {
			if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSocket == 0 {
				t.Errorf("network %s: bound socket %s: %v %v", mode, p, fi, err)
			}
		}
		if _, err := os.Lstat(filepath.Join(e.secretDir, "planted.sock")); err == nil {
			t.Errorf("network %s: a socket file was planted outside the sandbox", mode)
		}
	})
}
