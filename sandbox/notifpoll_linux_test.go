package sandbox

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	connectThroughInterruptions(t, &interrupted)
}

// TestSupervisorsSurvivePollErr: the kernel's poll of a seccomp listener
// answers POLLERR alone when a signal is pending on the polling thread
// while a notifying process holds the filter's lock. The loop took that
// for the end of the tree and stopped serving (TestCaptureStress met it
// under a signal storm); here every other poll says so.
func TestSupervisorsSurvivePollErr(t *testing.T) {
	var calls, interrupted atomic.Int64
	notify.TestHooks.Poll = func(fds []unix.PollFd, timeout int) (int, error) {
		if calls.Add(1)%2 == 1 {
			interrupted.Add(1)
			fds[0].Revents = unix.POLLERR
			return 1, nil
		}
		return unix.Poll(fds, timeout)
	}
	t.Cleanup(func() { notify.TestHooks.Poll = nil })
	connectThroughInterruptions(t, &interrupted)
}

// TestSupervisorsSurvivePollerErr: the runtime's poller, given the same
// interrupted look (EPOLLERR alone) by its own epoll_wait, reports the
// listener "not pollable" until its next event, which may be a call the
// loop has not received yet. The loop took that error for the end; here
// every other wait on the poller fails so.
func TestSupervisorsSurvivePollerErr(t *testing.T) {
	var calls, interrupted atomic.Int64
	notify.TestHooks.PollerErr = func() error {
		if calls.Add(1)%2 == 1 {
			interrupted.Add(1)
			return errors.New("not pollable")
		}
		return nil
	}
	t.Cleanup(func() { notify.TestHooks.PollerErr = nil })
	connectThroughInterruptions(t, &interrupted)
}

// TestSupervisorsSurviveInterruptedAnswers: SEND, ID_VALID and ADDFD
// take the filter's lock interruptibly, and fail with EINTR (not a
// restart) when a signal is pending on the answering thread while a
// process of the tree holds the lock. An answer dropped so left its
// process waiting forever. Here every other such ioctl fails so, for
// calls of the network rules and of change capture alike.
func TestSupervisorsSurviveInterruptedAnswers(t *testing.T) {
	var calls, interrupted atomic.Int64
	notify.TestHooks.ListenerIoctl = func(uintptr) unix.Errno {
		if calls.Add(1)%2 == 1 {
			interrupted.Add(1)
			return unix.EINTR
		}
		return 0
	}
	t.Cleanup(func() { notify.TestHooks.ListenerIoctl = nil })
	connectThroughInterruptions(t, &interrupted)

	sb, ws := newTestSandbox(t, func(p *Policy) {
		p.CaptureChanges = true
		p.Limits.WallTime = 15 * time.Second
	})
	before := interrupted.Load()
	r := sh(t, sb, "for i in $(seq 20); do echo x > f$i; done && mv f1 g1 && rm f2 && mkdir d && ls | wc -l",
		func(c *Command) { c.Dir = ws; c.BeforeChange = func([]string) error { return nil } })
	if r.st.TimedOut || r.st.Code != 0 || strings.TrimSpace(r.out) != "20" {
		t.Fatalf("captured file work with interrupted answers: %v; want 20 names and exit 0", r)
	}
	if interrupted.Load() == before {
		t.Fatal("no answer of a captured call was interrupted: the test did not exercise it")
	}
}

// connectThroughInterruptions connects to a workspace socket five times
// in each mode with a supervisor, and requires interrupted to grow.
func connectThroughInterruptions(t *testing.T, interrupted *atomic.Int64) {
	t.Helper()

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

// TestCaptureListenerOutsideRuntimePoller: with change capture the
// supervisor's loop waits in poll(2) on its own thread, and the listener
// must not also be in the Go runtime's epoll set — the kernel wakes every
// waiter of a listener twice per call (EPOLLIN when a call is queued,
// EPOLLOUT when it is received), so the runtime's netpoll thread woke for
// nothing at each captured call: a third of the call's CPU
// (bench/capture_opens.c, BENCHMARKS.md). Checked while a captured command is
// alive, after its first captured call, through /proc/self/fdinfo of
// every epoll descriptor of this process.
func TestCaptureListenerOutsideRuntimePoller(t *testing.T) {
	sb, ws := newTestSandbox(t, func(p *Policy) {
		p.CaptureChanges = true
		p.Limits.WallTime = 30 * time.Second
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan result, 1)
	go func() {
		done <- sh(t, sb, "echo x > f && echo ready && read line", func(c *Command) {
			c.Dir, c.Stdin, c.Stdout = ws, inR, outW
			c.BeforeChange = func([]string) error { return nil }
		})
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || line != "ready\n" {
		inW.Close()
		t.Fatalf("the command did not get past its captured write: %q, %v (%v)", line, err, <-done)
	}
	listeners, watched := map[string]bool{}, map[string]bool{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var epolls []string
	for _, e := range ents {
		switch l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l {
		case "anon_inode:seccomp notify":
			listeners[e.Name()] = true
		case "anon_inode:[eventpoll]":
			epolls = append(epolls, e.Name())
		}
	}
	for _, fd := range epolls {
		b, err := os.ReadFile("/proc/self/fdinfo/" + fd)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "tfd:" {
				watched[f[1]] = true
			}
		}
	}
	io.WriteString(inW, "go\n")
	inW.Close()
	if r := <-done; r.st.Code != 0 {
		t.Fatalf("captured command: %v", r)
	}
	if len(listeners) == 0 || len(watched) == 0 {
		t.Fatalf("nothing to compare: seccomp listeners %v, descriptors in the runtime's poller %v", listeners, watched)
	}
	for fd := range listeners {
		if watched[fd] {
			t.Errorf("the capture's seccomp listener (fd %s) is in the runtime's epoll set: its netpoll thread wakes at every captured call", fd)
		}
	}
}
