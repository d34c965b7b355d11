package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Temporary directories outlive a process killed with SIGKILL: nothing
// runs to remove them. So each one's name says who owns it —
//
//	lite-agent-sandbox-<pid>.<start>-<random>
//
// with <start> the owner's start time (field 22 of /proc/PID/stat, clock
// ticks since boot), which tells a live owner from a later process that
// got the same pid. The first New of a process removes the directories of
// owners that are gone — at most once a sweepInterval for each user of a
// temporary directory (sweepDue) — and `lite-agent gc`, through
// RemoveStaleTempDirs, whenever it runs.

const tmpPrefix = "lite-agent-sandbox-"

// sweepInterval is how long after one process's sweep of a temporary
// directory the next ones skip theirs. A sweep reads the whole directory
// (a /tmp of thousands of entries costs milliseconds of CPU on every
// `sandbox run`), while a stale directory appears only when a sandbox's
// owner was killed with SIGKILL: once a minute removes it soon enough.
const sweepInterval = time.Minute

// sweepMarker, followed by the effective uid, names the file in the
// temporary directory whose modification time is that user's last sweep.
// A hidden name: neither parseTmpOwner nor a glob of the sandboxes'
// directories (lite-agent-sandbox-*) takes it for one of them.
const sweepMarker = "." + tmpPrefix + "swept-"

var (
	staleOnce sync.Once
	// staleDone is closed when the first New's sweep of stale directories
	// has ended (at once when none was due). The sweep runs beside the
	// command rather than before it (a /tmp of a few hundred entries is a
	// few hundred µs, which `sandbox run -- CMD` would otherwise wait
	// for); waitStaleSweep, in release, lets it finish before the Sandbox
	// is gone.
	staleDone chan struct{}
)

// tmpRootDir makes the directory under which per-command temporary
// directories are created; it is in the ruleset (read-write). The first
// call of a process starts the removal of stale ones (a directory of a
// live owner, this process included, is never removed).
func tmpRootDir() (string, error) {
	staleOnce.Do(func() {
		staleDone = make(chan struct{})
		if !sweepDue(os.TempDir(), time.Now()) {
			close(staleDone)
			return
		}
		go func() {
			defer close(staleDone)
			removeStaleTempDirs(os.TempDir())
		}()
	})
	tag := "0.0" // no start time: never judged stale (see parseTmpOwner)
	if start, err := procStartTime(os.Getpid()); err == nil {
		tag = strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(start, 10)
	}
	return os.MkdirTemp("", tmpPrefix+tag+"-")
}

// RemoveStaleTempDirs removes the temporary directories that sandboxes of
// processes now gone (killed with SIGKILL, say) left in os.TempDir(), and
// returns their paths. Only directories of this user whose owner is
// certainly gone are removed.
func RemoveStaleTempDirs() ([]string, error) {
	waitStaleSweep() // not two sweeps of one directory at once
	return removeStaleTempDirs(os.TempDir())
}

// waitStaleSweep waits for the first New's sweep, if one was started.
func waitStaleSweep() {
	staleOnce.Do(func() {}) // staleDone is set inside the Once: read it after
	if staleDone != nil {
		<-staleDone
	}
}

// sweepDue says whether this process sweeps dir now: no sweep of this
// user's there in the last sweepInterval. When it does, it marks the
// sweep (the marker's time, now) first, so that processes starting beside
// it skip theirs. A marker that is not this user's own regular file (one
// another user made in a shared /tmp to stop the sweeps, a symlink) is not
// trusted: every process sweeps, as with no marker at all. A marker time
// in the future (the clock was set back) is due, and set right.
func sweepDue(dir string, now time.Time) bool {
	marker := filepath.Join(dir, sweepMarker+strconv.Itoa(os.Geteuid()))
	fi, err := os.Lstat(marker)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if fd, err := unix.Open(marker, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600); err == nil {
			unix.Close(fd)
		}
		return true
	case err != nil || !fi.Mode().IsRegular() || !ownedByMe(fi) || !singleLink(fi):
		return true
	}
	if age := now.Sub(fi.ModTime()); age >= 0 && age < sweepInterval {
		return false
	}
	// Through a descriptor of the very file looked at, so that a name
	// swapped meanwhile is not what gets the new time.
	fd, err := unix.Open(marker, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Uid != uint32(os.Geteuid()) {
		return true
	}
	ts := []unix.Timespec{unix.NsecToTimespec(now.UnixNano()), unix.NsecToTimespec(now.UnixNano())}
	unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH)
	return true
}

// singleLink: the marker is a file of its own, not a hard link another
// user made to one of ours (where fs.protected_hardlinks is off), whose
// times the sweep would otherwise reset and read.
func singleLink(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 1
}

func removeStaleTempDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		pid, start, ok := parseTmpOwner(e.Name())
		if !ok || !e.IsDir() { // IsDir: never a symlink
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || !ownedByMe(fi) {
			continue
		}
		if !ownerGone(pid, start) {
			continue
		}
		if err := removeAll(p); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: removing the stale temporary directory %s: %w", p, err))
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// parseTmpOwner reads pid and start time from a temp dir's name.
func parseTmpOwner(name string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(name, tmpPrefix)
	if !found {
		return 0, 0, false
	}
	tag, _, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	ps, ss, found := strings.Cut(tag, ".")
	if !found {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(ps)
	start, err2 := strconv.ParseUint(ss, 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 || start == 0 {
		return 0, 0, false
	}
	return pid, start, true
}

// ownerGone: no process pid, or one that started at another time. A
// /proc entry that cannot be read (another PID namespace, hidepid) is
// not proof: the directory stays.
func ownerGone(pid int, start uint64) bool {
	now, err := procStartTime(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && now != start
}

// procStartTime returns field 22 of /proc/PID/stat (after the command
// name in parentheses, which may itself hold spaces and parentheses).
func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("sandbox: malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, errors.New("sandbox: malformed /proc stat")
	}
	return strconv.ParseUint(f[19], 10, 64) // fields 3.. follow ')'
}

// ownedByMe: fi belongs to this process's effective uid.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
