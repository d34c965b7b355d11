package netmode

import (
	"net/netip"
	"testing"
)

// TestReaches: the ranges of each mode, IPv4-mapped addresses judged as
// the IPv4 address, zones ignored, and the look-alikes (IPv4-compatible,
// NAT64, link-local, unspecified, multicast) outside every filtered mode.
func TestReaches(t *testing.T) {
	for _, tc := range []struct {
		ip     string
		needed string
	}{
		{"127.0.0.1", Loopback},
		{"127.255.255.254", Loopback},
		{"::1", Loopback},
		{"::ffff:127.0.0.1", Loopback},
		{"::1%eth0", Loopback},
		{"10.1.2.3", Private},
		{"172.16.0.1", Private},
		{"172.31.255.255", Private},
		{"192.168.1.1", Private},
		{"::ffff:10.0.0.1", Private},
		{"fc00::1", Private},
		{"fd12:3456::1%eth0", Private},
		{"172.32.0.1", Unrestricted},
		{"fe80::1", Unrestricted},
		{"fe80::1%lo", Unrestricted},
		{"169.254.169.254", Unrestricted},
		{"8.8.8.8", Unrestricted},
		{"2001:db8::1", Unrestricted},
		{"::127.0.0.1", Unrestricted}, // IPv4-compatible: a v6 address
		{"64:ff9b::a00:1", Unrestricted},
		{"0.0.0.0", Unrestricted},
		{"::", Unrestricted},
		{"224.0.0.1", Unrestricted},
		{"255.255.255.255", Unrestricted},
	} {
		a := netip.MustParseAddr(tc.ip)
		if got := Needed(a); got != tc.needed {
			t.Errorf("Needed(%s) = %s, want %s", tc.ip, got, tc.needed)
		}
		want := map[string]bool{
			"":           false,
			None:         false,
			Loopback:     tc.needed == Loopback,
			Private:      tc.needed != Unrestricted,
			Unrestricted: true,
			"Private":    false, // an unknown word reaches nothing
		}
		for mode, w := range want {
			if got := Reaches(mode, a); got != w {
				t.Errorf("Reaches(%q, %s) = %v, want %v", mode, tc.ip, got, w)
			}
		}
	}
}
