package checkpoint

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// lcs is the textbook dynamic program, to check that the diff is minimal.
func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func TestDiffIsMinimalAndCorrect(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	gen := func() []string {
		out := make([]string, r.IntN(30))
		for i := range out {
			out[i] = string(rune('a'+r.IntN(5))) + "\n"
		}
		return out
	}
	for range 2000 {
		a, b := gen(), gen()
		ops := diffLines(a, b)
		var rebuilt []string
		ins, del := 0, 0
		ai, bi := 0, 0
		for _, op := range ops {
			switch op.kind {
			case opEq:
				if op.a != ai || op.b != bi || a[op.a] != b[op.b] {
					t.Fatalf("bad eq op %+v at a%d b%d", op, ai, bi)
				}
				rebuilt = append(rebuilt, a[op.a])
				ai, bi = ai+1, bi+1
			case opDel:
				if op.a != ai {
					t.Fatalf("bad del op %+v at a%d", op, ai)
				}
				del++
				ai++
			case opIns:
				if op.b != bi {
					t.Fatalf("bad ins op %+v at b%d", op, bi)
				}
				rebuilt = append(rebuilt, b[op.b])
				ins++
				bi++
			}
		}
		if strings.Join(rebuilt, "") != strings.Join(b, "") || ai != len(a) {
			t.Fatalf("the edit script does not turn a into b")
		}
		if want := len(a) + len(b) - 2*lcs(a, b); ins+del != want {
			t.Fatalf("%d edits, the minimum is %d", ins+del, want)
		}
		// The byte-level shortcut of diffCounts changes nothing; nor does
		// a last line without a newline.
		ja, jb := strings.Join(a, ""), strings.Join(b, "")
		if r.IntN(2) == 0 {
			ja, jb = ja+"tail", jb+"tail"
			ins, del = diffCounts2(ja, jb)
		}
		if ai, di := diffCounts([]byte(ja), []byte(jb)); ai != ins || di != del {
			t.Fatalf("diffCounts(%q, %q) = +%d -%d, want +%d -%d", ja, jb, ai, di, ins, del)
		}
	}
}

func TestUnifiedDiff(t *testing.T) {
	var w strings.Builder
	unifiedDiff(&w, "a/f", "b/f", []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"), []byte("1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nthirteen"))
	want := `--- a/f
+++ b/f
@@ -1,5 +1,5 @@
 1
-2
+TWO
 3
 4
 5
@@ -10,3 +10,4 @@
 10
 11
 12
+thirteen
\ No newline at end of file
`
	if w.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", w.String(), want)
	}
	if a, d := diffCounts([]byte("x\ny\n"), []byte("x\nz\nw\n")); a != 2 || d != 1 {
		t.Fatalf("counts +%d -%d, want +2 -1", a, d)
	}
}

// diffCounts2 counts through diffLines only.
func diffCounts2(a, b string) (ins, del int) {
	for _, op := range diffLines(splitLines([]byte(a)), splitLines([]byte(b))) {
		switch op.kind {
		case opIns:
			ins++
		case opDel:
			del++
		}
	}
	return ins, del
}
