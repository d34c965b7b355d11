package kernel

import (
	"errors"
	"fmt"
	"sync"
)

// ErrSandboxStart is wrapped by the error of a run in which the sandbox
// could not start a command a tool call asked for: the model saw the
// failure as the call's result, and the person sees it as a sandbox
// event and as the run's error (the CLI's exit code 3).
var ErrSandboxStart = errors.New("the sandbox could not start a command")

// startFailures collects what the session's sandboxes could not start
// (sandbox.Policy.OnStartFailure), from the tools' goroutines, until the
// loop that iterates yields them as sandbox events. Before arm (the
// session's preparation, MCP servers starting) nothing is collected.
type startFailures struct {
	mu      sync.Mutex
	armed   bool
	first   error
	count   int
	pending []error
}

// observer returns the OnStartFailure to set: it records err, then
// calls next (the caller's own), if any.
func (f *startFailures) observer(next func(error)) func(error) {
	return func(err error) {
		f.mu.Lock()
		if f.armed {
			if f.first == nil {
				f.first = err
			}
			f.count++
			f.pending = append(f.pending, err)
		}
		f.mu.Unlock()
		if next != nil {
			next(err)
		}
	}
}

func (f *startFailures) arm() {
	f.mu.Lock()
	f.armed = true
	f.mu.Unlock()
}

// take returns the failures not yet yielded.
func (f *startFailures) take() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pending
	f.pending = nil
	return p
}

// err is the run's error when commands could not be started, else nil.
func (f *startFailures) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		return nil
	}
	if f.count == 1 {
		return fmt.Errorf("%w: %v", ErrSandboxStart, f.first)
	}
	return fmt.Errorf("%w (%d times; the first: %v)", ErrSandboxStart, f.count, f.first)
}

// yieldStartFailures yields a sandbox event for each failure collected
// since the last call.
func (r *run) yieldStartFailures(yield func(Event, error) bool, ok *bool) {
	for _, err := range r.startFailures.take() {
		if *ok && !yield(r.event(Event{Type: EventSandbox, Sandbox: &SandboxEvent{Error: err.Error()}}), nil) {
			*ok = false
		}
	}
}
