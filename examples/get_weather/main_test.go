package main

import (
	"os"
	"testing"

	"github.com/lite-agent/lite-agent/examples/internal/exampletest"
	"github.com/lite-agent/lite-agent/tools/confined"
)

func TestMain(m *testing.M) {
	confined.Serve(weather) // as main does: the handler runs in a re-execution of this test binary
	os.Exit(m.Run())
}

// TestExample runs the example offline, as `go run` does without a key.
func TestExample(t *testing.T) {
	exampletest.Offline(t, run,
		"[permission get_weather: allow by rule",
		"[result get_weather (ok): It's sunny in Tokyo.]",
		"[success] It's sunny in Tokyo.",
	)
}
