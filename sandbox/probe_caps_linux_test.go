package sandbox

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestHasEffectiveCapMatchesProcStatus: the capget answer is the CapEff
// line of /proc/self/status (what it replaced) for every capability.
func TestHasEffectiveCapMatchesProcStatus(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status (%v): this would have compared capget with its CapEff line", err)
	}
	var eff uint64
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			found = err == nil
		}
	}
	if !found {
		t.Fatal("no CapEff line")
	}
	for c := 0; c < 64; c++ {
		if got, want := hasEffectiveCap(c), eff&(1<<uint(c)) != 0; got != want {
			t.Errorf("capability %d: hasEffectiveCap %v, CapEff says %v", c, got, want)
		}
	}
}
