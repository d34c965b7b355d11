package builtin

import (
	"context"
	"os/exec"
	"path/filepath"
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
	// A repository of the user's, made before the sandbox (whose .git it
	// binds read-only), in a directory of the workspace.
	if out, err := exec.Command("git", "init", "-q", filepath.Join(ws, "mine")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
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
	// git status in the user's repository: its index refresh is refused
	// and git goes on without it; a command that succeeded that way gets
	// no note. A commit fails, and is explained.
	r, _ = bashRunTool(t, ctx, map[string]any{"command": "cd mine && git status --short && echo status-ok"})
	if r.IsError || r.TextOf() != "status-ok\n" {
		t.Errorf("git status: %q", r.TextOf())
	}
	r, _ = bashRunTool(t, ctx, map[string]any{"command": "cd mine && git -c user.email=u@x -c user.name=u commit -q --allow-empty -m one"})
	if _, note, _ := strings.Cut(r.TextOf(), "\n\n[lite-agent] "); !r.IsError || !strings.Contains(note, "read-only to commands") || !strings.Contains(note, "--git writable") {
		t.Errorf("a refused commit: %q", r.TextOf())
	}
}
