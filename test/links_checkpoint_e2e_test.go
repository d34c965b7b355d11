package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHardLinksAndSocketsRewind (issue 11, section 1): hard links are a
// second name for the same bytes, and a socket bound in the workspace is a
// new file. Through the bash tool of a real session, then `rewind`:
//
//   - `ln a b; echo x >> b` changes a's bytes: the rewind restores a and
//     removes b;
//   - `ln a $TMPDIR/a` is refused (a write through that name would be
//     outside what the checkpoint records);
//   - a pair linked before the session, written through one name, comes
//     back under both;
//   - a unix socket bound in the workspace is removed.
//
// The same steps run unconfined show that each changes what the test
// checks (the ln out of the workspace works there).
func TestHardLinksAndSocketsRewind(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: would check hard links and a bound socket through bash and rewind")
	}
	steps := []string{
		"ln a b && echo x >> b",
		`ln a "$TMPDIR/a" && echo LINKED-OUT; echo step-done`,
		"echo y >> p2",
		`python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("app.sock")'`,
	}
	setup := func(dir string) {
		writeFile(t, filepath.Join(dir, "a"), "A\n")
		writeFile(t, filepath.Join(dir, "p1"), "P\n")
		if err := os.Link(filepath.Join(dir, "p1"), filepath.Join(dir, "p2")); err != nil {
			t.Fatal(err)
		}
	}
	// Unconfined, in a mirror: every step changes the tree, and the link
	// out of the directory works.
	mirror := t.TempDir()
	setup(mirror)
	before := treeState(t, mirror)
	for _, s := range steps {
		cmd := exec.Command("bash", "-c", s)
		cmd.Dir, cmd.Env = mirror, append(os.Environ(), "TMPDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mirror step %q: %v\n%s", s, err, out)
		}
		if strings.Contains(s, "TMPDIR") && !strings.Contains(string(out), "LINKED-OUT") {
			var a, b syscall.Stat_t
			syscall.Stat(mirror, &a)
			syscall.Stat(os.TempDir(), &b)
			if a.Dev == b.Dev {
				t.Fatalf("unconfined, ln out of the directory failed, so the confined refusal proves nothing: %s", out)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(mirror, "a")); string(b) != "A\nx\n" {
		t.Fatalf("unconfined, writing through the new link did not change a: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(mirror, "p1")); string(b) != "P\ny\n" {
		t.Fatalf("unconfined, writing p2 did not change p1: %q", b)
	}

	ws, state := t.TempDir(), t.TempDir()
	setup(ws)
	evs := runBashSteps(t, ws, state, "link things", steps)
	for _, ev := range evs {
		if ev["type"] != "tool_result" {
			continue
		}
		text := contentText(ev)
		if ev["id"] == "s2" {
			if strings.Contains(text, "LINKED-OUT") || !strings.Contains(text, "step-done") {
				t.Errorf("ln of a workspace file into TMPDIR was not refused: %s", text)
			}
		} else if ev["is_error"] == true {
			t.Fatalf("step %v failed in the sandbox: %s", ev["id"], text)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a")); string(b) != "A\nx\n" {
		t.Fatalf("confined, the steps did not run as unconfined: a is %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "app.sock")); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("confined, no socket was bound: %v", err)
	}
	id := evs[0]["session_id"].(string)
	out, err := exec.Command(binary, "rewind", "--state-dir", state, id, "--to", "0", "--files-only").CombinedOutput()
	if err != nil {
		t.Fatalf("rewind --to 0: %v\n%s", err, out)
	}
	after := treeState(t, ws)
	if diff := diffTrees(before, after); diff != "" {
		t.Fatalf("after rewind --to 0 the tree is not as before the session:\n%s\nrewind said:\n%s", diff, out)
	}
}

// TestDeepCwdFailsClosed (issue 11, "Fail closed"): through the bash tool,
// a command digs a tree towards PATH_MAX one relative mkdir at a time and
// writes from the bottom. What cannot be named (or recorded) that deep
// fails with EPERM instead of running unrecorded; everything that did
// happen was recorded, so `rewind --to 0` leaves the workspace as it was. (The sandbox package's TestCaptureFailsClosed shows the same
// command running unrecorded with the rule off.)
func TestDeepCwdFailsClosed(t *testing.T) {
	comp := strings.Repeat("d", 70)
	cmdline := `for i in $(seq 60); do mkdir ` + comp + ` || break; cd ` + comp + ` || exit; done; echo x > f && echo WROTE`
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "keep.txt"), "keep\n")
	before := treeState(t, ws)
	in, _ := json.Marshal(map[string]any{"command": cmdline})
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [{"tool_calls": [{"id": "deep", "name": "bash", "input": `+string(in)+`}]}, {"text": "done"}]}`)
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "bash", "dig")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, ev := range evs {
		if ev["type"] == "tool_result" && ev["id"] == "deep" {
			// Refused somewhere on the way down: by the capture, or by
			// the checkpoint, which will not record a path it could not
			// restore. Where the refusal stops the descent, the write
			// may land (recorded): the rewind below is the proof.
			if text := contentText(ev); !strings.Contains(text, "Operation not permitted") {
				t.Errorf("digging deeper than PATH_MAX was never refused: %s", text)
			}
		}
	}
	id := evs[0]["session_id"].(string)
	out, err := exec.Command(binary, "rewind", "--state-dir", state, id, "--to", "0", "--files-only").CombinedOutput()
	if err != nil {
		t.Fatalf("rewind --to 0: %v\n%s", err, out)
	}
	if diff := diffTrees(before, treeState(t, ws)); diff != "" {
		t.Fatalf("after rewind --to 0 something the command made is left (it ran unrecorded):\n%s", diff)
	}
}
