package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
)

// heldWriteBin compiles testdata/heldwrite.c once per test, or skips.
func heldWriteBin(t *testing.T) string {
	return testProgram(t, "heldwrite", "would check that a descriptor or mapping kept across a checkpoint is accounted for", "-O1", "-pthread")
}

// testProgram compiles the C program of that name in testdata, with
// the C compiler's flags, into the test's temporary directory and returns
// its path, or skips the test (saying what it would have checked) when
// there is no C compiler.
func testProgram(tb testing.TB, name, wouldCheck string, flags ...string) string {
	tb.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		tb.Skip("no C compiler: " + wouldCheck)
	}
	bin := filepath.Join(tb.TempDir(), name)
	args := append(append([]string(nil), flags...), "-o", bin, filepath.Join("testdata", name+".c"))
	if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		tb.Fatalf("cc: %v\n%s", err, out)
	}
	return bin
}

// heldProc is a running heldwrite, spoken to line by line.
type heldProc struct {
	t    *testing.T
	p    *Process
	in   *io.PipeWriter
	out  *bufio.Reader
	outW *io.PipeWriter
}

func startHeld(t *testing.T, sb *Sandbox, w *Writers, bin, mode, file string, hook ChangeFunc) *heldProc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p, err := sb.Start(context.Background(), &Command{Path: bin, Args: []string{bin, mode, file},
		Stdin: inR, Stdout: outW, Stderr: outW, BeforeChange: hook, Writers: w})
	if err != nil {
		t.Fatal(err)
	}
	h := &heldProc{t: t, p: p, in: inW, out: bufio.NewReader(outR), outW: outW}
	t.Cleanup(func() { inW.Close(); p.Kill(); p.Wait(); outW.Close() })
	h.expect("ready")
	return h
}

// expect reads the next line, which must be want.
func (h *heldProc) expect(want string) {
	h.t.Helper()
	line, err := h.out.ReadString('\n')
	if strings.TrimSpace(line) != want {
		h.t.Fatalf("heldwrite said %q (%v), want %q", line, err, want)
	}
}

func (h *heldProc) do(cmd string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, cmd+"\n"); err != nil {
		h.t.Fatal(err)
	}
	h.expect("ok")
}

// end closes its stdin and waits for the tree to be gone.
func (h *heldProc) end() {
	h.t.Helper()
	h.in.Close()
	go io.Copy(io.Discard, h.out)
	if st, err := h.p.Wait(); err != nil || st.Code != 0 {
		h.t.Fatalf("heldwrite ended: %+v, %v", st, err)
	}
	h.outW.Close()
}

// TestWritersKeepHeldFiles: a command that opens a workspace file for
// appending and keeps the descriptor, one that maps a file shared and
// writable and closes the descriptor, and one that names an O_TMPFILE
// file (opened without capture) by linkat: while each still can write
// its file, Pause names it; once the command is gone, the file is
// dropped. Without the registry, nothing says the file may still change
// after a checkpoint (the e2e TestHeldDescriptorWritesRewound shows what
// that costs).
func TestWritersKeepHeldFiles(t *testing.T) {
	bin := heldWriteBin(t)
	for _, mode := range []string{"fd", "map", "tmpfile"} {
		t.Run(mode, func(t *testing.T) {
			sb, ws := newTestSandbox(t, func(p *Policy) {
				p.CaptureChanges = true
				p.ReadOnlyPaths = append(p.ReadOnlyPaths, filepath.Dir(bin))
			})
			real, _ := filepath.EvalSymlinks(ws)
			file := filepath.Join(real, "held.txt")
			if mode == "map" {
				if err := os.WriteFile(file, []byte("01234567 and more\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pre := newPreImages(ws)
			w := NewWriters()
			defer w.Close()
			h := startHeld(t, sb, w, bin, mode, file, pre.hook)
			pre.mu.Lock()
			_, recorded := pre.seen["held.txt"]
			pre.mu.Unlock()
			if !recorded {
				t.Fatal("the open was not recorded")
			}
			held, paused, resume := w.Pause()
			resume()
			if !paused || !slices.Equal(held, []string{file}) {
				t.Fatalf("Pause while %s holds the file: held %q, paused %v; want [%s]", mode, held, paused, file)
			}
			h.do("w ABCDEFGH")
			if b, _ := os.ReadFile(file); !bytes.Contains(b, []byte("ABCDEFGH")) {
				t.Fatalf("the write after the pause did not reach the file: %q", b)
			}
			h.end()
			held, paused, resume = w.Pause()
			resume()
			if !paused || len(held) != 0 {
				t.Fatalf("Pause after the command ended: held %q, paused %v; want none", held, paused)
			}
		})
	}
}

// TestWritersPauseStopsWrites: a command's thread rewrites a file through
// a shared mapping as fast as it can. Two reads of the file differ while
// it runs; while Pause is in force every thread of the tree is stopped
// and two reads agree — what lets a seal read one state of the file, as
// post-image of one checkpoint and pre-image of the next — and after
// resume the writes go on.
func TestWritersPauseStopsWrites(t *testing.T) {
	bin := heldWriteBin(t)
	sb, ws := newTestSandbox(t, func(p *Policy) {
		p.CaptureChanges = true
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, filepath.Dir(bin))
	})
	real, _ := filepath.EvalSymlinks(ws)
	file := filepath.Join(real, "counter")
	if err := os.WriteFile(file, []byte("00000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := NewWriters()
	defer w.Close()
	h := startHeld(t, sb, w, bin, "map", file, newPreImages(ws).hook)
	h.do("spin")
	// changing reads the file until it changes, at most reads times.
	changing := func(reads int) bool {
		a, _ := os.ReadFile(file)
		for range reads {
			if b, _ := os.ReadFile(file); !bytes.Equal(a, b) {
				return true
			}
		}
		return false
	}
	// The writer's thread may take a while to be scheduled at first.
	if !changing(1_000_000) {
		t.Fatal("the spinning writer did not change the file: the test proves nothing")
	}
	held, paused, resume := w.Pause()
	if !paused || !slices.Equal(held, []string{file}) {
		resume()
		t.Fatalf("Pause: held %q, paused %v", held, paused)
	}
	var scanned []string
	members := h.p.members(&scanned)
	rest := true
	for _, pid := range members {
		rest = rest && threadsAtRest(pid)
	}
	still := !changing(2000)
	resume()
	if len(members) == 0 || !rest || !still {
		t.Fatalf("while paused: %d processes of the tree, all at rest %v, file unchanged %v", len(members), rest, still)
	}
	if !changing(1_000_000) {
		t.Fatal("after resume the writer did not go on")
	}
}

// TestWritersPauseWaitsForCapturedCall: a captured call is made in two
// steps, its pre-image recorded, then the change. A pause that let the
// captures run would find a call half-made — recorded in the checkpoint
// being sealed, made after its post-image was read, so that the change
// lands in the next checkpoint with no pre-image there. The hook blocks
// on one file: with the captures left running Pause returns while that
// file is recorded and not yet created; quiesced, it returns only once
// the call is complete.
func TestWritersPauseWaitsForCapturedCall(t *testing.T) {
	for _, quiesce := range []bool{false, true} {
		t.Run(map[bool]string{false: "captures-running", true: "quiesced"}[quiesce], func(t *testing.T) {
			sb, ws := newTestSandbox(t, func(p *Policy) { p.CaptureChanges = true })
			real, _ := filepath.EvalSymlinks(ws)
			gate := filepath.Join(real, "gate")
			inHook, release := make(chan struct{}), make(chan struct{})
			var released atomic.Bool
			var once sync.Once
			hook := func(paths []string) error {
				if slices.Contains(paths, gate) {
					once.Do(func() { close(inHook) })
					<-release
					released.Store(true)
				}
				return nil
			}
			w := NewWriters()
			defer w.Close()
			p, err := sb.Start(context.Background(), &Command{Path: "/bin/bash",
				Args: []string{"bash", "-c", "echo x > gate"}, BeforeChange: hook, Writers: w})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Wait()
			<-inHook // the call is recorded, and not made
			quiescing := make(chan struct{})
			testPauseNoQuiesce, testPauseQuiescing = !quiesce, func() { close(quiescing) }
			defer func() { testPauseNoQuiesce, testPauseQuiescing = false, nil }()
			type seen struct{ exists, released bool }
			got := make(chan seen)
			go func() {
				_, _, resume := w.Pause()
				_, err := os.Lstat(gate)
				got <- seen{err == nil, released.Load()}
				resume()
			}()
			var s seen
			if quiesce {
				<-quiescing
				close(release) // Pause waits for the call to be done
				s = <-got
			} else {
				s = <-got // Pause did not wait
				close(release)
			}
			switch {
			case !quiesce && (s.exists || s.released):
				t.Fatalf("captures running: at the pause the call was complete (%+v): the test shows nothing", s)
			case quiesce && (!s.exists || !s.released):
				t.Fatalf("quiesced: the pause came while the call was half-made (gate exists %v, hook returned %v)", s.exists, s.released)
			}
		})
	}
}

// TestWritersRegistryBound: past its bound of files still open for
// writing, the registry refuses a further write-open (EMFILE) rather
// than let a descriptor write unaccounted for; files closed make room
// again.
func TestWritersRegistryBound(t *testing.T) {
	notify.TestHooks.HeldFilesLimit = 2
	w := NewWriters()
	notify.TestHooks.HeldFilesLimit = 0
	defer w.Close()
	sb, _ := newTestSandbox(t, func(p *Policy) { p.CaptureChanges = true })
	hook := func([]string) error { return nil }
	r := sh(t, sb, `exec 3>a 4>b; if exec 5>c; then echo opened; fi; echo x >&3`, func(c *Command) {
		c.BeforeChange, c.Writers = hook, w
	})
	if r.st.Code != 0 || strings.Contains(r.out, "opened") || !strings.Contains(r.err, "Too many open files") {
		t.Fatalf("a third file held open for writing past a bound of 2: %+v", r)
	}
	r = sh(t, sb, `exec 3>d 4>e && echo opened`, func(c *Command) { c.BeforeChange, c.Writers = hook, w })
	if !strings.Contains(r.out, "opened") {
		t.Fatalf("the files of a command that ended were not dropped: %+v", r)
	}
}
