//go:build linux

package notify

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// directGrants is an Options.DirectGrant over a fixed set of addresses,
// recording what OnDirect was told.
type directGrants struct {
	grants map[netip.AddrPort]string
	mu     sync.Mutex
	events []string
}

func (d *directGrants) grant(ap netip.AddrPort) (string, bool) {
	r, ok := d.grants[ap]
	return r, ok
}

func (d *directGrants) on(ap netip.AddrPort, rule string) {
	d.mu.Lock()
	d.events = append(d.events, ap.String()+" "+rule)
	d.mu.Unlock()
}

func (d *directGrants) reported() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.events...)
}

// TestDirectGrantsModeNone: in mode none a literal grant admits its
// address — TCP connect (IPv4 and v4-mapped), UDP connect and addressed
// sends — and nothing beside it: another port of the same loopback
// address, the same port of another loopback address. Without the grant
// the same server is refused (the first row), so the grant is what
// admits it. Only connects are reported, with the grant's rule.
func TestDirectGrantsModeNone(t *testing.T) {
	ln, accepted := loopbackServer(t, "tcp4", "127.0.0.1:0")
	other, otherAccepted := loopbackServer(t, "tcp4", "127.0.0.1:0")
	pc, got := udpServer(t, "udp4", "127.0.0.1:0")
	tcpAP := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(portOf(ln)))
	udpAP := netip.MustParseAddrPort(pc.LocalAddr().String())
	otherAP := netip.AddrPortFrom(tcpAP.Addr(), uint16(portOf(other)))

	// Without a grant: refused, as every loopback port the tree did not
	// bind.
	c := startNetChild(t, netChildConfig{Mode: ModeNone})
	c.expect(unix.EPERM, netReq{Op: "connect", FD: c.socket("inet", "stream", 0), Addr: tcpAP.String()})
	c.expect(unix.EPERM, netReq{Op: "sendto", FD: c.socket("inet", "dgram", 0), Addr: udpAP.String(), Data: []byte("x")})

	forEachFilter(t, func(t *testing.T, filter string) {
		d := &directGrants{grants: map[netip.AddrPort]string{tcpAP: "--allow-domain " + tcpAP.String(), udpAP: ""}}
		c := startNetChild(t, netChildConfig{Mode: ModeNone, Filter: filter, DirectGrant: d.grant, OnDirect: d.on})
		before := accepted.Load()
		for _, tc := range []struct{ domain, addr string }{
			{"inet", tcpAP.String()},
			{"inet6", netip.AddrPortFrom(netip.AddrFrom16(tcpAP.Addr().As16()), tcpAP.Port()).String()},
		} {
			fd := c.socket(tc.domain, "stream", 0)
			c.must(netReq{Op: "connect", FD: fd, Addr: tc.addr})
			c.must(netReq{Op: "sendto", FD: fd, Data: []byte("granted")})
			echo(t, c, fd, "granted")
			c.must(netReq{Op: "close", FD: fd})
		}
		if n := accepted.Load() - before; n != 2 {
			t.Errorf("the granted server accepted %d connections, want 2", n)
		}
		// Beside the grant: refused.
		c.expect(unix.EPERM, netReq{Op: "connect", FD: c.socket("inet", "stream", 0), Addr: otherAP.String()})
		c.expect(unix.EPERM, netReq{Op: "connect", FD: c.socket("inet", "stream", 0), Addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), tcpAP.Port()).String()})
		if otherAccepted.Load() != 0 {
			t.Errorf("the server beside the grant accepted a connection")
		}
		// UDP: an addressed send and a connect (reported: a connect),
		// then a send on the connected socket.
		u := c.socket("inet", "dgram", 0)
		c.must(netReq{Op: "sendto", FD: u, Addr: udpAP.String(), Data: []byte("dgram1")})
		c.must(netReq{Op: "sendmsg", FD: u, Addr: udpAP.String(), Data: []byte("dgram2")})
		c.must(netReq{Op: "connect", FD: u, Addr: udpAP.String()})
		c.must(netReq{Op: "sendto", FD: u, Data: []byte("dgram3")})
		for _, want := range []string{"dgram1", "dgram2", "dgram3"} {
			select {
			case m := <-got:
				if m != want {
					t.Errorf("datagram %q, want %q", m, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no datagram %q", want)
			}
		}
		want := []string{tcpAP.String() + " --allow-domain " + tcpAP.String(), tcpAP.String() + " --allow-domain " + tcpAP.String(), udpAP.String() + " " + udpAP.String()}
		if ev := d.reported(); len(ev) != len(want) || ev[0] != want[0] || ev[1] != want[1] || ev[2] != want[2] {
			t.Errorf("reported %q, want %q (connects only; an empty rule shown as the address)", ev, want)
		}
	})
}

// TestDirectGrantsReachBeyondTheMode: in loopback mode a literal grant of
// a host in a network namespace the test made (10.x, private) admits
// that one address and port — TCP and UDP — while its other port and its
// IPv6 address stay refused and receive nothing
// (TestNetSupervisorNetnsLoopbackMode shows the host refused without the
// grant).
func TestDirectGrantsReachBeyondTheMode(t *testing.T) {
	n := newTestNet(t, "in loopback mode an IP:PORT grant of a netns host admits that address and port only")
	const port, otherPort = 8082, 8083
	n.serve(t, port)
	n.serve(t, otherPort)
	granted := netip.AddrPortFrom(n.peer4, port)
	d := &directGrants{grants: map[netip.AddrPort]string{granted: "policy.toml:3"}}
	c := startNetChild(t, netChildConfig{Mode: ModeLoopback, DirectGrant: d.grant, OnDirect: d.on})
	fd := c.socket("inet", "stream", 0)
	c.must(netReq{Op: "connect", FD: fd, Addr: granted.String()})
	c.must(netReq{Op: "sendmsg", FD: fd, Data: []byte("beyond")})
	echo(t, c, fd, "beyond")
	before := n.datagrams.Load()
	c.must(netReq{Op: "sendto", FD: c.socket("inet", "dgram", 0), Addr: granted.String(), Data: []byte("dgram")})
	n.awaitDatagram(t, before, "the granted netns host got no datagram")
	accepted := n.accepted.Load()
	c.expect(unix.EPERM, netReq{Op: "connect", FD: c.socket("inet", "stream", 0), Addr: netip.AddrPortFrom(n.peer4, otherPort).String()})
	c.expect(unix.EPERM, netReq{Op: "connect", FD: c.socket("inet6", "stream", 0), Addr: netip.AddrPortFrom(n.peer6, port).String()})
	c.expect(unix.EPERM, netReq{Op: "sendto", FD: c.socket("inet", "dgram", 0), Addr: netip.AddrPortFrom(n.peer4, otherPort).String(), Data: []byte("leak")})
	if n.accepted.Load() != accepted {
		t.Errorf("a connection beside the grant was accepted")
	}
	if ev := d.reported(); len(ev) != 1 || ev[0] != granted.String()+" policy.toml:3" {
		t.Errorf("reported %q, want the one connect", ev)
	}
}

// TestDirectGrantNotForOthersProxy: a direct grant naming another
// sandbox's live proxy does not reach it (that proxy holds another
// command's grants and asker); the command's own proxy is not reported
// as a direct grant.
func TestDirectGrantNotForOthersProxy(t *testing.T) {
	theirs := netip.MustParseAddrPort("127.0.0.1:41011")
	mine := netip.MustParseAddrPort("127.0.0.1:41012")
	defer RegisterProxy(theirs)()
	defer RegisterProxy(mine)()
	all := func(ap netip.AddrPort) (string, bool) { return "everything", true }
	s := &netSupervisorRun{opts: Options{Mode: ModeNone, Proxy: mine, DirectGrant: all}}
	sa := func(ap netip.AddrPort) []byte {
		b := inet4Sockaddr(ap.Addr().As4())
		b[2], b[3] = byte(ap.Port()>>8), byte(ap.Port())
		return b
	}
	for _, base := range []func(Mode, []byte) (inetVerdict, unix.Errno){judgeInetConnect, judgeInetSend} {
		if v, _, _ := s.judgeDestination(base, sa(theirs), unix.SOCK_STREAM); v != verdictDeny {
			t.Errorf("another sandbox's proxy under a grant of everything: %v, want refused", v)
		}
		if v, _, g := s.judgeDestination(base, sa(mine), unix.SOCK_STREAM); v != verdictAllow || g != "" {
			t.Errorf("the own proxy: %v, grant %q; want allowed as the proxy", v, g)
		}
		if v, _, g := s.judgeDestination(base, sa(netip.MustParseAddrPort("127.0.0.1:41013")), unix.SOCK_DGRAM); v != verdictAllow || g != "everything" {
			t.Errorf("a granted address: %v, grant %q", v, g)
		}
	}
}
