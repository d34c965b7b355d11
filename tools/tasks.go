package tools

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// DefaultTaskOutputCap bounds the output a background task keeps unread.
const DefaultTaskOutputCap = 1 << 20

// Task is a piece of work running in the background of a session, such as a
// dev server started by a shell tool.
type Task struct {
	ID          string
	Description string
	Started     time.Time

	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// out is the output not yet returned by ReadNew, at most cap bytes:
	// a task runs for as long as the session (a dev server), so what
	// matters is its latest output, and what was read is let go.
	out       []byte
	dropped   int64 // unread bytes pushed out of out since the last ReadNew
	cap       int
	err       error
	completed time.Time
}

// Write appends output to what is unread. Past the task's cap the oldest
// unread bytes are dropped and counted, so that a chatty task cannot
// exhaust memory and its newest output is always there to read.
func (t *Task) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.cap {
		t.dropped += int64(len(t.out) + len(p) - t.cap)
		t.out = append(t.out[:0], p[len(p)-t.cap:]...)
		return n, nil
	}
	if over := len(t.out) + len(p) - t.cap; over > 0 {
		t.dropped += int64(over)
		t.out = append(t.out[:0], t.out[over:]...)
	}
	t.out = append(t.out, p...)
	return n, nil
}

// ReadNew returns the output written since the previous ReadNew (its
// latest cap bytes) and how many bytes written since then were dropped
// before them.
func (t *Task) ReadNew() (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, dropped := string(t.out), t.dropped
	t.out, t.dropped = t.out[:0], 0
	return s, dropped
}

// Done is closed when the task has finished.
func (t *Task) Done() <-chan struct{} { return t.done }

// Err returns the task's error once it is done (nil while running).
func (t *Task) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Running reports whether the task has not finished yet.
func (t *Task) Running() bool {
	select {
	case <-t.done:
		return false
	default:
		return true
	}
}

// Tasks is a session's registry of background tasks. The kernel kills every
// task when the session ends.
type Tasks struct {
	mu     sync.Mutex
	next   int
	tasks  map[string]*Task
	closed bool
}

// NewTasks returns an empty registry.
func NewTasks() *Tasks { return &Tasks{tasks: map[string]*Task{}} }

// Start runs fn in the background under a context that Kill and KillAll
// cancel. fn must return once its context is cancelled; out collects its
// output up to outputCap bytes (DefaultTaskOutputCap when zero).
func (r *Tasks) Start(description string, outputCap int, fn func(ctx context.Context, out *Task) error) (*Task, error) {
	if outputCap <= 0 {
		outputCap = DefaultTaskOutputCap
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("background tasks: the session has ended")
	}
	r.next++
	ctx, cancel := context.WithCancel(context.Background())
	t := &Task{
		ID:          fmt.Sprintf("task-%d", r.next),
		Description: description,
		Started:     time.Now(),
		cancel:      cancel,
		done:        make(chan struct{}),
		cap:         outputCap,
	}
	r.tasks[t.ID] = t
	r.mu.Unlock()
	go func() {
		err := fn(ctx, t)
		t.mu.Lock()
		t.err = err
		t.completed = time.Now()
		t.mu.Unlock()
		cancel()
		close(t.done)
	}()
	return t, nil
}

// Get returns the task with id.
func (r *Tasks) Get(id string) (*Task, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tasks[id]
	return t, ok
}

// List returns all tasks, oldest first.
func (r *Tasks) List() []*Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Task, 0, len(r.tasks))
	for _, t := range r.tasks {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// Kill cancels the task with id and waits up to wait for it to finish.
func (r *Tasks) Kill(id string, wait time.Duration) error {
	t, ok := r.Get(id)
	if !ok {
		return fmt.Errorf("no background task %q", id)
	}
	t.cancel()
	select {
	case <-t.done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("background task %s did not stop within %s", id, wait)
	}
}

// KillAll cancels every task, refuses new ones, and waits up to wait for
// them to finish. It returns the ids of tasks that did not stop in time.
func (r *Tasks) KillAll(wait time.Duration) []string {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	tasks := r.List()
	for _, t := range tasks {
		t.cancel()
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	expired := false
	var stuck []string
	for _, t := range tasks {
		if !expired {
			select {
			case <-t.done:
				continue
			case <-timer.C:
				expired = true
			}
		}
		if t.Running() {
			stuck = append(stuck, t.ID)
		}
	}
	return stuck
}
