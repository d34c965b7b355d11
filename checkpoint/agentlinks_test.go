package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAgentSymlink: a symlink an agent's session created is found, through
// any path that walks through it; the resolved path, a user's link and a
// link the user has since retargeted are not.
func TestAgentSymlink(t *testing.T) {
	state := t.TempDir()
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	elsewhere, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(elsewhere, "sub"), 0o755)

	rec, err := Open(state, "s1", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The agent plants ws/project -> elsewhere, as `ln -s` through bash
	// would (the capture records the path before the symlink call).
	if err := rec.RecordSnapshot("project"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(ws, "project")); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Seal(SealInfo{Reason: ReasonToolCall, ToolName: "bash", ToolCallID: "t1", UserTurn: 0}); err != nil {
		t.Fatal(err)
	}
	rec.Close()

	// The user made a link of their own, never recorded.
	userLink := filepath.Join(ws, "mine")
	os.Symlink(elsewhere, userLink)

	for _, c := range []struct {
		name, path, wantLink string
	}{
		{"the link itself", filepath.Join(ws, "project"), filepath.Join(ws, "project")},
		{"below the link", filepath.Join(ws, "project", "sub"), filepath.Join(ws, "project")},
		{"the resolved path", elsewhere, ""},
		{"the resolved path below", filepath.Join(elsewhere, "sub"), ""},
		{"a user's link", userLink, ""},
		{"the workspace", ws, ""},
	} {
		got, err := AgentSymlink(state, c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch {
		case c.wantLink == "" && got != nil:
			t.Errorf("%s: AgentSymlink(%s) = %+v, want none", c.name, c.path, got)
		case c.wantLink != "" && got == nil:
			t.Errorf("%s: AgentSymlink(%s) found nothing, want %s", c.name, c.path, c.wantLink)
		case c.wantLink != "" && (got.Path != c.wantLink || got.Session != "s1" || got.Checkpoint != 1 || got.Target != elsewhere):
			t.Errorf("%s: AgentSymlink(%s) = %+v", c.name, c.path, got)
		}
	}

	// Reached through a second, user-made link to the workspace: the
	// agent's link is still found (keyed by where it really is).
	viaUser := filepath.Join(t.TempDir(), "ws-alias")
	os.Symlink(ws, viaUser)
	if got, _ := AgentSymlink(state, filepath.Join(viaUser, "project")); got == nil || got.Real != filepath.Join(ws, "project") {
		t.Errorf("through a user's alias of the workspace: %+v", got)
	}

	// Retargeted by the user since: theirs now.
	os.Remove(filepath.Join(ws, "project"))
	os.Symlink(filepath.Join(elsewhere, "sub"), filepath.Join(ws, "project"))
	if got, _ := AgentSymlink(state, filepath.Join(ws, "project")); got != nil {
		t.Errorf("after the user retargeted the link: %+v, want none", got)
	}
}

// TestAgentSymlinkUnsealed: a session killed before it sealed its changes
// still counts as evidence.
func TestAgentSymlinkUnsealed(t *testing.T) {
	state := t.TempDir()
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	elsewhere, _ := filepath.EvalSymlinks(t.TempDir())
	rec, err := Open(state, "killed", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if err := rec.RecordSnapshot("project"); err != nil {
		t.Fatal(err)
	}
	os.Symlink(elsewhere, filepath.Join(ws, "project"))
	// No seal: the log ends with the pre record, as after kill -9.
	got, err := AgentSymlink(state, filepath.Join(ws, "project"))
	if err != nil || got == nil || got.Session != "killed" {
		t.Fatalf("AgentSymlink = %+v, %v; want the unsealed session's link", got, err)
	}
}

// TestAgentSymlinkNoStore: an empty state directory answers none.
func TestAgentSymlinkNoStore(t *testing.T) {
	dir := t.TempDir()
	os.Symlink(dir, filepath.Join(dir, "l"))
	if got, err := AgentSymlink(filepath.Join(dir, "nothing"), filepath.Join(dir, "l")); got != nil || err != nil {
		t.Fatalf("%+v, %v", got, err)
	}
}
