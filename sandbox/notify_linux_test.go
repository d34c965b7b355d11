package sandbox

import (
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
	"github.com/lite-agent/lite-agent/sandbox/internal/seccomp"
)

// TestInternalModeIsOneVocabulary: every mode a Policy accepts has the
// internal name of the same word, empty is none (as Policy.Network says),
// and an unknown mode gets one that the server refuses to start with and
// the programs refuse to compile — never a mode with fewer rules.
func TestInternalModeIsOneVocabulary(t *testing.T) {
	for _, m := range []NetworkMode{NetworkNone, NetworkLoopback, NetworkPrivate, NetworkUnrestricted} {
		if got := internalMode(m).String(); got != string(m) {
			t.Errorf("internalMode(%q) = %s", m, got)
		}
	}
	if internalMode("") != notify.ModeNone {
		t.Errorf("internalMode(\"\") = %v, want none", internalMode(""))
	}
	bogus := internalMode("bogus")
	if _, err := notify.Start(-1, -1, 1, notify.Options{Mode: bogus}); err == nil {
		t.Error("the server started with an unknown mode")
	}
	if _, err := seccomp.Main(seccomp.MainSpec{Network: bogus}); err == nil {
		t.Error("a main program compiled for an unknown mode")
	}
}
