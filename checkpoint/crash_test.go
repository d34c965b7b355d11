package checkpoint

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTornRecordIsIgnored(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("f", "v0\n")
	e.write("f", "v1\n")
	e.seal("w") // 1
	e.write("f", "v2\n")
	e.seal("w") // 2
	e.rec.Close()
	// A crash in the middle of appending the next record.
	lf, err := os.OpenFile(logPath(e.state, "s1"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	lf.WriteString(`{"t":"seal","cp":3,"time":"2026-01-0`)
	lf.Close()

	cps, err := List(e.state, "s1")
	if err != nil || len(cps) != 3 {
		t.Fatalf("list with a torn tail: %d checkpoints, %v", len(cps), err)
	}
	rep, err := Verify(e.state)
	if err != nil || !rep.OK() || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "torn") {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if _, err := Rewind(e.state, "s1", 1, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(e.abs("f")); string(b) != "v1\n" {
		t.Fatalf("f = %q", b)
	}
	// The torn line was cut before the rewind appended: the log is clean.
	if _, err := readHistory(logPath(e.state, "s1")); err != nil {
		t.Fatal(err)
	}
	if h, _ := readHistory(logPath(e.state, "s1")); h.torn {
		t.Fatal("the torn tail is still there")
	}
}

// TestUnsealedCheckpointIsRecovered: the process dies after recording and
// changing, before sealing. The changes can still be undone.
func TestUnsealedCheckpointIsRecovered(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("f", "v0\n")
	e.write("f", "v1\n")
	e.seal("w") // 1
	want := snapshotTree(t, e.ws)
	e.write("f", "v2\n")
	e.write("g/new", "new\n")
	e.rec.release() // the process is gone: no seal, locks released

	cps, _ := List(e.state, "s1")
	if last := cps[len(cps)-1]; last.Sealed || last.Number != 2 || len(last.Files) != 3 {
		t.Fatalf("unsealed checkpoint listed as %+v", last)
	}
	// A dry run shows the undo without writing the recovery.
	rep, err := Rewind(e.state, "s1", 1, RewindOptions{DryRun: true})
	if err != nil || len(rep.Changes) != 3 {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	if h, _ := readHistory(logPath(e.state, "s1")); len(h.tail) == 0 {
		t.Fatal("a dry run sealed the recovered checkpoint")
	}
	rep, err = Rewind(e.state, "s1", 1, RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertTree(t, e.ws, want, "rewind over a recovered checkpoint")
	cps, _ = List(e.state, "s1")
	if cps[2].Reason != ReasonRecovered || cps[3].Reason != ReasonRewind || rep.Checkpoint != 3 {
		t.Fatalf("checkpoints %+v", cps)
	}
}

// manifestNode is node, exported for JSON. A list, not a map keyed by
// path: names need not be UTF-8, and JSON map keys are strings.
type manifestNode struct {
	Path    exactName
	Kind    Kind
	Mode    os.FileMode
	Content []byte // not a string: JSON would mangle binary content
}

func saveManifest(t testing.TB, dir string, n int, tree map[string]node) {
	var m []manifestNode
	for p, v := range tree {
		m = append(m, manifestNode{exactName(p), v.kind, v.mode, []byte(v.content)})
	}
	b, _ := json.Marshal(m)
	tmp := filepath.Join(dir, fmt.Sprintf("%d.tmp", n))
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("%d.json", n))); err != nil {
		t.Fatal(err)
	}
}

func loadManifest(dir string, n int) (map[string]node, bool) {
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.json", n)))
	if err != nil {
		return nil, false
	}
	var m []manifestNode
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	out := map[string]node{}
	for _, v := range m {
		out[string(v.Path)] = node{v.Kind, v.Mode, string(v.Content)}
	}
	return out, true
}

// TestCrashHelper is the process TestKill9 kills: it records random
// operations, seals checkpoints and now and then rewinds, as fast as it
// can, writing a copy of the tree after every checkpoint, until it is
// killed. With CRASH_POINT set it stops at that point (objects written,
// record not yet: "pre" in RecordSnapshot, "seal" in Seal, "rewind" half-way
// through a rewind), says so, and waits to be killed there.
func TestCrashHelper(t *testing.T) {
	if os.Getenv("LITE_AGENT_CRASH_HELPER") != "1" {
		t.Skip("run by TestKill9 in a subprocess")
	}
	ws, state, manifests := os.Getenv("CRASH_WS"), os.Getenv("CRASH_STATE"), os.Getenv("CRASH_MANIFESTS")
	seed, _ := strconv.ParseUint(os.Getenv("CRASH_SEED"), 10, 64)
	point := os.Getenv("CRASH_POINT")
	rnd := rand.New(rand.NewPCG(seed, 7))
	out := bufio.NewWriter(os.Stdout)
	hits, stopAt := 0, 1+rnd.IntN(6)
	crashHook = func(where string) {
		if where != point {
			return
		}
		if hits++; hits == stopAt {
			fmt.Fprintf(out, "at %s\n", where)
			out.Flush()
			time.Sleep(time.Hour) // killed here
		}
	}
	var opts *Options
	var held *fdWriters
	if os.Getenv("CRASH_HELD") == "1" {
		held = &fdWriters{ws: ws}
		opts = &Options{Writers: held}
	}
	r, err := Open(state, "crash", ws, opts)
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(3)
	}
	m := &model{t: t, ws: ws, rec: r, rnd: rnd}
	for i := 0; ; i++ {
		if held != nil {
			// A writer opens "held" for appending (recorded, as capture
			// records an open) and writes it through that descriptor
			// from then on, without another record — across seals,
			// renames and rewinds, as a background task's descriptor
			// does. Once the model has removed its file (or renamed
			// another over it) it opens "held" again.
			if _, ok := held.name(); !ok {
				if held.f != nil {
					held.f.Close()
					held.f = nil
				}
				if err := r.RecordSnapshot("held"); err != nil {
					fmt.Println("record failed:", err)
					os.Exit(3)
				}
				// A directory or a symlink there: no writer this time.
				held.f, _ = os.OpenFile(filepath.Join(ws, "held"), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
			}
			if held.f != nil {
				fmt.Fprintf(held.f, "held write %d\n", i)
			}
		}
		var cp *Checkpoint
		if i%5 == 4 {
			cps := r.Checkpoints()
			to := cps[rnd.IntN(len(cps))]
			if !to.Sealed {
				continue
			}
			rep, err := forceUnproven(func(o RewindOptions) (*RewindReport, error) { return r.Rewind(to.Number, o) })
			if err != nil {
				fmt.Println("rewind failed:", err)
				os.Exit(3)
			}
			if rep.Checkpoint >= 0 {
				cp = &Checkpoint{Number: rep.Checkpoint}
			}
		} else {
			for range 1 + rnd.IntN(3) {
				m.step()
			}
			if cp, err = r.Seal(SealInfo{Reason: ReasonToolCall, ToolName: "op", UserTurn: -1}); err != nil {
				fmt.Println("seal failed:", err)
				os.Exit(3)
			}
		}
		if cp == nil {
			continue
		}
		saveManifest(t, manifests, cp.Number, snapshotTree(t, ws))
		fmt.Fprintf(out, "sealed %d\n", cp.Number)
		out.Flush()
	}
}

// forceUnproven rewinds, and when the only conflicts are the paths of a
// recovered checkpoint that the agent cannot be proven to have left (a
// kill between a write and its RecordWrite, or an operation that reports
// nothing) — nobody else writes in these tests — rewinds with Force.
func forceUnproven(rewind func(RewindOptions) (*RewindReport, error)) (*RewindReport, error) {
	rep, err := rewind(RewindOptions{})
	if !errors.Is(err, ErrConflict) {
		return rep, err
	}
	for _, c := range rep.Conflicts {
		if !strings.Contains(c.Reason, "cannot be proven") {
			return rep, fmt.Errorf("%w: %+v", err, c)
		}
	}
	return rewind(RewindOptions{Force: true})
}

// TestKill9 kills a recording process with SIGKILL (no cleanup, no seal)
// at random moments and at the worst ones — in the middle of recording a
// pre-image, of sealing, of a rewind — resuming the session each time.
// Then the store must verify and the session must rewind to every sealed
// checkpoint, byte for byte.
func TestKill9(t *testing.T) {
	kill9(t, false, []string{"", "pre", "seal", "rewind", "", "pre", "seal", "rewind", ""})
}

// TestKill9HeldFiles is TestKill9 with a file held open for writing
// across every seal (Options.Writers: the writer appends to it through
// its descriptor before each seal, with no record), and a kill also
// between a seal and the carry of that file into the next checkpoint
// ("carry"). Every sealed checkpoint must still rewind byte for byte,
// the held file included: its writes after a seal are in the next
// checkpoint, and a kill loses none of them (the writer dies with the
// process that was sealing).
func TestKill9HeldFiles(t *testing.T) {
	kill9(t, true, []string{"", "carry", "seal", "pre", "rewind", "carry", "", "carry", ""})
}

func kill9(t *testing.T, held bool, points []string) {
	if testing.Short() {
		t.Skip("kills subprocesses; skipped with -short")
	}
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	state, manifests := t.TempDir(), t.TempDir()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for round, point := range points {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LITE_AGENT_CRASH_HELPER=1", "CRASH_WS="+ws, "CRASH_STATE="+state,
			"CRASH_MANIFESTS="+manifests, fmt.Sprintf("CRASH_SEED=%d", rnd.Uint64()), "CRASH_POINT="+point)
		if held {
			cmd.Env = append(cmd.Env, "CRASH_HELD=1")
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		want := 2 + rnd.IntN(8)
		seen, stopped := 0, false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "sealed "):
				seen++
			case strings.HasPrefix(line, "at "):
				stopped = true
			default:
				t.Errorf("round %d: helper: %s", round, line)
			}
			if stopped || (point == "" && seen >= want) || seen > 500 {
				break
			}
		}
		if point == "" {
			// Somewhere in the middle of the next operations.
			time.Sleep(time.Duration(rnd.IntN(3000)) * time.Microsecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if point != "" && !stopped {
			t.Fatalf("round %d: the helper never reached %q", round, point)
		}
		t.Logf("round %d: killed %s after %d checkpoints", round, map[bool]string{true: "at " + point, false: "at a random moment"}[stopped], seen)
	}

	rep, err := Verify(state)
	if err != nil || !rep.OK() {
		t.Fatalf("verify after kill -9: %+v, %v", rep, err)
	}
	t.Logf("verify: %d objects, notes %q", rep.Objects, rep.Notes)
	cps, err := List(state, "crash")
	if err != nil {
		t.Fatal(err)
	}
	var sealed []int
	recovered := 0
	for _, c := range cps {
		if c.Sealed && c.Number > 0 {
			sealed = append(sealed, c.Number)
		}
		if c.Reason == ReasonRecovered {
			recovered++
		}
	}
	rnd.Shuffle(len(sealed), func(i, j int) { sealed[i], sealed[j] = sealed[j], sealed[i] })
	compared := 0
	for _, n := range sealed {
		if _, err := forceUnproven(func(o RewindOptions) (*RewindReport, error) { return Rewind(state, "crash", n, o) }); err != nil {
			t.Fatalf("rewind to %d after kill -9: %v", n, err)
		}
		if want, ok := loadManifest(manifests, n); ok {
			assertTree(t, ws, want, fmt.Sprintf("rewind to %d after kill -9", n))
			compared++
		}
	}
	if compared < len(sealed)/2 {
		t.Fatalf("only %d of %d checkpoints had a copy to compare", compared, len(sealed))
	}
	if rep, err := Verify(state); err != nil || !rep.OK() {
		t.Fatalf("verify after the rewinds: %+v, %v", rep, err)
	}
	t.Logf("%d rounds, %d sealed checkpoints (%d recovered after a kill) rewound, %d compared byte for byte", len(points), len(sealed), recovered, compared)
}

// fdWriters are a session's writers holding one descriptor (f, opened
// for writing): Pause names the file it writes, under whatever name it
// has now, as the sandbox's registry does.
type fdWriters struct {
	ws string
	f  *os.File
}

func (w *fdWriters) Pause() ([]string, bool, func()) {
	none := func() {}
	if p, ok := w.name(); ok {
		return []string{p}, true, none
	}
	return nil, true, none
}

// name is the workspace name of the file f writes, if it has one.
func (w *fdWriters) name() (string, bool) {
	if w.f == nil {
		return "", false
	}
	var st syscall.Stat_t
	if syscall.Fstat(int(w.f.Fd()), &st) != nil || st.Nlink == 0 {
		return "", false // removed, or replaced by a rename over it
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(w.f.Fd())))
	if err != nil || !strings.HasPrefix(p, w.ws+"/") {
		return "", false
	}
	return p, true
}
