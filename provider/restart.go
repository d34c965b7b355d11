package provider

import (
	"context"
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

// Restarts drives a streamed call that a provider restarts itself (a cut
// stream, an error event inside a 200 response) within one request budget
// shared with its SDK's own retries. Anthropic and OpenAI-compatible
// providers use it alike.
type Restarts struct {
	// Name prefixes errors ("anthropic: context canceled").
	Name string
	// Budget is the number of HTTP requests the call may send in all.
	Budget int
	// Sent reports the requests sent so far, the SDK's retries included.
	Sent func() int
	// Backoff is the wait before restart n (from 0).
	Backoff func(n int) time.Duration
	// Exhausted wraps the last cause once the budget is spent.
	Exhausted func(last error) error
}

// Run calls attempt until it is done or fails, restarting a retryable one
// while the budget lasts. Each restart is announced with a ChunkRetry
// before the wait, so that a consumer can drop the partial text at once.
func (r *Restarts) Run(ctx context.Context, yield func(Chunk, error) bool, attempt func() (Outcome, error)) {
	for {
		out, err := attempt()
		switch out {
		case Done:
			return
		case Failed:
			yield(Chunk{}, err)
			return
		}
		sent := r.Sent()
		if sent >= r.Budget {
			yield(Chunk{}, r.Exhausted(err))
			return
		}
		if !yield(Chunk{Type: ChunkRetry, Attempt: sent + 1, Err: err}, nil) {
			return
		}
		t := time.NewTimer(r.Backoff(sent - 1))
		select {
		case <-ctx.Done():
			t.Stop()
			yield(Chunk{}, fmt.Errorf("%s: %w", r.Name, ctx.Err()))
			return
		case <-t.C:
		}
	}
}
