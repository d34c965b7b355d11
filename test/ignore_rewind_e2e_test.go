package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIgnoreFileCannotOptOutOfRewind is the attack of issue 11 through the
// CLI, as a user runs it: the agent writes an ignore file matching
// everything (.lite-agent-ignore or .gitignore, with write_file or through
// bash), then rewrites and deletes files that existed when the session
// started. Before the fix none of those changes had a pre-image — the
// recorder re-read the changed ignore file at once and skipped what it
// matched — so `rewind --to 0` printed nothing, exited 0, and left every
// file as the agent made it (the same scenario through the Go API,
// checkpoint.TestIgnoreFileCannotHideExistingFiles, was run on the old code
// and fails there). Now the rewind restores every file byte for byte; a
// file above the size cap (64 MiB, a sparse file here) is named as not
// covered in `checkpoints` and as not restored by `rewind`; a new file the
// session created under a rule in force at its start (*.log) is still
// skipped and left alone.
func TestIgnoreFileCannotOptOutOfRewind(t *testing.T) {
	for _, c := range []struct{ ignoreFile, route string }{
		{".lite-agent-ignore", "write_file"},
		{".gitignore", "write_file"},
		{".lite-agent-ignore", "bash"},
		{".gitignore", "bash"},
	} {
		t.Run(c.ignoreFile+"/"+c.route, func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(ws, "a.txt"), "original a\n")
			writeFile(t, filepath.Join(ws, "src", "b.go"), "package b\n")
			writeFile(t, filepath.Join(ws, "docs", "c.md"), "# c\n")
			writeFile(t, filepath.Join(ws, "docs", "deep", "d.md"), "d\n")
			writeFile(t, filepath.Join(ws, ".gitignore"), "*.log\n")
			os.Chmod(filepath.Join(ws, "src", "b.go"), 0o600)
			start := treeState(t, ws)
			big := filepath.Join(ws, "big.bin")
			const bigSize = 64<<20 + 1 // one byte above the default cap
			if err := os.WriteFile(big, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(big, bigSize); err != nil {
				t.Fatal(err)
			}

			call := func(id, tool string, in map[string]any) string {
				b, _ := json.Marshal(in)
				return fmt.Sprintf(`{"tool_calls": [{"id": %q, "name": %q, "input": %s}]}`, id, tool, b)
			}
			var turns []string
			if c.route == "write_file" {
				turns = append(turns,
					call("ign", "write_file", map[string]any{"path": c.ignoreFile, "content": "*\n"}),
					call("a", "write_file", map[string]any{"path": "a.txt", "content": "owned\n"}),
					call("b", "write_file", map[string]any{"path": "src/b.go", "content": "package owned\n"}),
					call("rm", "bash", map[string]any{"command": "rm -r docs && echo x >> big.bin"}),
					call("new", "write_file", map[string]any{"path": "made.log", "content": "log\n"}))
			} else {
				turns = append(turns,
					call("ign", "bash", map[string]any{"command": "printf '*\\n' > " + c.ignoreFile}),
					call("all", "bash", map[string]any{"command": "sed -i s/original/owned/ a.txt && rm src/b.go && rm -r docs && echo x >> big.bin && echo log > made.log && echo new > made.txt"}))
			}
			turns = append(turns, `{"text": "done"}`)
			script := filepath.Join(t.TempDir(), "s.json")
			writeFile(t, script, `{"turns": [`+strings.Join(turns, ",")+`]}`)
			evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "bash,write_file", "hide")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, ev := range evs {
				if ev["type"] == "tool_result" && ev["is_error"] == true {
					t.Fatalf("a step failed: %v", ev)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); !strings.Contains(string(b), "owned") {
				t.Fatalf("the agent's edit did not happen: a.txt = %q", b)
			}
			id := evs[0]["session_id"].(string)

			out, err := exec.Command(binary, "checkpoints", "--state-dir", state, id).CombinedOutput()
			if err != nil {
				t.Fatalf("checkpoints: %v\n%s", err, out)
			}
			for _, want := range []string{"not covered: big.bin (larger than the", "not covered: made.log (created in this session, ignored by .gitignore:1)"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("checkpoints does not say %q:\n%s", want, out)
				}
			}
			out, err = exec.Command(binary, "rewind", "--state-dir", state, id, "--to", "0", "--files-only").CombinedOutput()
			if err != nil {
				t.Fatalf("rewind --to 0: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "not restored big.bin: its content was not recorded (larger than the size cap)") {
				t.Errorf("rewind does not name big.bin as not restored:\n%s", out)
			}
			// big.bin keeps the agent's byte (it was above the cap, and
			// said so); made.log is the session's own, ignored at its start.
			if fi, err := os.Stat(big); err != nil || fi.Size() != bigSize+2 {
				t.Errorf("big.bin: %v, %v; want the agent's version, left alone", fi, err)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "made.log")); err != nil || string(b) != "log\n" {
				t.Errorf("made.log: %q, %v; want it skipped and left alone", b, err)
			}
			os.Remove(big)
			os.Remove(filepath.Join(ws, "made.log"))
			if diff := diffTrees(start, treeState(t, ws)); diff != "" {
				t.Fatalf("rewind --to 0 did not restore the tree:\n%s\nrewind said:\n%s", diff, out)
			}
		})
	}
}

// TestIgnoreFileChangeAppliesNextSession: an ignore file changed through
// bash during a session does not change that session's rules (a new file
// it then matches is still recorded, and a rewind removes it); the next
// session runs under the changed file.
func TestIgnoreFileChangeAppliesNextSession(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, ".gitignore"), "*.log\n")
	session := func(command string) string {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"command": command})
		script := filepath.Join(t.TempDir(), "s.json")
		writeFile(t, script, fmt.Sprintf(`{"turns": [{"tool_calls": [{"id": "c", "name": "bash", "input": %s}]}, {"text": "done"}]}`, in))
		evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "bash", "go")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		id := evs[0]["session_id"].(string)
		out, err := exec.Command(binary, "checkpoints", "--state-dir", state, id).CombinedOutput()
		if err != nil {
			t.Fatalf("checkpoints: %v\n%s", err, out)
		}
		return string(out)
	}
	out := session("printf '*.tmp\\n' > .gitignore && echo a > x.tmp")
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "created x.tmp") || strings.Contains(out, "not covered") {
		t.Fatalf("session 1 must record x.tmp (*.tmp was not a rule at its start):\n%s", out)
	}
	out = session("echo b > y.tmp")
	if !strings.Contains(out, "not covered: y.tmp (created in this session, ignored by .gitignore:1)") {
		t.Fatalf("session 2 must skip y.tmp under the changed .gitignore:\n%s", out)
	}
}
