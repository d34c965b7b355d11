package notify

import "golang.org/x/sys/unix"

// pollListener asks, without blocking, whether a seccomp listener has a
// notification waiting (ready) or has no process left to serve (hup). Both
// false means: park until the runtime's poller reports it readable.
//
// poll with a zero timeout still fails with EINTR when a signal is pending
// as it looks — and the Go runtime signals its threads all the time
// (preemption, GC). Reading that failure as "no revents, so hang-up" ended
// the supervisor loop while its processes lived on, each later connect of
// theirs then blocking forever in the kernel: the start-up hang of issue 3.
// Only POLLHUP or POLLNVAL mean the listener is finished.
//
// POLLERR alone does not: the kernel's seccomp_notify_poll answers
// exactly EPOLLERR when taking the filter's lock is interrupted by a
// signal pending on the polling thread, while the lock is contended (a
// process of the tree notifying at that moment). Read as the end, it
// stopped the loop under load with a call received but never answered:
// its process waited forever (TestCaptureStress).
func pollListener(fd uintptr) (ready, hup bool) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		poll := unix.Poll
		if TestHooks.Poll != nil {
			poll = TestHooks.Poll
		}
		n, err := poll(pfd, 0)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN || err == unix.ENOMEM:
			continue // transient: ask again
		case err != nil:
			return false, true // EBADF, EFAULT: the listener is unusable
		case n == 0:
			return false, false
		}
		switch r := pfd[0].Revents; {
		case r&unix.POLLIN != 0:
			return true, false
		case r&(unix.POLLHUP|unix.POLLNVAL) != 0:
			return false, true
		case r&unix.POLLERR != 0:
			continue // an interrupted look (see above): ask again
		}
		return false, false
	}
}
