package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/tools"
)

func TestMain(m *testing.M) {
	tools.ServeConfinedCall() // the handler runs in a re-execution of this test binary
	os.Exit(m.Run())
}

// TestExample runs the example offline, as `go run` does without a key.
func TestExample(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"[permission get_weather: allow by rule",
		"[result get_weather (ok): It's sunny in Tokyo.]",
		"[success] It's sunny in Tokyo.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
