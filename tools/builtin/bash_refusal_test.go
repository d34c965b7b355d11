package builtin

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// TestBashNamesRefusals: when the sandbox refuses a command something by a
// rule, the result carries, after the command's own output and apart from
// it, one line marked as lite-agent's naming what was refused, the rule and
// the flag; the command's bytes are as it wrote them.
func TestBashNamesRefusals(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed: would check that a refused git init is explained in the bash result")
	}
	ws := t.TempDir()
	sb, err := sandbox.New(sandbox.Policy{Workspace: ws, CaptureChanges: true})
	if err != nil {
		t.Fatalf("the bash tool runs only in the sandbox, and it cannot start here: %v", err)
	}
	defer sb.Close()
	ctx := &tools.Context{Ctx: context.Background(), Workspace: ws, Sandbox: sb}
	const own = "echo before; git init -q newrepo 2>&1 | sed 's/^/git: /'; echo after"
	r, _ := bashRunTool(t, ctx, map[string]any{"command": own})
	text := r.TextOf()
	body, note, ok := strings.Cut(text, "\n\n[lite-agent] ")
	if !ok {
		t.Fatalf("no note marked as lite-agent's after the output: %q", text)
	}
	if !strings.HasPrefix(body, "before\ngit: ") || !strings.HasSuffix(body, "\nafter") || strings.Count(body, "\n") != 2 {
		t.Errorf("the command's own output changed: %q", body)
	}
	if strings.Contains(note, "\n") || !strings.Contains(note, "newrepo/.git") || !strings.Contains(note, ".git rule") || !strings.Contains(note, "--git writable") {
		t.Errorf("note %q: want one line naming newrepo/.git, the .git rule and --git writable", note)
	}
	if r.IsError {
		t.Errorf("the command exited 0, yet the result is an error: %q", text)
	}

	// Nothing refused: no note.
	r, _ = bashRunTool(t, ctx, map[string]any{"command": "echo fine > f && cat f"})
	if r.TextOf() != "fine\n" {
		t.Errorf("a command refused nothing: %q", r.TextOf())
	}
}
