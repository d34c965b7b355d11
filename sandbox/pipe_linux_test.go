package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestPipeOurEndPolled: the end of a command's pipe we keep is
// non-blocking (served by the runtime poller, so reading a command's
// output holds no thread in a syscall), the child's stays blocking. It
// was blocking on both sides, though the comment said otherwise, and a
// captured command's exit waited up to 10 ms for sysmon.
func TestPipeOurEndPolled(t *testing.T) {
	for _, ours := range []pipeEnd{pipeOursRead, pipeOursWrite} {
		r, w, err := pipe(ours)
		if err != nil {
			t.Fatal(err)
		}
		nb := func(fd uintptr) bool {
			fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
			if err != nil {
				t.Fatal(err)
			}
			return fl&unix.O_NONBLOCK != 0
		}
		rNB, wNB := nb(r.Fd()), nb(w.Fd())
		if want := ours == pipeOursRead; rNB != want || wNB != !want {
			t.Errorf("pipe(%d): read end non-blocking %v, write end %v; want only our end", ours, rNB, wNB)
		}
		r.Close()
		w.Close()
	}
}
