package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
)

// Writers across checkpoints: what a seal must see, and how.
//
// A checkpoint is sealed between tool calls, while commands that outlive a
// call — background tasks, stdio MCP servers — keep running. Two of their
// changes would escape it:
//
//   - a captured call made across the seal: the pre-image recorded in the
//     checkpoint being sealed, the change itself made after its
//     post-image was read, so that the change lands in the next one
//     without a pre-image there;
//   - a write through a descriptor or a shared mapping opened before the
//     seal (internal/notify/held_linux.go): it makes no captured call.
//
// Writers is what closes both. Every command of a session is started with
// it (Command.Writers): its capture adds the files the command opens for
// writing to the session's registry (notify.HeldFiles). Pause, which the
// checkpoint recorder calls before it seals, first quiesces every
// command's capture (no captured call is half-made, and none starts), then
// asks the registry for the files a writable description still reaches,
// and, when there are any, stops every process of every command with
// SIGSTOP and waits until each thread is stopped or blocked where it can
// change nothing (QuietCall) — so that the seal reads each held file as
// it is, once, for its post-image and the next checkpoint's pre-image.
// Resume continues exactly the processes Pause stopped.
//
// Stopping is signals, not a cgroup freezer: it works wherever the tree
// can be told apart (its session, PID namespace or cgroup, as the writer
// watch tells it: treeIdentity), privileged or not. Its cost is paid only
// while some file is held open for writing across the seal. A process
// that cannot be brought to a stop within pauseWait (a thread blocked
// elsewhere in the kernel, or whose state cannot be read) leaves Pause's
// paused false: the recorder then says that those files' state at that
// checkpoint was read while their writers ran.

// pauseWait bounds how long Pause waits for the processes to stop.
var pauseWait = 2 * time.Second

// testPauseNoQuiesce makes Pause leave the captures running: tests set it
// to show a captured call made half before and half after a pause.
// testPauseQuiescing, if set, is called as Pause starts to quiesce them.
var (
	testPauseNoQuiesce bool
	testPauseQuiescing func()
)

// Writers is one session's set of confined commands that may change its
// workspace, with the registry of the files they opened for writing. Make
// one per session with NewWriters, give it to every command the session
// starts (Command.Writers) and to the checkpoint recorder, which calls
// Pause before each seal; Close it after the last command ended. It is
// safe for concurrent use. A nil *Writers does nothing.
type Writers struct {
	held *notify.HeldFiles
	// off: LITE_AGENT_HELD_WRITES=off in the supervisor's environment
	// (tests that show the writes escaping without it).
	off bool

	// pauseMu is held from Pause to its resume: one pause at a time, and
	// no command joins (add) while one is in force.
	pauseMu sync.Mutex
	mu      sync.Mutex
	procs   map[*Process]struct{}
}

// NewWriters returns an empty set.
func NewWriters() *Writers {
	return &Writers{held: notify.NewHeldFiles(), procs: map[*Process]struct{}{},
		off: os.Getenv("LITE_AGENT_HELD_WRITES") == "off"}
}

// registry is the file registry captures add to, or nil.
func (w *Writers) registry() *notify.HeldFiles {
	if w == nil || w.off {
		return nil
	}
	return w.held
}

// add enters a command whose capture exists, before it is spawned; a
// pause in force finishes first.
func (w *Writers) add(p *Process) {
	if w == nil || w.off {
		return
	}
	w.pauseMu.Lock()
	defer w.pauseMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.procs[p] = struct{}{}
}

// remove takes out a command whose tree is gone (or never started).
func (w *Writers) remove(p *Process) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.procs, p)
}

// Pause makes the session's commands hold still for a checkpoint's seal
// (see above) and returns the workspace files (canonical paths) that a
// writable descriptor or mapping of theirs still reaches. paused is false
// when some process could not be stopped within the bound: those files
// may be written while the seal reads them. Call resume once the seal is
// done; until then no captured call of the session is answered and no
// command starts.
func (w *Writers) Pause() (held []string, paused bool, resume func()) {
	if w == nil || w.off {
		return nil, true, func() {}
	}
	w.pauseMu.Lock()
	w.mu.Lock()
	procs := make([]*Process, 0, len(w.procs))
	for p := range w.procs {
		procs = append(procs, p)
	}
	w.mu.Unlock()
	if testPauseQuiescing != nil {
		testPauseQuiescing()
	}
	var releases []func()
	for _, p := range procs {
		if !testPauseNoQuiesce {
			releases = append(releases, p.capt.Quiesce())
		}
	}
	held = w.held.Files(len(procs) > 0)
	paused = true
	var stopped []int
	if len(held) > 0 {
		stopped, paused = stopTrees(procs, pauseWait)
	}
	var once sync.Once
	return held, paused, func() {
		once.Do(func() {
			for _, fd := range stopped {
				unix.PidfdSendSignal(fd, unix.SIGCONT, nil, 0)
				unix.Close(fd)
			}
			for _, r := range releases {
				r()
			}
			w.pauseMu.Unlock()
		})
	}
}

// Close releases the registry. Commands still running keep their
// descriptors; the registry no longer accounts for them.
func (w *Writers) Close() error {
	if w == nil {
		return nil
	}
	w.held.Close()
	return nil
}

// stopTrees stops every process of procs' trees with SIGSTOP and waits,
// up to wait, until every thread of each is stopped, dead, or blocked in
// a call where it changes nothing (notify.QuietCall). It returns pidfds
// of the processes it stopped (the caller continues them), and whether
// all came to rest in time.
func stopTrees(procs []*Process, wait time.Duration) (stopped []int, ok bool) {
	ours := map[int]bool{}
	deadline := time.Now().Add(wait)
	for delay := 50 * time.Microsecond; ; delay = min(2*delay, 5*time.Millisecond) {
		quiet := true
		var scanned []string // /proc, read once a round when needed
		for _, p := range procs {
			for _, pid := range p.members(&scanned) {
				if threadsAtRest(pid) {
					continue
				}
				quiet = false
				if ours[pid] {
					continue // stopping: its threads have not all got there yet
				}
				pidfd, err := unix.PidfdOpen(pid, 0)
				if err != nil {
					continue // gone
				}
				// The pidfd pins the process: still one of the tree, it
				// is the one looked at, not a new one with its number.
				if !p.member(pid) || unix.PidfdSendSignal(pidfd, unix.SIGSTOP, nil, 0) != nil {
					unix.Close(pidfd)
					continue
				}
				ours[pid] = true
				stopped = append(stopped, pidfd)
			}
		}
		if quiet {
			return stopped, true
		}
		if time.Now().After(deadline) {
			return stopped, false
		}
		time.Sleep(delay)
	}
}

// members lists the live processes of p's tree: its cgroup's list where
// the tree has a cgroup of its own (which no process of it can leave),
// else the processes in its PID namespace, else those of its session
// (what treeIdentity tells), found in /proc (scanned: its entries, read
// at most once per round). None once the command's main process has
// ended: its tree is being killed, and its cgroup may go to another
// command.
func (p *Process) members(scanned *[]string) []int {
	id := p.treeIdentity()
	if id == nil {
		return nil
	}
	p.killMu.Lock()
	switch {
	case p.exited:
		p.killMu.Unlock()
		return nil
	case p.v2 != nil:
		defer p.killMu.Unlock()
		return p.v2.Members()
	case p.slot != nil && p.s.cgroups.V1Track:
		defer p.killMu.Unlock()
		return p.slot.Members()
	}
	p.killMu.Unlock()
	if *scanned == nil {
		d, err := os.Open("/proc")
		if err != nil {
			return nil
		}
		*scanned, _ = d.Readdirnames(-1)
		d.Close()
	}
	var out []int
	for _, n := range *scanned {
		pid, err := strconv.Atoi(n)
		if err == nil && pid > 0 && id.inNamespaceOrSession(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// member reports whether pid is a process of p's tree now.
func (p *Process) member(pid int) bool {
	var scanned []string
	for _, m := range p.members(&scanned) {
		if m == pid {
			return true
		}
	}
	return false
}

// threadsAtRest reports whether every thread of pid is stopped (T, t),
// dead (Z, X), or blocked (D) in a call that changes nothing while the
// captures are quiesced. A thread whose call cannot be read is not at
// rest; a process that is gone is.
func threadsAtRest(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return true // gone
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	for _, tid := range tids {
		b, err := os.ReadFile(dir + "/" + tid + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return false
		}
		switch b[i+2] {
		case 'T', 't', 'Z', 'X':
			continue
		case 'D':
			sc, err := os.ReadFile(dir + "/" + tid + "/syscall")
			if err != nil {
				return false
			}
			f := strings.Fields(string(sc))
			if len(f) == 0 {
				return false
			}
			nr, err := strconv.Atoi(f[0])
			if err != nil || !notify.QuietCall(int32(nr)) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// treeIdentity is what tells p's processes, read from /proc the first
// time a pause needs it (callers hold the Writers' pauseMu); nil before
// the command is spawned.
func (p *Process) treeIdentity() *treeIdentity {
	if id := p.tree.Load(); id != nil {
		return id
	}
	if p.spawned.Load() == 0 {
		return nil
	}
	// Under killMu: the command's own goroutine releases its cgroup
	// there when the tree is gone (cleanup).
	p.killMu.Lock()
	id := p.identity()
	p.killMu.Unlock()
	p.tree.Store(&id)
	return &id
}

// inNamespaceOrSession is has without the cgroup test: the PID namespace
// alone where the tree has one (no process can leave it), else the
// session.
func (id treeIdentity) inNamespaceOrSession(pid int) bool {
	if id.pidns != "" {
		ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
		return err == nil && ns == id.pidns
	}
	sid, ok := sessionOf(pid)
	return ok && sid == id.sid
}
