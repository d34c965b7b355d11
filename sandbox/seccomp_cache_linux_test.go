package sandbox

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"testing"
)

var updateSeccomp = flag.Bool("update-seccomp", false, "rewrite seccomp_programs.bin from a fresh compile (go generate ./sandbox)")

// TestPrecompiledSeccompPrograms: every precompiled program is the bytes a
// fresh libseccomp compile of its key gives now, and the table holds
// exactly the shapes precompiledShapes lists — so a rule changed in
// seccomp_linux.go without `go generate ./sandbox` fails here instead of
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
		p, err := compileChildFilter(c.ns, c.notify)
		if err != nil {
			t.Fatal(err)
		}
		k := childFilterKey(c.ns, c.notify)
		keys, fresh[k] = append(keys, k), p
	}
	if *updateSeccomp {
		if err := os.WriteFile("seccomp_programs.bin", encodePrograms(keys, fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d programs", len(keys))
		return
	}
	stored, err := parsePrograms(seccompProgramsBin)
	if err != nil {
		t.Fatalf("seccomp_programs.bin: %v (go generate ./sandbox)", err)
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

// TestPresetsUsePrecompiledPrograms: New compiles nothing at run time for
// the sandboxes of the presets' network modes, with change capture and
// without — the speed of `sandbox run` does not quietly depend on a
// table that no longer covers it.
func TestPresetsUsePrecompiledPrograms(t *testing.T) {
	for _, mode := range []NetworkMode{NetworkNone, NetworkLoopback, NetworkPrivate, NetworkUnrestricted} {
		for _, capture := range []bool{false, true} {
			before := seccompCompiles.Load()
			sb, err := New(Policy{Workspace: t.TempDir(), Network: mode, CaptureChanges: capture, BestEffort: true})
			if err != nil {
				t.Fatalf("%s capture=%v: %v", mode, capture, err)
			}
			sb.Close()
			if n := seccompCompiles.Load() - before; n != 0 {
				t.Errorf("%s capture=%v: %d seccomp programs compiled at run time; add the shape to precompiledShapes", mode, capture, n)
			}
		}
	}
	// And the lookup returns a copy: a caller may not change the table.
	mains, _ := precompiledShapes()
	p, _ := buildMainFilter(mains[0])
	q, _ := buildMainFilter(mains[0])
	p[0] ^= 0xff
	if slices.Equal(p, q) {
		t.Error("buildMainFilter handed out the table's own bytes")
	}
}
