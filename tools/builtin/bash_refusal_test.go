package builtin

import (
	"context"
	"os"
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

// outsideTheGrants is a directory of the test's own that no grant of a
// test sandbox covers and that lies beneath no path of its private tmpfs
// (/tmp there is the sandbox's own): in $HOME. Its real path.
func outsideTheGrants(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory for a directory outside /tmp: %v: would check the note on a read outside the grants", err)
	}
	d, err := os.MkdirTemp(home, ".lite-agent-test-")
	if err != nil {
		t.Skipf("cannot make a directory outside /tmp: %v: would check the note on a read outside the grants", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// TestBashNamesReadsOutsideTheGrants: cat of a file outside the grants
// fails with cat's own words ("No such file or directory": the sandbox's
// root has no such name), and the result names, on a line of
// lite-agent's, the read and the --allow-read that shows the file; with
// that grant the same command reads it and nothing is noted. A command
// that succeeded gets no note, and a rule the sandbox recorded is named
// before a read. A background task that fails gets the same note.
func TestBashNamesReadsOutsideTheGrants(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not on PATH; would have checked the note on a read outside the grants")
	}
	outside := outsideTheGrants(t)
	notes := filepath.Join(outside, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	sb, err := sandbox.New(sandbox.Policy{Workspace: ws, CaptureChanges: true})
	if err != nil {
		t.Fatalf("the bash tool runs only in the sandbox, and it cannot start here: %v", err)
	}
	defer sb.Close()
	ctx := &tools.Context{Ctx: context.Background(), Workspace: ws, Sandbox: sb, Tasks: tools.NewTasks()}
	r, _ := bashRunTool(t, ctx, map[string]any{"command": "cat " + notes})
	body, note, ok := strings.Cut(r.TextOf(), "\n\n[lite-agent] ")
	if !ok || !r.IsError {
		t.Fatalf("no note marked as lite-agent's after a failed read outside the grants (error %v): %q", r.IsError, r.TextOf())
	}
	if !strings.HasPrefix(body, "cat: "+notes+": ") || strings.Count(body, "\n") != 2 || !strings.HasSuffix(body, "\n\nexit code 1") {
		t.Errorf("the command's own output changed: %q", body)
	}
	if want := "the sandbox refused read " + notes + ": outside the paths commands may read"; !strings.HasPrefix(note, want) ||
		!strings.Contains(note, "--allow-read "+notes+" (read in a policy file's [sandbox] table) shows it, if it exists") || strings.Contains(note, "\n") {
		t.Errorf("note %q: want one line naming the read of %s and --allow-read", note, notes)
	}

	// It succeeded: the program went on without the file.
	r, _ = bashRunTool(t, ctx, map[string]any{"command": "cat " + notes + " 2>&1 || echo went-on"})
	if r.IsError || strings.Contains(r.TextOf(), "[lite-agent]") || !strings.HasSuffix(r.TextOf(), "went-on\n") {
		t.Errorf("a command that succeeded: %q", r.TextOf())
	}
	// A redirection to a file there: the same note, which also names
	// the grant that lets commands write there (the error line does not
	// say which it was).
	r, _ = bashRunTool(t, ctx, map[string]any{"command": "echo x > " + filepath.Join(outside, "new")})
	if _, note, _ := strings.Cut(r.TextOf(), "\n\n[lite-agent] "); !strings.Contains(note, "read "+filepath.Join(outside, "new")+": ") || !strings.Contains(note, "--allow-write "+outside+" (write)") {
		t.Errorf("a write outside the grants: %q", r.TextOf())
	}
	// A rule the sandbox records (the .git rule) is named first.
	r, _ = bashRunTool(t, ctx, map[string]any{"command": "mkdir -p a/.git; cat " + notes})
	if _, note, _ := strings.Cut(r.TextOf(), "\n\n[lite-agent] "); !strings.Contains(note, ".git rule") || !strings.HasSuffix(note, "(and 1 other refusal)") {
		t.Errorf("a recorded refusal and a read: %q", r.TextOf())
	}

	// The same in the background.
	callTool(t, Bash(), ctx, map[string]any{"command": "cat " + notes, "run_in_background": true})
	task, _ := ctx.Tasks.Get("task-1")
	if task == nil {
		t.Fatal("no background task started")
	}
	<-task.Done()
	if out := callTool(t, BashOutput(), ctx, map[string]any{"task_id": "task-1"}).TextOf(); !strings.Contains(out, "has ended: exit code 1.\n\n[lite-agent] the sandbox refused read "+notes+": ") ||
		!strings.Contains(out, "--allow-read "+notes) {
		t.Errorf("a background task's failed read: %q", out)
	}

	// Granted: read, and nothing to say.
	granted, err := sandbox.New(sandbox.Policy{Workspace: ws, ReadOnlyPaths: []string{notes}})
	if err != nil {
		t.Fatal(err)
	}
	defer granted.Close()
	r, _ = bashRunTool(t, &tools.Context{Ctx: context.Background(), Workspace: ws, Sandbox: granted}, map[string]any{"command": "cat " + notes})
	if r.IsError || r.TextOf() != "mine\n" {
		t.Errorf("with --allow-read %s: %q", notes, r.TextOf())
	}
}
