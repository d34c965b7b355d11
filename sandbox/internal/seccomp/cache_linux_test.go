package seccomp

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"testing"
)

var updateSeccomp = flag.Bool("update-seccomp", false, "rewrite programs.bin from a fresh compile (go generate ./sandbox)")

// TestPrecompiledSeccompPrograms: every precompiled program is the bytes a
// fresh libseccomp compile of its key gives now, and the table holds
// exactly the shapes precompiledShapes lists — so a rule changed in
// rules_linux.go without `go generate ./sandbox` fails here instead of
// shipping the old program.
func TestPrecompiledSeccompPrograms(t *testing.T) {
	mains, children := precompiledShapes()
	fresh := map[string][]byte{}
	var keys []string
	for _, spec := range mains {
		p, err := compileMainFilter(spec)
		if err != nil {
			t.Fatal(err)
		}
		k := mainFilterKey(spec)
		keys, fresh[k] = append(keys, k), p
	}
	for _, c := range children {
		p, err := compileChildFilter(c)
		if err != nil {
			t.Fatal(err)
		}
		k := childFilterKey(c)
		keys, fresh[k] = append(keys, k), p
	}
	if *updateSeccomp {
		if err := os.WriteFile("programs.bin", encodePrograms(keys, fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d programs", len(keys))
		return
	}
	stored, err := parsePrograms(seccompProgramsBin)
	if err != nil {
		t.Fatalf("programs.bin: %v (go generate ./sandbox)", err)
	}
	for _, k := range keys {
		if !bytes.Equal(stored[k], fresh[k]) {
			t.Errorf("precompiled program differs from a fresh compile (run go generate ./sandbox): %s", k)
		}
	}
	for k := range stored {
		if _, ok := fresh[k]; !ok {
			t.Errorf("precompiled program for a shape no longer listed (run go generate ./sandbox): %s", k)
		}
	}
}

// TestMainReturnsACopy: the lookup returns a copy: a caller may not
// change the table.
func TestMainReturnsACopy(t *testing.T) {
	mains, _ := precompiledShapes()
	p, _ := Main(mains[0])
	q, _ := Main(mains[0])
	p[0] ^= 0xff
	if slices.Equal(p, q) {
		t.Error("Main handed out the table's own bytes")
	}
}
