package checkpoint

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
)

// DefaultMaxStoreSize is the default Options.MaxStoreSize: 2 GiB, room for
// thousands of ordinary edits while a runaway agent rewriting large files
// cannot fill the disk that holds the state directory.
const DefaultMaxStoreSize = 2 << 30

// The store cap (Options.MaxStoreSize) is enforced when a recording
// session opens: when the store is larger, gc removes the oldest history
// of every other session (GCOptions.MaxSize) until it fits, and never any
// of the opening session, so its checkpoint 0 stays. A session cannot trim
// a store it records into (gc needs the store to itself), so at each seal
// the recorder counts what it has added, and the first seal past the cap
// says so (Options.OnStoreCap); the next session start brings the store
// back within the cap. Past the cap the session records nothing more
// (capCeiling): the changes that need a record are refused with a message
// naming the cap, so the store stays bounded within one session too.

// ErrStoreCap is why a record is refused once the store has reached its
// cap during a session: it wraps ENOSPC, the errno a captured command is
// answered with (its change is refused, never made unrecorded), and says
// which cap and how to raise it.
var ErrStoreCap = &capError{}

type capError struct{ msg string }

func (e *capError) Error() string {
	if e.msg == "" {
		return "the checkpoint store reached its cap"
	}
	return e.msg
}

// Is makes a cap refusal both ErrStoreCap and ENOSPC.
func (e *capError) Is(target error) bool {
	return target == ErrStoreCap || target == syscall.ENOSPC
}

// capCeiling refuses new objects once the store has passed its cap in
// this session: a runaway agent rewriting large files would otherwise
// grow it, between session starts, until the disk is full. What was
// recorded stays (checkpoint 0 first of all); the change that needed the
// record is refused.
func (r *Recorder) capCeiling() error {
	limit := r.maxStoreSize()
	if limit <= 0 {
		return nil
	}
	size := r.storeCap.base + r.st.written.Load()
	if size < limit {
		return nil
	}
	return &capError{msg: fmt.Sprintf("the checkpoint store at %s reached its cap of %s (it is %s), so this change cannot be recorded and is refused; raise the cap with --checkpoint-max-size, or remove old history with 'lite-agent gc --max-size SIZE' after this session",
		ckptDir(r.stateDir), FormatSize(limit), FormatSize(size))}
}

// capAtOpen enforces the cap before the recorder takes the store lock, and
// keeps the store's size afterwards (the base its seals count from).
func (r *Recorder) capAtOpen() {
	limit := r.maxStoreSize()
	if limit <= 0 {
		return
	}
	size, err := dirSize(ckptDir(r.stateDir))
	if err != nil || size <= limit {
		r.storeCap.base = size
		return
	}
	rep, err := GC(r.stateDir, GCOptions{MaxSize: limit, Keep: []string{r.id}})
	switch {
	case errors.Is(err, ErrStoreBusy):
		r.storeCap.base = size
		r.noteCap(fmt.Sprintf("the checkpoint store at %s is %s, over its cap of %s, and other sessions are recording, so nothing was removed; it is trimmed when a session starts alone (or run 'lite-agent gc --max-size %s' when none runs)",
			ckptDir(r.stateDir), FormatSize(size), FormatSize(limit), FormatSize(limit)))
	case err != nil:
		r.storeCap.base = size
		r.noteCap(fmt.Sprintf("the checkpoint store at %s is %s, over its cap of %s, and trimming it failed: %v", ckptDir(r.stateDir), FormatSize(size), FormatSize(limit), err))
	default:
		r.storeCap.base = rep.BytesAfter
		msg := fmt.Sprintf("the checkpoint store at %s reached its cap of %s: removed the oldest %d checkpoint(s) of other sessions (%s -> %s)",
			ckptDir(r.stateDir), FormatSize(limit), rep.CheckpointsRemoved, FormatSize(rep.BytesBefore), FormatSize(rep.BytesAfter))
		if rep.BytesAfter > limit {
			msg += "; what is left is the newest checkpoint of each session and this session's own history, still over the cap"
		}
		r.noteCap(msg + "; raise the cap with --checkpoint-max-size, or remove old history with lite-agent gc")
	}
}

// checkCapAfterSeal says once, at the first seal that takes the store past
// its cap, that it did.
func (r *Recorder) checkCapAfterSeal() {
	limit := r.maxStoreSize()
	if limit <= 0 || r.storeCap.warned.Load() {
		return
	}
	size := r.storeCap.base + r.st.written.Load()
	if size <= limit || r.storeCap.warned.Swap(true) {
		return
	}
	r.noteCap(fmt.Sprintf("the checkpoint store at %s is now about %s, over its cap of %s: this session's checkpoints are all kept, and its changes that need a new record are refused from now on; raise the cap with --checkpoint-max-size, or let the next session start trim the oldest history of other sessions (or run 'lite-agent gc --max-size %s' after this one)",
		ckptDir(r.stateDir), FormatSize(size), FormatSize(limit), FormatSize(limit)))
}

func (r *Recorder) maxStoreSize() int64 {
	if r.opts.MaxStoreSize == 0 {
		return DefaultMaxStoreSize
	}
	return r.opts.MaxStoreSize
}

func (r *Recorder) noteCap(msg string) {
	if r.opts.OnStoreCap != nil {
		r.opts.OnStoreCap(msg)
	}
}

// capState is the recorder's view of the store cap.
type capState struct {
	base   int64 // the store's size when the recorder opened
	warned atomic.Bool
}

// FormatSize is a byte count for a person: 1.5 GiB, 12.0 KiB, 300 B (the
// store's messages, and the CLI's gc and checkpoints output).
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
