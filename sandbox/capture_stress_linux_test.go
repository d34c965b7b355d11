package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCaptureStress runs parallel file work under change capture while
// both sides are interrupted by signals, as on a loaded machine: the
// command's threads by a 50 µs timer, and every thread of this process —
// the supervisor's included — by a storm of SIGURG, the signal Go's
// runtime preempts with (testdata/capture_stress.c says what the command
// checks). Three ways the supervisor failed so:
//
//   - an open answered with ADDFD_FLAG_SEND came back as descriptor 0
//     when the ioctl was interrupted, and the command's next write
//     failed "bad file descriptor", as go's parallel module extraction
//     did on a loaded machine (every run);
//   - an interrupted poll of the listener (POLLERR alone) ended the
//     loop, and an answer refused with EINTR was lost: a call received
//     and never answered, its process waiting until the wall-time limit
//     (about one run in four, and one in twenty).
func TestCaptureStress(t *testing.T) {
	bin := testProgram(t, "capture_stress", "would check captured opens under signal storms return the descriptor asked for", "-O1", "-pthread")
	sb, ws := newTestSandbox(t, func(p *Policy) {
		p.CaptureChanges = true
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, filepath.Dir(bin))
		p.Limits.WallTime = time.Minute // a round takes seconds
	})
	var mu sync.Mutex
	recorded := 0
	hook := func(paths []string) error {
		mu.Lock()
		recorded += len(paths)
		mu.Unlock()
		return nil
	}
	stop := make(chan struct{})
	var storm sync.WaitGroup
	storm.Add(1)
	go func() {
		defer storm.Done()
		signalStorm(stop)
	}()
	defer func() { close(stop); storm.Wait() }()

	rounds, threads, files := 3, 8, 150
	if testing.Short() {
		rounds = 1
	}
	for r := range rounds {
		dir := filepath.Join(ws, "r"+strconv.Itoa(r))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		st, err := sb.Run(context.Background(), &Command{Path: bin,
			Args:   []string{"capture_stress", dir, strconv.Itoa(threads), strconv.Itoa(files)},
			Stdout: &out, Stderr: &errb, BeforeChange: hook})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %s", r, strings.TrimSpace(lastLine(out.String())))
		if st.TimedOut {
			t.Fatalf("round %d: the command hung (a captured call never answered):\n%s%s", r, out.String(), errb.String())
		}
		if st.Code != 0 {
			t.Fatalf("round %d: the command saw wrong answers (%v):\n%s%s", r, st, out.String(), errb.String())
		}
	}
	if recorded == 0 {
		t.Fatal("the hook heard of no change: the calls were not captured")
	}
}

// signalStorm sends SIGURG to every thread of this process, over and
// over, until stop is closed. Go's runtime takes SIGURG as a preemption
// request and ignores one it did not ask for.
func signalStorm(stop <-chan struct{}) {
	pid := os.Getpid()
	for {
		select {
		case <-stop:
			return
		default:
		}
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return
		}
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				unix.Tgkill(pid, tid, unix.SIGURG)
			}
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
