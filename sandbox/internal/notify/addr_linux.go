//go:build linux

package notify

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/netmode"
	"github.com/lite-agent/lite-agent/internal/paths"
)

// Address rules of the network supervisor (server_linux.go).
//
// Every function here works on the supervisor's own copy of the bytes the
// child passed; the supervisor then hands exactly these bytes to the kernel.
// So a rule is sound when, for every way the kernel may interpret the bytes
// (which depends on the socket's family and protocol), the destination it
// reaches is allowed. Where the kernel's interpretation differs by protocol,
// the rule takes the strictest reading.

// inetAllowed says whether mode lets a confined process reach ip, by the
// one rule of every network mode (internal/netmode: IPv4-mapped addresses
// judged as IPv4, zones ignored, look-alikes refused).
func inetAllowed(mode Mode, ip netip.Addr) bool {
	return netmode.Reaches(mode.String(), ip)
}

// inetBindAllowed says whether mode lets a confined process bind a socket
// to ip. A wildcard (0.0.0.0, ::, ::ffff:0.0.0.0) would expose a listener
// on every interface, so it is refused here in every filtered mode (the
// server binds one itself, on the loopback device only: keepOnLoopback);
// private mode may bind the private addresses it may also connect to.
func inetBindAllowed(mode Mode, ip netip.Addr) bool {
	if mode == ModeUnrestricted {
		return true
	}
	if ip.Unmap().IsUnspecified() {
		return false
	}
	return inetAllowed(mode, ip)
}

// inetVerdict is what the supervisor does with an AF_INET/AF_INET6 address.
type inetVerdict int

const (
	verdictAllow      inetVerdict = iota // perform the call with the copy
	verdictDeny                          // refuse (EPERM / EACCES)
	verdictDisconnect                    // connect(AF_UNSPEC): allowed, no destination
	verdictNoAddress                     // kernel ignores the address: no destination
	verdictInvalid                       // kernel would fail with errno; do not perform
)

// parseInetAddr extracts the IP address from sockaddr bytes whose family
// is AF_INET or AF_INET6. ok is false when the bytes are too short for
// that family (the kernel answers EINVAL).
func parseInetAddr(sa []byte) (ip netip.Addr, ok bool) {
	if len(sa) < 2 {
		return netip.Addr{}, false
	}
	switch binary.NativeEndian.Uint16(sa) {
	case unix.AF_INET:
		if len(sa) < unix.SizeofSockaddrInet4 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom4([4]byte(sa[4:8])), true
	case unix.AF_INET6:
		// SIN6_LEN_RFC2133 (24 bytes: without sin6_scope_id) is the
		// shortest the kernel accepts; the address ends at byte 24.
		if len(sa) < 24 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom16([16]byte(sa[8:24])), true
	}
	return netip.Addr{}, false
}

// judgeInetDestination decides a destination given as an AF_INET or
// AF_INET6 sockaddr (connect, addressed sends).
func judgeInetDestination(mode Mode, sa []byte) (inetVerdict, unix.Errno) {
	ip, ok := parseInetAddr(sa)
	if !ok {
		return verdictInvalid, unix.EINVAL
	}
	return destinationVerdict(mode, ip)
}

// destinationVerdict allows ip when the mode reaches it; a refused
// destination is EPERM, what a seccomp-denied network call gives.
func destinationVerdict(mode Mode, ip netip.Addr) (inetVerdict, unix.Errno) {
	if inetAllowed(mode, ip) {
		return verdictAllow, 0
	}
	return verdictDeny, unix.EPERM
}

// judgeInetConnect decides connect(2) on an AF_INET/AF_INET6 socket.
func judgeInetConnect(mode Mode, sa []byte) (inetVerdict, unix.Errno) {
	if len(sa) < 2 {
		return verdictInvalid, unix.EINVAL
	}
	switch binary.NativeEndian.Uint16(sa) {
	case unix.AF_UNSPEC:
		// Every inet connect path (TCP, MPTCP, UDP, ping) treats
		// AF_UNSPEC as "dissolve the association": no destination.
		return verdictDisconnect, 0
	case unix.AF_INET, unix.AF_INET6:
		// An AF_INET address on an AF_INET6 UDP socket is accepted
		// by the kernel (it connects the v4 way), so the address's
		// own family decides, not the socket's.
		return judgeInetDestination(mode, sa)
	}
	return verdictInvalid, unix.EAFNOSUPPORT
}

// judgeInetSend decides the destination of sendto/sendmsg on an AF_INET or
// AF_INET6 socket when an address is given.
func judgeInetSend(mode Mode, sa []byte) (inetVerdict, unix.Errno) {
	if len(sa) < 2 {
		// sendmsg with 0 < msg_namelen < 2: UDP answers EINVAL, TCP
		// ignores the name. Neither reaches a destination of ours.
		return verdictNoAddress, 0
	}
	switch binary.NativeEndian.Uint16(sa) {
	case unix.AF_UNSPEC:
		// Kernel quirk: IPv4 UDP treats an AF_UNSPEC name as AF_INET
		// and sends to sin_addr; IPv6 UDP treats it as "no name". Take
		// the strict reading whenever the bytes are long enough for
		// IPv4 to use them.
		if len(sa) < unix.SizeofSockaddrInet4 {
			return verdictNoAddress, 0
		}
		return destinationVerdict(mode, netip.AddrFrom4([4]byte(sa[4:8])))
	case unix.AF_INET, unix.AF_INET6:
		return judgeInetDestination(mode, sa)
	}
	return verdictInvalid, unix.EAFNOSUPPORT
}

// judgeInetBind decides bind(2) on an AF_INET/AF_INET6 socket. Refusals
// are EACCES (what bind gives for a forbidden address).
func judgeInetBind(mode Mode, sa []byte) (inetVerdict, unix.Errno) {
	if len(sa) < 2 {
		return verdictInvalid, unix.EINVAL
	}
	switch binary.NativeEndian.Uint16(sa) {
	case unix.AF_UNSPEC:
		// IPv4 bind accepts AF_UNSPEC only as INADDR_ANY: a wildcard.
		return verdictDeny, unix.EACCES
	case unix.AF_INET, unix.AF_INET6:
		ip, ok := parseInetAddr(sa)
		if !ok {
			return verdictInvalid, unix.EINVAL
		}
		if inetBindAllowed(mode, ip) {
			return verdictAllow, 0
		}
		return verdictDeny, unix.EACCES
	}
	return verdictInvalid, unix.EAFNOSUPPORT
}

// hasSourceRoute reports whether an IPv4 options block (as returned by
// getsockopt(IP_OPTIONS)) contains loose or strict source routing. With it,
// the kernel sends the packet to the first hop of the route instead of the
// destination address (verified: a datagram "to 127.0.0.1" reaches the
// first hop).
func hasSourceRoute(opts []byte) bool {
	for i := 0; i < len(opts); {
		switch t := opts[i]; t {
		case 0: // IPOPT_END
			return false
		case 1: // IPOPT_NOOP
			i++
			continue
		case 0x83, 0x89: // IPOPT_LSRR, IPOPT_SSRR
			return true
		}
		if i+1 >= len(opts) || opts[i+1] < 2 {
			return true // malformed: treat as dangerous
		}
		i += int(opts[i+1])
	}
	return false
}

// UnixRequest is an AF_UNIX operation that names an address, given to
// Options.Unix for a decision.
type UnixRequest struct {
	// Op is "connect", "bind" or "send" (sendto/sendmsg/sendmmsg).
	Op string
	// Abstract is true for the abstract namespace (sun_path[0] == 0).
	Abstract bool
	// Name is the abstract name without its leading NUL, or the path as
	// the child wrote it.
	Name string
	// Path is set for pathname addresses: the absolute path after
	// resolving symbolic links in the child's view — of the socket
	// itself for connect and send, of the parent directory joined with
	// the new name for bind.
	Path string
}

// UnixPathsUnder returns a decision function for Options.Unix
// that allows pathname sockets at or below one of roots (typically the
// policy's workspace, its read-write paths and its TMPDIR: the one AF_UNIX
// rule of every network mode) and refuses the abstract namespace. Roots are
// resolved once, here, as the kernel resolves them (paths.Real), so a
// symlinked workspace works.
func UnixPathsUnder(roots ...string) func(UnixRequest) bool {
	var clean []string
	for _, r := range roots {
		if r == "" {
			continue
		}
		clean = append(clean, paths.Real(r))
	}
	return func(req UnixRequest) bool {
		if req.Abstract || req.Path == "" {
			return false
		}
		for _, r := range clean {
			// The root itself counts: a read-write path may name a
			// socket file.
			if paths.Within(req.Path, r) {
				return true
			}
		}
		return false
	}
}

func addr4(a [4]byte) netip.Addr   { return netip.AddrFrom4(a) }
func addr16(a [16]byte) netip.Addr { return netip.AddrFrom16(a) }
