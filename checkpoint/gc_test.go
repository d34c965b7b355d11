package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// versions writes n versions of f, one checkpoint each, and returns the
// content of f at every checkpoint (index = checkpoint number).
func versions(e *env, f string, n int) []string {
	at := []string{""}
	for i := 1; i <= n; i++ {
		c := fmt.Sprintf("%s version %d\n%s", f, i, strings.Repeat("filler line\n", i))
		e.write(f, c)
		e.seal("write")
		at = append(at, c)
	}
	return at
}

func objectCount(t *testing.T, state string) int {
	t.Helper()
	rep, err := Verify(state)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %+v", rep.Problems)
	}
	return rep.Objects
}

func TestGCByCountKeepsWhatKeptCheckpointsNeed(t *testing.T) {
	e := newEnv(t, nil)
	at := versions(e, "f.txt", 5)
	if _, err := GC(e.state, GCOptions{MaxCount: 2}); !errors.Is(err, ErrStoreBusy) {
		t.Fatalf("gc while a session records: %v, want ErrStoreBusy", err)
	}
	e.rec.Close()
	if n := objectCount(t, e.state); n != 4 {
		t.Fatalf("%d objects before gc, want 4 (versions 1-4 as pre-images)", n)
	}
	rep, err := GC(e.state, GCOptions{MaxCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CheckpointsRemoved != 4 || rep.ObjectsRemoved != 3 || rep.BytesAfter >= rep.BytesBefore {
		t.Fatalf("gc report %+v: want 4 checkpoints (0-3) and 3 objects removed", rep)
	}
	if n := objectCount(t, e.state); n != 1 {
		t.Fatalf("%d objects after gc, want 1", n)
	}
	cps, _ := List(e.state, "s1")
	if len(cps) != 2 || cps[0].Number != 4 || !cps[0].Pruned || cps[1].Number != 5 {
		t.Fatalf("checkpoints after gc: %+v", cps)
	}
	if _, err := Rewind(e.state, "s1", 3, RewindOptions{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rewind to a removed checkpoint: %v", err)
	}
	if _, err := Rewind(e.state, "s1", 4, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(e.abs("f.txt")); string(got) != at[4] {
		t.Fatalf("f.txt after rewind to 4: %q", got)
	}
	// And the rewind, recorded after gc, can be undone.
	if _, err := Rewind(e.state, "s1", 5, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(e.abs("f.txt")); string(got) != at[5] {
		t.Fatalf("f.txt after redo: %q", got)
	}
	objectCount(t, e.state)
}

func TestGCByAgeAndSizeAcrossSessions(t *testing.T) {
	e := newEnv(t, nil)
	versions(e, "a.txt", 3)
	e.rec.Close()
	e.open("s2", nil)
	// The same first content in another session: one object, two users.
	e.plain("b.txt", "a.txt version 1\nfiller line\n")
	at2 := versions(e, "b.txt", 3)
	e.rec.Close()

	// By age: everything is old an hour from now, except the newest.
	rep, err := GC(e.state, GCOptions{MaxAge: time.Minute, Now: time.Now().Add(time.Hour), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CheckpointsRemoved != 6 {
		t.Fatalf("dry run by age: %+v, want 6 checkpoints", rep)
	}
	if cps, _ := List(e.state, "s1"); len(cps) != 4 {
		t.Fatal("a dry run changed the log")
	}
	// By size: the oldest checkpoints go first (s1's), until something is
	// freed: dropping targets 0 and 1 frees nothing (target 1's pre-image,
	// version 1, is shared with s2), dropping 2 frees version 2.
	cur, err := dirSize(e.state + "/checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	rep, err = GC(e.state, GCOptions{MaxSize: cur - 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CheckpointsRemoved != 3 || len(rep.Trimmed) != 1 || !strings.HasPrefix(rep.Trimmed[0], "s1:") || rep.ObjectsRemoved != 1 {
		t.Fatalf("gc by size: %+v, want checkpoints 0-2 of s1 and one object removed", rep)
	}
	objectCount(t, e.state)
	// s2 can still go back to its start, through the shared object.
	if _, err := Rewind(e.state, "s2", 0, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(e.abs("b.txt")); string(got) != "a.txt version 1\nfiller line\n" {
		t.Fatalf("b.txt = %q", got)
	}
	if at2[3] == "" {
		t.Fatal("no versions")
	}
	// Shrinking to nothing keeps the newest checkpoint of each session.
	if _, err = GC(e.state, GCOptions{MaxSize: 1}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s1", "s2"} {
		cps, err := List(e.state, s)
		if err != nil || len(cps) != 1 {
			t.Fatalf("%s after gc to 1 byte: %v, %v", s, cps, err)
		}
	}
	objectCount(t, e.state)
}
