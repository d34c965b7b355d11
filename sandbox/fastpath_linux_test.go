package sandbox

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
)

// TestPlanSHA256: the C runner's SHA-256, which names a plan's key on
// both sides, is SHA-256 — at every length around the padding boundaries
// and for large inputs.
func TestPlanSHA256(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lengths := []int{}
	for n := 0; n <= 200; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 4095, 4096, 65537, 1<<20)
	for _, n := range lengths {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		if got, want := sha256Sum(p), sha256.Sum256(p); got != want {
			t.Fatalf("length %d: la_sha256 = %x, want %x", n, got, want)
		}
	}
}

// TestPlanKeyMaterialCoversTheInvocation: flags, and nothing of the
// environment, are in the key (the plan carries its own environment
// dependencies).
func TestPlanKeyMaterialCoversTheInvocation(t *testing.T) {
	a, err := PlanKey([]string{"--timeout", "5s", "--"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PlanKey([]string{"--timeout", "6s", "--"})
	t.Setenv("LITE_AGENT_UNRELATED", "x")
	c, _ := PlanKey([]string{"--timeout", "5s", "--"})
	if a == b {
		t.Errorf("different flags, same key %s", a)
	}
	if a != c {
		t.Errorf("an unrelated variable changed the key: %s vs %s", a, c)
	}
}
