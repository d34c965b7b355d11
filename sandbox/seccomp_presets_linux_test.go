package sandbox

import (
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/internal/seccomp"
)

// TestPresetsUsePrecompiledPrograms: New compiles nothing at run time for
// the sandboxes of the presets' network modes, with change capture and
// without — the speed of `sandbox run` does not quietly depend on a
// table that no longer covers it.
func TestPresetsUsePrecompiledPrograms(t *testing.T) {
	for _, mode := range []NetworkMode{NetworkNone, NetworkLoopback, NetworkPrivate, NetworkUnrestricted} {
		for _, capture := range []bool{false, true} {
			before := seccomp.Compiles()
			sb, err := New(Policy{Workspace: t.TempDir(), Network: mode, CaptureChanges: capture, BestEffort: true})
			if err != nil {
				t.Fatalf("%s capture=%v: %v", mode, capture, err)
			}
			sb.Close()
			if n := seccomp.Compiles() - before; n != 0 {
				t.Errorf("%s capture=%v: %d seccomp programs compiled at run time; add the shape to precompiledShapes (internal/seccomp)", mode, capture, n)
			}
		}
	}
}
