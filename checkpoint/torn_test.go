package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pack cut short (its index written back, its last bytes not, as a power
// loss can leave it) loses only the objects whose bytes are gone: other
// sessions record and rewind on, a rewind that needs a lost object says so,
// verify names it, and gc drops the entry.
func TestTornPackBlocksOnlyWhatNeedsIt(t *testing.T) {
	e := newEnv(t, nil)
	versions(e, "a.txt", 3) // pre-images: versions 1 and 2 of a.txt
	e.rec.Close()
	packs, err := listPacks(filepath.Join(ckptDir(e.state), "objects", "pack"))
	if err != nil || len(packs) != 1 {
		t.Fatalf("packs of s1: %v, %v", packs, err)
	}
	s1pack := filepath.Join(ckptDir(e.state), "objects", "pack", packs[0])

	e.open("s2", nil)
	at := versions(e, "b.txt", 2)
	e.rec.Close()

	// Cut s1's last entry (version 2) in the middle.
	entries, _, _, err := readPackIndex(filepath.Dir(s1pack), packs[0])
	if err != nil || len(entries) != 2 {
		t.Fatalf("s1's pack: %d entries, %v", len(entries), err)
	}
	lostHash := entries[1].hash
	if err := os.Truncate(s1pack+".pack", entries[1].off+10); err != nil {
		t.Fatal(err)
	}

	// A new session records.
	e.open("s3", nil)
	e.write("c.txt", "one")
	e.write("c.txt", "two")
	e.seal("write")
	e.rec.Close()
	// s2 rewinds: recording the current state first, then restoring.
	if _, err := Rewind(e.state, "s2", 1, RewindOptions{}); err != nil {
		t.Fatalf("rewind of another session over a torn pack: %v", err)
	}
	if got, _ := os.ReadFile(e.abs("b.txt")); string(got) != at[1] {
		t.Fatalf("b.txt after rewind = %q", got)
	}
	// s1 back to 2 needs version 2 only from checkpoint 3: refused, named.
	_, err = Rewind(e.state, "s1", 2, RewindOptions{})
	if err == nil || !strings.Contains(err.Error(), lostHash.String()[:12]) || !strings.Contains(err.Error(), "cut off the end of its pack") {
		t.Fatalf("rewind needing the lost object: %v", err)
	}

	rep, err := Verify(e.state)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range rep.Problems {
		if p.Object == lostHash.String() && strings.Contains(p.Detail, "bytes are missing") && len(p.UsedBy) > 0 {
			found = true
		} else {
			t.Errorf("verify: an unexpected problem: %v", p)
		}
	}
	if !found {
		t.Fatalf("verify does not name the lost object: %+v", rep)
	}
	// gc drops the entry: its index no longer lists it.
	if _, err := GC(e.state, GCOptions{}); err != nil {
		t.Fatal(err)
	}
	packs, _ = listPacks(filepath.Dir(s1pack))
	for _, p := range packs {
		if _, _, lost, err := readPackIndex(filepath.Dir(s1pack), p); err != nil || len(lost) > 0 {
			t.Fatalf("after gc, pack %s: %d lost entries, %v", p, len(lost), err)
		}
	}
	// After gc a rewind that does not need the object still works.
	if _, err := Rewind(e.state, "s2", 2, RewindOptions{}); err != nil {
		t.Fatalf("rewind after gc: %v", err)
	}
	if got, _ := os.ReadFile(e.abs("b.txt")); string(got) != at[2] {
		t.Fatalf("b.txt after redo = %q", got)
	}
}
