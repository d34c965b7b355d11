package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A sealed checkpoint survives a power loss: before Seal returns, the pack,
// its index, the log, and every directory entry leading to them (made for
// this session) have been flushed.
func TestSealFlushesEverythingItNeeds(t *testing.T) {
	var mu sync.Mutex
	synced := map[string]bool{}
	old := fdatasync
	fdatasync = func(f *os.File) error {
		mu.Lock()
		synced[f.Name()] = true
		mu.Unlock()
		return old(f)
	}
	t.Cleanup(func() { fdatasync = old })

	e := newEnv(t, nil)
	e.write("a.txt", strings.Repeat("one\n", 100))
	e.seal("write")
	e.write("a.txt", "two")
	e.seal("write")
	mu.Lock()
	defer mu.Unlock()
	packs, _ := listPacks(filepath.Join(ckptDir(e.state), "objects", "pack"))
	if len(packs) != 1 {
		t.Fatalf("packs: %v", packs)
	}
	pack := filepath.Join(ckptDir(e.state), "objects", "pack", packs[0])
	for _, want := range []string{
		pack + ".pack", pack + ".idx", logPath(e.state, "s1"),
		filepath.Dir(pack), filepath.Join(ckptDir(e.state), "objects"), ckptDir(e.state),
		filepath.Join(ckptDir(e.state), "sessions"), e.state,
	} {
		if !synced[want] {
			var got []string
			for k := range synced {
				got = append(got, k)
			}
			t.Errorf("%s was not flushed before Seal returned (flushed: %s)", want, strings.Join(got, ", "))
		}
	}
}
