package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// heldOff runs f with the session's writers off (LITE_AGENT_HELD_WRITES=
// off in lite-agent's own environment: no registry of held files, no
// pause at a seal), to show what the defence stops.
func heldOff(t *testing.T, off bool) {
	t.Helper()
	if off {
		t.Setenv("LITE_AGENT_HELD_WRITES", "off")
	}
}

// rewindAll runs `lite-agent rewind --to 0` on the session of evs and
// returns its output and error; listing is `lite-agent checkpoints`.
func rewindAll(t *testing.T, state string, evs []event) (listing, rewind string, err error) {
	t.Helper()
	id, _ := evs[0]["session_id"].(string)
	if id == "" {
		t.Fatalf("no session id in %v", evs[0])
	}
	ls, _ := exec.Command(binary, "checkpoints", "--state-dir", state, id).CombinedOutput()
	out, err := exec.Command(binary, "rewind", "--state-dir", state, id, "--to", "0", "--files-only").CombinedOutput()
	return string(ls), string(out), err
}

// TestHeldDescriptorWritesRewound (issue 26 class 1): a background task
// opens f.txt for appending (`exec 3>>f.txt`), writes a line, and waits
// past two more tool calls — two sealed checkpoints — before it writes a
// second line through the same descriptor. That write makes no captured
// call. Before, it changed f.txt in a checkpoint that had no pre-image of
// it: `checkpoints` blamed the person ("changed outside the agent
// afterwards: f.txt") and `rewind --to 0` refused with a conflict,
// keeping the task's bytes. Now the file held open at each seal is
// carried into the next checkpoint: the listing blames nobody and the
// rewind brings the workspace back to its start.
func TestHeldDescriptorWritesRewound(t *testing.T) {
	for _, off := range []bool{true, false} {
		t.Run(map[bool]string{true: "writers off (before)", false: "carried"}[off], func(t *testing.T) {
			heldOff(t, off)
			ws, state := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(ws, "keep.txt"), "mine\n")
			before := treeState(t, ws)
			script := filepath.Join(t.TempDir(), "s.json")
			writeFile(t, script, `{"turns": [
			  {"tool_calls": [{"id": "bg", "name": "bash", "input": {"command": "exec 3>>f.txt; echo first >&3; touch opened; while [ ! -e go ]; do sleep 0.02; done; echo second >&3; touch wrote", "run_in_background": true}}]},
			  {"tool_calls": [{"id": "wait", "name": "bash", "input": {"command": "while [ ! -e opened ]; do sleep 0.02; done"}}]},
			  {"tool_calls": [{"id": "other", "name": "bash", "input": {"command": "echo more >> keep.txt"}}]},
			  {"tool_calls": [{"id": "go", "name": "bash", "input": {"command": "touch go; while [ ! -e wrote ]; do sleep 0.02; done"}}]},
			  {"text": "done"}]}`)
			evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "bash", "go")
			if code != 0 || len(evs) == 0 {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "first\nsecond\n" {
				t.Fatalf("the task did not write both lines: %q\n%s", b, stderr)
			}
			listing, out, err := rewindAll(t, state, evs)
			blamed := strings.Contains(listing, "changed outside the agent afterwards: f.txt")
			if off {
				if diffTrees(before, treeState(t, ws)) == "" {
					t.Fatalf("without the writers the attack should show (the task's write not rewound):\n%s\nrewind: %v\n%s", listing, err, out)
				}
				t.Logf("without the writers: blamed on the person %v; rewind: %v %s", blamed, err, out)
				return
			}
			if blamed {
				t.Fatalf("the task's own write was taken for the person's:\n%s", listing)
			}
			if err != nil {
				t.Fatalf("rewind --to 0: %v\n%s\n%s", err, out, listing)
			}
			if diff := diffTrees(before, treeState(t, ws)); diff != "" {
				t.Fatalf("rewind --to 0 did not undo the task's writes (%s):\n%s\n%s", out, diff, listing)
			}
		})
	}
}

var (
	heldServerOnce sync.Once
	heldServerBin  string
	heldServerErr  error
)

// heldServer builds testdata/heldserver (an MCP server that keeps a file
// open, or mapped, from one call to the next) once per test binary.
func heldServer(t *testing.T) string {
	t.Helper()
	heldServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lite-agent-heldserver-")
		if err != nil {
			heldServerErr = err
			return
		}
		os.Chmod(dir, 0o755)
		heldServerBin = filepath.Join(dir, "heldserver")
		out, err := exec.Command("go", "build", "-o", heldServerBin, "./testdata/heldserver").CombinedOutput()
		if err != nil {
			heldServerErr = err
			t.Logf("go build: %s", out)
		}
	})
	if heldServerErr != nil {
		t.Fatalf("building testdata/heldserver: %v", heldServerErr)
	}
	return heldServerBin
}

// TestMCPHeldFileWritesRewound (issue 26 class 1): a stdio MCP server
// opens a file in one tool call and writes it in the next, through the
// descriptor it kept ("fd"); another maps a file shared and writable in
// one call, closes the descriptor, and writes through the mapping in the
// next ("map"). Neither later write makes a captured call. Before, the
// change landed in a checkpoint with no pre-image of it — blamed on the
// person, and `rewind --to 0` refused; now the held file is carried
// across the seal, and the rewind restores the workspace.
func TestMCPHeldFileWritesRewound(t *testing.T) {
	bin := heldServer(t)
	for _, mode := range []string{"fd", "map"} {
		for _, off := range []bool{true, false} {
			t.Run(mode+"/"+map[bool]string{true: "writers off (before)", false: "carried"}[off], func(t *testing.T) {
				heldOff(t, off)
				ws, state := t.TempDir(), t.TempDir()
				writeFile(t, filepath.Join(ws, "data.bin"), "ORIGINAL DATA\n")
				before := treeState(t, ws)
				cfg := filepath.Join(t.TempDir(), "mcp.json")
				writeFile(t, cfg, `{"mcpServers": {"held": {"command": "`+bin+`", "filesystem": "workspace", "sideEffects": "workspace"}}}`)
				script := filepath.Join(t.TempDir(), "s.json")
				writeFile(t, script, `{"turns": [
				  {"tool_calls": [{"id": "open", "name": "mcp__held__open", "input": {"path": "data.bin", "mode": "`+mode+`"}}]},
				  {"tool_calls": [{"id": "write", "name": "mcp__held__write", "input": {"text": "CLOBBERED"}}]},
				  {"text": "done"}]}`)
				evs, code, stderr := runAgent(t, ws, state, "--mcp-config", cfg, "--script", script, "--allowed-tools", "mcp__held__*", "go")
				if code != 0 || len(evs) == 0 {
					t.Fatalf("run: exit %d\n%s", code, stderr)
				}
				for _, ev := range evs {
					if ev["type"] == "tool_result" && ev["is_error"] == true {
						t.Fatalf("tool %v failed: %s\n%s", ev["id"], contentText(ev), stderr)
					}
				}
				if b, _ := os.ReadFile(filepath.Join(ws, "data.bin")); !strings.Contains(string(b), "CLOBBERED") {
					t.Fatalf("the server's second call did not write: %q\n%s", b, stderr)
				}
				listing, out, err := rewindAll(t, state, evs)
				blamed := strings.Contains(listing, "changed outside the agent afterwards: data.bin")
				diff := diffTrees(before, treeState(t, ws))
				if off {
					// The open made no change: nothing to rewind, and the
					// write it let through stays.
					if diff == "" {
						t.Fatalf("without the writers the attack should show (data not restored):\n%s\nrewind: %v\n%s", listing, err, out)
					}
					t.Logf("without the writers: blamed on the person %v; rewind: %v %s", blamed, err, out)
					return
				}
				if blamed || err != nil {
					t.Fatalf("blamed %v, rewind --to 0: %v\n%s\n%s", blamed, err, out, listing)
				}
				if diff != "" {
					t.Fatalf("rewind --to 0 did not undo the server's write (%s):\n%s\n%s", out, diff, listing)
				}
			})
		}
	}
}
