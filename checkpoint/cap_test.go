package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The store cap, at session start: other sessions' oldest history goes
// until the store fits, the person is told, and the opening session's own
// history (its checkpoint 0 above all) is never touched. Past the cap
// during a session, the first seal says so once.
func TestStoreCapTrimsAtStartAndWarnsAtSeal(t *testing.T) {
	e := newEnv(t, &Options{MaxStoreSize: -1})
	versions(e, "a.txt", 30)
	e.rec.Close()
	e.open("s2", &Options{MaxStoreSize: -1})
	versions(e, "b.txt", 30)
	e.rec.Close()
	before, err := dirSize(ckptDir(e.state))
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var msgs []string
	opts := &Options{MaxStoreSize: before / 2, OnStoreCap: func(m string) {
		mu.Lock()
		msgs = append(msgs, m)
		mu.Unlock()
	}}
	// s1 resumes: only s2 may be trimmed, s1 keeps all of its history.
	e.open("s1", opts)
	e.rec.Close()
	if cps, _ := List(e.state, "s1"); len(cps) != 31 || cps[0].Number != 0 {
		t.Fatalf("the opening session lost history: %d checkpoints, first %+v", len(cps), cps[0])
	}
	cps, _ := List(e.state, "s2")
	if len(cps) == 31 || len(cps) == 0 {
		t.Fatalf("s2 was not trimmed to make room: %d checkpoints", len(cps))
	}
	after, _ := dirSize(ckptDir(e.state))
	if len(msgs) != 1 || !strings.Contains(msgs[0], "reached its cap") || !strings.Contains(msgs[0], ckptDir(e.state)) {
		t.Fatalf("messages at start: %q", msgs)
	}
	if after > before/2 && len(cps) > 1 {
		t.Fatalf("store %d bytes after the cap of %d, with s2 history left", after, before/2)
	}
	objectCount(t, e.state)

	// A new session that grows the store to its cap: its records are then
	// refused (ErrStoreCap, which is ENOSPC to a captured command), so the
	// store stays bounded within one session; it is told once, and keeps
	// every checkpoint it made.
	msgs = nil
	opts.MaxStoreSize = after + 2000
	e.open("s3", opts)
	if cps, _ := List(e.state, "s2"); len(cps) == 0 {
		t.Fatal("s2 vanished")
	}
	sealed := 0
	var refused error
	for i := 1; i <= 200 && refused == nil; i++ {
		c := fmt.Sprintf("c.txt version %d\n%s", i, strings.Repeat("filler line\n", i))
		if refused = e.rec.RecordSnapshot("c.txt"); refused != nil {
			break
		}
		e.must(os.WriteFile(e.abs("c.txt"), []byte(c), 0o644))
		e.seal("write")
		sealed++
	}
	if !errors.Is(refused, ErrStoreCap) || !errors.Is(refused, syscall.ENOSPC) || !strings.Contains(refused.Error(), "--checkpoint-max-size") {
		t.Fatalf("200 versions past a cap of %d bytes: the last record's error is %v, want ErrStoreCap naming the flag", opts.MaxStoreSize, refused)
	}
	e.rec.Close()
	if size, _ := dirSize(ckptDir(e.state)); size > opts.MaxStoreSize+64<<10 {
		t.Errorf("the store grew to %d bytes in one session, cap %d", size, opts.MaxStoreSize)
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "over its cap") {
		t.Fatalf("messages past the cap in a session: %q", msgs)
	}
	if cps, _ := List(e.state, "s3"); len(cps) != sealed+1 || cps[0].Number != 0 {
		t.Fatalf("s3 lost history: %d checkpoints for %d seals", len(cps), sealed)
	}
	// The next start trims back, s3's checkpoint 0 kept as its newest is.
	msgs = nil
	e.open("s4", opts)
	e.rec.Close()
	if len(msgs) != 1 {
		t.Fatalf("messages at the next start: %q", msgs)
	}
	objectCount(t, e.state)
}
