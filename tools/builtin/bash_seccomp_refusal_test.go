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

// TestBashNamesSeccompRefusals: a system call the sandbox's seccomp rules
// refuse (a user namespace: what unshare, bwrap and container tools make)
// and a set-id mode are named in the result's note, with the rule and
// that no setting allows them; the command's own output is untouched. A
// command that probes for one and goes on without it succeeded, and gets
// no note.
func TestBashNamesSeccompRefusals(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed: would check that a refused user namespace is named in the bash result")
	}
	// Unconfined, the same call works (as root, or where unprivileged
	// user namespaces are allowed): the refusal inside is the sandbox's.
	if out, err := exec.Command("unshare", "-U", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -U fails unconfined here (%v: %s): the refusal inside would prove nothing", err, out)
	}
	ws := t.TempDir()
	sb, err := sandbox.New(sandbox.Policy{Workspace: ws, CaptureChanges: true})
	if err != nil {
		t.Fatalf("the bash tool runs only in the sandbox, and it cannot start here: %v", err)
	}
	defer sb.Close()
	ctx := &tools.Context{Ctx: context.Background(), Workspace: ws, Sandbox: sb}

	r, _ := bashRunTool(t, ctx, map[string]any{"command": "echo before; unshare -U true; echo status $?; exit 3"})
	body, note, ok := strings.Cut(r.TextOf(), "\n\n[lite-agent] ")
	if !ok {
		t.Fatalf("no note marked as lite-agent's: %q", r.TextOf())
	}
	if !strings.HasPrefix(body, "before\nunshare: ") || !strings.Contains(body, "\nstatus 1\n") {
		t.Errorf("the command's own output: %q", body)
	}
	for _, want := range []string{"the sandbox refused unshare CLONE_NEWUSER", "no namespaces", "no setting allows it"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}

	// Probing and doing without: success, no note.
	r, _ = bashRunTool(t, ctx, map[string]any{"command": "unshare -U true 2>/dev/null || echo without"})
	if r.IsError || r.TextOf() != "without\n" {
		t.Errorf("a command that did without the refused call: %q", r.TextOf())
	}

	// A set-id mode: refused, named, and the file keeps its mode.
	if err := os.WriteFile(filepath.Join(ws, "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, _ = bashRunTool(t, ctx, map[string]any{"command": "chmod u+s tool"})
	_, note, _ = strings.Cut(r.TextOf(), "\n\n[lite-agent] ")
	if !r.IsError || !strings.Contains(note, "the sandbox refused fchmodat mode 04755") || !strings.Contains(note, "set-id modes are never given") {
		t.Errorf("chmod u+s: %q", r.TextOf())
	}
	if fi, err := os.Stat(filepath.Join(ws, "tool")); err != nil || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("the file's mode: %v, %v", fi.Mode(), err)
	}
}
