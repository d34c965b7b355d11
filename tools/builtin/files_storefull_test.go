package builtin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/tools"
)

// When the disk of the checkpoint store is full, write_file and edit_file
// refuse to change a workspace file (on a disk with room) whose pre-image
// cannot be saved, and say that the checkpoint store is full and where it
// is — not only "no space left on device", which reads as if the
// workspace were full.
func TestFileToolsSayTheCheckpointStoreIsFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs as a full state directory needs root; this would have checked that write_file and edit_file name the full checkpoint store")
	}
	state := t.TempDir()
	if err := syscall.Mount("tmpfs", state, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); this would have checked that write_file and edit_file name the full checkpoint store", err)
	}
	t.Cleanup(func() { syscall.Unmount(state, syscall.MNT_DETACH) })
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Random-looking content does not compress: its pre-image needs its size.
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = byte(i*7919 + i/251)
		if big[i] == '\n' || big[i] == 0 {
			big[i] = 'x'
		}
	}
	copy(big, "OLD\n")
	for _, name := range []string{"w.txt", "e.txt"} {
		if err := os.WriteFile(filepath.Join(ws, name), big, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := checkpoint.Open(state, "s1", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
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

	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx := &tools.Context{Ctx: context.Background(), Workspace: ws, Root: root, Snapshots: rec}
	for _, tc := range []struct {
		tool  *tools.Tool
		input filesObj
		file  string
	}{
		{WriteFile(), filesObj{"path": "w.txt", "content": "new\n"}, "w.txt"},
		{EditFile(), filesObj{"path": "e.txt", "old_string": "OLD", "new_string": "NEW"}, "e.txt"},
	} {
		text := filesMustFail(t, ctx, tc.tool, tc.input, "nothing was")
		if !strings.Contains(text, "checkpoint store is full") || !strings.Contains(text, state) || !strings.Contains(text, "gc --max-size") {
			t.Errorf("%s: the error does not say that the checkpoint store (%s) is full and what to do: %s", tc.tool.Name(), state, text)
		}
		if got, _ := os.ReadFile(filepath.Join(ws, tc.file)); string(got) != string(big) {
			t.Errorf("%s changed although its pre-image could not be saved", tc.file)
		}
	}
}
