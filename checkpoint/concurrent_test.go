package checkpoint

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// pausedTool is a tool call of the agent that writes like write_file
// (RecordSnapshot, the write, RecordWrite when report is set) and then
// stops inside the call until the test lets it end: written is closed once
// the agent's bytes are on disk, and the call returns when proceed is.
func pausedTool(t *testing.T, e *env, rel, content string, report bool) (written, proceed chan struct{}, done chan error) {
	written, proceed, done = make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		err := e.rec.RecordSnapshot(rel)
		if err == nil {
			err = os.WriteFile(e.abs(rel), []byte(content), 0o644)
		}
		if err == nil && report {
			err = e.rec.RecordWrite(rel, []byte(content))
		}
		close(written)
		<-proceed
		done <- err
	}()
	return written, proceed, done
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func conflictNames(rep *RewindReport, p string) bool {
	if rep == nil {
		return false
	}
	for _, c := range rep.Conflicts {
		if c.Path == p {
			return true
		}
	}
	return false
}

// TestUserEditDuringToolCall: the user edits a file while the agent's
// tool call that wrote it is still running. The seal must not take the
// user's bytes for the agent's: a rewind of the call reports a conflict
// naming the file and keeps the user's edit; --force brings the pre-image
// back, and that forced rewind can itself be undone (the user's version is
// kept). The unreported case shows the attack without the fix: the seal
// takes the file as it finds it, and the rewind silently discards the
// user's edit — what every writer did before RecordWrite, and what a
// confined command still does (see doc.go).
func TestUserEditDuringToolCall(t *testing.T) {
	for _, report := range []bool{true, false} {
		name := map[bool]string{true: "reported", false: "unreported (the old behaviour)"}[report]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.plain("f", "v0\n")
			e.write("f", "v1\n")
			e.seal("before") // f is tracked: the watcher sees edits to it
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := e.rec.Watch(ctx); err != nil {
				t.Fatal(err)
			}
			written, proceed, done := pausedTool(t, e, "f", "agent\n", report)
			<-written
			e.plain("f", "the user's edit\n") // while the call runs
			close(proceed)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			cp := e.seal("write_file")
			e.must(e.rec.Close())

			rep, err := Rewind(e.state, "s1", cp.Number-1, RewindOptions{})
			if !report {
				if err != nil || readString(t, e.abs("f")) != "v1\n" {
					t.Fatalf("unreported: %v, f = %q", err, readString(t, e.abs("f")))
				}
				t.Logf("without a reported post-image the rewind discarded the user's edit (%d conflicts)", len(rep.Conflicts))
				return
			}
			if !errors.Is(err, ErrConflict) || !conflictNames(rep, "f") {
				t.Fatalf("rewind over the user's edit: %v, %+v", err, rep)
			}
			if got := readString(t, e.abs("f")); got != "the user's edit\n" {
				t.Fatalf("the refused rewind changed f: %q", got)
			}
			if !strings.Contains(rep.Conflicts[0].Reason, "someone else during the tool call") {
				t.Errorf("conflict reason: %q", rep.Conflicts[0].Reason)
			}
			// The checkpoint says what the agent wrote, not what was found.
			cps, _ := List(e.state, "s1")
			if len(cps[cp.Number].External) != 1 || cps[cp.Number].External[0].Path != "f" {
				t.Errorf("checkpoint %d: external changes %+v", cp.Number, cps[cp.Number].External)
			}
			frep, err := Rewind(e.state, "s1", cp.Number-1, RewindOptions{Force: true})
			if err != nil || readString(t, e.abs("f")) != "v1\n" {
				t.Fatalf("forced rewind: %v, f = %q", err, readString(t, e.abs("f")))
			}
			if _, err := Rewind(e.state, "s1", frep.Checkpoint-1, RewindOptions{}); err != nil || readString(t, e.abs("f")) != "the user's edit\n" {
				t.Fatalf("undoing the forced rewind: %v, f = %q", err, readString(t, e.abs("f")))
			}
		})
	}
}

// TestSecondSessionEditsDuringToolCall: session B, in the same workspace,
// records and writes the file while session A's call that wrote it runs.
// Rewinding A reports a conflict and keeps B's edit; rewinding B gives
// back what A wrote.
func TestSecondSessionEditsDuringToolCall(t *testing.T) {
	a := newEnv(t, nil)
	a.plain("f", "v0\n")
	written, proceed, done := pausedTool(t, a, "f", "A\n", true)
	<-written
	b := &env{t: t, ws: a.ws, state: a.state}
	b.open("s2", nil)
	b.write("f", "B\n")
	b.seal("write_file")
	close(proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cp := a.seal("write_file")
	a.must(a.rec.Close())

	rep, err := Rewind(a.state, "s1", cp.Number-1, RewindOptions{})
	if !errors.Is(err, ErrConflict) || !conflictNames(rep, "f") || readString(t, a.abs("f")) != "B\n" {
		t.Fatalf("rewinding A over B's edit: %v, %+v, f = %q", err, rep, readString(t, a.abs("f")))
	}
	b.must(b.rec.Close())
	if _, err := Rewind(b.state, "s2", 0, RewindOptions{}); err != nil || readString(t, a.abs("f")) != "A\n" {
		t.Fatalf("rewinding B: %v, f = %q", err, readString(t, a.abs("f")))
	}
}

// TestRecoveredSealDoesNotClaimOthersEdits: the agent's process dies in
// the middle of a tool call (its checkpoint never sealed). What it
// reported writing is its post-image; a user's edit made after the death,
// and a change it never reported (a confined command's), cannot be proven
// to be the agent's: the recovered checkpoint records them as external,
// and a rewind reports conflicts instead of discarding them. With Force
// the pre-images come back.
func TestRecoveredSealDoesNotClaimOthersEdits(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("f", "f0\n")
	e.plain("g", "g0\n")
	e.plain("h", "h0\n")
	e.write("f", "agent f\n") // reported, then edited by the user
	e.record("g")             // like bash: recorded, never reported
	e.plain("g", "agent g\n")
	e.write("h", "agent h\n") // reported, left alone
	e.rec.release()           // the process is gone: no seal
	e.plain("f", "the user's f\n")

	rep, err := Rewind(e.state, "s1", 0, RewindOptions{})
	if !errors.Is(err, ErrConflict) || !conflictNames(rep, "f") || !conflictNames(rep, "g") || conflictNames(rep, "h") {
		t.Fatalf("rewind after the crash: %v, %+v", err, rep)
	}
	if readString(t, e.abs("f")) != "the user's f\n" || readString(t, e.abs("h")) != "agent h\n" {
		t.Fatal("the refused rewind changed files")
	}
	if _, err := Rewind(e.state, "s1", 0, RewindOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"f": "f0\n", "g": "g0\n", "h": "h0\n"} {
		if got := readString(t, e.abs(p)); got != want {
			t.Errorf("after the forced rewind %s = %q, want %q", p, got, want)
		}
	}
}

// TestKill9MidCallThenUserEdit: the same with a real kill -9. A helper
// process records and writes f like write_file and is killed inside the
// call; the user then edits f. The next open seals the call as recovered
// without taking the user's edit for the agent's.
func TestKill9MidCallThenUserEdit(t *testing.T) {
	e := newEnv(t, nil)
	e.plain("f", "v0\n")
	e.must(e.rec.Close())
	cmd := exec.Command(os.Args[0], "-test.run=^TestMidCallHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LITE_AGENT_MIDCALL_HELPER=1", "CRASH_WS="+e.ws, "CRASH_STATE="+e.state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "written" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", sc.Text())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	e.plain("f", "the user's edit\n")

	rep, err := Rewind(e.state, "s1", 0, RewindOptions{})
	if !errors.Is(err, ErrConflict) || !conflictNames(rep, "f") || readString(t, e.abs("f")) != "the user's edit\n" {
		t.Fatalf("rewind after kill -9 and a user edit: %v, %+v, f = %q", err, rep, readString(t, e.abs("f")))
	}
	cps, _ := List(e.state, "s1")
	if last := cps[len(cps)-1]; last.Reason != ReasonRecovered || len(last.External) != 1 {
		t.Fatalf("the recovered checkpoint: %+v", last)
	}
	if _, err := Rewind(e.state, "s1", 0, RewindOptions{Force: true}); err != nil || readString(t, e.abs("f")) != "v0\n" {
		t.Fatalf("forced rewind: %v, f = %q", err, readString(t, e.abs("f")))
	}
}

// TestMidCallHelper is the process TestKill9MidCallThenUserEdit kills.
func TestMidCallHelper(t *testing.T) {
	if os.Getenv("LITE_AGENT_MIDCALL_HELPER") != "1" {
		t.Skip("run by TestKill9MidCallThenUserEdit in a subprocess")
	}
	r, err := Open(os.Getenv("CRASH_STATE"), "s1", os.Getenv("CRASH_WS"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ws: r.Workspace(), rec: r}
	e.write("f", "agent\n")
	os.Stdout.WriteString("written\n")
	select {} // killed here, inside the call
}

// TestSecondSessionEditsDuringBashCall: session A's confined command
// changes f — recorded (BeforeChange), never reported, like bash — and
// while it runs session B, in the same workspace and state directory,
// writes f with its edit tools. No kernel help here (no fanotify: what an
// unprivileged run has): B's announcement in the workspace journal is
// what tells A's seal that f is not A's alone, so rewinding A reports a
// conflict naming session s2 and keeps B's edit; --force brings the
// pre-image back. With the journal off, A's seal takes B's bytes for the
// command's and the rewind silently discards B's edit.
func TestSecondSessionEditsDuringBashCall(t *testing.T) {
	for _, journal := range []bool{true, false} {
		name := map[bool]string{true: "journal", false: "journal off (the old behaviour)"}[journal]
		t.Run(name, func(t *testing.T) {
			testNoPeers = !journal
			defer func() { testNoPeers = false }()
			a := newEnv(t, nil)
			a.plain("f", "v0\n")
			a.record("f") // the command announces f ...
			a.plain("f", "A\n")
			b := &env{t: t, ws: a.ws, state: a.state}
			b.open("s2", nil)
			b.write("f", "B\n") // ... B writes it while the command runs
			b.seal("write_file")
			cp := a.seal("bash")
			a.must(a.rec.Close())
			b.must(b.rec.Close())

			rep, err := Rewind(a.state, "s1", cp.Number-1, RewindOptions{})
			if !journal {
				if err != nil || readString(t, a.abs("f")) != "v0\n" {
					t.Fatalf("journal off: %v, f = %q", err, readString(t, a.abs("f")))
				}
				t.Logf("without the journal, rewinding A discarded B's edit (%d conflicts)", len(rep.Conflicts))
				return
			}
			if !errors.Is(err, ErrConflict) || !conflictNames(rep, "f") || readString(t, a.abs("f")) != "B\n" {
				t.Fatalf("rewinding A over B's edit: %v, %+v, f = %q", err, rep, readString(t, a.abs("f")))
			}
			if !strings.Contains(rep.Conflicts[0].Reason, "session s2") {
				t.Errorf("conflict reason: %q", rep.Conflicts[0].Reason)
			}
			if _, err := Rewind(a.state, "s1", cp.Number-1, RewindOptions{Force: true}); err != nil || readString(t, a.abs("f")) != "v0\n" {
				t.Fatalf("forced rewind: %v, f = %q", err, readString(t, a.abs("f")))
			}
		})
	}
}

// TestRewindOfSecondSessionDuringBashCall: while session A's command is
// changing f (recorded, unreported, like bash), session B is rewound
// (forced) and writes f back to its own checkpoint 0; the command then
// writes f again. The rewind announced f in the workspace journal, so A's
// seal cannot prove that f is the command's alone: rewinding A conflicts
// on f and names session s2 (conservative — here the last bytes are the
// command's — but never a silent loss when they are not).
func TestRewindOfSecondSessionDuringBashCall(t *testing.T) {
	a := newEnv(t, nil)
	a.plain("f", "v0\n")
	b := &env{t: t, ws: a.ws, state: a.state}
	b.open("s2", nil)
	b.write("f", "B\n")
	b.seal("write_file")
	b.must(b.rec.Close())
	a.record("f")
	a.plain("f", "A\n")
	if _, err := Rewind(a.state, "s2", 0, RewindOptions{Force: true}); err != nil || readString(t, a.abs("f")) != "v0\n" {
		t.Fatalf("rewinding B: %v, f = %q", err, readString(t, a.abs("f")))
	}
	a.plain("f", "A again\n") // the command goes on writing
	cp := a.seal("bash")
	a.must(a.rec.Close())
	rep, err := Rewind(a.state, "s1", cp.Number-1, RewindOptions{})
	if !errors.Is(err, ErrConflict) || !conflictNames(rep, "f") || !strings.Contains(rep.Conflicts[0].Reason, "session s2") {
		t.Fatalf("rewinding A after B's rewind wrote f during the call: %v, %+v", err, rep)
	}
}
