//go:build linux

package notify

import (
	"encoding/binary"
	"net/netip"
	"sync"

	"golang.org/x/sys/unix"
)

// What the network supervisor admits beyond its mode's ranges: the domain
// proxy's one address, the literal IP[:PORT] grants (Options.DirectGrant),
// and — in mode none — the loopback ports the command's own tree has
// bound (so a test can start a server and talk to it without reaching
// anything else on the machine's loopback).
//
// Every function works on the supervisor's validated copy of the address,
// as in addr_linux.go; the supervisor then performs the call with
// exactly those bytes.

// extraDestination says whether an address the mode refuses is still
// allowed to a socket of type typ (SOCK_STREAM, SOCK_DGRAM): the proxy
// (exact address and port), a direct grant, or in mode none an address
// the tree's own socket of the same type is bound to. grant is the
// direct grant's source when that is what admitted it ("" otherwise), for
// the event. ok is false when sa is not an AF_INET/AF_INET6 address with
// a port.
func (s *netSupervisorRun) extraDestination(sa []byte, typ int) (grant string, ok bool) {
	ap, ok := sockaddrAddrPort(sa)
	if !ok {
		return "", false
	}
	if p := s.opts.Proxy; p.IsValid() && ap.Addr() == p.Addr().Unmap() && ap.Port() == p.Port() {
		return "", true
	}
	if s.opts.Mode == ModeNone && s.ports().ownsDestination(typ, ap) {
		return "", true
	}
	// Last, so that the proxy and the tree's own servers are not
	// reported as direct grants. Any socket type: an IP:PORT grant names
	// an address, not a protocol (a DNS server granted by IP:53 takes
	// UDP).
	if f := s.opts.DirectGrant; f != nil {
		if rule, ok := f(ap); ok {
			if rule == "" {
				rule = ap.String()
			}
			return rule, true
		}
	}
	return "", false
}

// judgeDestination is the one rule for an AF_INET/AF_INET6 destination,
// of connect(2) (base judgeInetConnect) and of an addressed send (base
// judgeInetSend, which reads AF_UNSPEC and short names as the send path
// of the kernel does): the mode's verdict, plus extraDestination, minus
// the other sandboxes' proxies (a TCP sendto with MSG_FASTOPEN connects,
// and the rule is the same for both). grant is extraDestination's: the
// direct grant that admitted the address, or "".
func (s *netSupervisorRun) judgeDestination(base func(Mode, []byte) (inetVerdict, unix.Errno), sa []byte, typ int) (v inetVerdict, errno unix.Errno, grant string) {
	v, errno = base(s.opts.Mode, sa)
	if v == verdictDeny {
		var ok bool
		if grant, ok = s.extraDestination(sa, typ); ok {
			v, errno = verdictAllow, 0
		}
	}
	// After the extras too: a direct grant naming another sandbox's
	// proxy would hand this command that sandbox's grants and asker.
	if v == verdictAllow && s.othersProxy(sa) {
		return verdictDeny, unix.EPERM, ""
	}
	return v, errno, grant
}

// ownAddr is one address a socket of the sandbox is bound to: its type
// and its exact (unmapped) address and port. The kernel tells sockets
// apart by all three, so must the rule: keyed on the port alone, a UDP
// bind of 127.0.0.1:P (free while the user's TCP service holds P), or a
// bind of 127.0.0.2:P or [::1]:P, made the user's 127.0.0.1:P reachable.
type ownAddr struct {
	typ int
	ap  netip.AddrPort
}

// PortSet is the loopback addresses a sandbox's commands bound (mode
// none). One set per Sandbox, shared by the supervisors of all its
// commands: a dev server started in the background by one command is
// reachable from the next.
type PortSet struct {
	mu    sync.Mutex
	addrs map[ownAddr]bool
}

func (p *PortSet) add(a ownAddr) {
	p.mu.Lock()
	if p.addrs == nil {
		p.addrs = map[ownAddr]bool{}
	}
	p.addrs[a] = true
	p.mu.Unlock()
}

// ports is the set this supervisor records into: the sandbox's, or its
// own when started without one (tests of the supervisor alone).
func (s *netSupervisorRun) ports() *PortSet {
	if s.opts.OwnPorts != nil {
		return s.opts.OwnPorts
	}
	return &s.ownPorts
}

// liveProxies are the exact addresses of every domain proxy this process
// runs (one per Sandbox with domain grants). A proxy listens on loopback
// and serves whoever connects, so loopback and private modes, which reach
// all of 127.0.0.0/8, would reach every one of them: a custom tool's
// handler declared loopback (which NarrowNetwork gives no proxy) could
// use the bash sandbox's proxy — its grants and its asker. A live proxy
// is therefore refused to every command but the ones it was started for.
var liveProxies struct {
	mu    sync.Mutex
	addrs map[netip.AddrPort]int
}

// RegisterProxy records a domain proxy's address until the returned
// function is called (when the proxy closes).
func RegisterProxy(ap netip.AddrPort) (unregister func()) {
	ap = netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
	liveProxies.mu.Lock()
	if liveProxies.addrs == nil {
		liveProxies.addrs = map[netip.AddrPort]int{}
	}
	liveProxies.addrs[ap]++
	liveProxies.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			liveProxies.mu.Lock()
			if liveProxies.addrs[ap]--; liveProxies.addrs[ap] <= 0 {
				delete(liveProxies.addrs, ap)
			}
			liveProxies.mu.Unlock()
		})
	}
}

// othersProxy says whether sa is a live domain proxy that is not this
// command's own (Options.Proxy).
func (s *netSupervisorRun) othersProxy(sa []byte) bool {
	ap, ok := sockaddrAddrPort(sa)
	if !ok {
		return false
	}
	if p := s.opts.Proxy; p.IsValid() && ap.Addr() == p.Addr().Unmap() && ap.Port() == p.Port() {
		return false
	}
	liveProxies.mu.Lock()
	defer liveProxies.mu.Unlock()
	return liveProxies.addrs[ap] > 0
}

// bindAllowed is inetBindAllowed, except that mode none may bind loopback
// (the tree's own servers): what it binds is remembered by recordBind.
func (s *netSupervisorRun) bindAllowed(ip netip.Addr) bool {
	if s.opts.Mode == ModeNone {
		return ip.Unmap().IsLoopback()
	}
	return inetBindAllowed(s.opts.Mode, ip)
}

// judgeBind decides bind(2) by bindAllowed; see judgeInetBind for the
// cases.
func (s *netSupervisorRun) judgeBind(sa []byte) (inetVerdict, unix.Errno) {
	if s.opts.Mode == ModeNone {
		if v, errno := judgeInetBind(ModeLoopback, sa); v != verdictAllow {
			return v, errno
		}
		return verdictAllow, 0
	}
	return judgeInetBind(s.opts.Mode, sa)
}

// isWildcard reports whether sa is an AF_INET or AF_INET6 wildcard
// address (0.0.0.0, ::, ::ffff:0.0.0.0), which the server binds as asked
// on the loopback device only (keepOnLoopback, server_linux.go).
func isWildcard(sa []byte) bool {
	ap, ok := sockaddrAddrPort(sa)
	return ok && ap.Addr().IsUnspecified()
}

// recordBind remembers the address a socket of the sandbox (of type
// typ) is bound to, after a successful bind or the kernel's bind at
// listen, in mode none (where only these are reachable on loopback). A
// wildcard is recorded as such, with its port, for each family it serves
// (a dual-stack IPv6 socket serves both; ownsDestination says what it
// admits). An address stays recorded for the sandbox's life: one a
// command released and something else then took stays reachable — the
// one gap of this rule, accepted (a test server's ephemeral port is
// rarely reused by a service of the user's).
func (s *netSupervisorRun) recordBind(fd, typ int) {
	if s.opts.Mode != ModeNone {
		return
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		s.ports().add(ownAddr{typ, netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))})
	case *unix.SockaddrInet6:
		// A dual-stack socket bound to ::ffff:127.0.0.1 serves IPv4
		// clients of 127.0.0.1: recorded unmapped, as destinations
		// are judged (sockaddrAddrPort).
		ip := netip.AddrFrom16(a.Addr).Unmap()
		s.ports().add(ownAddr{typ, netip.AddrPortFrom(ip, uint16(a.Port))})
		if ip == netip.IPv6Unspecified() {
			if only, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY); err == nil && only == 0 {
				s.ports().add(ownAddr{typ, netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(a.Port))})
			}
		}
	}
}

// ownsDestination says whether a loopback destination ap of a socket of
// type typ is one of the tree's own: an address a socket of that type
// was bound to, or a loopback address of a family and port a wildcard of
// that type was bound to (which the kernel delivers to that socket).
func (p *PortSet) ownsDestination(typ int, ap netip.AddrPort) bool {
	if !ap.Addr().IsLoopback() {
		return false
	}
	any := netip.IPv4Unspecified()
	if ap.Addr().Is6() {
		any = netip.IPv6Unspecified()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrs[ownAddr{typ, ap}] || p.addrs[ownAddr{typ, netip.AddrPortFrom(any, ap.Port())}]
}

// sockaddrAddrPort reads an AF_INET/AF_INET6 sockaddr's address (unmapped,
// without zone) and port.
func sockaddrAddrPort(sa []byte) (netip.AddrPort, bool) {
	ip, ok := parseInetAddr(sa)
	if !ok {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip.Unmap().WithZone(""), binary.BigEndian.Uint16(sa[2:4])), true
}
