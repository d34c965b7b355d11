package sandbox

import (
	"testing"
	"time"
)

// TestTrialRunsAWriteAndACapture: on this machine (every mechanism
// present) the trial passes, with and without change capture.
func TestTrialRunsAWriteAndACapture(t *testing.T) {
	for _, capture := range []bool{false, true} {
		start := time.Now()
		if err := Trial(Policy{Workspace: t.TempDir(), CaptureChanges: capture}); err != nil {
			t.Fatalf("capture %v: %v", capture, err)
		}
		t.Logf("capture %v: trial took %v", capture, time.Since(start))
	}
}

func BenchmarkTrial(b *testing.B) {
	for b.Loop() {
		if err := Trial(Policy{Workspace: b.TempDir(), CaptureChanges: true}); err != nil {
			b.Fatal(err)
		}
	}
}
