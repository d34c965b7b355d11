package kernel

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/tools"
)

// How tool_output events are paced: at most one per call every
// liveOutputEvery, each with at most liveOutputMax bytes. A command that
// prints a megabyte a second then costs the stream ten small events a
// second, and the command never waits for the consumer: what it writes
// while an event is on its way waits in a bounded buffer.
const (
	liveOutputEvery = 100 * time.Millisecond
	liveOutputMax   = 8 << 10
)

// liveOutput turns what a running call writes to its output
// (tools.Context.Output: the bash tool's command output) into tool_output
// events. write only buffers; a goroutine, started by the first write,
// sends what came since its last event, then waits liveOutputEvery.
type liveOutput struct {
	id, name string
	send     func(Event) bool // false once nobody listens

	mu      sync.Mutex
	pending []byte
	dropped int64
	started bool
	wake    chan struct{} // a write came (capacity 1)
	done    chan struct{} // the call ended
	exited  chan struct{} // the goroutine returned
}

func newLiveOutput(call tools.Call, send func(Event) bool) *liveOutput {
	return &liveOutput{id: call.ID, name: call.Name, send: send,
		wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
}

// write keeps the latest liveOutputMax bytes of what was written since
// the last event, counting what it lets go.
func (o *liveOutput) write(p []byte) {
	if len(p) == 0 {
		return
	}
	o.mu.Lock()
	o.pending = append(o.pending, p...)
	if over := len(o.pending) - liveOutputMax; over > 0 {
		// Cut at a character boundary: the first bytes kept begin one.
		for over < len(o.pending) && !utf8.RuneStart(o.pending[over]) {
			over++
		}
		o.dropped += int64(over)
		o.pending = append(o.pending[:0], o.pending[over:]...)
	}
	if !o.started {
		o.started = true
		go o.run()
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *liveOutput) run() {
	defer close(o.exited)
	for {
		select {
		case <-o.wake:
		case <-o.done:
			return
		}
		o.mu.Lock()
		text := o.take()
		dropped := o.dropped
		o.dropped = 0
		o.mu.Unlock()
		if text != "" || dropped > 0 {
			if !o.send(Event{Type: EventToolOutput, ToolOutput: &ToolOutputEvent{ID: o.id, Name: o.name, Text: text, Dropped: dropped}}) {
				return
			}
		}
		t := time.NewTimer(liveOutputEvery)
		select {
		case <-t.C:
		case <-o.done:
			t.Stop()
			return
		}
	}
}

// take returns what is pending up to its last whole character, keeping
// an incomplete one (at most 3 bytes) for the next event. Called with mu
// held.
func (o *liveOutput) take() string {
	n := len(o.pending)
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax; i-- {
		if utf8.RuneStart(o.pending[i]) {
			if !utf8.FullRune(o.pending[i:]) {
				n = i
			}
			break
		}
	}
	text := string(o.pending[:n])
	o.pending = append(o.pending[:0], o.pending[n:]...)
	return text
}

// stop ends the events of a call whose handler returned, and waits for an
// event on its way: none comes after the call's result.
func (o *liveOutput) stop() {
	o.mu.Lock()
	started := o.started
	o.started = true // a late write must not start a goroutine
	o.mu.Unlock()
	close(o.done)
	if started {
		<-o.exited
	}
}
