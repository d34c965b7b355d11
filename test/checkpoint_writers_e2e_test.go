package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBashInvalidNamesRewindByteExact: bash creates, changes and deletes
// files whose names differ only in bytes that are not UTF-8 (a\xff and
// a\xfe), a directory and a symlink target that are not UTF-8, and a valid
// non-ASCII name. The same steps run unconfined in a mirror give the tree
// at every checkpoint; rewinding the session to each checkpoint, newest
// first, must give exactly that tree, names and contents byte for byte.
// Before names were stored exactly, a\xff and a\xfe were one name in the
// log (a\uFFFD): one pre-image was lost and the rewind created a name that
// never existed (checkpoint.TestPlainJSONMergesInvalidNames).
func TestBashInvalidNamesRewindByteExact(t *testing.T) {
	steps := []string{
		`printf 'ff1\n' > $'a\xff'; printf 'fe1\n' > $'a\xfe'; printf 'u1\n' > 'é.txt'`,
		`printf 'ff2\n' > $'a\xff' && rm $'a\xfe' && mkdir $'d\x80' && echo deep > $'d\x80/x\xc3'`,
		`mv $'a\xff' $'a\xfe' && ln -s $'t\xfb' $'l\xfa' && sed -i s/u1/u3/ 'é.txt'`,
		`rm -r $'d\x80' && printf 'ff4\n' > $'a\xff' && rm $'l\xfa'`,
	}
	setup := func(dir string) { writeFile(t, filepath.Join(dir, "é.txt"), "u0\n") }
	mirror := t.TempDir()
	setup(mirror)
	states := []map[string]string{treeState(t, mirror)}
	for _, s := range steps {
		cmd := exec.Command("bash", "-c", s)
		cmd.Dir = mirror
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("mirror step %q: %v\n%s", s, err, out)
		}
		states = append(states, treeState(t, mirror))
	}
	if _, ok := states[1]["a\xff"]; !ok || len(states[1]) != 3 {
		t.Fatalf("the mirror's first step: %q", states[1])
	}

	ws, state := t.TempDir(), t.TempDir()
	setup(ws)
	evs := runBashSteps(t, ws, state, "odd names", steps)
	numbers := stepCheckpoints(t, evs)
	if len(numbers) != len(steps)+1 {
		t.Fatalf("checkpoint numbers %v: want one per user turn and one per step", numbers)
	}
	if diff := diffTrees(states[len(steps)], treeState(t, ws)); diff != "" {
		t.Fatalf("the confined session did not produce the mirror's tree:\n%s", diff)
	}
	id := evs[0]["session_id"].(string)

	// The text listing shows both names apart, each invalid byte as a
	// visible escape (internal/termsafe: a terminal never gets the raw
	// byte): a\xff is in checkpoints 1 to 4, a\xfe in 1 to 3. The JSON
	// listing keeps the exact bytes.
	out, err := exec.Command(binary, "checkpoints", "--state-dir", state, id).CombinedOutput()
	if err != nil || bytes.Count(out, []byte(`a\xff`)) != 4 || bytes.Count(out, []byte(`a\xfe`)) != 3 || bytes.Contains(out, []byte("a\xff")) {
		t.Fatalf("checkpoints: %v\n%q", err, out)
	}
	js, err := exec.Command(binary, "checkpoints", "--state-dir", state, id, "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("checkpoints --json: %v\n%s", err, js)
	}
	exact := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(js), []byte("\n")) {
		var cp struct {
			Files []struct {
				Path json.RawMessage `json:"path"`
			} `json:"files"`
		}
		if err := json.Unmarshal(line, &cp); err != nil {
			t.Fatalf("checkpoints --json line %q: %v", line, err)
		}
		for _, f := range cp.Files {
			exact[string(f.Path)]++
		}
	}
	// Invalid names are {"b64": …}: a\xff is Yf8=, a\xfe is Yf4=.
	if exact[`{"b64":"Yf8="}`] != 4 || exact[`{"b64":"Yf4="}`] != 3 {
		t.Fatalf("checkpoints --json does not keep the names exact: %v\n%s", exact, js)
	}
	for k := len(numbers) - 1; k >= 0; k-- {
		if k == 1 {
			// The dry run names the file, its invalid byte escaped.
			out, err := exec.Command(binary, "rewind", "--state-dir", state, id, "--to", fmt.Sprint(numbers[k]), "--files-only", "--dry-run").CombinedOutput()
			if err != nil || !bytes.Contains(out, []byte(`+++ b/a\xfe`+"\n@@ -0,0 +1 @@\n+fe1\n")) {
				t.Fatalf("rewind --dry-run --to %d: %v\n%q", numbers[k], err, out)
			}
		}
		out, err := exec.Command(binary, "rewind", "--state-dir", state, id, "--to", fmt.Sprint(numbers[k]), "--files-only").CombinedOutput()
		if err != nil {
			t.Fatalf("rewind --to %d: %v\n%s", numbers[k], err, out)
		}
		if diff := diffTrees(states[k], treeState(t, ws)); diff != "" {
			t.Fatalf("after rewind --to %d (state after %d steps):\n%s", numbers[k], k, diff)
		}
	}
}

// TestUserEditDuringWriteFileCall: the user edits a file while the
// agent's write_file call that wrote it is still running — the call is
// held inside by a PostToolUse hook that reads a FIFO the test controls
// (the hook runs after the tool and before the call's checkpoint is
// sealed). `rewind` must refuse with a conflict naming the file and leave
// the user's edit; `rewind --force` brings the pre-image back. Before the
// edit tools reported what they wrote, the seal took the user's bytes for
// the agent's and the rewind discarded them without a word
// (checkpoint.TestUserEditDuringToolCall shows that case).
func TestUserEditDuringWriteFileCall(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "f.txt"), "v0\n")
	fifo := filepath.Join(ws, "hold.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, ".lite-agent/policy.toml"), fmt.Sprintf(`
[[hooks]]
event   = "PostToolUse"
matcher = "write_file"
command = "read line < %s"
`, fifo))
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [{"id": "w", "name": "write_file", "input": {"path": "f.txt", "content": "agent\n"}}]},
	  {"text": "done"}]}`)
	cmd := exec.Command(binary, "run", "--workspace", ws, "--state-dir", state, "--output-format", "stream-json",
		"--script", script, "--allowed-tools", "write_file", "write f")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Opening the FIFO for writing returns once the hook has opened it
	// for reading: write_file has written, the call has not ended.
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
		}
		opened <- f
	}()
	var hold *os.File
	select {
	case hold = <-opened:
	case err := <-exited:
		// Unblock the opener before failing.
		if r, e := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); e == nil {
			r.Close()
		}
		t.Fatalf("the run ended before its hook held the call: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(got) != "agent\n" {
		t.Fatalf("inside the call f.txt = %q", got)
	}
	writeFile(t, filepath.Join(ws, "f.txt"), "the user's edit\n")
	hold.WriteString("go\n")
	hold.Close()
	if err := <-exited; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	var id string
	for _, line := range strings.Split(stdout.String(), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["session_id"] != nil {
			id = ev["session_id"].(string)
			break
		}
	}
	out, err := exec.Command(binary, "rewind", "--state-dir", state, id, "--to", "0", "--files-only").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "conflict: f.txt") || !strings.Contains(string(out), "during the tool call") {
		t.Fatalf("rewind over an edit made during the call must refuse and name f.txt (err %v):\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "the user's edit\n" {
		t.Fatalf("the refused rewind changed the user's file: %q", b)
	}
	out, err = exec.Command(binary, "rewind", "--state-dir", state, id, "--to", "0", "--files-only", "--force").CombinedOutput()
	if err != nil {
		t.Fatalf("rewind --force: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "v0\n" {
		t.Fatalf("after rewind --force f.txt = %q", b)
	}
}

// TestUserEditDuringBashCall: a bash tool call writes f.txt, then appends to it in a loop
// until the test, holding a FIFO, tells it to stop; meanwhile the user —
// the test, unconfined — overwrites f.txt. As root the sandbox's fanotify
// listener sees that the write was not the command's, so `rewind` refuses
// with a conflict naming f.txt and leaves the file as it is (the user's
// edit with the loop's later lines), and `rewind --force` brings the
// pre-image back. With the listener off (LITE_AGENT_FOREIGN_WRITERS=off:
// the code before it, and what a run without CAP_SYS_ADMIN still gets)
// the same rewind succeeds and silently discards the user's edit.
func TestUserEditDuringBashCall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (fanotify reports writers to CAP_SYS_ADMIN only): would have checked that rewinding a bash call over the user's concurrent edit of the same file reports a conflict and keeps the edit")
	}
	for _, off := range []bool{false, true} {
		name := map[bool]string{false: "detected", true: "listener off (the old behaviour)"}[off]
		t.Run(name, func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(ws, "f.txt"), "v0\n")
			for _, n := range []string{"ready.fifo", "stop.fifo"} {
				if err := syscall.Mkfifo(filepath.Join(ws, n), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			in, _ := json.Marshal(map[string]any{"command": `echo agent > f.txt; echo ready > ready.fifo; exec 3<stop.fifo; until read -t 0.01 line <&3; do echo agent >> f.txt; done`})
			script := filepath.Join(t.TempDir(), "s.json")
			writeFile(t, script, `{"turns": [{"tool_calls": [{"id": "b", "name": "bash", "input": `+string(in)+`}]}, {"text": "done"}]}`)
			cmd := exec.Command(binary, "run", "--workspace", ws, "--state-dir", state, "--output-format", "stream-json",
				"--script", script, "--allowed-tools", "bash", "loop")
			if off {
				cmd.Env = append(os.Environ(), "LITE_AGENT_FOREIGN_WRITERS=off")
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			// "ready" comes from inside the call; opening stop.fifo for
			// writing returns once the loop holds it for reading.
			readyc := make(chan string, 1)
			go func() {
				b, _ := os.ReadFile(filepath.Join(ws, "ready.fifo"))
				readyc <- string(b)
			}()
			select {
			case r := <-readyc:
				if r != "ready\n" {
					t.Fatalf("ready.fifo said %q", r)
				}
			case err := <-exited:
				if w, e := os.OpenFile(filepath.Join(ws, "ready.fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0); e == nil {
					w.Close()
				}
				t.Fatalf("the run ended before the call was ready: %v\n%s\n%s", err, stdout.String(), stderr.String())
			}
			stop, err := os.OpenFile(filepath.Join(ws, "stop.fifo"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(ws, "f.txt"), "the user's edit\n") // while the loop writes
			stop.WriteString("stop\n")
			stop.Close()
			if err := <-exited; err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			var id string
			for _, line := range strings.Split(stdout.String(), "\n") {
				var ev map[string]any
				if json.Unmarshal([]byte(line), &ev) == nil && ev["session_id"] != nil {
					id = ev["session_id"].(string)
					break
				}
			}
			// The loop may have run its last lines after the user's write:
			// what is there starts with the user's edit.
			after, _ := os.ReadFile(filepath.Join(ws, "f.txt"))
			if !strings.HasPrefix(string(after), "the user's edit\n") {
				t.Fatalf("after the call f.txt = %q", after)
			}
			out, err := exec.Command(binary, "rewind", "--state-dir", state, id, "--to", "0", "--files-only").CombinedOutput()
			if off {
				if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); err != nil || string(b) != "v0\n" {
					t.Fatalf("listener off: rewind %v, f.txt = %q\n%s", err, b, out)
				}
				t.Logf("with the listener off the rewind discarded the user's edit without a word:\n%s", out)
				return
			}
			if err == nil || !strings.Contains(string(out), "conflict: f.txt") || !strings.Contains(string(out), "not the command's") {
				t.Fatalf("rewind over an edit made during the bash call must refuse and name f.txt (err %v):\n%s", err, out)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != string(after) {
				t.Fatalf("the refused rewind changed the user's file: %q", b)
			}
			out, err = exec.Command(binary, "rewind", "--state-dir", state, id, "--to", "0", "--files-only", "--force").CombinedOutput()
			if err != nil {
				t.Fatalf("rewind --force: %v\n%s", err, out)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "v0\n" {
				t.Fatalf("after rewind --force f.txt = %q", b)
			}
		})
	}
}

// TestSecondSessionEditsDuringBashCall: session A's bash call writes
// f.txt and waits inside the call on a FIFO the test holds; session B, a
// second `lite-agent run` in the same workspace and state directory,
// writes f.txt with write_file meanwhile. A runs with the fanotify
// listener off (LITE_AGENT_FOREIGN_WRITERS=off: what a run without root
// has), so what tells A's seal is B's announcement in the workspace
// journal: `rewind` of A refuses with a conflict naming f.txt and session
// B, and keeps B's edit. Without the journal the rewind would discard it
// (checkpoint.TestSecondSessionEditsDuringBashCall shows that case).
func TestSecondSessionEditsDuringBashCall(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "f.txt"), "v0\n")
	for _, n := range []string{"ready.fifo", "go.fifo"} {
		if err := syscall.Mkfifo(filepath.Join(ws, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	in, _ := json.Marshal(map[string]any{"command": `echo A > f.txt; echo ready > ready.fifo; read line < go.fifo`})
	script := filepath.Join(t.TempDir(), "a.json")
	writeFile(t, script, `{"turns": [{"tool_calls": [{"id": "b", "name": "bash", "input": `+string(in)+`}]}, {"text": "done"}]}`)
	cmd := exec.Command(binary, "run", "--workspace", ws, "--state-dir", state, "--output-format", "stream-json",
		"--script", script, "--allowed-tools", "bash", "session A")
	cmd.Env = append(os.Environ(), "LITE_AGENT_FOREIGN_WRITERS=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	readyc := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(filepath.Join(ws, "ready.fifo"))
		readyc <- string(b)
	}()
	select {
	case r := <-readyc:
		if r != "ready\n" {
			t.Fatalf("ready.fifo said %q", r)
		}
	case err := <-exited:
		if w, e := os.OpenFile(filepath.Join(ws, "ready.fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0); e == nil {
			w.Close()
		}
		t.Fatalf("session A ended before its call was ready: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	bScript := filepath.Join(t.TempDir(), "b.json")
	writeFile(t, bScript, `{"turns": [
	  {"tool_calls": [{"id": "w", "name": "write_file", "input": {"path": "f.txt", "content": "B\n"}}]},
	  {"text": "done"}]}`)
	bevs, code, berr := runAgent(t, ws, state, "--script", bScript, "--allowed-tools", "write_file", "session B")
	if code != 0 {
		t.Fatalf("session B: exit %d: %s", code, berr)
	}
	bID := bevs[0]["session_id"].(string)
	g, err := os.OpenFile(filepath.Join(ws, "go.fifo"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.WriteString("go\n")
	g.Close()
	if err := <-exited; err != nil {
		t.Fatalf("session A: %v\n%s", err, stderr.String())
	}
	var aID string
	for _, line := range strings.Split(stdout.String(), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["session_id"] != nil {
			aID = ev["session_id"].(string)
			break
		}
	}
	out, err := exec.Command(binary, "rewind", "--state-dir", state, aID, "--to", "0", "--files-only").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "conflict: f.txt") || !strings.Contains(string(out), "session "+bID) {
		t.Fatalf("rewinding A over B's edit must refuse and name f.txt and session %s (err %v):\n%s", bID, err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "B\n" {
		t.Fatalf("the refused rewind changed f.txt: %q", b)
	}
}
