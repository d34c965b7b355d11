package sandbox

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
	"golang.org/x/sys/unix"
)

// TestSupervisorsSurviveInterruptedPoll: poll(2) on the seccomp listener
// fails with EINTR now and then on a busy machine (the runtime signals its
// threads). The supervisors used to read that as "every process is gone"
// and stop serving, so the next connect of a live command blocked forever —
// a command that printed nothing until its timeout. Here every other poll
// is interrupted; each connect must still be answered.
func TestSupervisorsSurviveInterruptedPoll(t *testing.T) {
	var calls, interrupted atomic.Int64
	notify.TestHooks.Poll = func(fds []unix.PollFd, timeout int) (int, error) {
		if calls.Add(1)%2 == 1 {
			interrupted.Add(1)
			return -1, unix.EINTR
		}
		return unix.Poll(fds, timeout)
	}
	t.Cleanup(func() { notify.TestHooks.Poll = nil })

	modes := []NetworkMode{NetworkNone}
	if netSupervisor != nil {
		modes = append(modes, NetworkLoopback)
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := newEscapeEnv(t, func(p *Policy) {
				p.Network = mode
				p.Limits.WallTime = 15 * time.Second
			})
			sock := filepath.Join(e.ws, "app.sock")
			unixServer(t, sock)
			before := interrupted.Load()
			for i := range 5 {
				got, st := e.probe(t, "unix-connect", sock)
				if got != "ok" || st.TimedOut {
					t.Fatalf("connect %d to a workspace socket: %q (timed out: %v); the supervisor stopped serving after an interrupted poll", i, got, st.TimedOut)
				}
			}
			if interrupted.Load() == before {
				t.Fatalf("no poll of the listener was interrupted: the test did not exercise the supervisor loop")
			}
		})
	}
}
