package builtin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// When the disk of the checkpoint store is full, a command's write to a
// workspace file (on a disk with room) fails with ENOSPC: the result says
// that the checkpoint store is full and where it is, not only "No space
// left on device" about the workspace file.
func TestBashSaysTheCheckpointStoreIsFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs as a full state directory needs root")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not on PATH")
	}
	state := t.TempDir()
	if err := syscall.Mount("tmpfs", state, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(state, syscall.MNT_DETACH) })
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Random content does not compress: its pre-image needs its size.
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = byte(i*7919 + i/251)
	}
	if err := os.WriteFile(filepath.Join(ws, "data.txt"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := checkpoint.Open(state, "s1", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	// Fill what is left of the state directory's disk.
	filler, err := os.Create(filepath.Join(state, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := filler.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	filler.Close()

	sb, err := sandbox.New(sandbox.Policy{Workspace: ws, CaptureChanges: true})
	if err != nil {
		t.Fatalf("the bash tool runs only in the sandbox, and it cannot start here: %v", err)
	}
	defer sb.Close()
	ctx := &tools.Context{Ctx: context.Background(), Workspace: ws, Sandbox: sb, Snapshots: rec}
	r, _ := bashRunTool(t, ctx, map[string]any{"command": "echo new > data.txt"})
	text := fmt.Sprint(r.Content)
	if !strings.Contains(text, "No space left on device") {
		t.Fatalf("the write was not refused with ENOSPC: %s", text)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "data.txt")); len(got) != len(big) {
		t.Fatalf("data.txt changed although its pre-image could not be saved")
	}
	if !strings.Contains(text, "checkpoint store is full") || !strings.Contains(text, state) {
		t.Fatalf("the result does not say that the checkpoint store (%s) is full: %s", state, text)
	}
}
