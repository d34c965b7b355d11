package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestStoreDedupe(t *testing.T) {
	dir := t.TempDir()
	st := newStore(dir)
	small := []byte(strings.Repeat("package main\n", 50))
	h1, err := st.put(small)
	if err != nil {
		t.Fatal(err)
	}
	// Concurrent puts of the same content store it once.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if h, err := st.put(append([]byte(nil), small...)); err != nil || h != h1 {
				t.Errorf("put: %v, %v", h, err)
			}
		})
	}
	wg.Wait()
	big := make([]byte, looseThreshold+1000)
	randBytes(big, 1)
	h2, err := st.put(big)
	if err != nil {
		t.Fatal(err)
	}
	if h3, err := st.put(big); err != nil || h3 != h2 {
		t.Fatal(h3, err)
	}
	if err := st.sync(); err != nil {
		t.Fatal(err)
	}
	st.close()

	packs, _ := listPacks(st.packDir())
	if len(packs) != 1 {
		t.Fatalf("%d packs, want 1", len(packs))
	}
	entries, garbage, _, err := readPackIndex(st.packDir(), packs[0])
	if err != nil || garbage != 0 || len(entries) != 1 {
		t.Fatalf("pack entries %d (garbage %d, err %v), want 1", len(entries), garbage, err)
	}
	if _, err := os.Stat(st.loosePath(h2)); err != nil {
		t.Fatalf("the large object is not a loose file: %v", err)
	}
	// Nothing temporary is left behind.
	if left, _ := os.ReadDir(st.tmpDir()); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	// A new store (another process) sees both, and dedupes against them.
	st2 := newStore(dir)
	defer st2.close()
	for _, c := range [][]byte{small, big} {
		got, err := st2.get(sha256.Sum256(c))
		if err != nil || !bytes.Equal(got, c) {
			t.Fatalf("get: %v", err)
		}
	}
	if _, err := st2.put(small); err != nil {
		t.Fatal(err)
	}
	if st2.w != nil {
		t.Fatal("a second store wrote a new pack for content already stored")
	}
	// Small text is stored compressed: the pack is much smaller than it.
	fi, _ := os.Stat(filepath.Join(st.packDir(), packs[0]+".pack"))
	if fi.Size() >= int64(len(small)) {
		t.Fatalf("pack of %d bytes for %d bytes of text: not compressed", fi.Size(), len(small))
	}
}

// TestStorePackTailRecovery: an object whose index entry was never written
// (a crash between the two writes) is still found; a torn entry is not.
func TestStorePackTailRecovery(t *testing.T) {
	dir := t.TempDir()
	st := newStore(dir)
	var hs []Hash
	for i := range 3 {
		h, err := st.put(fmt.Appendf(nil, "object %d %s", i, strings.Repeat("x", i*100)))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	name := st.w.name
	st.close()
	idx := filepath.Join(st.packDir(), name+".idx")
	b, _ := os.ReadFile(idx)
	// Drop the last index entry and tear the one before.
	os.WriteFile(idx, b[:idxEntrySize+10], 0o600)
	pf, _ := os.OpenFile(filepath.Join(st.packDir(), name+".pack"), os.O_WRONLY|os.O_APPEND, 0)
	pf.Write([]byte(packMagic + "torn entry"))
	pf.Close()

	st2 := newStore(dir)
	defer st2.close()
	for i, h := range hs {
		if _, err := st2.get(h); err != nil {
			t.Fatalf("object %d after losing its index entry: %v", i, err)
		}
	}
	_, garbage, _, err := readPackIndex(st.packDir(), name)
	if err != nil || garbage != int64(len(packMagic+"torn entry")) {
		t.Fatalf("garbage %d, err %v", garbage, err)
	}
}

func TestVerifyDetectsFlippedByte(t *testing.T) {
	for _, where := range []string{"pack", "loose"} {
		t.Run(where, func(t *testing.T) {
			e := newEnv(t, nil)
			content := strings.Repeat("line of text\n", 20)
			if where == "loose" {
				b := make([]byte, looseThreshold+10)
				randBytes(b, 3)
				content = string(b)
			}
			e.plain("f", content)
			e.write("f", "changed\n")
			e.seal("edit")
			e.rec.Close()
			rep, err := Verify(e.state)
			if err != nil || !rep.OK() {
				t.Fatalf("verify of a sound store: %+v, %v", rep, err)
			}

			h := Hash(sha256.Sum256([]byte(content)))
			var file string
			var off int64
			objDir := filepath.Join(e.state, "checkpoints", "objects")
			if where == "loose" {
				file, off = filepath.Join(objDir, h.String()[:2], h.String()[2:]), 100
			} else {
				packs, _ := listPacks(filepath.Join(objDir, "pack"))
				file = filepath.Join(objDir, "pack", packs[0]+".pack")
				fi, _ := os.Stat(file)
				off = fi.Size() - 3
			}
			flipByte(t, file, off)

			rep, err = Verify(e.state)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || len(rep.Problems) != 1 || rep.Problems[0].Object != h.String() {
				t.Fatalf("verify after a flipped byte: %+v", rep)
			}
			if u := rep.Problems[0].UsedBy; len(u) != 1 || !strings.Contains(u[0], "s1#1 f") {
				t.Fatalf("used by %v, want s1#1 f", u)
			}
			before := snapshotTree(t, e.ws)
			_, err = Rewind(e.state, "s1", 0, RewindOptions{})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), h.String()) {
				t.Fatalf("rewind with a corrupt object: %v; want ErrCorrupt naming %s", err, h)
			}
			assertTree(t, e.ws, before, "a rewind refused for corruption changes nothing")
		})
	}
}

func flipByte(t *testing.T, file string, off int64) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyMissingObject(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("f", "before\n")
	e.write("f", "after\n")
	e.seal("edit")
	e.rec.Close()
	os.RemoveAll(filepath.Join(e.state, "checkpoints", "objects", "pack"))
	rep, err := Verify(e.state)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !strings.Contains(rep.Problems[0].String(), "missing") {
		t.Fatalf("verify without the pack: %+v", rep)
	}
}

// randBytes fills b with incompressible bytes.
func randBytes(b []byte, seed uint64) {
	r := rand.NewChaCha8([32]byte{byte(seed)})
	r.Read(b)
}
