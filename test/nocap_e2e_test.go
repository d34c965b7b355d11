package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileToolsReachNoMoreThanBash: as root, a 0600 file of another user in
// the workspace is unreadable to a confined `bash` (its capabilities are
// dropped). Through `lite-agent run`, read_file and grep must not read it
// either (before the fix they did, with root's CAP_DAC_OVERRIDE).
func TestFileToolsReachNoMoreThanBash(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: checks that read_file and grep do not use root's DAC override on another user's 0600 file")
	}
	ws, state := t.TempDir(), t.TempDir()
	p := filepath.Join(ws, "theirs.txt")
	writeFile(t, p, "private-needle\n")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// The test process is root with every capability: it reads the file,
	// which is what the tools did before.
	if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), "private-needle") {
		t.Fatalf("root cannot read the file, the test proves nothing: %v", err)
	}
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [
	    {"id": "read", "name": "read_file", "input": {"path": "theirs.txt"}},
	    {"id": "grep", "name": "grep", "input": {"pattern": "private-needle", "output_mode": "content"}},
	    {"id": "bash", "name": "bash", "input": {"command": "cat theirs.txt"}}]},
	  {"text": "done"}]}`)
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "bash", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	results := byID(evs, "tool_result")
	for _, id := range []string{"read", "grep", "bash"} {
		r, ok := results[id]
		if !ok {
			t.Fatalf("no result for %s", id)
		}
		if text := contentText(r); strings.Contains(text, "private-needle\n") || strings.Contains(text, ":private-needle") {
			t.Errorf("%s read another user's 0600 file as root:\n%s", id, text)
		}
	}
	if r := results["read"]; r["is_error"] != true || !strings.Contains(contentText(r), "permission denied") {
		t.Errorf("read_file: want a permission error, got %v", r)
	}
}
