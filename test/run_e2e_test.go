package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type event map[string]any

// runAgent runs `lite-agent run` with stream-json output and returns the
// parsed events, the exit code and stderr.
func runAgent(t *testing.T, ws, state string, args ...string) ([]event, int, string) {
	t.Helper()
	full := append([]string{"run", "--workspace", ws, "--state-dir", state, "--output-format", "stream-json"}, args...)
	cmd := exec.Command(binary, full...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var evs []event
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("stdout line is not a JSON event: %q", sc.Text())
		}
		if ev["type"] == nil {
			t.Fatalf("event without a type: %q", sc.Text())
		}
		evs = append(evs, ev)
	}
	return evs, code, errb.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func contentText(ev event) string {
	var s string
	for _, c := range ev["content"].([]any) {
		if m := c.(map[string]any); m["type"] == "text" {
			s += m["text"].(string)
		}
	}
	return s
}

// TestScriptedSessionWritesEditsAndGreps is the end-to-end case: the
// binary runs a scripted session that writes, edits and greps files.
func TestScriptedSessionWritesEditsAndGreps(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "src/main.go"), "package main\n\nfunc main() { println(\"v1\") }\n")
	writeFile(t, filepath.Join(ws, "vendor/ignored.go"), "package vendor // TODO v1\n")
	writeFile(t, filepath.Join(ws, ".gitignore"), "vendor/\n")
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"text": "Writing notes.", "tool_calls": [{"id": "w", "name": "write_file", "input": {"path": "docs/NOTES.md", "content": "# Notes\nversion: v1\n"}}]},
	  {"text": "Bumping the version.", "tool_calls": [
	    {"id": "e1", "name": "edit_file", "input": {"path": "src/main.go", "old_string": "v1", "new_string": "v2"}},
	    {"id": "e2", "name": "edit_file", "input": {"path": "docs/NOTES.md", "old_string": "version: v1", "new_string": "version: v2"}}]},
	  {"text": "Checking for leftovers.", "tool_calls": [
	    {"id": "g1", "name": "grep", "input": {"pattern": "v1", "output_mode": "files_with_matches"}},
	    {"id": "g2", "name": "grep", "input": {"pattern": "v2", "output_mode": "content"}}]},
	  {"text": "Everything is on v2."}]}`)

	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "write_file,edit_file", "bump the version to v2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if evs[0]["type"] != "session_start" || evs[0]["session_id"] == "" {
		t.Fatalf("first event %v", evs[0])
	}
	results := map[string]event{}
	for _, ev := range evs {
		if ev["type"] == "tool_result" {
			results[ev["id"].(string)] = ev
		}
	}
	for _, id := range []string{"w", "e1", "e2", "g1", "g2"} {
		r, ok := results[id]
		if !ok || r["is_error"] != false {
			t.Fatalf("tool result %s: %v", id, r)
		}
	}
	// After the edits only vendor/ignored.go mentions v1, and .gitignore
	// excludes it.
	if got := contentText(results["g1"]); strings.Contains(got, "src/main.go") || strings.Contains(got, "docs/") || strings.Contains(got, "vendor/") {
		t.Errorf("grep v1 after the edits = %q, want no files (vendor/ is gitignored)", got)
	}
	g2 := contentText(results["g2"])
	for _, want := range []string{"docs/NOTES.md:2:version: v2", "src/main.go:3:func main() { println(\"v2\") }"} {
		if !strings.Contains(g2, want) {
			t.Errorf("grep v2 output %q lacks %q", g2, want)
		}
	}
	last := evs[len(evs)-1]
	if last["type"] != "result" || last["subtype"] != "success" || last["num_turns"] != 4.0 {
		t.Errorf("last event %v", last)
	}
	main, _ := os.ReadFile(filepath.Join(ws, "src/main.go"))
	notes, _ := os.ReadFile(filepath.Join(ws, "docs/NOTES.md"))
	if !strings.Contains(string(main), `"v2"`) || string(notes) != "# Notes\nversion: v2\n" {
		t.Errorf("files after the run: main.go %q, NOTES.md %q", main, notes)
	}
	// The transcript is outside the workspace and readable.
	id := evs[0]["session_id"].(string)
	if _, err := os.Stat(filepath.Join(state, "sessions", id+".jsonl")); err != nil {
		t.Errorf("transcript: %v", err)
	}
}

// TestBadToolInputKeepsTheSessionAlive: a model's malformed and
// schema-violating calls become error results, and the run still succeeds.
func TestBadToolInputKeepsTheSessionAlive(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [
	    {"id": "a", "name": "read_file", "raw_input": "{\"path\": "},
	    {"id": "b", "name": "read_file", "input": {"path": 42}},
	    {"id": "c", "name": "read_file", "input": {"path": "../../etc/passwd"}},
	    {"id": "d", "name": "teleport", "input": {}}]},
	  {"text": "I could not do it."}]}`)
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "try")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := map[string]string{"a": "not valid JSON", "b": "field path", "c": "outside the workspace", "d": "no tool named"}
	seen := 0
	for _, ev := range evs {
		if ev["type"] != "tool_result" {
			continue
		}
		id := ev["id"].(string)
		if ev["is_error"] != true || !strings.Contains(contentText(ev), want[id]) {
			t.Errorf("%s: %v", id, ev)
		}
		seen++
	}
	if seen != 4 {
		t.Errorf("saw %d tool results, want 4", seen)
	}
}

// TestBashTimeoutThroughTheCLI: a command that outlives its timeout is
// killed and reported, and the run goes on.
func TestBashTimeoutThroughTheCLI(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [{"id": "b", "name": "bash", "input": {"command": "echo started; sleep 30", "timeout_ms": 300}}]},
	  {"text": "It timed out."}]}`)
	start := time.Now()
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "bash", "run it")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the run took %v", d)
	}
	for _, ev := range evs {
		if ev["type"] == "tool_result" {
			text := contentText(ev)
			if ev["is_error"] != true || !strings.Contains(text, "started") || !strings.Contains(strings.ToLower(text), "timed out") && !strings.Contains(text, "killed") {
				t.Errorf("bash result: %v", ev)
			}
		}
	}
}

// TestDemoScript runs the README demo's script against a copy of its seed
// workspace, so that the quick start stays true.
func TestDemoScript(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the demo's bash step runs a Python test; this would have checked the README demo end to end")
	}
	ws, state := t.TempDir(), t.TempDir()
	seed, err := os.ReadFile("../examples/demo/greet.py")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "greet.py"), string(seed))
	evs, code, stderr := runAgent(t, ws, state, "--script", "../examples/demo/script.json", "--allowed-tools", "write_file,edit_file,bash", "make greet configurable")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, ev := range evs {
		if ev["type"] == "tool_result" && ev["is_error"] != false {
			t.Errorf("demo step failed: %v", ev)
		}
		if ev["type"] == "tool_result" && ev["id"] == "toolu_05" && !strings.Contains(contentText(ev), "2 checks passed") {
			t.Errorf("demo test run: %v", ev)
		}
	}
}
