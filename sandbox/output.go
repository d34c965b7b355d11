package sandbox

import (
	"io"
	"sync"
	"sync/atomic"
)

// OutputOmitter is implemented by a Command's Stdout or Stderr writer that
// wants to know where output was cut. When a command writes more than
// Limits.OutputBytes, the sandbox forwards the first half of the limit as it
// comes, keeps the latest half in a ring, and, once the streams end, calls
// OmitOutput with the number of bytes dropped between them (on the writer
// the kept tail starts with) before it writes the tail. Writers without it
// get the head and the tail back to back; ExitStatus.DroppedBytes and
// OmittedAfter say where the gap is.
type OutputOmitter interface {
	OmitOutput(dropped int64)
}

// outputBudget bounds what a command's stdout and stderr together may
// forward to the caller's writers: the first headLimit bytes are written
// through as they come; after them a ring keeps the latest tailLimit bytes
// (with the writer each came for), which are written when the last stream
// ends. The bytes in between are dropped and counted. Every byte is read
// from the pipes (so the command never blocks on a full pipe), and memory
// stays bounded by the limit whatever the command prints.
type outputBudget struct {
	mu        sync.Mutex
	headLeft  int64 // bytes still to forward live
	tailLimit int
	ring      []byte // allocated on the first byte past the head
	ringStart int    // index of the oldest kept byte
	ringLen   int
	// segs says which writer each run of kept tail bytes is for, oldest
	// first; adjacent bytes for one writer share a segment.
	segs    []tailSeg
	writers [2]io.Writer // stdout's, and stderr's when it has its own
	broken  [2]bool      // the writer failed once
	streams int          // forwarders still running
	last    int          // the writer written for last
	// dropped and headBytes are read without mu: the holder of mu may be
	// blocked in a caller's Write for ever.
	dropped   atomic.Int64
	headBytes atomic.Int64 // bytes forwarded live, before any gap
}

type tailSeg struct {
	w int // index in writers
	n int
}

func newOutputBudget(limit int64) *outputBudget {
	tail := limit / 2
	// A tail ring is held in memory: it is bounded even for a policy that
	// lifts the limit (the head, written through, needs no memory).
	tail = min(tail, maxOutputTail)
	return &outputBudget{headLeft: limit - tail, tailLimit: int(tail)}
}

// maxOutputTail bounds the ring that keeps the end of the output.
const maxOutputTail = 8 << 20

// open registers the writer of one more stream (at most two) and returns
// its index for forward; the last stream to end writes the kept tail.
func (b *outputBudget) open(w io.Writer) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := 0
	if b.writers[0] != nil {
		i = 1
	}
	b.writers[i] = w
	b.streams++
	return i
}

// forward copies r to writer w (from open) within the budget until r ends.
// Writer errors do not stop the draining: the command must not block or die
// of SIGPIPE because the caller's writer failed; what could not be written
// is discarded.
func (b *outputBudget) forward(w int, r io.Reader) {
	defer b.closeStream()
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

// write passes what the head still allows of p to w and keeps the rest in
// the tail ring, dropping (and counting) what the ring pushes out. Writes of
// both streams are serialised so that a writer shared by stdout and stderr
// sees whole chunks; a writer that failed once gets nothing more.
func (b *outputBudget) write(w int, p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = w
	if b.headLeft > 0 {
		keep := min(int64(len(p)), b.headLeft)
		b.headLeft -= keep
		b.headBytes.Add(keep)
		b.send(w, p[:keep])
		p = p[keep:]
	}
	if len(p) == 0 {
		return
	}
	if len(p) > b.tailLimit {
		// Only the last tailLimit bytes of p can survive.
		b.dropped.Add(int64(len(p) - b.tailLimit))
		p = p[len(p)-b.tailLimit:]
	}
	if len(p) == 0 {
		return
	}
	if b.ring == nil {
		b.ring = make([]byte, b.tailLimit)
	}
	// Make room: drop the oldest kept bytes.
	if over := b.ringLen + len(p) - b.tailLimit; over > 0 {
		b.dropped.Add(int64(over))
		b.ringStart = (b.ringStart + over) % b.tailLimit
		b.ringLen -= over
		for over > 0 {
			if b.segs[0].n > over {
				b.segs[0].n -= over
				break
			}
			over -= b.segs[0].n
			b.segs = b.segs[1:]
		}
	}
	end := (b.ringStart + b.ringLen) % b.tailLimit
	k := copy(b.ring[end:], p)
	copy(b.ring, p[k:])
	b.ringLen += len(p)
	if n := len(b.segs); n > 0 && b.segs[n-1].w == w {
		b.segs[n-1].n += len(p)
	} else {
		b.segs = append(b.segs, tailSeg{w, len(p)})
	}
}

// closeStream marks one stream ended; after the last, the tail is written.
func (b *outputBudget) closeStream() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.streams--; b.streams > 0 {
		return
	}
	if d := b.dropped.Load(); d > 0 {
		at := b.last // no tail kept (a limit of one byte)
		if len(b.segs) > 0 {
			at = b.segs[0].w
		}
		if o, ok := b.writers[at].(OutputOmitter); ok && !b.broken[at] {
			o.OmitOutput(d)
		}
	}
	for _, s := range b.segs {
		first := b.ring[b.ringStart:min(b.ringStart+s.n, b.tailLimit)]
		b.send(s.w, first)
		b.send(s.w, b.ring[:s.n-len(first)])
		b.ringStart = (b.ringStart + s.n) % b.tailLimit
	}
	b.ring, b.segs, b.ringLen = nil, nil, 0
}

// send writes p to writer w unless it failed before.
func (b *outputBudget) send(w int, p []byte) {
	if len(p) == 0 || b.broken[w] {
		return
	}
	if _, err := b.writers[w].Write(p); err != nil {
		b.broken[w] = true
	}
}

// droppedBytes is how much was discarded so far.
func (b *outputBudget) droppedBytes() int64 { return b.dropped.Load() }

// omittedAfter is how many bytes were forwarded before the gap.
func (b *outputBudget) omittedAfter() int64 { return b.headBytes.Load() }

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
