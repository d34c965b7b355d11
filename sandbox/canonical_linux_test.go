package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCanonicalSkipsLinksIntoProcSelf: a granted path that leads to a
// per-process /proc entry through a link is skipped like the entry
// itself — a rule on it would grant the supervisor's own /proc/<pid>.
func TestCanonicalSkipsLinksIntoProcSelf(t *testing.T) {
	dir := t.TempDir()
	for name, target := range map[string]string{"self": "/proc/self", "status": "/proc/self/status", "thread": "/proc/thread-self"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if got := canonical([]string{filepath.Join(dir, name)}); len(got) != 0 {
			t.Errorf("canonical(link to %s) = %v, want nothing granted", target, got)
		}
	}
	if got := canonical([]string{dir}); len(got) != 1 {
		t.Errorf("canonical(%s) = %v: an ordinary directory must stay", dir, got)
	}
}
