package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileToolsHaveNoRootOverride: when lite-agent runs as root, the file
// tools must not reach what a confined command cannot. A 0600 file and a
// 0700 directory of another user in the workspace are readable by root
// (CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH) — the raw handlers prove it —
// and refused through the tools, as they are to bash (all capabilities
// dropped).
func TestFileToolsHaveNoRootOverride(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: checks that the file tools drop root's DAC override (another user's 0600 file must be unreadable, as it is to bash)")
	}
	e := newFilesTestEnv(t)
	e.write(t, "theirs.txt", "private needle\n", 0o600)
	e.write(t, "locked/inner.txt", "inner needle\n", 0o644)
	e.write(t, "readonly.txt", "keep\n", 0o444)
	for _, p := range []string{"theirs.txt", "locked/inner.txt", "locked", "readonly.txt"} {
		if err := os.Chown(filepath.Join(e.ws, p), 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(e.ws, "locked"), 0o700); err != nil {
		t.Fatal(err)
	}

	// Without the wrapper, root's override reads what bash cannot.
	if r, err := runReadFile(e.ctx, readFileInput{Path: "theirs.txt", Limit: 10}); err != nil || !strings.Contains(r.TextOf(), "private needle") {
		t.Fatalf("the raw handler cannot read the file, so the test proves nothing: %v", err)
	}
	if out, err := runListDir(e.ctx, listDirInput{Path: "locked"}); err != nil || !strings.Contains(out, "inner.txt") {
		t.Fatalf("the raw handler cannot list the directory: %v", err)
	}

	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "theirs.txt"}, "permission denied")
	filesMustFail(t, e.ctx, ListDir(), filesObj{"path": "locked"}, "permission denied")
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": "locked/inner.txt"}, "permission denied")
	filesMustFail(t, e.ctx, WriteFile(), filesObj{"path": "readonly.txt", "content": "changed\n"}, "permission denied")
	filesMustFail(t, e.ctx, EditFile(), filesObj{"path": "theirs.txt", "old_string": "private", "new_string": "public"}, "permission denied")
	if got := e.read(t, "readonly.txt"); got != "keep\n" {
		t.Errorf("readonly.txt = %q after a refused write", got)
	}
	// grep reads with its workers: none of them may find the needles.
	if out := filesMustOK(t, e.ctx, Grep(), filesObj{"pattern": "needle", "output_mode": "content"}); strings.Contains(out, "private needle") || strings.Contains(out, "inner needle") {
		t.Errorf("grep read another user's files as root:\n%s", out)
	}
	if out := filesMustOK(t, e.ctx, Glob(), filesObj{"pattern": "**/*.txt"}); strings.Contains(out, "inner.txt") {
		t.Errorf("glob listed a directory only root's override can read:\n%s", out)
	}
	// What the user can reach stays reachable.
	e.write(t, "mine.txt", "mine needle\n", 0o644)
	if out := filesMustOK(t, e.ctx, Grep(), filesObj{"pattern": "needle", "output_mode": "content"}); !strings.Contains(out, "mine needle") {
		t.Errorf("grep lost the readable file:\n%s", out)
	}
	filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": "mine.txt", "content": "new\n"})
}
