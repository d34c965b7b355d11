package notify

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkHeldPerEdit is what the session's registry of held files adds
// to a one-file edit by a command the agent waits for: the capture's room
// check and registration of the file it opens for writing (an O_PATH
// descriptor), then, at the seal with no command left running, the
// registry emptied (sandbox.Writers.Pause: Files(false)).
//
//	go test ./sandbox/internal/notify -run '^$' -bench HeldPerEdit -benchtime 20000x -count 5
func BenchmarkHeldPerEdit(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "edited"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		b.Fatal(err)
	}
	h := NewHeldFiles()
	defer h.Close()
	names := []string{f.Name()}
	for b.Loop() {
		if e := h.room(); e != 0 {
			b.Fatal(e)
		}
		if e := h.add(int(f.Fd()), st, filepath.Dir(f.Name()), names); e != 0 {
			b.Fatal(e)
		}
		if held := h.Files(false); len(held) != 0 {
			b.Fatal(held)
		}
	}
}

// TestHeldFilesDropsWhatNoOneWrites: a file registered while open for
// writing is named while a descriptor (or a shared writable mapping) of it
// is left, under its current name after a rename, and dropped once the
// last one is gone; a registry asked with no command running drops all.
func TestHeldFilesDropsWhatNoOneWrites(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	p := filepath.Join(ws, "f")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("12345678")
	var st unix.Stat_t
	unix.Fstat(int(f.Fd()), &st)
	h := NewHeldFiles()
	defer h.Close()
	if e := h.add(int(f.Fd()), st, ws, []string{p}); e != 0 {
		t.Fatal(e)
	}
	if got := h.Files(true); len(got) != 1 || got[0] != p {
		t.Fatalf("held open: %q", got)
	}
	q := filepath.Join(ws, "g")
	if err := os.Rename(p, q); err != nil {
		t.Fatal(err)
	}
	if got := h.Files(true); len(got) != 1 || got[0] != q {
		t.Fatalf("after a rename: %q, want [%s]", got, q)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := h.Files(true); len(got) != 1 {
		t.Fatalf("mapped, descriptor closed: %q", got)
	}
	unix.Munmap(m)
	if got := h.Files(true); len(got) != 0 || h.Len() != 0 {
		t.Fatalf("nothing writes it any more: %q (%d kept)", got, h.Len())
	}
	g, _ := os.OpenFile(q, os.O_WRONLY, 0)
	defer g.Close()
	unix.Fstat(int(g.Fd()), &st)
	h.add(int(g.Fd()), st, ws, []string{q})
	if got := h.Files(false); len(got) != 0 || h.Len() != 0 {
		t.Fatalf("no command running: %q (%d kept)", got, h.Len())
	}
}
