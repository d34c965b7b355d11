// Package netmode is the one rule for which network mode reaches an IP
// address. The sandbox's supervisor judges a confined process's connect
// and send by it (through its own mode type), and an MCP server's HTTP
// dialer and configuration check by it (through sandbox.NetworkMode), so
// that "private" means the same addresses everywhere.
//
// The modes are named by the words every vocabulary uses: "none",
// "loopback", "private", "unrestricted" ("" is none). A word this package
// does not know reaches nothing.
package netmode

import "net/netip"

// The mode names, narrowest first: each reaches what the one before it
// reaches.
const (
	None         = "none"         // no address
	Loopback     = "loopback"     // 127.0.0.0/8, ::1
	Private      = "private"      // loopback, 10/8, 172.16/12, 192.168/16, fc00::/7
	Unrestricted = "unrestricted" // every address
)

// Needed returns the narrowest mode that reaches addr: Loopback, Private
// or Unrestricted. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is judged
// as the IPv4 address the kernel will use; a zone (scope id) is ignored:
// the address alone decides. The IPv4-compatible form (::a.b.c.d) and
// NAT64 (64:ff9b::/96) are IPv6 addresses routed like any other, hence
// need Unrestricted; so do link-local addresses, where cloud metadata
// (169.254.169.254) lives, the unspecified and multicast addresses.
func Needed(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	switch {
	case addr.IsLoopback():
		return Loopback
	case addr.IsPrivate(): // exactly 10/8, 172.16/12, 192.168/16 and fc00::/7
		return Private
	}
	return Unrestricted
}

// Reaches reports whether mode (a mode name) lets a process reach addr.
func Reaches(mode string, addr netip.Addr) bool {
	switch mode {
	case Unrestricted:
		return true
	case Private:
		n := Needed(addr)
		return n == Loopback || n == Private
	case Loopback:
		return Needed(addr) == Loopback
	}
	return false // none, "", and a word nobody can read
}
