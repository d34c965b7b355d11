package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Default bounds of a quiet model connection. The first byte may take a
// while: a local server processes the whole prompt before it answers, and
// a long prompt on a CPU takes a minute or more, so two minutes. Once a
// stream runs, the hosted APIs send events (pings included) every few
// seconds, so a minute without a byte means the connection is dead.
const (
	DefaultFirstByteTimeout = 120 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
)

// The environment variables that set the timeouts when Options leave them
// zero; a value is a Go duration ("90s", "5m") or "0" for none.
const (
	EnvFirstByteTimeout = "LITE_AGENT_FIRST_BYTE_TIMEOUT"
	EnvIdleTimeout      = "LITE_AGENT_STREAM_IDLE_TIMEOUT"
)

// TimeoutError is the cause of a retry, or of the final error, when a
// model connection went quiet for too long.
type TimeoutError struct {
	// FirstByte is true when nothing at all had arrived since the request
	// was sent; false when the stream stalled part-way.
	FirstByte bool
	After     time.Duration
}

func (e *TimeoutError) Error() string {
	if e.FirstByte {
		return fmt.Sprintf("no answer from the model server within %s of the request (first-byte timeout; change it with --first-byte-timeout or %s)", e.After, EnvFirstByteTimeout)
	}
	return fmt.Sprintf("the model's stream sent nothing for %s (stream idle timeout; change it with --stream-idle-timeout or %s)", e.After, EnvIdleTimeout)
}

// Timeouts bounds how long one request waits for the first byte of its
// response and, after it, between reads of the body. Zero fields take the
// environment's value (EnvFirstByteTimeout, EnvIdleTimeout), else the
// defaults; a negative one means no bound.
type Timeouts struct {
	FirstByte time.Duration
	Idle      time.Duration
}

// Resolve fills zero fields from the environment and the defaults. It
// fails on an environment value that is not a duration.
func (t Timeouts) Resolve() (Timeouts, error) {
	for _, f := range []struct {
		d   *time.Duration
		env string
		def time.Duration
	}{{&t.FirstByte, EnvFirstByteTimeout, DefaultFirstByteTimeout}, {&t.Idle, EnvIdleTimeout, DefaultIdleTimeout}} {
		if *f.d != 0 {
			continue
		}
		*f.d = f.def
		if v := os.Getenv(f.env); v != "" {
			d, err := time.ParseDuration(v)
			if v == "0" {
				d, err = -1, nil
			}
			if err != nil || d < 0 {
				return t, fmt.Errorf("%s=%q: want a duration such as 90s or 5m, or 0 for none", f.env, v)
			}
			if d == 0 {
				d = -1
			}
			*f.d = d
		}
	}
	return t, nil
}

// Do sends req through next and watches it: if no byte of the response
// arrives within FirstByte, or the body then goes quiet for Idle, the
// request is cancelled and the error (of next, or of the body's Read) is a
// *TimeoutError. t must have been resolved.
func (t Timeouts) Do(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	if t.FirstByte <= 0 && t.Idle <= 0 {
		return next(req)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watch{cancel: cancel, t: t}
	w.arm(true)
	res, err := next(req.WithContext(ctx))
	if err != nil {
		w.stop()
		if te := w.fired(ctx); te != nil {
			return nil, te
		}
		cancel(nil)
		return res, err
	}
	res.Body = &watchedBody{rc: res.Body, w: w, ctx: ctx}
	return res, nil
}

// watch is the timer of one request.
type watch struct {
	mu     sync.Mutex
	timer  *time.Timer
	t      Timeouts
	cancel context.CancelCauseFunc
}

// arm (re)starts the timer for the first byte or for the next one.
func (w *watch) arm(first bool) {
	d := w.t.Idle
	if first {
		d = w.t.FirstByte
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if d <= 0 {
		return
	}
	w.timer = time.AfterFunc(d, func() { w.cancel(&TimeoutError{FirstByte: first, After: d}) })
}

func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// fired returns the timeout that cancelled ctx, if one did.
func (w *watch) fired(ctx context.Context) *TimeoutError {
	var te *TimeoutError
	if errors.As(context.Cause(ctx), &te) {
		return te
	}
	return nil
}

// watchedBody re-arms the idle timer on every read that brings bytes.
type watchedBody struct {
	rc  io.ReadCloser
	w   *watch
	ctx context.Context
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && err == nil {
		b.w.arm(false)
	}
	if err != nil && err != io.EOF {
		if te := b.w.fired(b.ctx); te != nil {
			return n, te
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.w.stop()
	err := b.rc.Close()
	b.w.cancel(nil)
	return err
}
