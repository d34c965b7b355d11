package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRecordsCheckpointsAndRewinds: a scripted session through the CLI
// writes and edits files; its checkpoints appear in stream-json and in
// `lite-agent checkpoints`; a user edit made afterwards is a conflict that
// blocks the rewind; without it, `rewind --to 0` restores the tree.
func TestRunRecordsCheckpointsAndRewinds(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "app.txt"), "version 1\n")
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [{"id": "e", "name": "edit_file", "input": {"path": "app.txt", "old_string": "1", "new_string": "2"}}]},
	  {"tool_calls": [{"id": "w", "name": "write_file", "input": {"path": "new/notes.md", "content": "hi\n"}}]},
	  {"text": "done"}]}`)
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "edit_file,write_file", "bump")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cps []map[string]any
	for _, ev := range evs {
		if ev["type"] == "checkpoint" {
			cps = append(cps, ev["checkpoint"].(map[string]any))
		}
	}
	if len(cps) != 3 || cps[0]["reason"] != "user_turn" || cps[1]["tool_call_id"] != "e" || cps[2]["tool_call_id"] != "w" {
		t.Fatalf("checkpoint events: %v", cps)
	}
	id := evs[0]["session_id"].(string)
	cli := func(args ...string) (string, int) {
		cmd := exec.Command(binary, args...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := cli("checkpoints", "--state-dir", state, id); code != 0 || !strings.Contains(out, "modified  app.txt") || !strings.Contains(out, "created  new/notes.md") {
		t.Fatalf("checkpoints (%d):\n%s", code, out)
	}
	// The user edits a file the agent changed: a rewind must not clobber it.
	writeFile(t, filepath.Join(ws, "app.txt"), "version 2 plus my own edit\n")
	if out, code := cli("rewind", "--state-dir", state, id, "--to", "0", "--files-only"); code != 1 || !strings.Contains(out, "app.txt") || !strings.Contains(out, "--force") {
		t.Fatalf("rewind over a user edit must refuse (%d):\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "app.txt")); string(b) != "version 2 plus my own edit\n" {
		t.Fatalf("the refused rewind changed the user's file: %q", b)
	}
	writeFile(t, filepath.Join(ws, "app.txt"), "version 2\n") // the user undoes their edit
	if out, code := cli("rewind", "--state-dir", state, id, "--to", "0", "--files-only"); code != 0 {
		t.Fatalf("rewind (%d):\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "app.txt")); string(b) != "version 1\n" {
		t.Errorf("app.txt after rewind = %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "new")); !os.IsNotExist(err) {
		t.Errorf("the directory the agent created is still there: %v", err)
	}
}
