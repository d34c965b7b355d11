package policy

import (
	"net/netip"
	"testing"
)

// TestNetworkModeOrdering: none < loopback < private < unrestricted, ""
// is none, and a mode nobody knows fails closed — within nothing, a limit
// that contains nothing, never the narrower, always the wider.
func TestNetworkModeOrdering(t *testing.T) {
	modes := []NetworkMode{NetworkNone, NetworkLoopback, NetworkPrivate, NetworkUnrestricted}
	for i, a := range modes {
		for j, b := range modes {
			if got := a.Within(b); got != (i <= j) {
				t.Errorf("%s.Within(%s) = %v", a, b, got)
			}
			narrower, wider := a, b
			if j < i {
				narrower, wider = b, a
			}
			if got := a.Narrower(b); got != narrower {
				t.Errorf("%s.Narrower(%s) = %s", a, b, got)
			}
			if got := a.Wider(b); got != wider {
				t.Errorf("%s.Wider(%s) = %s", a, b, got)
			}
		}
	}
	cases := []struct {
		a, b            NetworkMode
		within          bool
		narrower, wider NetworkMode
	}{
		{"", NetworkNone, true, NetworkNone, NetworkNone},
		{NetworkNone, "", true, NetworkNone, NetworkNone},
		{NetworkLoopback, "", false, NetworkNone, NetworkLoopback},
		{"", NetworkUnrestricted, true, NetworkNone, NetworkUnrestricted},
		{"everywhere", NetworkUnrestricted, false, NetworkUnrestricted, "everywhere"},
		{NetworkNone, "everywhere", false, NetworkNone, "everywhere"},
		{"everywhere", "everywhere", false, "everywhere", "everywhere"},
	}
	for _, c := range cases {
		if got := c.a.Within(c.b); got != c.within {
			t.Errorf("%q.Within(%q) = %v", c.a, c.b, got)
		}
		if got := c.a.Narrower(c.b); got != c.narrower {
			t.Errorf("%q.Narrower(%q) = %q", c.a, c.b, got)
		}
		if got := c.a.Wider(c.b); got != c.wider {
			t.Errorf("%q.Wider(%q) = %q", c.a, c.b, got)
		}
	}
}

// TestNetworkModeReaches: each mode reaches exactly the addresses whose
// narrowest mode is within it (the ladder and the address rule agree,
// word for word), "" reaches nothing, and neither does a word nobody
// knows.
func TestNetworkModeReaches(t *testing.T) {
	addrs := map[string]NetworkMode{
		"127.0.0.1":        NetworkLoopback,
		"::ffff:127.0.0.1": NetworkLoopback,
		"10.0.0.1":         NetworkPrivate,
		"fd00::1":          NetworkPrivate,
		"169.254.169.254":  NetworkUnrestricted,
		"8.8.8.8":          NetworkUnrestricted,
	}
	for s, needed := range addrs {
		a := netip.MustParseAddr(s)
		for _, m := range []NetworkMode{"", NetworkNone, NetworkLoopback, NetworkPrivate, NetworkUnrestricted, "everywhere"} {
			want := needed.Within(m)
			if got := m.Reaches(a); got != want {
				t.Errorf("%q.Reaches(%s) = %v, want %v", m, s, got, want)
			}
		}
	}
}
