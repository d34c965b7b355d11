package sandbox

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestTrialRunsAWriteAndACapture: on this machine (every mechanism
// present) the trial passes, with and without change capture, at both
// levels, and returns what it enforced.
func TestTrialRunsAWriteAndACapture(t *testing.T) {
	for _, level := range []Level{LevelFull, LevelContainer} {
		for _, capture := range []bool{false, true} {
			start := time.Now()
			e, err := Trial(Policy{Workspace: t.TempDir(), CaptureChanges: capture, Level: level})
			if err != nil {
				t.Fatalf("level %s, capture %v: %v", level, capture, err)
			}
			if e.Level != level {
				t.Errorf("level %s: the trial says %q", level, e.Level)
			}
			t.Logf("level %s, capture %v: trial took %v", level, capture, time.Since(start))
		}
	}
}

// TestTrialSeesWhatFails: a trial step fails where what it tries does
// not hold. Each case takes away, with best effort, the layer that
// stops one attack the trial makes — the attack then works, and the
// trial says so — while New's own refusal comes back as it is, not as
// a failed trial.
func TestTrialSeesWhatFails(t *testing.T) {
	noServer := maskedHost(func(h *hostInfo) { h.notify = errors.New("test: no listener") })
	if _, err := trialOn(Policy{CaptureChanges: true}, noServer); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "capturing changes") {
		t.Errorf("capture without a listener: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*hostInfo)
		want string
	}{
		// No Landlock: the file beside the workspace is read.
		{"no Landlock", func(h *hostInfo) { h.abi = 0 }, "outside every grant, was readable"},
		// No seccomp, no listener, and Landlock without TCP rules
		// (ABI 3): the loopback listener outside is reached.
		{"no network wall", func(h *hostInfo) {
			h.abi, h.seccomp = 3, false
			h.notify = errors.New("test: no seccomp")
		}, "loopback listener outside the sandbox was reachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trialOn(Policy{BestEffort: true}, maskedHost(tc.edit))
			if !errors.Is(err, ErrTrialFailed) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the trial did not see it: %v", err)
			}
		})
	}
}

func BenchmarkTrial(b *testing.B) {
	for b.Loop() {
		if _, err := Trial(Policy{Workspace: b.TempDir(), CaptureChanges: true}); err != nil {
			b.Fatal(err)
		}
	}
}
