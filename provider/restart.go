package provider

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Outcome is how one attempt of a streamed call ended.
type Outcome int

const (
	// Done: a message was yielded, or yield returned false.
	Done Outcome = iota
	// Failed: the attempt's error is final.
	Failed
	// Retryable: the error is the cause; the call may be restarted.
	Retryable
)

// DefaultMaxServerWait is the longest retry-after a provider honours by
// default. Its own backoff is capped lower (30 s); a server may ask for
// more, and a minute of visible, cancellable waiting is what a person
// accepts. A longer wait fails at once, naming the server's wait.
const DefaultMaxServerWait = 60 * time.Second

// Restarts drives a streamed call that a provider retries itself — an error
// response, a connection that failed or went quiet, a cut stream, an error
// event inside a 200 response — within one budget of requests. Every retry
// is announced with a ChunkRetry carrying its wait, before the wait, so that
// a consumer can drop partial text and show the wait; the wait ends at once
// when ctx is cancelled. Anthropic and OpenAI-compatible providers use it
// alike.
type Restarts struct {
	// Name prefixes errors ("anthropic: context canceled").
	Name string
	// Budget is the number of HTTP requests the call may send in all.
	Budget int
	// Backoff is the wait before retry n (from 0) when the server names none.
	Backoff func(n int) time.Duration
	// MaxServerWait is the longest server-requested wait (retry-after)
	// honoured; 0 means DefaultMaxServerWait.
	MaxServerWait time.Duration
	// Exhausted wraps the last cause once the budget is spent; sent is the
	// number of requests made.
	Exhausted func(sent int, last error) error
}

// serverWaitError is a retryable cause for which the server said how long
// to wait.
type serverWaitError struct {
	err  error
	wait time.Duration
}

func (e *serverWaitError) Error() string { return e.err.Error() }
func (e *serverWaitError) Unwrap() error { return e.err }

// WithServerWait marks err as a cause after which the server asked for a
// wait of d (retry-after) before the next request.
func WithServerWait(err error, d time.Duration) error {
	return &serverWaitError{err: err, wait: max(d, 0)}
}

// Run calls attempt (with the number of the request, from 1) until it is
// done or fails, restarting a retryable one while the budget lasts.
func (r *Restarts) Run(ctx context.Context, yield func(Chunk, error) bool, attempt func(n int) (Outcome, error)) {
	maxWait := r.MaxServerWait
	if maxWait <= 0 {
		maxWait = DefaultMaxServerWait
	}
	for sent := 1; ; sent++ {
		out, err := attempt(sent)
		switch out {
		case Done:
			return
		case Failed:
			yield(Chunk{}, err)
			return
		}
		if sent >= r.Budget {
			yield(Chunk{}, r.Exhausted(sent, err))
			return
		}
		wait := r.Backoff(sent - 1)
		var sw *serverWaitError
		if errors.As(err, &sw) {
			if sw.wait > maxWait {
				yield(Chunk{}, fmt.Errorf("%s: the server asks to wait %s before retrying (retry-after), longer than the %s this client waits: try again later: %w",
					r.Name, sw.wait.Round(time.Second), maxWait, err))
				return
			}
			wait = sw.wait
		}
		if !yield(Chunk{Type: ChunkRetry, Attempt: sent + 1, MaxAttempts: r.Budget, Wait: wait, Err: err}, nil) {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			yield(Chunk{}, fmt.Errorf("%s: %w", r.Name, ctx.Err()))
			return
		case <-t.C:
		}
	}
}
