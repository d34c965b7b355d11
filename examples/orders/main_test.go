package main

import (
	"os"
	"testing"

	"github.com/lite-agent/lite-agent/examples/internal/exampletest"
	"github.com/lite-agent/lite-agent/tools/confined"
)

func TestMain(m *testing.M) {
	confined.Serve(orderTools.Tools()...) // as main does: the handler runs in a re-execution of this test binary
	os.Exit(m.Run())
}

// TestExample runs the example offline and checks what the seed says:
// the pre-approved tool runs (in the subagent too), an order that does not
// exist is an isError result the model sees, and CanUseTool refuses the
// tool the workflow does not allow.
func TestExample(t *testing.T) {
	exampletest.Offline(t, run,
		"[permission bash: deny by can_use_tool",
		"[result bash (error): permission denied: Only order lookup is allowed in this workflow.]",
		"[permission agent: allow by rule",
		"[permission mcp__orders__lookup_order: allow by rule",
		`[result mcp__orders__lookup_order (ok): {"orderId":"O-1001","status":"shipped","eta":"2026-05-20"}]`,
		"[result mcp__orders__lookup_order (error): Order not found: O-9999]",
		"[success] Order O-1001 has shipped",
	)
}
