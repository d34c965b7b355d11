package checkpoint

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// heldWriters is a session's writers as the recorder sees them
// (Options.Writers): the files named hold a descriptor that writes them
// without a captured call, as a background task's does.
type heldWriters struct {
	held   []string // absolute
	pauses int
}

func (w *heldWriters) Pause() ([]string, bool, func()) {
	w.pauses++
	return w.held, true, func() {}
}

// TestHeldFileCarriedAcrossSeals: a writer opened f (its pre-image
// recorded in checkpoint 1) and keeps writing it through the same
// descriptor after checkpoints are sealed — no RecordSnapshot for those
// writes. The recorder is told (Options.Writers) that f is still held at
// each seal: it carries f into every next checkpoint, its post-image and
// the next pre-image from one read. So each write lands in a checkpoint
// that has its pre-image: rewinding to every checkpoint gives f as it was
// sealed there, undoing one checkpoint agrees with rewinding to the one
// before it, the watcher does not call the writer's bytes "changed
// outside the agent", and rewinding to 0 removes f. Without Writers (the
// old behaviour) the second write is an external change and the rewind
// reports a conflict, keeping the bytes.
func TestHeldFileCarriedAcrossSeals(t *testing.T) {
	for _, carry := range []bool{false, true} {
		t.Run(map[bool]string{false: "no writers (before)", true: "carried"}[carry], func(t *testing.T) {
			w := &heldWriters{}
			var opts *Options
			if carry {
				opts = &Options{Writers: w}
			}
			e := newEnv(t, opts)
			e.plain("other", "o0\n")
			// The writer opens f for appending: captured, recorded.
			e.record("f")
			w.held = []string{e.abs("f")}
			e.plain("f", "a\n")
			cp1 := e.seal("bash") // 1
			if cp1 == nil || len(cp1.Files) != 1 {
				t.Fatalf("checkpoint 1: %+v", cp1)
			}
			// Later calls; the descriptor writes between them.
			e.plain("f", "a\nb\n")
			e.rec.NoteExternal([]string{e.abs("f")}) // the watcher's event
			e.write("other", "o1\n")
			e.seal("write_file") // 2
			e.plain("f", "a\nb\nc\n")
			e.rec.NoteExternal([]string{e.abs("f")})
			e.seal("bash") // 3, or nothing without carry
			cps := e.rec.Checkpoints()
			external := false
			for _, c := range cps {
				for _, x := range c.External {
					external = external || x.Path == "f"
				}
			}
			_, err := e.rec.Rewind(0, RewindOptions{})
			if !carry {
				if !external || !errors.Is(err, ErrConflict) {
					t.Fatalf("without carry: external %v, rewind %v — the attack did not show", external, err)
				}
				return
			}
			if external || err != nil {
				t.Fatalf("the writer's own writes were taken for someone else's (external %v) or the rewind refused: %v\n%+v", external, err, cps)
			}
			if _, err := os.Lstat(e.abs("f")); !os.IsNotExist(err) {
				b, _ := os.ReadFile(e.abs("f"))
				t.Fatalf("rewind to 0 left f = %q", b)
			}
			if b, _ := os.ReadFile(e.abs("other")); string(b) != "o0\n" {
				t.Fatalf("other = %q", b)
			}
			// Each checkpoint is the state it was sealed with.
			want := map[int]string{1: "a\n", 2: "a\nb\n", 3: "a\nb\nc\n"}
			for n := 3; n >= 1; n-- {
				if _, err := e.rec.Rewind(n, RewindOptions{}); err != nil {
					t.Fatalf("rewind to %d: %v", n, err)
				}
				if b, _ := os.ReadFile(e.abs("f")); string(b) != want[n] {
					t.Fatalf("rewind to %d: f = %q, want %q", n, b, want[n])
				}
			}
			if w.pauses < 3 {
				t.Fatalf("the writers were paused %d times for 3 seals and the rewinds", w.pauses)
			}
		})
	}
}

// TestHeldFileUnchangedAddsNothing: a file held open but not written
// between seals is carried without making checkpoints of its own: a
// tool call that changed nothing still seals nothing.
func TestHeldFileUnchangedAddsNothing(t *testing.T) {
	w := &heldWriters{}
	e := newEnv(t, &Options{Writers: w})
	e.record("f")
	w.held = []string{e.abs("f")}
	e.plain("f", "x\n")
	if cp := e.seal("bash"); cp == nil {
		t.Fatal("the open of f made no checkpoint")
	}
	for range 3 {
		if cp := e.seal("read_file"); cp != nil {
			t.Fatalf("a seal with f held and unchanged made checkpoint %+v", cp)
		}
	}
	if n := len(e.rec.Checkpoints()); n != 2 {
		t.Fatalf("%d checkpoints, want 0 and 1", n)
	}
	// The carried pre records are the open checkpoint's: a reader of the
	// log (a session reopened after a crash) finds f's pre-image there.
	e.plain("f", "x\ny\n")
	e.rec.release() // killed: no seal
	cps, err := List(e.state, "s1")
	if err != nil {
		t.Fatal(err)
	}
	last := cps[len(cps)-1]
	if last.Sealed || len(last.Files) != 1 || last.Files[0].Path != "f" {
		t.Fatalf("the unsealed checkpoint after a kill: %+v", last)
	}
	rep, err := Rewind(e.state, "s1", 1, RewindOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(e.abs("f")); string(b) != "x\n" {
		t.Fatalf("rewind to 1 after the kill: f = %q (%+v)", b, rep)
	}
	if !strings.Contains(rep.Conflicts[0].Reason, "cannot be proven") {
		t.Fatalf("conflicts: %+v", rep.Conflicts)
	}
}

// TestHeldIgnoredAndLargeFilesAddNothing: a held file the ignore rules
// skip (a log the session created) and one over the size cap are carried
// without naming them at every seal: while neither changes, a tool call
// that changed nothing seals nothing. The big one, once it changes, is
// named as not covered, as any file over the cap is.
func TestHeldIgnoredAndLargeFilesAddNothing(t *testing.T) {
	w := &heldWriters{}
	ws := t.TempDir()
	if err := os.WriteFile(ws+"/.gitignore", []byte("*.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws+"/big", []byte("0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ws: ws, state: t.TempDir()}
	e.ws, _ = realDir(ws)
	e.open("s1", &Options{Writers: w, MaxFileSize: 10})
	e.record("server.log", "big")
	e.plain("server.log", "started\n")
	w.held = []string{e.abs("server.log"), e.abs("big")}
	e.seal("bash")
	for range 3 {
		if cp := e.seal("read_file"); cp != nil {
			t.Fatalf("a seal with held files unchanged made checkpoint %+v", cp)
		}
	}
	e.plain("big", "0123456789abcdefgh")
	cp := e.seal("bash")
	if cp == nil || len(cp.Ignored) != 1 || cp.Ignored[0].Path != "big" {
		t.Fatalf("the big file, changed: %+v", cp)
	}
}
