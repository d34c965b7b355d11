// Command faults runs the fault trials of issue 25 against the lite-agent
// binary and reports whether anything was lost:
//
//   - kill -9 during `lite-agent run` (a scripted session of write_file,
//     edit_file and bash calls) at a random moment, then `lite-agent
//     verify`, a check of every workspace file, and `rewind --to 0`, which
//     must give back the workspace exactly as it was before the session;
//
//   - kill -9 during `lite-agent rewind --to N`, then verify, the rewind
//     again (which must give exactly the state at checkpoint N), and a
//     rewind to 0;
//
//   - concurrent sessions, half on one shared workspace (disjoint files),
//     half on workspaces of their own: each must end in its own final
//     state, the store must verify, and each must rewind to its start
//     without touching the others' files;
//
//   - full disks (root only: small tmpfs mounts): the checkpoint store's
//     disk full, then the workspace's disk full; nothing the session did
//     not record may change, the store must verify once there is room, and
//     the session must rewind to its start.
//
//     go build -o bin/lite-agent ./cmd/lite-agent
//     go run ./bench/faults [-bin bin/lite-agent] [-run-kills 40] [-rewind-kills 25] [-concurrent 8] [-rounds 3] [-seed 1]
//
// It prints one line per trial that found a problem, and a summary; the
// exit code is 1 if anything was lost or the store did not verify.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	bin     = flag.String("bin", "bin/lite-agent", "the lite-agent binary")
	runs    = flag.Int("run-kills", 40, "kill -9 trials during lite-agent run")
	rewinds = flag.Int("rewind-kills", 25, "kill -9 trials during lite-agent rewind")
	conc    = flag.Int("concurrent", 8, "concurrent sessions per round (half on one shared workspace)")
	rounds  = flag.Int("rounds", 3, "rounds of concurrent sessions")
	turns   = flag.Int("turns", 24, "tool calls per scripted session")
	seedArg = flag.Uint64("seed", 1, "random seed (the trials are reproducible up to timing)")
	keep    = flag.Bool("keep", false, "keep the temporary directories of failed trials")
)

// state is a workspace's files: path → content.
type state map[string]string

func (s state) clone() state {
	c := state{}
	for k, v := range s {
		c[k] = v
	}
	return c
}

// call is one scripted tool call and what it does to the workspace.
type call struct {
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
	apply func(state)    // nil: changes nothing
}

// session is a generated script and the workspace after each call.
type session struct {
	calls  []call
	states []state // states[0]: before; states[i+1]: after calls[i]
	prefix string  // the session's files' prefix (shared workspaces)
}

func seedState(prefix string, rng *rand.Rand) state {
	s := state{}
	for k := range 6 {
		s[fmt.Sprintf("%sf%d.txt", prefix, k)] = strings.Repeat(fmt.Sprintf("seed %s%d line\n", prefix, k), 1+rng.IntN(4000))
	}
	s[prefix+"dir/keep.txt"] = "kept\n"
	return s
}

// generate makes a session of n calls on the files of prefix.
func generate(prefix string, n int, rng *rand.Rand, start state) session {
	s := session{prefix: prefix, states: []state{start.clone()}}
	cur := start.clone()
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		file := fmt.Sprintf("%sf%d.txt", prefix, rng.IntN(8)) // f6, f7 do not exist at first
		var c call
		switch rng.IntN(5) {
		case 0, 1:
			// Up to 600 KB: a write that takes a while, to be killed in.
			content := strings.Repeat(fmt.Sprintf("%s turn %d written by write_file\n", prefix, i), 1+rng.IntN(16000))
			c = call{ID: id, Name: "write_file", Input: map[string]any{"path": file, "content": content},
				apply: func(st state) { st[file] = content }}
		case 2:
			old, _, _ := strings.Cut(cur[file], "\n")
			newLine := fmt.Sprintf("edited at turn %d", i)
			c = call{ID: id, Name: "edit_file", Input: map[string]any{"path": file, "old_string": old, "new_string": newLine, "replace_all": true},
				apply: func(st state) {
					if v, ok := st[file]; ok && old != "" && strings.Contains(v, old) {
						st[file] = strings.ReplaceAll(v, old, newLine)
					}
				}}
		case 3:
			line := fmt.Sprintf("%s turn %d written by bash", prefix, i)
			c = call{ID: id, Name: "bash", Input: map[string]any{"command": fmt.Sprintf("printf '%%s\\n' '%s' > %s && sync", line, file)},
				apply: func(st state) { st[file] = line + "\n" }}
		default:
			other := fmt.Sprintf("%sf%d.txt", prefix, rng.IntN(8))
			if rng.IntN(2) == 0 {
				c = call{ID: id, Name: "bash", Input: map[string]any{"command": "rm -f " + file},
					apply: func(st state) { delete(st, file) }}
			} else {
				c = call{ID: id, Name: "bash", Input: map[string]any{"command": fmt.Sprintf("if [ -e %s ]; then cp %s %s; fi", other, other, file)},
					apply: func(st state) {
						if v, ok := st[other]; ok {
							st[file] = v
						}
					}}
			}
		}
		c.apply(cur)
		s.calls = append(s.calls, c)
		s.states = append(s.states, cur.clone())
	}
	return s
}

func (s session) script() []byte {
	var turns []map[string]any
	for _, c := range s.calls {
		turns = append(turns, map[string]any{"tool_calls": []call{c}})
	}
	turns = append(turns, map[string]any{"text": "Done."})
	b, _ := json.Marshal(map[string]any{"turns": turns})
	return b
}

// allowed is every content a path may have after any prefix of the
// session: its states' contents.
func (s session) allowed() map[string]map[string]bool {
	a := map[string]map[string]bool{}
	for _, st := range s.states {
		for p, v := range st {
			if a[p] == nil {
				a[p] = map[string]bool{}
			}
			a[p][v] = true
		}
	}
	return a
}

// write puts st into ws (only st's files; others are left).
func write(ws string, st state) error {
	for p, v := range st {
		full := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// read reads the regular files of ws whose names start with prefix.
func read(ws, prefix string) (state, error) {
	st := state{}
	err := filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		if d.IsDir() || !strings.HasPrefix(rel, prefix) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st[rel] = string(b)
		return nil
	})
	return st, err
}

// diff names the paths where got and want differ.
func diff(got, want state) []string {
	var out []string
	for p, v := range want {
		if g, ok := got[p]; !ok {
			out = append(out, p+" missing")
		} else if g != v {
			out = append(out, fmt.Sprintf("%s differs (%d bytes, want %d)", p, len(g), len(v)))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, p+" extra")
		}
	}
	sort.Strings(out)
	return out
}

type env struct {
	dir, ws, state string
}

func newEnv(dir string) (env, error) {
	e := env{dir: dir, ws: filepath.Join(dir, "ws"), state: filepath.Join(dir, "state")}
	return e, os.MkdirAll(e.ws, 0o755)
}

// cli runs lite-agent with args and returns its output and exit code.
func cli(ctx context.Context, args ...string) (string, int) {
	cmd := exec.CommandContext(ctx, *bin, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return err.Error(), -1
	}
	return string(out), code
}

// startRun starts `lite-agent run` of s in e; the session id is read from
// its first event.
func startRun(e env, s session, name string) (*exec.Cmd, *bytes.Buffer, error) {
	script := filepath.Join(e.dir, name+".json")
	if err := os.WriteFile(script, s.script(), 0o644); err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(*bin, "run", "--workspace", e.ws, "--state-dir", e.state, "--script", script,
		"--allowed-tools", "write_file,edit_file,bash", "--output-format", "stream-json", "work")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out, cmd.Start()
}

func sessionID(out string) string {
	line, _, _ := strings.Cut(out, "\n")
	var ev struct {
		Type      string `json:"type"`
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != "session_start" {
		return ""
	}
	return ev.SessionID
}

// sessionOf finds the session of e's workspace when the run died before
// its first event reached us.
func sessionOf(e env) string {
	out, _ := cli(context.Background(), "sessions", "--state-dir", e.state, "--json")
	var id string
	for _, line := range strings.Split(out, "\n") {
		var r struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.SessionID != "" {
			id = r.SessionID
		}
	}
	return id
}

// checkpointTurns maps a session's checkpoints to the number of calls
// done at each: 0 for checkpoint 0.
func checkpointTurns(e env, id string) (map[int]int, error) {
	out, code := cli(context.Background(), "checkpoints", id, "--state-dir", e.state, "--json")
	if code != 0 {
		return nil, fmt.Errorf("checkpoints: exit %d: %s", code, out)
	}
	m := map[int]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var cp struct {
			Number     int    `json:"number"`
			Reason     string `json:"reason"`
			ToolCallID string `json:"tool_call_id"`
		}
		if err := json.Unmarshal([]byte(line), &cp); err != nil {
			return nil, fmt.Errorf("checkpoints: %q: %v", line, err)
		}
		switch {
		case cp.Reason == "tool_call":
			var t int
			fmt.Sscanf(cp.ToolCallID, "t%d", &t)
			m[cp.Number] = t + 1
		case cp.Number == 0:
			m[0] = 0
		}
	}
	return m, nil
}

func verify(e env) error {
	out, code := cli(context.Background(), "verify", "--state-dir", e.state)
	if code != 0 {
		return fmt.Errorf("verify: exit %d: %s", code, strings.TrimSpace(out))
	}
	return nil
}

func rewind(e env, id string, to int) error {
	out, code := cli(context.Background(), "rewind", id, "--to", fmt.Sprint(to), "--files-only", "--force", "--state-dir", e.state)
	if code != 0 {
		return fmt.Errorf("rewind --to %d: exit %d: %s", to, code, strings.TrimSpace(out))
	}
	return nil
}

// tally counts the outcomes of one kind of trial.
type tally struct {
	name                   string
	trials, verified, held int
	torn                   int // in-flight writes cut by the kill (then undone by rewind)
	// where says where the faults struck: for kills, how many calls
	// had been sealed (or whether the rewind was cut short); for full
	// disks, how many calls were refused.
	where    []int
	note     string
	problems []string
}

func (t *tally) spread() string {
	if len(t.where) == 0 {
		return t.note
	}
	w := append([]int(nil), t.where...)
	sort.Ints(w)
	return fmt.Sprintf("%s min %d, median %d, max %d", t.note, w[0], w[len(w)/2], w[len(w)-1])
}

func (t *tally) fail(trial int, format string, args ...any) {
	t.problems = append(t.problems, fmt.Sprintf("%s trial %d: %s", t.name, trial, fmt.Sprintf(format, args...)))
}

func main() {
	flag.Parse()
	if _, err := os.Stat(*bin); err != nil {
		fmt.Fprintln(os.Stderr, "faults: build the binary first: go build -o bin/lite-agent ./cmd/lite-agent:", err)
		os.Exit(2)
	}
	root, err := os.MkdirTemp("", "lite-agent-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(*seedArg, 25))
	start := time.Now()
	results := []*tally{
		runKills(root, rng),
		rewindKills(root, rng),
		concurrent(root, rng),
	}
	results = append(results, diskFull(root, rng)...)
	lost := false
	fmt.Printf("\n%-30s %6s %8s %12s %10s  %s\n", "trial", "trials", "verified", "nothing lost", "torn write", "where the fault struck")
	for _, t := range results {
		fmt.Printf("%-30s %6d %8d %12d %10d  %s\n", t.name, t.trials, t.verified, t.held, t.torn, t.spread())
		for _, p := range t.problems {
			fmt.Println("  PROBLEM:", p)
			lost = true
		}
	}
	fmt.Printf("(%s; seed %d)\n", time.Since(start).Round(time.Second), *seedArg)
	if !lost || !*keep {
		os.RemoveAll(root)
	} else {
		fmt.Println("kept:", root)
	}
	if lost {
		os.Exit(1)
	}
}

// runKills: kill -9 during lite-agent run.
func runKills(root string, rng *rand.Rand) *tally {
	t := &tally{name: "kill -9 during run", note: fmt.Sprintf("calls sealed of %d:", *turns)}
	// One unkilled run measures how long a session takes.
	span := calibrate(root, rng)
	for i := range *runs {
		t.trials++
		e, err := newEnv(filepath.Join(root, fmt.Sprintf("run-%d", i)))
		if err != nil {
			t.fail(i, "%v", err)
			continue
		}
		seed := seedState("", rng)
		s := generate("", *turns, rng, seed)
		if err := write(e.ws, seed); err != nil {
			t.fail(i, "%v", err)
			continue
		}
		cmd, out, err := startRun(e, s, "s")
		if err != nil {
			t.fail(i, "start: %v", err)
			continue
		}
		time.Sleep(time.Duration(rng.Int64N(int64(span))))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if err := verify(e); err != nil {
			t.fail(i, "%v", err)
		} else {
			t.verified++
		}
		id := sessionID(out.String())
		if id == "" {
			id = sessionOf(e)
		}
		got, err := read(e.ws, "")
		if err != nil {
			t.fail(i, "%v", err)
			continue
		}
		// Every file holds a content the session gave it, or a write cut
		// short by the kill (a prefix of one).
		allowed := s.allowed()
		for p, v := range got {
			if allowed[p][v] {
				continue
			}
			torn := false
			for a := range allowed[p] {
				if strings.HasPrefix(a, v) {
					torn = true
				}
			}
			if torn || (allowed[p] == nil && strings.Contains(s.scriptString(), v)) {
				t.torn++
				continue
			}
			t.fail(i, "%s holds %d bytes the session never wrote", p, len(v))
		}
		if id == "" {
			// Killed before the session started: nothing may have changed.
			if d := diff(got, seed); len(d) > 0 {
				t.fail(i, "no session, yet the workspace changed: %v", d)
				continue
			}
			t.held++
			continue
		}
		if cps, err := checkpointTurns(e, id); err == nil {
			sealed := 0
			for _, n := range cps {
				sealed = max(sealed, n)
			}
			t.where = append(t.where, sealed)
		}
		if err := rewind(e, id, 0); err != nil {
			t.fail(i, "%v", err)
			continue
		}
		after, _ := read(e.ws, "")
		if d := diff(after, seed); len(d) > 0 {
			t.fail(i, "rewind --to 0 did not give back the workspace: %v", d)
			continue
		}
		t.held++
		os.RemoveAll(e.dir)
	}
	return t
}

func (s session) scriptString() string { return string(s.script()) }

// calibrate runs one session to its end and returns how long it took.
func calibrate(root string, rng *rand.Rand) time.Duration {
	e, _ := newEnv(filepath.Join(root, "calibrate"))
	seed := seedState("", rng)
	_ = write(e.ws, seed)
	s := generate("", *turns, rng, seed)
	begin := time.Now()
	cmd, _, err := startRun(e, s, "s")
	if err == nil {
		_ = cmd.Wait()
	}
	os.RemoveAll(e.dir)
	return max(time.Since(begin), 100*time.Millisecond)
}

// rewindKills: kill -9 during lite-agent rewind.
func rewindKills(root string, rng *rand.Rand) *tally {
	t := &tally{name: "kill -9 during rewind"}
	cut := 0
	defer func() { t.note = fmt.Sprintf("%d of %d rewinds cut short by the kill", cut, t.trials) }()
	for i := range *rewinds {
		t.trials++
		e, err := newEnv(filepath.Join(root, fmt.Sprintf("rewind-%d", i)))
		if err != nil {
			t.fail(i, "%v", err)
			continue
		}
		seed := seedState("", rng)
		s := generate("", *turns, rng, seed)
		_ = write(e.ws, seed)
		cmd, out, err := startRun(e, s, "s")
		if err != nil || cmd.Wait() != nil {
			t.fail(i, "the session did not run: %v %s", err, out)
			continue
		}
		id := sessionID(out.String())
		cps, err := checkpointTurns(e, id)
		if err != nil {
			t.fail(i, "%v", err)
			continue
		}
		var numbers []int
		for n := range cps {
			numbers = append(numbers, n)
		}
		sort.Ints(numbers)
		to := numbers[rng.IntN(len(numbers))]
		// A rewind to an early checkpoint changes most; time one to know
		// where to kill, on a twin of this trial.
		rw := exec.Command(*bin, "rewind", id, "--to", fmt.Sprint(to), "--files-only", "--state-dir", e.state)
		begin := time.Now()
		if err := rw.Start(); err != nil {
			t.fail(i, "%v", err)
			continue
		}
		// Rewinds are quick (tens of milliseconds): kill within 60 ms.
		time.Sleep(time.Duration(rng.Int64N(int64(60 * time.Millisecond))))
		_ = rw.Process.Signal(syscall.SIGKILL)
		if err := rw.Wait(); err != nil {
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == -1 {
				cut++ // killed, not finished
			}
		}
		_ = begin
		if err := verify(e); err != nil {
			t.fail(i, "%v", err)
		} else {
			t.verified++
		}
		if err := rewind(e, id, to); err != nil {
			t.fail(i, "after the kill: %v", err)
			continue
		}
		got, _ := read(e.ws, "")
		if d := diff(got, s.states[cps[to]]); len(d) > 0 {
			t.fail(i, "rewind --to %d (after %d calls) gave another state: %v", to, cps[to], d)
			continue
		}
		if err := rewind(e, id, 0); err != nil {
			t.fail(i, "%v", err)
			continue
		}
		got, _ = read(e.ws, "")
		if d := diff(got, seed); len(d) > 0 {
			t.fail(i, "rewind --to 0 after it did not give back the start: %v", d)
			continue
		}
		t.held++
		os.RemoveAll(e.dir)
	}
	return t
}

// concurrent: sessions at the same time, half sharing a workspace.
func concurrent(root string, rng *rand.Rand) *tally {
	t := &tally{name: fmt.Sprintf("%d concurrent sessions", *conc)}
	for r := range *rounds {
		dir := filepath.Join(root, fmt.Sprintf("concurrent-%d", r))
		store := filepath.Join(dir, "state") // one store for all
		shared := env{dir: dir, ws: filepath.Join(dir, "shared"), state: store}
		_ = os.MkdirAll(shared.ws, 0o755)
		type one struct {
			e    env
			s    session
			seed state
			id   string
			err  error
		}
		all := make([]*one, *conc)
		for j := range all {
			o := &one{}
			prefix := fmt.Sprintf("s%d_", j)
			if j < *conc/2 {
				o.e = shared
			} else {
				o.e = env{dir: dir, ws: filepath.Join(dir, fmt.Sprintf("own-%d", j)), state: store}
				_ = os.MkdirAll(o.e.ws, 0o755)
			}
			o.seed = seedState(prefix, rng)
			_ = write(o.e.ws, o.seed)
			o.s = generate(prefix, *turns, rng, o.seed)
			all[j] = o
		}
		var wg sync.WaitGroup
		for j, o := range all {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd, out, err := startRun(o.e, o.s, fmt.Sprintf("s%d", j))
				if err == nil {
					err = cmd.Wait()
				}
				o.id, o.err = sessionID(out.String()), err
				if err != nil {
					o.err = fmt.Errorf("%v: %s", err, lastLines(out.String(), 3))
				}
			}()
		}
		wg.Wait()
		for j, o := range all {
			t.trials++
			if o.err != nil {
				t.fail(r*100+j, "session failed: %v", o.err)
				continue
			}
			got, _ := read(o.e.ws, o.s.prefix)
			if d := diff(got, o.s.states[len(o.s.states)-1]); len(d) > 0 {
				t.fail(r*100+j, "final state differs: %v", d)
			}
		}
		if err := verify(shared); err != nil {
			t.fail(r, "%v", err)
		} else {
			t.verified += len(all)
		}
		// Each goes back to its start; the others' files stay as they are.
		for j, o := range all {
			if o.err != nil {
				continue
			}
			if err := rewind(o.e, o.id, 0); err != nil {
				t.fail(r*100+j, "%v", err)
				continue
			}
			ok := true
			for k, other := range all {
				want := other.s.states[len(other.s.states)-1]
				if k <= j {
					want = other.seed
				}
				got, _ := read(other.e.ws, other.s.prefix)
				if d := diff(got, want); len(d) > 0 {
					t.fail(r*100+j, "after rewinding session %d, session %d's files: %v", j, k, d)
					ok = false
				}
			}
			if ok {
				t.held++
			}
		}
		os.RemoveAll(dir)
	}
	return t
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// diskFull: the store's disk full, then the workspace's (tmpfs mounts:
// root only).
func diskFull(root string, rng *rand.Rand) []*tally {
	storeFull := &tally{name: "checkpoint store's disk full", note: "ENOSPC reports per session:"}
	wsFull := &tally{name: "workspace's disk full", note: "ENOSPC reports per session:"}
	if os.Geteuid() != 0 {
		storeFull.problems = append(storeFull.problems, "skipped: mounting small tmpfs disks needs root")
		return []*tally{storeFull, wsFull}
	}
	for i := range 4 {
		for _, full := range []*tally{storeFull, wsFull} {
			full.trials++
			e, _ := newEnv(filepath.Join(root, fmt.Sprintf("full-%d-%p", i, full)))
			_ = os.MkdirAll(e.state, 0o755)
			small := e.state
			if full == wsFull {
				small = e.ws
			}
			size := "size=2m"
			if full == wsFull {
				size = "size=1m"
			}
			if err := syscall.Mount("tmpfs", small, "tmpfs", 0, size); err != nil {
				full.fail(i, "mount: %v", err)
				continue
			}
			seed := seedState("", rng)
			_ = write(e.ws, seed)
			// Big, incompressible writes: the small disk fills up.
			s := generate("", *turns, rng, seed)
			for k := range s.calls {
				if s.calls[k].Name == "write_file" {
					noise := make([]byte, 300<<10)
					for n := range noise {
						noise[n] = 'a' + byte(rng.IntN(26))
					}
					s.calls[k].Input["content"] = string(noise)
				}
			}
			// The script's states no longer hold; what matters here is
			// that the start comes back and the store verifies.
			cmd, out, err := startRun(e, s, "s")
			if err == nil {
				_ = cmd.Wait()
			}
			id := sessionID(out.String())
			full.where = append(full.where, strings.Count(out.String(), "no space left on device")+strings.Count(out.String(), "No space left on device")+strings.Count(out.String(), "checkpoint store is full"))
			// Room again: the tmpfs grows, as when a person frees space.
			if err := syscall.Mount("tmpfs", small, "tmpfs", syscall.MS_REMOUNT, "size=256m"); err != nil {
				full.fail(i, "remount: %v", err)
			}
			if err := verify(e); err != nil {
				full.fail(i, "%v", err)
			} else {
				full.verified++
			}
			if id == "" {
				full.fail(i, "the session did not start: %s", lastLines(out.String(), 3))
			} else if err := rewind(e, id, 0); err != nil {
				full.fail(i, "%v", err)
			} else if got, _ := read(e.ws, ""); len(diff(got, seed)) > 0 {
				full.fail(i, "rewind --to 0 did not give back the start: %v", diff(got, seed))
			} else {
				full.held++
			}
			_ = syscall.Unmount(small, syscall.MNT_DETACH)
			os.RemoveAll(e.dir)
		}
	}
	return []*tally{storeFull, wsFull}
}
