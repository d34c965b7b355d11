package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	// By size: the oldest checkpoint goes first (s1's) and no more than
	// needed: dropping target 0 shortens s1's log below the limit.
	cur, err := dirSize(e.state + "/checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	rep, err = GC(e.state, GCOptions{MaxSize: cur - 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CheckpointsRemoved != 1 || len(rep.Trimmed) != 1 || !strings.HasPrefix(rep.Trimmed[0], "s1:") || rep.BytesAfter > cur-1 {
		t.Fatalf("gc by size: %+v, want checkpoint 0 of s1 removed, the store at most %d bytes", rep, cur-1)
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

// genStore records sessions × turns checkpoints, each overwriting a few
// files of varied size (small packed ones and, every few turns, a loose
// one), and returns the state directory, closed.
func genStore(t *testing.T, sessions, turns int) string {
	t.Helper()
	e := newEnv(t, nil)
	for s := 1; s <= sessions; s++ {
		if s > 1 {
			e.open(fmt.Sprintf("s%d", s), nil)
		}
		for i := 1; i <= turns; i++ {
			e.write(fmt.Sprintf("f%d.txt", i%7), fmt.Sprintf("session %d turn %d\n%s", s, i, strings.Repeat("line of text\n", 10+i*3)))
			if i%9 == 0 {
				e.write("big.bin", string(randomBytes(looseThreshold+i)))
			}
			e.seal("write")
		}
		e.rec.Close()
	}
	return e.state
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	x := uint64(n)*0x9e3779b97f4a7c15 | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// copyTree copies the regular files and directories below src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The dry run reports exactly what the real run then does, and --max-size
// removes only the oldest history needed to bring the store within the
// limit: one checkpoint fewer would leave it over.
func TestGCDryRunMatchesAndMaxSizeStopsAtTheLimit(t *testing.T) {
	for _, g := range []struct{ sessions, turns int }{{1, 40}, {3, 25}} {
		state := genStore(t, g.sessions, g.turns)
		before, err := dirSize(ckptDir(state))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []GCOptions{
			{MaxSize: before * 3 / 4}, {MaxSize: before / 2}, {MaxSize: before / 5}, {MaxSize: 1},
			{MaxCount: 10}, {MaxCount: 3}, {MaxCount: 10, MaxSize: before / 3},
		} {
			name := fmt.Sprintf("%dx%d count=%d size=%d/%d", g.sessions, g.turns, o.MaxCount, o.MaxSize, before)
			dir := t.TempDir()
			copyTree(t, state, dir)
			dry := o
			dry.DryRun = true
			want, err := GC(dir, dry)
			if err != nil {
				t.Fatalf("%s: dry run: %v", name, err)
			}
			got, err := GC(dir, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			real, _ := dirSize(ckptDir(dir))
			if got.BytesAfter != real || want.BytesAfter != got.BytesAfter || want.CheckpointsRemoved != got.CheckpointsRemoved ||
				want.ObjectsRemoved != got.ObjectsRemoved || fmt.Sprint(want.Trimmed) != fmt.Sprint(got.Trimmed) {
				t.Fatalf("%s: dry run %+v, real run %+v (store now %d bytes)", name, want, got, real)
			}
			objectCount(t, dir)
			if o.MaxSize > 0 && o.MaxCount == 0 && got.CheckpointsRemoved > 0 {
				if got.BytesAfter > o.MaxSize && got.CheckpointsRemoved < g.sessions*g.turns-g.sessions {
					t.Fatalf("%s: %d bytes left, over the limit with history left to drop", name, got.BytesAfter)
				}
				// One checkpoint fewer removed would not have been enough
				// (with one session, keeping one more is --max-count).
				if g.sessions == 1 {
					kept := g.turns + 1 - got.CheckpointsRemoved
					fewer := t.TempDir()
					copyTree(t, state, fewer)
					rep, err := GC(fewer, GCOptions{MaxCount: kept + 1, DryRun: true})
					if err != nil {
						t.Fatal(err)
					}
					if rep.BytesAfter <= o.MaxSize {
						t.Fatalf("%s: removed %d checkpoints (%d bytes left), but keeping one more fits too (%d bytes)", name, got.CheckpointsRemoved, got.BytesAfter, rep.BytesAfter)
					}
				}
			}
		}
	}
}
