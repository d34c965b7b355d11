package checkpoint

import (
	"bytes"
	"fmt"
	"strings"
)

// Line diffs: counts for listings and unified diffs for dry runs. Myers'
// O((N+M)·D) algorithm after stripping the common prefix and suffix (which
// makes the usual small edit of a large file cheap); past maxDiffEdits
// differences the middle is reported as replaced wholesale, which keeps the
// cost bounded on unrelated contents.

const maxDiffEdits = 1500

// isBinary reports whether data looks binary: a NUL in its first 8000
// bytes, the rule git and grep use.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// splitLines splits data into lines, each keeping its "\n" (the last one
// may have none).
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	s := string(data)
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

type opKind byte

const (
	opEq opKind = iota
	opDel
	opIns
)

type diffOp struct {
	kind opKind
	a, b int // line index in a (eq, del) and b (eq, ins)
}

// diffLines returns an edit script turning a into b.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{opEq, i, i})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for i := 0; i < suf; i++ {
		ops = append(ops, diffOp{opEq, len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

// myers diffs a and b (offsets ao and bo are added to the indexes).
func myers(a, b []string, ao, bo int) []diffOp {
	n, m := len(a), len(b)
	wholesale := func() []diffOp {
		ops := make([]diffOp, 0, n+m)
		for i := range n {
			ops = append(ops, diffOp{opDel, ao + i, bo})
		}
		for j := range m {
			ops = append(ops, diffOp{opIns, ao + n, bo + j})
		}
		return ops
	}
	if n == 0 || m == 0 {
		return wholesale()
	}
	limit := min(n+m, maxDiffEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	// trace[d] keeps v[off-d-1 : off+d+2] as it was before round d: all
	// that backtracking through round d reads.
	var trace [][]int
	at := func(d, k int) int { return trace[d][k+d+1] }
	found := -1
	for d := 0; d <= limit && found < 0; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return wholesale()
	}
	// Backtrack from (n, m) through the saved rounds.
	var rev []diffOp
	x, y := n, m
	for d := found; d > 0; d-- {
		k := x - y
		var pk int
		if k == -d || (k != d && at(d, k-1) < at(d, k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(d, pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, diffOp{opEq, ao + x, bo + y})
		}
		if x == px {
			y--
			rev = append(rev, diffOp{opIns, ao + x, bo + y})
		} else {
			x--
			rev = append(rev, diffOp{opDel, ao + x, bo + y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, diffOp{opEq, ao + x, bo + y})
	}
	ops := make([]diffOp, len(rev))
	for i := range rev {
		ops[i] = rev[len(rev)-1-i]
	}
	return ops
}

// diffCounts returns the number of lines added and removed from a to b.
func diffCounts(a, b []byte) (added, removed int) {
	// Drop the common head and tail, in whole lines, before splitting:
	// the usual small edit of a large file then costs a byte comparison.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	p = bytes.LastIndexByte(a[:p], '\n') + 1
	a, b = a[p:], b[p:]
	s := 0
	for s < len(a) && s < len(b) && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	// Keep the tail's first partial line, and the last line whole when
	// it lacks a newline, so that no line is cut in two.
	if s > 0 {
		if i := bytes.IndexByte(a[len(a)-s:], '\n'); i >= 0 {
			s -= i + 1
		} else {
			s = 0
		}
	}
	a, b = a[:len(a)-s], b[:len(b)-s]
	for _, op := range diffLines(splitLines(a), splitLines(b)) {
		switch op.kind {
		case opIns:
			added++
		case opDel:
			removed++
		}
	}
	return added, removed
}

// unifiedDiff writes a unified diff (3 lines of context) of a and b, named
// aName and bName ("/dev/null" for a side that does not exist).
func unifiedDiff(w *strings.Builder, aName, bName string, a, b []byte) {
	la, lb := splitLines(a), splitLines(b)
	ops := diffLines(la, lb)
	const ctx = 3
	// Group the changes into hunks.
	type hunk struct{ from, to int } // op index range
	var hunks []hunk
	for i := 0; i < len(ops); {
		if ops[i].kind == opEq {
			i++
			continue
		}
		start := max(0, i-ctx)
		j := i
		for j < len(ops) {
			if ops[j].kind != opEq {
				j++
				continue
			}
			// A run of equal lines: end the hunk if it is long.
			k := j
			for k < len(ops) && ops[k].kind == opEq {
				k++
			}
			if k == len(ops) || k-j > 2*ctx {
				break
			}
			j = k
		}
		end := min(len(ops), j+ctx)
		hunks = append(hunks, hunk{start, end})
		i = end
	}
	if len(hunks) == 0 {
		return
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", aName, bName)
	for _, h := range hunks {
		aStart, bStart, aLen, bLen := -1, -1, 0, 0
		for _, op := range ops[h.from:h.to] {
			if aStart < 0 {
				aStart, bStart = op.a, op.b
			}
			switch op.kind {
			case opEq:
				aLen++
				bLen++
			case opDel:
				aLen++
			case opIns:
				bLen++
			}
		}
		// Unified diffs number from 1, and a range of length 0 names the
		// line before it.
		as, bs := aStart+1, bStart+1
		if aLen == 0 {
			as--
		}
		if bLen == 0 {
			bs--
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(as, aLen), hunkRange(bs, bLen))
		for _, op := range ops[h.from:h.to] {
			var line string
			var mark byte
			switch op.kind {
			case opEq:
				line, mark = la[op.a], ' '
			case opDel:
				line, mark = la[op.a], '-'
			case opIns:
				line, mark = lb[op.b], '+'
			}
			w.WriteByte(mark)
			w.WriteString(line)
			if !strings.HasSuffix(line, "\n") {
				w.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// UnifiedDiff is a unified diff (3 lines of context) of a and b, named
// aName and bName ("/dev/null" for a side that does not exist): the same
// diff a dry-run rewind prints, for a caller that shows a change before
// it is made (the interactive mode's approval of an edit).
func UnifiedDiff(aName, bName string, a, b []byte) string {
	var w strings.Builder
	unifiedDiff(&w, aName, bName, a, b)
	return w.String()
}
