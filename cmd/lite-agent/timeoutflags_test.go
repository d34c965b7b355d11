package main

import (
	"strings"
	"testing"
	"time"
)

// The model-connection bounds: a duration, 0 for none (passed on as a
// negative bound), unset left to the environment; a negative or
// malformed value and the scripted provider are usage errors.
func TestModelTimeoutFlags(t *testing.T) {
	var f runFlags
	fs := runFlagSet("run", &f, &strings.Builder{})
	if err := fs.Parse([]string{"--first-byte-timeout", "90s", "--stream-idle-timeout", "0"}); err != nil {
		t.Fatal(err)
	}
	if got := f.firstByteTimeout.value(); got != 90*time.Second {
		t.Errorf("first-byte 90s → %v", got)
	}
	if got := f.streamIdleTimeout.value(); got >= 0 {
		t.Errorf("stream-idle 0 → %v, want negative (no bound)", got)
	}
	var unset timeoutFlag
	if unset.value() != 0 {
		t.Errorf("unset → %v, want 0 (environment, then default)", unset.value())
	}
	e := newCLIEnv(t)
	for _, args := range [][]string{
		{"run", "--stream-idle-timeout", "-1s", "hi"},
		{"run", "--first-byte-timeout", "soon", "hi"},
		{"run", "--script", e.script(`{"turns": [{"text": "hi"}]}`), "--first-byte-timeout", "5s", "hi"},
	} {
		if code, _, stderr := e.run("", args...); code != 2 || !strings.Contains(stderr, "timeout") {
			t.Errorf("%q: exit %d, %s", args, code, stderr)
		}
	}
}
