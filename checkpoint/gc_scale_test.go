package checkpoint

import (
	"encoding/hex"
	"fmt"
	"testing"
)

// The scale: a store of about 2,000 checkpoints (4 sessions of
// 500 edits) and 2 MiB, shrunk with --max-size 500K. gc removes the
// oldest history only until the store fits — keeping one checkpoint more
// would not fit — the newest checkpoints stay, every kept one still
// rewinds, and the dry run reports exactly what the real run does. The
// issue saw 1,984 of 1,985 checkpoints removed and 300 B left, and a dry
// run that predicted 1.4 MiB.
func TestGCMaxSizeAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("records 2,000 checkpoints; -short skips it (it would have checked gc --max-size 500K on a 2,000-checkpoint store)")
	}
	const sessions, turns = 4, 500
	e := newEnv(t, nil)
	for s := 1; s <= sessions; s++ {
		if s > 1 {
			e.open(fmt.Sprintf("s%d", s), nil)
		}
		for i := 1; i <= turns; i++ {
			// About 1 KiB stored per edit: hex of distinct bytes
			// compresses to about half.
			body := hex.EncodeToString(randomBytes(1000 + 7*s + i))
			e.write(fmt.Sprintf("s%d/f%d.txt", s, i%5), fmt.Sprintf("session %d edit %d\n%s\n", s, i, body))
			e.seal("write")
		}
		e.rec.Close()
	}
	before, err := dirSize(ckptDir(e.state))
	if err != nil {
		t.Fatal(err)
	}
	const limit = 500 << 10
	if before < 3*limit {
		t.Fatalf("the generated store is %d bytes: too small for the test", before)
	}
	for _, o := range []GCOptions{{MaxSize: limit}, {MaxCount: 100}, {MaxCount: 100, MaxSize: limit / 2}} {
		name := fmt.Sprintf("count=%d size=%d", o.MaxCount, o.MaxSize)
		dir := t.TempDir()
		copyTree(t, e.state, dir)
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
		t.Logf("%s: %d → %d bytes, %d of %d checkpoints removed", name, before, got.BytesAfter, got.CheckpointsRemoved, sessions*(turns+1))
		kept := map[string]int{}
		total := 0
		for s := 1; s <= sessions; s++ {
			id := fmt.Sprintf("s%d", s)
			cps, err := List(dir, id)
			if err != nil {
				t.Fatal(err)
			}
			var targets []int
			for _, cp := range cps {
				targets = append(targets, cp.Number) // a pruned one is the earliest target left
			}
			// Only the oldest go: what is left is the newest, unbroken.
			if len(targets) == 0 || targets[len(targets)-1] != turns || targets[len(targets)-1]-targets[0]+1 != len(targets) {
				t.Fatalf("%s: %s keeps checkpoints %v, want the newest, unbroken", name, id, targets)
			}
			if o.MaxCount > 0 && len(targets) > o.MaxCount {
				t.Fatalf("%s: %s keeps %d checkpoints", name, id, len(targets))
			}
			kept[id] = targets[0]
			total += len(targets)
		}
		if total+got.CheckpointsRemoved != sessions*(turns+1) {
			t.Errorf("%s: %d kept + %d removed != %d", name, total, got.CheckpointsRemoved, sessions*(turns+1))
		}
		if o.MaxSize > 0 {
			if got.BytesAfter > o.MaxSize {
				t.Fatalf("%s: %d bytes left, over the limit", name, got.BytesAfter)
			}
			// Most of the limit is used: 2,000 checkpoints of about 1 KiB
			// leave no room for gc to stop far below it.
			if got.BytesAfter < o.MaxSize*3/4 {
				t.Errorf("%s: %d bytes left, far below the limit of %d: more history removed than asked", name, got.BytesAfter, o.MaxSize)
			}
		}
		objectCount(t, dir)
		// The oldest kept checkpoint of the first session still rewinds.
		if _, err := Rewind(dir, "s1", kept["s1"], RewindOptions{DryRun: true}); err != nil {
			t.Errorf("%s: rewind s1 to %d: %v", name, kept["s1"], err)
		}
	}
}
