package main

import (
	"os"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/examples/internal/exampletest"
	"github.com/lite-agent/lite-agent/tools/confined"
)

func TestMain(m *testing.M) {
	confined.Serve(kbTools.Tools()...) // as main does: the handler runs in a re-execution of this test binary
	os.Exit(m.Run())
}

// TestExample: with the allow rule the tool runs and gets its default
// source; maxResults 50 is refused naming the field; without the rule the
// readOnlyHint does not make it run.
func TestExample(t *testing.T) {
	out := exampletest.Offline(t, run)
	allowed, denied, _ := strings.Cut(out, `== allowedTools []`)
	for _, want := range []string{
		"[permission mcp__kb__search_docs: allow by rule",
		`[result mcp__kb__search_docs (ok): docs: "refund policy"]`,
		"[result mcp__kb__search_docs (error): invalid input for mcp__kb__search_docs",
		"maxResults",
	} {
		if !strings.Contains(allowed, want) {
			t.Errorf("with the rule, output lacks %q:\n%s", want, allowed)
		}
	}
	if !strings.Contains(denied, "[permission mcp__kb__search_docs: deny by headless") || strings.Contains(denied, "(ok)") {
		t.Errorf("without the rule the hinted tool ran:\n%s", denied)
	}
}
