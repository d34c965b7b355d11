package sandbox

import (
	"io"
	"sync"
	"sync/atomic"
)

// outputBudget bounds what a command's stdout and stderr together may
// forward to the caller's writers. Past the budget, bytes are still read
// from the pipes (so the command never blocks on a full pipe) but dropped
// and counted.
type outputBudget struct {
	mu     sync.Mutex
	left   int64
	broken bool // a writer failed
	// dropped is read without mu: the holder of mu may be blocked in a
	// caller's Write for ever.
	dropped atomic.Int64
}

func newOutputBudget(limit int64) *outputBudget { return &outputBudget{left: limit} }

// forward copies r to w within the budget until r ends. Writer errors do not
// stop the draining: the command must not block or die of SIGPIPE because
// the caller's writer failed; what could not be written is discarded.
func (b *outputBudget) forward(w io.Writer, r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			b.write(w, buf[:n])
		}
		if err != nil {
			// EOF once every process holding the pipe is gone; or the read
			// side was closed by the waiter's safety net.
			return
		}
	}
}

// write passes what the budget still allows of p to w, and counts the rest.
// Writes of both streams are serialised so that a writer shared by stdout
// and stderr sees whole chunks; a writer that failed once gets nothing more.
func (b *outputBudget) write(w io.Writer, p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	keep := min(int64(len(p)), b.left)
	b.left -= keep
	b.dropped.Add(int64(len(p)) - keep)
	if keep > 0 && !b.broken {
		if _, err := w.Write(p[:keep]); err != nil {
			b.broken = true
		}
	}
}

// droppedBytes is how much was discarded so far.
func (b *outputBudget) droppedBytes() int64 { return b.dropped.Load() }

// sameWriter reports whether a and b are the same writer, so that stdout
// and stderr share one pipe and keep their relative order (as os/exec does).
// Values of uncomparable dynamic types are never "the same".
func sameWriter(a, b io.Writer) (same bool) {
	if a == nil || b == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
