package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 26, class 1: changes under an --allow-write path outside the
// workspace are not recorded by the checkpoint store (it records the
// workspace), so no rewind undoes them. The person is told so at the
// start: on stderr, and in the stream-json session_start event
// (not_rewindable). The rewind below shows the limit the notice is about.
func TestAllowWriteOutsideWorkspaceIsAnnounced(t *testing.T) {
	u := newFakeUser(t)
	u.checkpoints = true
	ws, extra := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(extra, "data.txt"), "precious\n")
	writeFile(t, filepath.Join(ws, "a.txt"), "one\n")
	res, evs, stderr := u.bashSessionEvents(t, ws, []string{"--toolchains", "none", "--allow-write", extra},
		"echo destroyed > "+filepath.Join(extra, "data.txt")+" && echo two > a.txt && echo done")
	if !strings.Contains(res[0].text, "done") {
		t.Fatalf("bash: %s", res[0].text)
	}
	var start event
	for _, ev := range evs {
		if ev["type"] == "session_start" {
			start = ev
		}
	}
	var listed []string
	if l, ok := start["not_rewindable"].([]any); ok {
		for _, p := range l {
			s, _ := p.(string)
			listed = append(listed, s)
		}
	}
	if !slices.Contains(listed, extra) {
		t.Errorf("session_start does not name %s as not rewindable: %v", extra, start)
	}
	if !strings.Contains(stderr, extra+" is writable but outside the workspace") {
		t.Errorf("stderr does not say %s is not rewindable:\n%s", extra, stderr)
	}
	if slices.Contains(listed, ws) {
		t.Errorf("the workspace is listed as not rewindable: %v", listed)
	}
	// What the notice is about: rewind --to 0 restores the workspace,
	// not the --allow-write path.
	id, _ := evs[0]["session_id"].(string)
	rw := exec.Command(binary, "rewind", id, "--to", "0", "--files-only", "--state-dir", filepath.Join(u.home, ".state"))
	rw.Env = u.env
	if out, err := rw.CombinedOutput(); err != nil {
		t.Fatalf("rewind: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\n" {
		t.Errorf("the workspace file was not rewound: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(extra, "data.txt")); string(b) != "destroyed\n" {
		t.Errorf("the --allow-write file is %q: if it is rewound now, the notice is out of date", b)
	}
}
