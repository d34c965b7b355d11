package main

import (
	"testing"

	"github.com/lite-agent/lite-agent/examples/internal/exampletest"
)

// TestExample: the guard with matcher "Bash" fires on bash calls, denies
// rm -rf (build/ survives) and allows the test command. Before "Bash"
// was read as bash the matcher matched nothing, AllowedTools ["Bash"]
// allowed nothing, and the rm -rf would have been denied only because
// headless asks are — with a terminal it would have been asked, and with
// bypassPermissions it would have run.
func TestExample(t *testing.T) {
	exampletest.Offline(t, run,
		"[permission bash: deny by hook: rm -rf is not allowed]",
		"[permission bash: allow by hook",
		"[result bash (ok): 3 tests passed",
		"build/ is still there",
	)
}
