package builtin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPreviewChange(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\r\ntwo\r\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "link"))
	in := func(v map[string]any) json.RawMessage { b, _ := json.Marshal(v); return b }

	// edit_file: the change the tool would make, CRLF rule included.
	c, ok, err := PreviewChange(ws, "edit_file", in(map[string]any{"path": "a.txt", "old_string": "one\ntwo", "new_string": "1\n2"}))
	if !ok || err != nil || string(c.New) != "1\r\n2\r\n" || string(c.Old) != "one\r\ntwo\r\n" {
		t.Errorf("edit: %+v %v %v", c, ok, err)
	}
	// write_file of a new file.
	c, _, err = PreviewChange(ws, "write_file", in(map[string]any{"path": "n/new.txt", "content": "x"}))
	if err != nil || c.Exists || string(c.New) != "x" {
		t.Errorf("write: %+v %v", c, err)
	}
	// What the tool refuses, the preview refuses: not found, outside, a
	// symlink out of the workspace (the preview must not show its content).
	for _, v := range []map[string]any{
		{"path": "a.txt", "old_string": "absent", "new_string": "x"},
		{"path": "../x", "old_string": "a", "new_string": "b"},
		{"path": "link", "old_string": "s", "new_string": "b"},
	} {
		if c, _, err := PreviewChange(ws, "edit_file", in(v)); err == nil {
			t.Errorf("%v: previewed %+v", v, c)
		} else if c != nil && strings.Contains(string(c.Old), "s") {
			t.Errorf("%v: the content outside was read", v)
		}
	}
	if _, ok, _ := PreviewChange(ws, "bash", in(map[string]any{"command": "ls"})); ok {
		t.Error("bash is not a file change")
	}
}
