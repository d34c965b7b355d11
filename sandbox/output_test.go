package sandbox

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// omitWriter records what it is given, with the gap marked where the
// budget says output was dropped.
type omitWriter struct{ bytes.Buffer }

func (w *omitWriter) OmitOutput(n int64) { fmt.Fprintf(&w.Buffer, "<%d>", n) }

// TestOutputBudget: past the limit, the head and the true tail are kept,
// the gap is counted exactly and an OutputOmitter is told where it is.
func TestOutputBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int64
		chunks []string
		want   string
		drop   int64
	}{
		{"under the limit", 10, []string{"0123", "4567"}, "01234567", 0},
		{"exactly the limit", 10, []string{"0123456789"}, "0123456789", 0},
		{"one big chunk", 10, []string{"0123456789abcdef"}, "01234<6>bcdef", 6},
		{"ring wraps", 10, []string{"0123", "456", "78", "9a", "bcd", "ef"}, "01234<6>bcdef", 6},
		{"many small", 6, strings.Split("abcdefghijklmnopqrstuvwxyz", ""), "abc<20>xyz", 20},
		{"one byte limit", 1, []string{"abc"}, "a<2>", 2},
	} {
		b := newOutputBudget(tc.limit)
		var w omitWriter
		i := b.open(&w)
		for _, c := range tc.chunks {
			b.write(i, []byte(c))
		}
		b.closeStream()
		if w.String() != tc.want || b.droppedBytes() != tc.drop {
			t.Errorf("%s: got %q, dropped %d; want %q, %d", tc.name, w.String(), b.droppedBytes(), tc.want, tc.drop)
		}
	}

	// Two writers: each kept tail byte goes to the writer it came for, in
	// order, and the gap is reported to the writer the tail starts with.
	b := newOutputBudget(8)
	var out, errw omitWriter
	o, e := b.open(&out), b.open(&errw)
	b.write(o, []byte("OOOO"))   // head
	b.write(e, []byte("eeeeee")) // all dropped by the end
	b.write(o, []byte("oo"))
	b.write(e, []byte("E"))
	b.write(o, []byte("o"))
	b.closeStream()
	if out.String() != "OOOO" {
		t.Errorf("stdout before the last stream ends: %q", out.String())
	}
	b.closeStream()
	if out.String() != "OOOO<6>ooo" || errw.String() != "E" || b.droppedBytes() != 6 || b.omittedAfter() != 4 {
		t.Errorf("stdout %q, stderr %q, dropped %d after %d", out.String(), errw.String(), b.droppedBytes(), b.omittedAfter())
	}

	// A plain writer gets the head and the tail back to back.
	b = newOutputBudget(4)
	var plain strings.Builder
	b.forward(b.open(&plain), strings.NewReader("0123456789"))
	if plain.String() != "0189" || b.droppedBytes() != 6 {
		t.Errorf("plain writer: %q, dropped %d", plain.String(), b.droppedBytes())
	}

	if !sameWriter(&plain, &plain) || sameWriter(&plain, nil) || sameWriter(nil, nil) {
		t.Error("sameWriter")
	}
}
