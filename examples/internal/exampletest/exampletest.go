// Package exampletest runs an example's main offline in its test, the way
// `go run` does without an API key.
package exampletest

import (
	"context"
	"io"
	"strings"
	"testing"
)

// Offline runs run with no API key (so the example takes its scripted
// model) and a private state directory, and fails t unless the output
// holds each of wants.
func Offline(t *testing.T, run func(context.Context, io.Writer) error, wants ...string) string {
	t.Helper()
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range wants {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	return out.String()
}
