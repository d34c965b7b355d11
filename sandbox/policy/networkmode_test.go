package policy

import "testing"

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
