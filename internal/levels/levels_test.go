package levels

import "testing"

type word string

var ladder = []word{"none", "some", "all"}

// TestOrdering: the ladder's order, "" as its narrowest word, and an
// unknown word failing closed on either side.
func TestOrdering(t *testing.T) {
	cases := []struct {
		a, b            word
		within          bool
		narrower, wider word
	}{
		{"none", "none", true, "none", "none"},
		{"none", "some", true, "none", "some"},
		{"some", "none", false, "none", "some"},
		{"some", "all", true, "some", "all"},
		{"all", "some", false, "some", "all"},
		{"all", "all", true, "all", "all"},
		{"", "none", true, "none", "none"},
		{"none", "", true, "none", "none"},
		{"", "", true, "none", "none"},
		{"some", "", false, "none", "some"},
		// Unknown: within nothing, contains nothing, never the narrower,
		// always the wider.
		{"bogus", "all", false, "all", "bogus"},
		{"all", "bogus", false, "all", "bogus"},
		{"none", "bogus", false, "none", "bogus"},
		{"bogus", "bogus", false, "bogus", "bogus"},
		{"bogus", "", false, "none", "bogus"},
	}
	for _, c := range cases {
		if got := Within(ladder, c.a, c.b); got != c.within {
			t.Errorf("Within(%q, %q) = %v", c.a, c.b, got)
		}
		if got := Narrower(ladder, c.a, c.b); got != c.narrower {
			t.Errorf("Narrower(%q, %q) = %q, want %q", c.a, c.b, got, c.narrower)
		}
		if got := Wider(ladder, c.a, c.b); got != c.wider {
			t.Errorf("Wider(%q, %q) = %q, want %q", c.a, c.b, got, c.wider)
		}
	}
}
