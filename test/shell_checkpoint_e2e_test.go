package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// treeState describes a directory tree byte for byte: every path with its
// type, mode bits, and content or link target.
func treeState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "symlink -> " + target
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %o %q", fi.Mode().Perm(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(want, got map[string]string) string {
	var lines []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			lines = append(lines, fmt.Sprintf("missing %s (want %s)", p, w))
		} else if g != w {
			lines = append(lines, fmt.Sprintf("%s: got %s, want %s", p, g, w))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			lines = append(lines, fmt.Sprintf("extra %s (%s)", p, g))
		}
	}
	slices.Sort(lines)
	if len(lines) > 12 {
		lines = append(lines[:12], fmt.Sprintf("... and %d more", len(lines)-12))
	}
	return strings.Join(lines, "\n")
}

// TestBashChangesRewindToEveryCheckpoint: a scripted session changes the
// workspace through bash in every way the issue names — sed -i, mv, rm,
// chmod +x, ln -s, mkdir -p, a generator writing 100 files — next to the
// edit tools. The same steps run unconfined in a mirror give the tree at
// every checkpoint; rewinding the session to each checkpoint, newest to
// oldest, must give exactly that tree, and a redo must give the last one.
func TestBashChangesRewindToEveryCheckpoint(t *testing.T) {
	steps := []string{
		"sed -i s/alpha/beta/ a.txt",
		"mv b.txt b2.txt && rm c.txt && mv d1 d2",
		"chmod +x run.sh && ln -s a.txt link && mkdir -p x/y/z && echo deep > x/y/z/f",
		"mkdir gen && for i in $(seq 1 100); do echo \"file $i\" > gen/f$i.txt; done && printf 'v2\\n' > a.txt",
		"rm -r gen/f1*.txt && chmod 600 b2.txt && rm link && ln -s b2.txt link",
	}
	setup := func(dir string) {
		writeFile(t, filepath.Join(dir, "a.txt"), "alpha\nkeep\n")
		writeFile(t, filepath.Join(dir, "b.txt"), "B\n")
		writeFile(t, filepath.Join(dir, "c.txt"), "C\n")
		os.Chmod(filepath.Join(dir, "c.txt"), 0o600)
		writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho run\n")
		writeFile(t, filepath.Join(dir, "d1", "inner.txt"), "inner\n")
		writeFile(t, filepath.Join(dir, "untouched", "u.txt"), "u\n")
	}

	// The oracle: the tree after each step, made unconfined.
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

	ws, state := t.TempDir(), t.TempDir()
	setup(ws)
	evs := runBashSteps(t, ws, state, "reshape the tree", steps)
	numbers := stepCheckpoints(t, evs)
	if len(numbers) != len(steps)+1 {
		t.Fatalf("checkpoint numbers %v: want one per user turn and one per step (%d)", numbers, len(steps)+1)
	}
	if diff := diffTrees(states[len(steps)], treeState(t, ws)); diff != "" {
		t.Fatalf("the confined session did not produce the mirror's tree:\n%s", diff)
	}
	id := evs[0]["session_id"].(string)
	rewind := func(to int) {
		t.Helper()
		out, err := exec.Command(binary, "rewind", "--state-dir", state, id, "--to", fmt.Sprint(to), "--files-only").CombinedOutput()
		if err != nil {
			t.Fatalf("rewind --to %d: %v\n%s", to, err, out)
		}
	}
	// Checkpoint numbers[k] was sealed with the tree of states[k].
	for k := len(numbers) - 1; k >= 0; k-- {
		rewind(numbers[k])
		if diff := diffTrees(states[k], treeState(t, ws)); diff != "" {
			t.Fatalf("after rewind --to %d (state after %d steps):\n%s", numbers[k], k, diff)
		}
	}
	// Redo: every rewind is itself recorded, so the session can go back to
	// where it was before the rewinds.
	out, err := exec.Command(binary, "checkpoints", "--state-dir", state, id).CombinedOutput()
	if err != nil {
		t.Fatalf("checkpoints: %v\n%s", err, out)
	}
	rewind(numbers[len(numbers)-1])
	if diff := diffTrees(states[len(steps)], treeState(t, ws)); diff != "" {
		t.Fatalf("redo to the last checkpoint:\n%s\ncheckpoints:\n%s", diff, out)
	}
}

// TestKill9DuringBashCheckpointing: the agent is killed (SIGKILL) while a
// bash command rewrites many files under capture. The store must verify,
// and the session must rewind to its first checkpoint.
func TestKill9DuringBashCheckpointing(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	for i := range 50 {
		writeFile(t, filepath.Join(ws, "src", fmt.Sprintf("f%02d.txt", i)), fmt.Sprintf("original %d\n", i))
	}
	before := treeState(t, ws)
	// Output goes nowhere (a dead agent's pipe would end the loop with
	// SIGPIPE, hiding whether the sandbox ends it); "tick" is written
	// through a descriptor opened once, which works with or without the
	// capture supervisor — so only the death of the loop stops it.
	// fd 3 also holds an flock, inherited by every process of the loop:
	// the kernel frees it only when the last of them is dead (waitQuiet).
	loop := "exec >/dev/null 2>&1; exec 3>>.tick; flock -n 3 || exit 97; mkdir -p new; " +
		"while true; do for f in src/*.txt; do echo churn >> $f; done; echo x > new/$RANDOM; echo tick >&3; done"
	in, _ := json.Marshal(map[string]any{"command": loop, "timeout_ms": 60000})
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, fmt.Sprintf(`{"turns": [{"tool_calls": [{"id": "loop", "name": "bash", "input": %s}]}, {"text": "done"}]}`, in))
	cmd := exec.Command(binary, "run", "--workspace", ws, "--state-dir", state, "--output-format", "stream-json",
		"--script", script, "--allowed-tools", "bash", "churn")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill once the command has visibly been changing files for a while.
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(ws, "src", "f00.txt"))
		if strings.Count(string(b), "churn") >= 20 {
			break // it runs, so it holds its lock (flock -n 3 came first)
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the loop never ran (did it get its lock?): f00.txt = %q", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The confined tree dies with its cgroup or namespace only when the
	// agent cleans up; a SIGKILLed agent cannot. Wait until nothing writes.
	waitQuiet(t, ws)

	if out, err := exec.Command(binary, "verify", "--state-dir", state).CombinedOutput(); err != nil {
		t.Fatalf("verify after kill -9: %v\n%s", err, out)
	}
	var id string
	for _, line := range strings.Split(stdout.String(), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["session_id"] != nil {
			id = ev["session_id"].(string)
			break
		}
	}
	if id == "" {
		t.Fatalf("no session id in the killed run's output:\n%s", stdout.String())
	}
	out, err := exec.Command(binary, "rewind", "--state-dir", state, id, "--to", "0", "--files-only", "--force").CombinedOutput()
	if err != nil {
		t.Fatalf("rewind after kill -9: %v\n%s", err, out)
	}
	after := treeState(t, ws)
	delete(after, ".tick") // opened before any capture could see it
	if diff := diffTrees(before, after); diff != "" {
		t.Fatalf("after kill -9 and rewind --to 0:\n%s", diff)
	}
}

// waitQuiet waits until no process of the command's tree is left: the
// command must die with the agent that started it, even one killed with
// SIGKILL. The loop holds an flock on .tick through fd 3, which each of
// its processes inherits, and the kernel frees it only when the last
// descriptor is closed — so getting the lock proves the whole tree is
// gone (nothing can write any more), where "the file stopped growing for
// 50 ms" proved nothing on a loaded machine. A surviving tree keeps the
// lock and this fails.
func waitQuiet(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, ".tick"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a process of the confined command still holds %s/.tick 10 s after the agent was killed (%v): it outlived the agent", dir, err)
		}
		time.Sleep(10 * time.Millisecond) // a poll interval, not the assertion
	}
}

// TestUserEditMidSessionSurvivesRewind: while the agent's bash command
// runs, the user edits a file the agent changed earlier in the session.
// A rewind must refuse, name the file, and leave the user's edit alone.
func TestUserEditMidSessionSurvivesRewind(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "f.txt"), "original\n")
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [{"id": "one", "name": "bash", "input": {"command": "echo agent > f.txt"}}]},
	  {"tool_calls": [{"id": "two", "name": "bash", "input": {"command": "until [ -e go-on ]; do sleep 0.05; done; echo later > g.txt"}}]},
	  {"text": "done"}]}`)
	cmd := exec.Command(binary, "run", "--workspace", ws, "--state-dir", state, "--output-format", "stream-json",
		"--script", script, "--allowed-tools", "bash", "work")
	var stdout lockedBuffer
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Step one is done once f.txt says so and its checkpoint (number 1,
	// after the user turn's 0) is in the stream; step two waits for go-on.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) == "agent\n" && strings.Contains(stdout.String(), `"number":1`) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("step one never ran: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	writeFile(t, filepath.Join(ws, "f.txt"), "the user's own edit\n")
	// Time for the watcher to notice the edit, which nothing outside the
	// agent can observe. Not the assertion: the rewind's refusal below is,
	// and a missed notice can only make it fail, never pass vacuously.
	time.Sleep(200 * time.Millisecond)
	// go-on itself is made by the test (outside the agent): the watcher
	// records it as an external change too, which a rewind leaves alone.
	writeFile(t, filepath.Join(ws, "go-on"), "")
	if err := cmd.Wait(); err != nil {
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
	if err == nil || !strings.Contains(string(out), "f.txt") || !strings.Contains(string(out), "--force") {
		t.Fatalf("rewind over a mid-session user edit must refuse and name f.txt (err %v):\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "the user's own edit\n" {
		t.Fatalf("the refused rewind changed the user's file: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "g.txt")); err != nil {
		t.Fatalf("the refused rewind changed other files: %v", err)
	}
}

// lockedBuffer is a bytes.Buffer a running command writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runBashSteps runs a scripted session whose turns are one bash call per
// step (ids s1, s2, ...) and a final "done", and returns its events; a
// non-zero exit fails the test.
func runBashSteps(t *testing.T, ws, state, prompt string, steps []string) []event {
	t.Helper()
	var turns []string
	for i, s := range steps {
		in, _ := json.Marshal(map[string]any{"command": s})
		turns = append(turns, fmt.Sprintf(`{"tool_calls": [{"id": "s%d", "name": "bash", "input": %s}]}`, i+1, in))
	}
	turns = append(turns, `{"text": "done"}`)
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [`+strings.Join(turns, ",")+`]}`)
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--allowed-tools", "bash", prompt)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	return evs
}

// stepCheckpoints returns the numbers of the checkpoints in evs, failing
// the test if a step's result is an error.
func stepCheckpoints(t *testing.T, evs []event) []int {
	t.Helper()
	var numbers []int
	for _, ev := range evs {
		if ev["type"] == "tool_result" && ev["is_error"] == true {
			t.Fatalf("a step failed in the sandbox: %v", ev)
		}
		if ev["type"] == "checkpoint" {
			numbers = append(numbers, int(ev["checkpoint"].(map[string]any)["number"].(float64)))
		}
	}
	return numbers
}
