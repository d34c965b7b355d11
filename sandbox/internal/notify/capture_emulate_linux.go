package notify

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Change capture by emulation: why the process's own call never runs.
//
// A capture that looks at the path a call names and then lets the call go
// on (SECCOMP_USER_NOTIF_FLAG_CONTINUE) decides on one reading of the
// process's memory, working directory and file system, and the kernel
// then makes the call on a second reading. A second thread that rewrites
// the path buffer, moves the working directory (chdir is not captured) or
// swaps a descriptor in between makes a workspace change the hook never
// heard of (TestCaptureRace shows it for every call class). So the
// supervisor performs each captured call itself, on what it resolved, and
// hands back the result:
//
//   - the path is read once; the directory holding its last component is
//     opened with the one resolver of the child's paths (openChildPathAt:
//     openat2 from the thread's root, cwd or dirfd, RESOLVE_IN_ROOT for
//     absolute paths, RESOLVE_NO_MAGICLINKS) and every step after that is
//     made on descriptors: *at calls on that directory, a final symlink
//     followed by hand one link at a time;
//   - an open is made by the supervisor (without O_TRUNC), the pre-image
//     recorded, the file truncated only then, the descriptor installed in
//     the process with SECCOMP_IOCTL_NOTIF_ADDFD and the call answered
//     with its number, the lowest free one, as open(2) returns (sendFD
//     says why in two steps);
//   - unlink, rmdir, mkdir, mknod, rename, link, symlink, truncate and the
//     chmod family are made with the directories resolved; fchmod and a
//     reopen through /proc/self/fd/N act on the process's very file,
//     taken with pidfd_getfd;
//   - bind of a pathname unix socket binds the process's socket, taken
//     with pidfd_getfd, in the resolved directory.
//
// Captured calls are answered one at a time, and every call of the tree
// that changes a name is captured: while the hook reads a pre-image, no
// process of the tree can rename, remove or create anything — but in the
// own places (own_linux.go), whose calls go on by themselves meanwhile,
// and which nothing crosses by name. The hook is
// given the path of the very inode the call changes, checked against our
// descriptor before and after it runs (same device and inode), so a
// pre-image is the pre-image of what is changed.
//
// The supervisor must not do more than the process could:
//
//   - credentials: the calls run on a thread of their own (credWorker)
//     with the process's fsuid, fsgid and groups and no capabilities (the
//     process has none, even as root), discarded when the command ends;
//   - Landlock: the supervisor is outside the process's domain, so it
//     applies the domain's write rule itself: a change is made only in a
//     directory beneath a read-write root of the policy (or to one of the
//     device files the policy lets a shell write to, /dev/null and the
//     like). Elsewhere Landlock would refuse the process: EACCES (EXDEV
//     for the source of a link or rename, what Landlock's refer rule
//     answers). chmod, which Landlock does not govern at all, is confined
//     the same way: outside the read-write roots it is refused;
//   - anything that cannot be resolved or emulated is refused with EPERM
//     (fail closed), the process's own call never running.
//
// Three cases still let the process's own call go on, all decided on
// registers, which no other thread can change: a write-side open with
// O_TMPFILE (it makes an unnamed file and changes no existing inode or
// name; a later linkat names it, and is emulated; where the process
// cannot write the roots itself it is made here too, Capture.tmpfile),
// exit_group, and umask (noted first: Capture.umaskOf). And where the
// process's own Landlock domain can write nothing but its temporary
// directories and the writable devices (CaptureOptions.OwnRoot), a call
// that changes only those is its own to make: whatever another thread
// redirects it to, Landlock refuses it there (own_linux.go).

// credWorker runs functions with a confined process's file-system
// credentials and no capabilities, on the OS thread of the goroutine that
// answers the command's captured calls. Capabilities, fsuid and groups
// belong to a thread, not to a process: do takes the command's on this
// thread, runs the function, and gives the thread its own back. The
// thread is locked and never unlocked, so the Go runtime discards it when
// that goroutine ends instead of running other goroutines on it (new
// threads are cloned from the runtime's template thread, never from a
// locked one). A thread-hop per call would cost a wake-up of another
// thread each time; switching credentials costs a few system calls.
type credWorker struct {
	cr     creds
	change bool // fsuid/fsgid/groups differ from ours (root only)
	hdr    unix.CapUserHeader
	caps   [2]unix.CapUserData // this thread's own, restored after each call
	broken bool                // credentials could not be restored: refuse
}

// creds are a process's file-system credentials as /proc/PID/status
// shows them in our user namespace.
type creds struct {
	uid, gid uint32
	groups   []uint32
}

func readCreds(tid int) (creds, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return creds{}, err
	}
	var cr creds
	var seen int
	for _, line := range splitLines(b) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		switch k {
		case "Uid", "Gid":
			// real, effective, saved, file system: the last one is
			// what permission checks use.
			if len(f) != 4 {
				return creds{}, errors.New("sandbox: capture: bad " + k + " line")
			}
			n, err := strconv.ParseUint(f[3], 10, 32)
			if err != nil {
				return creds{}, err
			}
			if k == "Uid" {
				cr.uid = uint32(n)
			} else {
				cr.gid = uint32(n)
			}
			seen++
		case "Groups":
			for _, g := range f {
				n, err := strconv.ParseUint(g, 10, 32)
				if err != nil {
					return creds{}, err
				}
				cr.groups = append(cr.groups, uint32(n))
			}
			seen++
		}
	}
	if seen != 3 {
		return creds{}, errors.New("sandbox: capture: no credentials in /proc status")
	}
	return cr, nil
}

// newCredWorker locks the calling goroutine to its thread for good and
// prepares it to run calls with cr. It fails when this process cannot take
// those credentials (an unprivileged supervisor and a child whose uid is
// not ours: the user namespace maps the child elsewhere).
func newCredWorker(cr creds) (*credWorker, error) {
	runtime.LockOSThread() // never unlocked: see credWorker
	// Our own umask and working directory, so that setting the
	// process's umask before a creation, or entering a directory to bind
	// a socket, changes no other thread.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return nil, err
	}
	w := &credWorker{cr: cr, hdr: unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}}
	if err := unix.Capget(&w.hdr, &w.caps[0]); err != nil {
		return nil, err
	}
	w.change = cr.uid != uint32(os.Geteuid()) || cr.gid != uint32(os.Getegid()) || !sameGroups(cr.groups)
	if w.change && os.Geteuid() != 0 {
		return nil, errors.New("sandbox: capture: the command's credentials are not this process's, and it cannot take them (not root)")
	}
	return w, nil
}

// enter gives this thread the command's credentials. Raw system calls:
// the libc and Go wrappers of setgroups change every thread of the
// process, these change this one only.
func (w *credWorker) enter() bool {
	if TestHooks.CaptureKeepCreds {
		return true
	}
	if w.change {
		if !setThreadIDs(w.cr) {
			return false
		}
	}
	// No capabilities at all: the command has none (the spawn path drops
	// them all, for root too), so neither may its calls made here —
	// CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_NET_BIND_SERVICE, ...
	none := w.caps
	none[0].Effective, none[1].Effective = 0, 0
	return unix.Capset(&w.hdr, &none[0]) == nil
}

// exit gives the thread its own credentials back.
func (w *credWorker) exit() bool {
	if TestHooks.CaptureKeepCreds {
		return true
	}
	if unix.Capset(&w.hdr, &w.caps[0]) != nil {
		return false
	}
	if w.change {
		groups, _ := unix.Getgroups()
		own := creds{uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())}
		for _, g := range groups {
			own.groups = append(own.groups, uint32(g))
		}
		return setThreadIDs(own)
	}
	return true
}

// setThreadIDs sets this thread's groups, fsgid and fsuid (needs
// CAP_SETGID/CAP_SETUID in effect).
func setThreadIDs(cr creds) bool {
	var gp unsafe.Pointer
	if len(cr.groups) > 0 {
		gp = unsafe.Pointer(&cr.groups[0])
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(cr.groups)), uintptr(gp), 0); e != 0 {
		return false
	}
	// setfsgid/setfsuid return the previous id, never an error: asking
	// with an invalid id (-1) returns the current one.
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(cr.gid), 0, 0)
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(cr.uid), 0, 0)
	g, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0)
	u, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	return uint32(g) == cr.gid && uint32(u) == cr.uid
}

func sameGroups(g []uint32) bool {
	ours, err := unix.Getgroups()
	if err != nil || len(ours) != len(g) {
		return false
	}
	for i := range g {
		if uint32(ours[i]) != g[i] {
			return false
		}
	}
	return true
}

// do runs f with the command's credentials. false: f did not run (the
// credentials could not be taken), or they could not be given back — the
// thread is then marked broken and every later call refused.
func (w *credWorker) do(f func()) bool {
	if w.broken {
		return false
	}
	if !w.enter() {
		w.broken = !w.exit()
		return false
	}
	f()
	if !w.exit() {
		w.broken = true
	}
	return true
}

// worker returns the command's worker, started at its first call. All
// processes of the tree have the same credentials: none has the
// capabilities to change them, and no_new_privs keeps exec from doing so.
func (c *Capture) worker(tid int) (*credWorker, unix.Errno) {
	if c.cred == nil && c.credErr == nil {
		cr, err := readCreds(tid)
		if err == nil {
			c.cr = cr
			c.cred, err = newCredWorker(cr)
		}
		c.credErr = err
	}
	if c.credErr != nil || c.cred.broken {
		return nil, unix.EPERM
	}
	return c.cred, 0
}

// close ends the worker and unblocks the FIFO opens still waiting (see
// openFIFO). Called once the listener's loop has ended.
func (c *Capture) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	if c.ownFD >= 0 {
		unix.Close(c.ownFD)
		c.ownFD = -1
	}
	if c.tmpFD >= 0 {
		unix.Close(c.tmpFD)
		c.tmpFD = -2
	}
	c.mu.Unlock()
	c.fifoMu.Lock()
	for fd := range c.fifos {
		pokeFIFO(fd)
	}
	c.fifoMu.Unlock()
}

// notifier answers notifications on a listener.
type notifier struct {
	rc syscall.RawConn
	id uint64
}

func (n notifier) valid() bool {
	var e syscall.Errno
	id := n.id
	if err := n.rc.Control(func(fd uintptr) {
		_, e = listenerIoctl(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id))
	}); err != nil {
		return false
	}
	return e == 0
}

func (n notifier) confirm() error {
	if !n.valid() {
		return errAbandoned
	}
	return nil
}

// send answers: val or errno, or continue.
func (n notifier) send(val int64, errno unix.Errno, flags uint32) {
	resp := seccompNotifResp{ID: n.id, Val: val, Flags: flags}
	if errno != 0 {
		resp.Val, resp.Error = 0, -int32(errno)
	}
	n.rc.Control(func(fd uintptr) {
		// ENOENT: the call was abandoned (signal) or the process died.
		listenerIoctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	})
}

// struct seccomp_notif_addfd and SECCOMP_IOCTL_NOTIF_ADDFD,
// _IOW('!', 3, struct seccomp_notif_addfd).
type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

const seccompIoctlNotifAddfd = 0x40182103

// sendFD installs fd in the process (close-on-exec if cloexec) and
// answers the call with its number: the lowest free one, as open(2)
// returns.
//
// In two steps, ADDFD and then SEND, never in one with
// SECCOMP_ADDFD_FLAG_SEND. That flag marks the call answered before the
// process has taken the descriptor, and the ADDFD ioctl waits for it to
// do so interruptibly: a signal reaching the waiting thread of ours
// (Go's preemption SIGURG, a SIGCHLD, a stop of this process) takes the
// descriptor back out of the queue, and the process, woken to an
// answered call with no descriptor, returns 0 — its next write goes to
// its stdin ("bad file descriptor"; TestCaptureStress). A plain ADDFD
// that is interrupted leaves the call unanswered: the process waits on,
// and the ioctl, restarted, installs the descriptor once.
//
// The descriptor is in the process's table a moment before the call
// returns, as the kernel's own open installs it before returning: a
// thread of the process could use or close it meanwhile, which it could
// as well a moment later. The filter waits killably once a call is
// received (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV): between the two
// steps only a fatal signal ends the call, and the descriptor with the
// process.
func (n notifier) sendFD(fd int, cloexec bool) {
	a := seccompNotifAddfd{ID: n.id, Srcfd: uint32(fd)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	var r uintptr
	var e syscall.Errno
	n.rc.Control(func(lfd uintptr) { r, e = listenerIoctl(lfd, seccompIoctlNotifAddfd, unsafe.Pointer(&a)) })
	switch e {
	case 0:
		n.send(int64(r), 0, 0)
	case unix.ENOENT:
		// Abandoned (the process was killed): nobody to answer.
	case unix.EMFILE:
		n.send(0, unix.EMFILE, 0) // RLIMIT_NOFILE of the process
	default:
		n.send(0, unix.EPERM, 0)
	}
}

// target is the last component of a path a call names, as the process
// would resolve it: a directory descriptor of ours and a name in it.
type target struct {
	dir   int    // O_PATH directory; -1 when fd is set
	name  string // one component, with any trailing slashes
	path  string // canonical path of dir/name, or "" (fd without a name)
	links []string
	// fd: the call names one of the process's descriptors itself
	// (/proc/self/fd/N, /dev/stdout): our copy of it, or -1.
	fd int
	// dirDev is dir's device.
	dirDev uint64
	// looked: resolve has just stat'ed the last component (following
	// links), with result st, err: what firstStat gives once.
	looked bool
	st     unix.Stat_t
	stErr  error
}

func (t *target) close() {
	if t.dir >= 0 {
		unix.Close(t.dir)
	}
	if t.fd >= 0 {
		unix.Close(t.fd)
	}
	t.dir, t.fd = -1, -1
}

// base is the last component without its trailing slashes.
func (t *target) base() string {
	b := strings.TrimRight(t.name, "/")
	if b == "" {
		return "."
	}
	return b
}

// stat looks at the last component itself (never following it).
func (t *target) stat() (unix.Stat_t, error) {
	var st unix.Stat_t
	var err error
	if t.dir < 0 {
		err = unix.Fstat(t.fd, &st)
	} else {
		err = unix.Fstatat(t.dir, t.base(), &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	return st, err
}

// firstStat is stat, taken by resolve if it looked already: no captured
// call of the tree runs in between. Later looks (after a hook) must call
// stat itself.
func (t *target) firstStat() (unix.Stat_t, error) {
	if t.looked {
		t.looked = false
		return t.st, t.stErr
	}
	return t.stat()
}

// splitLast splits p into the directory that holds its last component
// and that component (trailing slashes kept).
func splitLast(p string) (dir, name string) {
	trimmed := strings.TrimRight(p, "/")
	if trimmed == "" {
		return "/", "."
	}
	i := strings.LastIndexByte(trimmed, '/')
	switch {
	case i < 0:
		return ".", p
	case i == 0:
		return "/", p[1:]
	}
	return trimmed[:i], p[i+1:]
}

// selfRef recognises paths that name the calling process's own /proc
// entries — /proc/self/fd/N, /proc/self/cwd, /dev/stdout, … — which the
// kernel resolves through magic links, and the resolver may not (it
// would resolve /proc/self as the supervisor). ok: p is rewritten as
// dirfd+rest, or, with fd >= 0 and rest "", it names descriptor fd.
func selfRef(p string, tid int) (dirfd int32, fd int, rest string, ok bool) {
	switch p {
	case "/dev/stdin":
		return 0, 0, "", true
	case "/dev/stdout":
		return 1, 1, "", true
	case "/dev/stderr":
		return 2, 2, "", true
	}
	if !strings.HasPrefix(p, "/") {
		return 0, -1, "", false
	}
	var comps []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			comps = append(comps, c)
		}
	}
	// tail is what follows comps[:i], as a relative path; "." and ".."
	// stay components, a trailing slash stays.
	tail := func(i int) string {
		r := strings.Join(comps[i:], "/")
		if r != "" && strings.HasSuffix(p, "/") {
			r += "/"
		}
		return r
	}
	num := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 0 && strconv.Itoa(n) == s
	}
	if len(comps) >= 3 && comps[0] == "dev" && comps[1] == "fd" {
		if n, ok := num(comps[2]); ok {
			return int32(n), n, tail(3), true
		}
	}
	if len(comps) < 3 || comps[0] != "proc" {
		return 0, -1, "", false
	}
	self := comps[1] == "self" || comps[1] == "thread-self" || comps[1] == strconv.Itoa(tid)
	if n, isNum := num(comps[1]); !self && isNum {
		tgid, err := tgidOf(tid)
		self = err == nil && tgid == n
	}
	if !self {
		return 0, -1, "", false
	}
	switch comps[2] {
	case "cwd":
		if r := tail(3); r != "" {
			return atFDCWD, -1, r, true
		}
		return atFDCWD, -1, ".", true
	case "root":
		return atFDCWD, -1, "/" + tail(3), true
	case "fd":
		if len(comps) >= 4 {
			if n, ok := num(comps[3]); ok {
				return int32(n), n, tail(4), true
			}
		}
	}
	return 0, -1, "", false
}

// resolve resolves the path a call names to a target, as thread tid
// would: on the credential worker, so that a directory the process cannot
// search stops us too. follow: a final symlink is followed (by hand, one
// link at a time, each target re-resolved from the process's root or the
// link's directory). take copies the process's descriptor n (it must run
// with the supervisor's privileges, so it is done before).
func (c *Capture) resolve(w *credWorker, n notifier, tid int, dirfd int32, p string, follow bool, take func(int) (int, unix.Errno)) (t target, errno unix.Errno) {
	t = target{dir: -1, fd: -1}
	for hops := 0; ; hops++ {
		if hops > 40 {
			return t, unix.ELOOP
		}
		if p == "" {
			return t, unix.ENOENT
		}
		if d, fd, rest, ok := selfRef(p, tid); ok {
			if fd >= 0 && strings.Trim(rest, "/") == "" {
				// The descriptor itself: our copy of the very file.
				copyFD, e := take(fd)
				if e != 0 {
					return t, e
				}
				t.fd = copyFD
				if pt, ok := fdPath(copyFD); ok {
					t.path = pt
				}
				return t, 0
			}
			dirfd, p = d, rest
		}
		dir, name := splitLast(p)
		var pfd int
		if !w.do(func() { pfd, errno = openChildPathAt(tid, c.mountNS, dirfd, dir, true, n.confirm) }) {
			return t, unix.EPERM
		}
		if errno != 0 {
			return t, errno
		}
		t.dir, t.name = pfd, name
		var dst unix.Stat_t
		if unix.Fstat(pfd, &dst) != nil {
			t.close()
			return t, unix.EPERM
		}
		// Never inside /proc: a path reaching it other than the
		// process's own entries above would be resolved as ours. The
		// workspace's file system is not one (its device, mounted all
		// along, names no other): only others are asked.
		if ws, ok := c.workspaceDev(); !ok || dst.Dev != ws {
			var fs unix.Statfs_t
			if unix.Fstatfs(pfd, &fs) != nil || fs.Type == unix.PROC_SUPER_MAGIC {
				t.close()
				return t, unix.EPERM
			}
		}
		// The directory's device says where it lies: the sandbox's own
		// file systems (the root skeleton, the private /tmp, the devpts
		// instance), mounted nowhere in our tree, are named from the
		// command's root; anything else by its path in ours.
		t.dirDev = dst.Dev
		var dpath string
		var ok bool
		switch {
		case c.rootDev != 0 && dst.Dev == c.rootDev:
			dpath, ok = c.skeletonPath(pfd, &dst)
		case c.tmpDev != 0 && dst.Dev == c.tmpDev:
			dpath, ok = c.tmpPath(pfd, &dst)
		case c.ptyDev != 0 && dst.Dev == c.ptyDev:
			dpath, ok = c.ptyPath(&dst)
		default:
			dpath, ok = fdPathStat(pfd, &dst)
		}
		if !ok {
			// No name the hook can be given (deeper than PATH_MAX,
			// removed, renamed meanwhile): fail closed.
			t.close()
			return t, unix.EPERM
		}
		t.path = joinPath(dpath, t.base())
		if !follow {
			return t, 0
		}
		st, err := t.stat()
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.looked, t.st, t.stErr = true, st, err
			return t, 0 // absent (a creation) or not a link: this is it
		}
		var link string
		var lerr error
		if !w.do(func() { link, lerr = readlinkat(pfd, t.base()) }) {
			lerr = unix.EPERM
		}
		if lerr != nil {
			t.close()
			return t, errnoOf(lerr, unix.EPERM)
		}
		t.links = append(t.links, t.path)
		t.close()
		t.dir, t.fd = -1, -1
		trail := name[len(strings.TrimRight(name, "/")):]
		if strings.HasPrefix(link, "/") {
			p = link + trail
		} else {
			p = dir + "/" + link + trail
		}
	}
}

func readlinkat(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// fdPath is the canonical path of our descriptor fd, if the name the
// kernel gives it still names that very inode (a file deleted, renamed
// meanwhile, deeper than PATH_MAX, or a pipe has none).
func fdPath(fd int) (string, bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return "", false
	}
	return fdPathStat(fd, &st)
}

// fdPathStat is fdPath, given fd's stat.
func fdPathStat(fd int, st *unix.Stat_t) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(p, "/") {
		return "", false
	}
	var b unix.Stat_t
	if unix.Lstat(p, &b) != nil || st.Dev != b.Dev || st.Ino != b.Ino {
		return "", false
	}
	return p, true
}

func joinPath(dir, name string) string {
	switch {
	case name == ".":
		return dir
	case name == "..":
		return filepath.Dir(dir)
	case dir == "/":
		return "/" + name
	}
	return dir + "/" + name
}

// writable says whether Landlock lets the process change t's directory
// entry (or, for a file rule, t itself): beneath a read-write root, or a
// device file the policy lets a shell write to.
func (c *Capture) writable(t *target) bool {
	if t.path == "" {
		return false
	}
	dir := t.path
	if t.base() != "." {
		dir = t.path[:max(strings.LastIndexByte(t.path, '/'), 1)]
	}
	for _, r := range c.roots {
		if paths.Within(dir, r) || t.path == r {
			return true
		}
	}
	if c.onTmp(t) {
		// The sandbox's private /tmp: read-write, as a root — but not
		// a grant mounted on it (a read-only one: its mount refuses a
		// regular file's write, not a FIFO's or a device's).
		return !mountRoot(t)
	}
	if c.onPty(t) {
		return true // the sandbox's ptys, which the policy grants
	}
	return c.devices[t.path]
}

// takeFD returns a function that copies thread tid's descriptor n.
func takeFD(tid int, n notifier) func(int) (int, unix.Errno) {
	return func(fd int) (int, unix.Errno) {
		pidfd, err := pidfdOfThread(tid)
		if err != nil {
			return -1, unix.EPERM
		}
		defer unix.Close(pidfd)
		if n.confirm() != nil {
			return -1, unix.EPERM // the pidfd may be another process's
		}
		cp, err := unix.PidfdGetfd(pidfd, fd, 0)
		if err != nil {
			return -1, errnoOf(err, unix.EBADF)
		}
		return cp, 0
	}
}

// answer performs one captured call for the process and answers it (see
// the file comment).
func (c *Capture) answer(req *seccompNotif, rc syscall.RawConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := notifier{rc: rc, id: req.ID}
	val, errno, cont, sent := c.emulate(req, n)
	switch {
	case sent:
	case cont:
		n.send(0, 0, unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE)
	default:
		n.send(val, errno, 0)
	}
}

// emulate performs req. sent: already answered (a descriptor installed);
// cont: let the process's own call go on (only where that is safe, see
// the file comment).
func (c *Capture) emulate(req *seccompNotif, n notifier) (val int64, errno unix.Errno, cont, sent bool) {
	a := req.Data.Args
	tid := int(req.Pid)
	call := c.nr[req.Data.Nr]
	c.op = call // for the refusals recorded while it is answered
	switch call {
	case "exit_group":
		// The process is about to end: what it wrote is queued, and it
		// still exists, so the listener can tell it is the command's.
		c.foreign.Drain()
		return 0, 0, true, false
	case "umask":
		// Changes no file: noted (umaskOf), then made by the process.
		c.umaskMoved = true
		return 0, 0, true, false
	case "open", "openat", "creat", "truncate", "chmod", "fchmod", "fchmodat", "fchmodat2":
	default:
		c.names = nil // a name may change: the cached walks are stale
	}
	if c.closed {
		return 0, unix.EPERM, false, false
	}
	w, e := c.worker(tid)
	if e != 0 {
		return c.failed(e)
	}
	take := takeFD(tid, n)
	str := func(addr uint64) (string, unix.Errno) {
		s, err := readString(tid, addr, &c.pathBuf)
		if err != nil {
			if errors.Is(err, unix.ENAMETOOLONG) {
				return "", unix.ENAMETOOLONG
			}
			return "", unix.EFAULT
		}
		return s, 0
	}
	switch call {
	case "open", "openat", "creat":
		dirfd, addr, flags, mode := atFDCWD, a[0], a[1], a[2]
		switch call {
		case "openat":
			dirfd, addr, flags, mode = int32(a[0]), a[1], a[2], a[3]
		case "creat":
			flags, mode = unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, a[1]
		}
		tmpfile := flags&unix.O_TMPFILE == unix.O_TMPFILE
		if flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC) == 0 || tmpfile && c.ownRoot == "" {
			// A read (never notified), or an unnamed file: decided on
			// registers, changing no existing inode or name (where
			// the process may make one itself: see tmpfile).
			return 0, 0, true, false
		}
		p, e := str(addr)
		if e != 0 {
			return 0, e, false, false
		}
		if tmpfile {
			return c.tmpfile(w, n, tid, dirfd, p, int(flags), uint32(mode))
		}
		// In the process's own temporary directory: its own call
		// (own_linux.go).
		if c.ownQuick(w, n, tid, p, flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL) {
			return 0, 0, true, false
		}
		return c.open(w, n, tid, dirfd, p, int(flags), uint32(mode))
	case "truncate":
		p, e := str(a[0])
		if e != 0 {
			return 0, e, false, false
		}
		return c.truncate(w, n, tid, p, int64(a[1]))
	case "chmod", "fchmodat", "fchmodat2", "fchmod":
		dirfd, p, mode, follow := atFDCWD, "", uint32(a[1]), true
		var e unix.Errno
		switch call {
		case "chmod":
			p, e = str(a[0])
		case "fchmod":
			dirfd, p = int32(a[0]), "/proc/self/fd/"+strconv.Itoa(int(int32(a[0])))
		default:
			dirfd, mode = int32(a[0]), uint32(a[2])
			p, e = str(a[1])
			if call == "fchmodat2" {
				follow = a[3]&unix.AT_SYMLINK_NOFOLLOW == 0
				if a[3]&^uint64(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
					return 0, unix.EINVAL, false, false
				}
				if p == "" && a[3]&unix.AT_EMPTY_PATH != 0 {
					p = "/proc/self/fd/" + strconv.Itoa(int(dirfd))
				}
			}
		}
		if e != 0 {
			return 0, e, false, false
		}
		if int32(a[0]) < 0 && call == "fchmod" {
			return 0, unix.EBADF, false, false
		}
		return c.chmod(w, n, tid, dirfd, p, mode, follow, call == "fchmod", take)
	case "unlink", "rmdir", "unlinkat":
		dirfd, addr, flags := atFDCWD, a[0], 0
		switch call {
		case "rmdir":
			flags = unix.AT_REMOVEDIR
		case "unlinkat":
			dirfd, addr, flags = int32(a[0]), a[1], int(a[2])
		}
		p, e := str(addr)
		if e != 0 {
			return 0, e, false, false
		}
		if c.ownQuick(w, n, tid, p, false) {
			return 0, 0, true, false // own_linux.go
		}
		// Only rmdir can remove a directory (unlink of one fails EISDIR).
		removesDir := flags&unix.AT_REMOVEDIR != 0
		return c.atCall(w, n, tid, dirfd, p, false, removesDir, nil, func(t *target) error { return unix.Unlinkat(t.dir, t.name, flags) })
	case "mkdir", "mkdirat", "mknod", "mknodat":
		dirfd, addr, mode, dev := atFDCWD, a[0], uint32(a[1]), a[2]
		if call == "mkdirat" || call == "mknodat" {
			dirfd, addr, mode, dev = int32(a[0]), a[1], uint32(a[2]), a[3]
		}
		p, e := str(addr)
		if e != 0 {
			return 0, e, false, false
		}
		if c.ownQuick(w, n, tid, p, false) {
			return 0, 0, true, false // own_linux.go
		}
		umask := c.umaskOf(tid)
		return c.atCall(w, n, tid, dirfd, p, true, false, nil, func(t *target) error {
			unix.Umask(umask) // this thread's own (CLONE_FS unshared)
			if strings.HasPrefix(call, "mkdir") {
				return unix.Mkdirat(t.dir, t.name, mode)
			}
			return unix.Mknodat(t.dir, t.name, mode, int(dev))
		})
	case "symlink", "symlinkat":
		dirfd, addr := atFDCWD, a[1]
		if call == "symlinkat" {
			dirfd, addr = int32(a[1]), a[2]
		}
		// The link's content is read once, like its name.
		content, e := str(a[0])
		if e != 0 {
			return 0, e, false, false
		}
		p, e := str(addr)
		if e != 0 {
			return 0, e, false, false
		}
		// A link out of the private roots into one (private_linux.go).
		check := func(t *target) unix.Errno { return c.symlinkOut(t, content) }
		return c.atCall(w, n, tid, dirfd, p, true, false, check, func(t *target) error { return unix.Symlinkat(content, t.dir, t.name) })
	case "rename", "renameat", "renameat2":
		od, oa, nd, na, flags := atFDCWD, a[0], atFDCWD, a[1], uint(0)
		if call != "rename" {
			od, oa, nd, na = int32(a[0]), a[1], int32(a[2]), a[3]
		}
		if call == "renameat2" {
			flags = uint(a[4])
		}
		op, e := str(oa)
		if e != 0 {
			return 0, e, false, false
		}
		np, e := str(na)
		if e != 0 {
			return 0, e, false, false
		}
		exchange := flags&unix.RENAME_EXCHANGE != 0
		return c.twoNames(w, n, tid, false, exchange, od, op, false, nd, np, take, func(o, t *target) error {
			return unix.Renameat2(o.dir, o.name, t.dir, t.name, flags)
		})
	case "link", "linkat":
		od, oa, nd, na, flags := atFDCWD, a[0], atFDCWD, a[1], 0
		if call == "linkat" {
			od, oa, nd, na, flags = int32(a[0]), a[1], int32(a[2]), a[3], int(a[4])
		}
		if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
			return 0, unix.EINVAL, false, false
		}
		op, e := str(oa)
		if e != 0 {
			return 0, e, false, false
		}
		np, e := str(na)
		if e != 0 {
			return 0, e, false, false
		}
		if op == "" && flags&unix.AT_EMPTY_PATH != 0 {
			// The descriptor itself. Without CAP_DAC_READ_SEARCH,
			// which the process lacks, the kernel says ENOENT
			// (linkat(2)); the worker has none either.
			op = "/proc/self/fd/" + strconv.Itoa(int(od))
		}
		return c.twoNames(w, n, tid, true, false, od, op, flags&unix.AT_SYMLINK_FOLLOW != 0 || flags&unix.AT_EMPTY_PATH != 0, nd, np, take, func(o, t *target) error {
			if o.dir < 0 {
				if flags&unix.AT_EMPTY_PATH != 0 {
					return unix.Linkat(o.fd, "", t.dir, t.name, unix.AT_EMPTY_PATH)
				}
				// linkat("/proc/self/fd/N", AT_SYMLINK_FOLLOW), the
				// way an O_TMPFILE file is given a name: ours.
				return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(o.fd), t.dir, t.name, unix.AT_SYMLINK_FOLLOW)
			}
			return unix.Linkat(o.dir, o.name, t.dir, t.name, 0)
		})
	case "bind":
		return c.bindCall(w, n, tid, int32(a[0]), a[1], a[2], take)
	}
	return 0, unix.ENOSYS, false, false
}

// failed is the answer to a call that cannot be resolved or emulated:
// EPERM, or the process's own call in tests that show what happens
// without the rule (TestHooks.CaptureFailOpen).
func (c *Capture) failed(e unix.Errno) (int64, unix.Errno, bool, bool) {
	if TestHooks.CaptureFailOpen && e == unix.EPERM {
		return 0, 0, true, false
	}
	return 0, e, false, false
}

// record announces paths to the writer watch and calls the hook with
// those in the workspace.
func (c *Capture) record(paths []string) unix.Errno {
	in := c.addInside(nil, paths)
	if len(in) == 0 {
		return 0
	}
	c.foreign.Announce(in)
	return c.callHook(in)
}

// recordFiles is record of paths that are no directories if the call
// succeeds (an open's: the file, its links, its inode's other names, or
// a name it creates; a name mkdir, mknod or symlink makes; a name unlink
// removes).
func (c *Capture) recordFiles(paths []string) unix.Errno {
	in := c.addInside(nil, paths)
	if len(in) == 0 {
		return 0
	}
	c.foreign.AnnounceFiles(in)
	return c.callHook(in)
}

// inodeNames adds rule (c)'s names of t's inode (hard links) to paths;
// st is what t.stat said of it.
func (c *Capture) inodeNames(t *target, st *unix.Stat_t, paths []string) ([]string, unix.Errno) {
	names, err := c.namesOf(t.path, st)
	if err != nil {
		return nil, unix.EPERM
	}
	return append(paths, names...), 0
}

// recordInodeOf records every name of the file t names (its path, its
// links, the inode's other names) before a change to that inode, then
// requires the name to still be the inode st the caller checked: a swap
// while the hook ran is refused (EPERM) rather than changed unrecorded.
func (c *Capture) recordInodeOf(t *target, st unix.Stat_t) unix.Errno {
	paths, e := c.inodeNames(t, &st, append(append([]string(nil), t.links...), t.path))
	if e != 0 {
		return e
	}
	if e := c.record(paths); e != 0 {
		return e
	}
	if t.dir >= 0 && !sameInode(t, st) {
		return unix.EPERM
	}
	return 0
}

// errNotRun is the error of a call the worker could not run.
var errNotRun error = unix.EPERM

// effect runs op on the worker; the writer watch takes the supervisor's
// own events meanwhile for the command's (Watch.Own).
func (c *Capture) effect(w *credWorker, op func()) bool {
	ran := false
	c.foreign.Own(func() { ran = w.do(op) })
	return ran
}

// sameInode: t's name still names the inode st describes (checked
// around the hook, which reads the pre-image by name).
func sameInode(t *target, st unix.Stat_t) bool {
	now, err := t.stat()
	return err == nil && now.Dev == st.Dev && now.Ino == st.Ino
}

// nameExists reports whether t's last component exists as the command
// would find it: looked at with its credentials, so a name in a
// directory it cannot search stays unseen. A call that makes a name
// (mkdir, mknod, symlink, link, open with O_CREAT|O_EXCL) fails EEXIST
// on an existing one before any permission check or LSM hook runs
// (filename_create in fs/namei.c): the emulation answers so too, before
// its write rule and the .git rule refuse — nothing is made either way,
// and a tool that makes what may exist (mkdir -p of a read-only cache)
// goes on as it does outside.
func (c *Capture) nameExists(w *credWorker, t *target) bool {
	if t.dir < 0 {
		return false
	}
	var st unix.Stat_t
	if unix.Fstatat(t.dir, t.base(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false // absent even to us: no need to ask as the command
	}
	err := errNotRun // unless the call below runs
	w.do(func() { err = unix.Fstatat(t.dir, t.base(), &st, unix.AT_SYMLINK_NOFOLLOW) })
	return err == nil
}

// openFlags are the open(2) flags passed on; openat2 refuses unknown
// ones, where open ignores them.
const openFlags = unix.O_ACCMODE | unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_APPEND |
	unix.O_NONBLOCK | unix.O_DSYNC | unix.O_SYNC | unix.O_DIRECT | unix.O_LARGEFILE |
	unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NOATIME | unix.O_CLOEXEC | unix.O_PATH | unix.O_ASYNC

// open emulates an open for writing. A file that exists is opened
// without O_CREAT, so that the process's umask, which only a creation
// reads, need not be read (from /proc, the dearest step of an open); if
// it is gone by then (removed by someone outside the tree: every removal
// of the tree's own is captured, and waits for this one), the open is
// made again from the start, as a creation.
func (c *Capture) open(w *credWorker, n notifier, tid int, dirfd int32, p string, flags int, mode uint32) (int64, unix.Errno, bool, bool) {
	val, errno, cont, sent := c.openOnce(w, n, tid, dirfd, p, flags, mode, true)
	if errno == errVanished {
		val, errno, cont, sent = c.openOnce(w, n, tid, dirfd, p, flags, mode, false)
		if errno == errVanished {
			errno = unix.EPERM // gone again: someone outside the tree races us
		}
	}
	return val, errno, cont, sent
}

// errVanished is openOnce's answer when a file it found was gone when
// opened without O_CREAT, or a name it found absent was there when
// created. Never given to a process: open retries, or answers EPERM.
const errVanished = unix.Errno(^uintptr(0) >> 1)

func (c *Capture) openOnce(w *credWorker, n notifier, tid int, dirfd int32, p string, flags int, mode uint32, keepUmask bool) (int64, unix.Errno, bool, bool) {
	follow := flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	t, e := c.resolve(w, n, tid, dirfd, p, follow, takeFD(tid, n))
	defer t.close()
	if e != 0 {
		return c.failed(e)
	}
	if c.ownPlace(&t) && !c.ownSetID(&t, flags) {
		return 0, 0, true, false // the process's own to make (own_linux.go)
	}
	cloexec := flags&unix.O_CLOEXEC != 0
	flags &= openFlags
	if flags&unix.O_PATH != 0 {
		// O_PATH ignores the access mode: nothing can change.
		flags &= unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	}
	if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL && c.nameExists(w, &t) {
		return 0, unix.EEXIST, false, false // before any refusal (nameExists)
	}
	if flags&unix.O_PATH == 0 {
		// A new .git or HEAD, new bytes in a .git file (its gitdir:
		// line) or beneath a .git: code the user's git would run
		// (RefusedGitPath).
		if e := c.refusesGit(&t); e != 0 {
			return 0, e, false, false
		}
	}
	st, err := t.firstStat()
	exists := err == nil
	if !exists && (!errors.Is(err, unix.ENOENT) || t.dir < 0 || flags&unix.O_CREAT == 0) {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	// Landlock judges truncate and device ioctls of a file once, by the
	// domain of whoever opens it: a file opened here carries no such
	// limit. That grants nothing the rules do not: beneath a read-write
	// root truncating is allowed, and the writable devices are data sinks
	// whose ioctls change nothing (seccomp still filters every ioctl).
	if !c.writable(&t) && flags&unix.O_PATH == 0 {
		if t.path != "" || !exists || st.Mode&unix.S_IFMT == unix.S_IFREG || st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return 0, c.refused(RuleWrite, &t, unix.EACCES), false, false // what Landlock answers
		}
		// A pipe, socket or anonymous file reopened through
		// /proc/self/fd: no path, nothing Landlock governs.
	}
	typ := st.Mode & unix.S_IFMT
	if exists && typ == unix.S_IFCHR && st.Rdev == unix.Mkdev(5, 0) {
		// /dev/tty is the opener's controlling terminal: opened here it
		// would be the supervisor's (the user's terminal). The command
		// runs in a session of its own (setsid), and an emulated open
		// never gives it a terminal (O_NOCTTY below), so it has none:
		// what the kernel answers then is ENXIO.
		if ctty, err := controllingTTY(tid); err != nil || ctty != 0 {
			return 0, unix.EPERM, false, false
		}
		return 0, unix.ENXIO, false, false
	}
	if exists && typ == unix.S_IFREG && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 &&
		(flags&unix.O_ACCMODE != unix.O_RDONLY || flags&unix.O_TRUNC != 0) && flags&unix.O_PATH == 0 {
		// The kernel clears a set-id bit on write(2), not on a write
		// through mmap: a descriptor for writing a set-id file could
		// give a set-uid binary new bytes. None can be made in the
		// sandbox (seccomp); one that exists is not written.
		return 0, c.refused(RuleSetID, &t, unix.EPERM), false, false
	}
	regular := !exists || typ == unix.S_IFREG
	var paths []string
	if regular && flags&unix.O_PATH == 0 {
		paths = append(append(paths, t.links...), t.path)
		if exists {
			if paths, e = c.inodeNames(&t, &st, paths); e != 0 {
				return 0, e, false, false
			}
			// The inode's other names: a hard link of a file in a .git.
			if e := c.refusesGit(&t, paths[len(t.links):]...); e != 0 {
				return 0, e, false, false
			}
		}
	}
	// A descriptor that can write a workspace file may outlive the
	// checkpoint it is opened in: the session's registry keeps the file
	// (held_linux.go), or the open is refused.
	var heldNames []string
	if c.held != nil && regular && flags&unix.O_PATH == 0 && flags&unix.O_ACCMODE != unix.O_RDONLY {
		heldNames = c.addInside(nil, paths[len(t.links):])
		if len(heldNames) > 0 {
			if e := c.held.room(); e != 0 {
				return 0, e, false, false
			}
		}
	}
	// O_TRUNC waits for the pre-image; O_NOFOLLOW: the last component
	// was followed by hand, so a link found now is a swap; O_NOCTTY: a
	// terminal must not become the supervisor's.
	oflags := flags&^unix.O_TRUNC | unix.O_CLOEXEC | unix.O_NOCTTY
	if t.dir >= 0 {
		oflags |= unix.O_NOFOLLOW
	}
	// An existing file is not created (see open); O_EXCL keeps O_CREAT,
	// to fail EEXIST as the process's call would.
	creates := flags&unix.O_CREAT != 0 && (!exists || !keepUmask || flags&unix.O_EXCL != 0)
	if !creates {
		oflags &^= unix.O_CREAT
	}
	// A name found absent is created exclusively: the file opened is then
	// the one made here, empty, and O_TRUNC has nothing to do (its
	// timestamps are those of its creation). A name that appeared
	// meanwhile (made by someone outside the tree: every creation of the
	// tree's own is captured, and waits for this one) fails EEXIST, and
	// the open is made again from the start, as an open of what exists.
	fresh := creates && !exists && t.dir >= 0
	if fresh {
		oflags |= unix.O_EXCL
	}
	if exists && typ == unix.S_IFIFO && flags&unix.O_NONBLOCK == 0 && flags&unix.O_ACCMODE == unix.O_WRONLY {
		// Blocks until a reader comes, which may be the tree's next
		// call: on a goroutine of its own (openFIFO).
		c.openFIFO(w, n, &t, oflags, cloexec)
		return 0, 0, false, true
	}
	if !exists {
		// A creation: its pre-image is its absence.
		if e := c.recordFiles(paths); e != 0 {
			return 0, e, false, false
		}
	}
	var fd int
	umask := 0
	if creates {
		umask = c.umaskOf(tid)
	}
	err = errNotRun // unless the call below runs
	c.effect(w, func() {
		if creates {
			unix.Umask(umask)
		}
		if t.dir < 0 {
			// A reopen of the process's own descriptor.
			fd, err = unix.Open("/proc/self/fd/"+strconv.Itoa(t.fd), oflags, 0)
			return
		}
		how := unix.OpenHow{Flags: uint64(oflags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
		if creates {
			how.Mode = uint64(mode & 0o7777)
		}
		fd, err = unix.Openat2(t.dir, t.name, &how)
	})
	if err != nil {
		if errors.Is(err, unix.ENOENT) && exists && flags&unix.O_CREAT != 0 && !creates {
			return 0, errVanished, false, false
		}
		if errors.Is(err, unix.EEXIST) && fresh && flags&unix.O_EXCL == 0 {
			return 0, errVanished, false, false
		}
		if errors.Is(err, unix.EXDEV) {
			err = unix.EISDIR // "." or "..": a directory, for write
		}
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	defer unix.Close(fd)
	var got unix.Stat_t
	if unix.Fstat(fd, &got) != nil || (exists && (got.Dev != st.Dev || got.Ino != st.Ino)) {
		return 0, unix.EPERM, false, false // swapped by someone outside the tree
	}
	if exists && len(paths) > 0 {
		if e := c.recordFiles(paths); e != 0 {
			return 0, e, false, false
		}
		if t.dir >= 0 && !sameInode(&t, got) {
			return 0, unix.EPERM, false, false
		}
	}
	if fresh {
		// Made here, empty: nothing to truncate.
	} else if flags&unix.O_TRUNC != 0 && got.Mode&unix.S_IFMT == unix.S_IFREG && flags&unix.O_ACCMODE != unix.O_RDONLY {
		// Only now, with the pre-image of this very inode recorded,
		// through the descriptor opened for writing with the command's
		// credentials: ftruncate(2) asks for no more than that.
		err = nil
		c.foreign.Own(func() { err = unix.Ftruncate(fd, 0) })
		if err != nil {
			return 0, errnoOf(err, unix.EPERM), false, false
		}
	} else if flags&unix.O_TRUNC != 0 && got.Mode&unix.S_IFMT == unix.S_IFREG {
		// The same, through a reopen for writing: the process's
		// descriptor is O_RDONLY (O_RDONLY|O_TRUNC truncates too, given
		// write permission).
		err = errNotRun // unless the call below runs
		c.effect(w, func() {
			var wfd int
			if wfd, err = unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0); err == nil {
				err = unix.Ftruncate(wfd, 0)
				unix.Close(wfd)
			}
		})
		if err != nil {
			return 0, errnoOf(err, unix.EPERM), false, false
		}
	}
	if len(heldNames) > 0 {
		if e := c.held.add(fd, got, c.workspace, heldNames); e != 0 {
			return 0, e, false, false
		}
	}
	n.sendFD(fd, cloexec)
	return 0, 0, false, true
}

// controllingTTY is thread tid's controlling terminal (tty_nr in
// /proc/PID/stat; 0: none).
func controllingTTY(tid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid pgrp session tty_nr: comm may hold spaces
	// and parentheses, so fields are counted after its last ")".
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 5 {
		return 0, errors.New("bad /proc stat")
	}
	return strconv.Atoi(f[4])
}

// openFIFO opens a FIFO for writing on a goroutine and thread of its own
// and answers from there: the open waits for a reader, which may be a
// later call of the same tree, and the captured calls are answered one at
// a time. A FIFO holds no data on disk: nothing to record. If the command
// ends first, close opens the FIFO for reading (non-blocking), which lets
// the waiting open return.
func (c *Capture) openFIFO(w *credWorker, n notifier, t *target, oflags int, cloexec bool) {
	var pin int
	var err error
	if t.dir < 0 {
		// A pipe reopened through /proc/self/fd: our copy of it.
		pin, err = unix.FcntlInt(uintptr(t.fd), unix.F_DUPFD_CLOEXEC, 0)
	} else {
		err = errNotRun // unless the call below runs
		w.do(func() {
			pin, err = unix.Openat(t.dir, t.base(), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
	}
	if err != nil {
		n.send(0, errnoOf(err, unix.EPERM), 0)
		return
	}
	cr := c.cr
	c.fifoMu.Lock()
	if c.fifos == nil {
		c.fifos = map[int]struct{}{}
	}
	c.fifos[pin] = struct{}{}
	c.fifoMu.Unlock()
	go func() {
		defer func() {
			c.fifoMu.Lock()
			delete(c.fifos, pin)
			unix.Close(pin)
			c.fifoMu.Unlock()
		}()
		// A thread of its own, with the command's credentials for good:
		// discarded when this goroutine ends.
		fw, err := newCredWorker(cr)
		if err != nil || !fw.enter() {
			n.send(0, unix.EPERM, 0)
			return
		}
		fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pin), oflags&^unix.O_NOFOLLOW, 0)
		if err != nil {
			n.send(0, errnoOf(err, unix.EPERM), 0)
			return
		}
		n.sendFD(fd, cloexec)
		unix.Close(fd)
	}()
}

func pokeFIFO(pin int) {
	if fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pin), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
	}
}

func (c *Capture) truncate(w *credWorker, n notifier, tid int, p string, length int64) (int64, unix.Errno, bool, bool) {
	if length < 0 {
		return 0, unix.EINVAL, false, false
	}
	t, e := c.resolve(w, n, tid, atFDCWD, p, true, takeFD(tid, n))
	defer t.close()
	if e != 0 {
		return c.failed(e)
	}
	if e := c.refusesGit(&t); e != 0 {
		return 0, e, false, false // a file in a .git, or a HEAD (RefusedGitPath)
	}
	st, err := t.stat()
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return 0, unix.EISDIR, false, false
	default:
		return 0, unix.EINVAL, false, false
	}
	if !c.writable(&t) {
		return 0, c.refused(RuleWrite, &t, unix.EACCES), false, false
	}
	// Opened first (truncate(2) needs write permission, as an open for
	// writing does), then recorded, then truncated through our fd.
	var fd int
	err = errNotRun // unless the call below runs
	w.do(func() {
		if t.dir < 0 {
			fd, err = unix.Open("/proc/self/fd/"+strconv.Itoa(t.fd), unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
		} else {
			fd, err = unix.Openat(t.dir, t.base(), unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
		}
	})
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	defer unix.Close(fd)
	var got unix.Stat_t
	if unix.Fstat(fd, &got) != nil || got.Dev != st.Dev || got.Ino != st.Ino {
		return 0, unix.EPERM, false, false
	}
	if e := c.recordInodeOf(&t, got); e != 0 {
		return 0, e, false, false
	}
	err = errNotRun // unless the call below runs
	c.effect(w, func() { err = unix.Ftruncate(fd, length) })
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	return 0, 0, false, false
}

func (c *Capture) chmod(w *credWorker, n notifier, tid int, dirfd int32, p string, mode uint32, follow, fchmod bool, take func(int) (int, unix.Errno)) (int64, unix.Errno, bool, bool) {
	t, e := c.resolve(w, n, tid, dirfd, p, follow, take)
	defer t.close()
	if e != 0 {
		return c.failed(e)
	}
	if fchmod {
		// fchmod(2) on an O_PATH descriptor is EBADF; our copy is
		// changed through /proc/self/fd, which would not say so.
		if fl, err := unix.FcntlInt(uintptr(t.fd), unix.F_GETFL, 0); err != nil || fl&unix.O_PATH != 0 {
			return 0, unix.EBADF, false, false
		}
	}
	st, err := t.stat()
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return 0, unix.EOPNOTSUPP, false, false // fchmodat2(AT_SYMLINK_NOFOLLOW) on a link
	}
	named := t.path != ""
	if named {
		// chmod +x of a hook in a .git (RefusedGitPath).
		if e := c.refusesGit(&t); e != 0 {
			return 0, e, false, false
		}
	}
	if t.dir < 0 && !named {
		// A pipe, a socket, a deleted file: no name, nothing in any
		// workspace; its mode is changed on the very file.
		if st.Nlink > 0 && st.Mode&unix.S_IFMT == unix.S_IFREG {
			return 0, unix.EPERM, false, false // named, but not by a name we can tell
		}
	} else if !c.writable(&t) {
		// Landlock does not govern modes; the rule of the read-write
		// roots does.
		return 0, c.refused(RuleWrite, &t, unix.EACCES), false, false
	}
	pin := t.fd
	if t.dir >= 0 {
		err = errNotRun // unless the call below runs
		w.do(func() { pin, err = unix.Openat(t.dir, t.base(), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0) })
		if err != nil {
			return 0, errnoOf(err, unix.EPERM), false, false
		}
		defer unix.Close(pin)
	}
	if named {
		if e := c.recordInodeOf(&t, st); e != 0 {
			return 0, e, false, false
		}
	}
	// Through /proc/self/fd: the very inode pinned above.
	err = errNotRun // unless the call below runs
	c.effect(w, func() { err = unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(pin), mode, 0) })
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	return 0, 0, false, false
}

// atCall makes a call that changes one directory entry (unlink, rmdir,
// mkdir, mknod, symlink) in the resolved directory. creates: the call
// makes the name; mayBeDir: the name may be a directory it changes
// (rmdir).
func (c *Capture) atCall(w *credWorker, n notifier, tid int, dirfd int32, p string, creates, mayBeDir bool, check func(*target) unix.Errno, op func(*target) error) (int64, unix.Errno, bool, bool) {
	t, e := c.resolve(w, n, tid, dirfd, p, false, takeFD(tid, n))
	defer t.close()
	if e != 0 {
		return c.failed(e)
	}
	if t.dir < 0 {
		return 0, unix.EPERM, false, false // a descriptor is not a name to make or remove
	}
	if c.ownDir(&t) {
		return 0, 0, true, false // the process's own to make (own_linux.go)
	}
	if creates && c.nameExists(w, &t) {
		return 0, unix.EEXIST, false, false // before any refusal (nameExists)
	}
	if creates {
		// A new .git or HEAD, or a new entry in a .git (RefusedGitPath).
		// Removals are allowed: they plant nothing, and an existing
		// .git the sandbox protects is a mount point (EBUSY).
		if e := c.refusesGit(&t); e != 0 {
			return 0, e, false, false
		}
	} else if mountRoot(&t) {
		return 0, unix.EBUSY, false, false // as in the command's own namespace
	}
	if !c.writable(&t) {
		return 0, c.refused(RuleWrite, &t, unix.EACCES), false, false
	}
	if check != nil {
		if e := check(&t); e != 0 {
			return 0, e, false, false
		}
	}
	// What a creation makes, or unlink removes, is no directory when the
	// call succeeds: the writer watch need not look (AnnounceFiles).
	record := c.recordFiles
	if mayBeDir {
		record = c.record
	}
	if e := record([]string{t.path}); e != 0 {
		return 0, e, false, false
	}
	var err error
	err = errNotRun // unless the call below runs
	c.effect(w, func() { err = op(&t) })
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	return 0, 0, false, false
}

// twoNames makes rename or link: old (followed if follow) and new, each
// resolved, both beneath the read-write roots, the hard-link rules
// applied (capture_linux.go).
func (c *Capture) twoNames(w *credWorker, n notifier, tid int, link, exchange bool, od int32, op string, follow bool, nd int32, np string, take func(int) (int, unix.Errno), do func(o, t *target) error) (int64, unix.Errno, bool, bool) {
	o, e := c.resolve(w, n, tid, od, op, follow, take)
	defer o.close()
	if e != 0 {
		return c.failed(e)
	}
	t, e := c.resolve(w, n, tid, nd, np, false, take)
	defer t.close()
	if e != 0 {
		return c.failed(e)
	}
	if t.dir < 0 || (o.dir < 0 && !link) {
		return 0, unix.EPERM, false, false // a descriptor is not a name to make or move
	}
	if link && c.nameExists(w, &t) {
		// The old name is looked up first, as the command (a missing one
		// is ENOENT, one in a directory it cannot search EACCES): with
		// our credentials, a root supervisor would tell a command without
		// them whether a name exists where it may not look.
		if o.dir >= 0 {
			err := errNotRun
			w.do(func() { _, err = o.stat() })
			if err != nil {
				return 0, errnoOf(err, unix.EPERM), false, false
			}
		}
		return 0, unix.EEXIST, false, false // before any refusal (nameExists)
	}
	if !link && (mountRoot(&o) || mountRoot(&t)) {
		return 0, unix.EBUSY, false, false // as in the command's own namespace
	}
	// A new .git or HEAD by rename or link, or a new name in a .git
	// (RefusedGitPath); and the old name: a .git or HEAD renamed away,
	// which RENAME_EXCHANGE would turn into a new one (an existing .git
	// the sandbox protects is a mount point and cannot move anyway), a
	// file moved out of a .git, or a hard link of one, a second name to
	// write it through.
	if e := c.refusesGit(&t); e != 0 {
		return 0, e, false, false
	}
	if o.dir >= 0 || o.path != "" {
		if e := c.refusesGit(&o); e != 0 {
			return 0, e, false, false
		}
	}
	if !c.writable(&t) {
		return 0, c.refused(RuleWrite, &t, unix.EACCES), false, false
	}
	if (o.dir >= 0 || o.path != "") && !c.writable(&o) {
		return 0, unix.EXDEV, false, false // Landlock's refer rule
	}
	// Nothing of a repository in a private root arrives where the person
	// runs git (private_linux.go).
	if e := c.movedOut(&o, &t, link, exchange); e != 0 {
		return 0, e, false, false
	}
	ost, err := o.stat()
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	if o.path != "" && paths.Within(o.path, c.workspace) && !paths.Within(t.path, c.workspace) &&
		ost.Mode&unix.S_IFMT != unix.S_IFDIR && link {
		return 0, c.refused(RuleHardLink, &t, unix.EPERM), false, false // rule (a)
	}
	// Nothing crosses the boundary of the places the process writes
	// itself (own_linux.go): decided on the two directories alone. The
	// looks above at an entry there by name may be overtaken by the
	// process's own calls, which go on meanwhile; they can only refuse,
	// and this refuses whatever they let through across it.
	if e := c.crossesOwn(&o, &t, link); e != 0 {
		return 0, e, false, false
	}
	paths := []string{t.path}
	if o.path != "" {
		paths = append(paths, o.path) // rename: the old name goes; link: rule (b)
	}
	if e := c.record(paths); e != 0 {
		return 0, e, false, false
	}
	if o.dir >= 0 && !sameInode(&o, ost) {
		return 0, unix.EPERM, false, false
	}
	// A descriptor given a name (an O_TMPFILE file, opened without
	// capture) may write that name from now on: the session's registry
	// keeps it (held_linux.go).
	var heldNames []string
	if link && o.dir < 0 && o.fd >= 0 && ost.Mode&unix.S_IFMT == unix.S_IFREG && c.held != nil {
		if heldNames = c.addInside(nil, []string{t.path}); len(heldNames) > 0 {
			if e := c.held.room(); e != 0 {
				return 0, e, false, false
			}
		}
	}
	err = errNotRun // unless the call below runs
	c.effect(w, func() { err = do(&o, &t) })
	if err != nil {
		return 0, errnoOf(err, unix.EPERM), false, false
	}
	if len(heldNames) > 0 {
		// The name exists now: nothing to refuse any more. Only a
		// registry that cannot pin an inode fails here, which an open
		// just made by the same process never meets.
		c.held.add(o.fd, ost, c.workspace, heldNames)
	}
	return 0, 0, false, false
}

// bindCall binds the process's socket (taken with pidfd_getfd) itself:
// a pathname in the resolved directory, made on the worker thread after
// entering it, with the process's umask (getsockname then reports the
// base name only, as for the network supervisor's binds); any other
// address as given, read once. The socket file is a new path, recorded
// before it exists.
func (c *Capture) bindCall(w *credWorker, n notifier, tid int, sockfd int32, addr, addrLen uint64, take func(int) (int, unix.Errno)) (int64, unix.Errno, bool, bool) {
	if addrLen > uint64(unsafe.Sizeof(unix.RawSockaddrAny{})) {
		return 0, unix.EINVAL, false, false
	}
	sa := make([]byte, addrLen)
	if addrLen > 0 && readMem(tid, addr, sa) != nil {
		return 0, unix.EFAULT, false, false
	}
	if sockfd < 0 {
		return 0, unix.EBADF, false, false
	}
	sock, e := take(int(sockfd))
	if e != 0 {
		return 0, e, false, false
	}
	defer unix.Close(sock)
	rawBind := func(b []byte) error {
		var p unsafe.Pointer
		if len(b) > 0 {
			p = unsafe.Pointer(&b[0])
		}
		_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(sock), uintptr(p), uintptr(len(b)))
		runtime.KeepAlive(b)
		if e != 0 {
			return e
		}
		return nil
	}
	var err error
	if len(sa) <= 2 || binary.NativeEndian.Uint16(sa) != unix.AF_UNIX || sa[2] == 0 {
		// No file: another family, an abstract name, autobind. Made
		// here too (the socket was taken), without capabilities: no
		// privileged port the process could not bind.
		err = errNotRun // unless the call below runs
		c.effect(w, func() { err = rawBind(sa) })
		return 0, errnoOf(err, 0), false, false
	}
	path := sa[2:]
	if i := indexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	t, e := c.resolve(w, n, tid, atFDCWD, string(path), false, take)
	defer t.close()
	if e != 0 {
		return c.failed(e)
	}
	if t.dir < 0 || !c.writable(&t) {
		return 0, c.refused(RuleWrite, &t, unix.EACCES), false, false
	}
	if len(t.base()) > 107 || t.name != t.base() {
		return 0, unix.EINVAL, false, false
	}
	if e := c.refusesGit(&t); e != 0 {
		return 0, e, false, false // a socket file named .git or HEAD, or in a .git (RefusedGitPath)
	}
	if e := c.record([]string{t.path}); e != 0 {
		return 0, e, false, false
	}
	umask := c.umaskOf(tid)
	err = errNotRun // unless the call below runs
	c.effect(w, func() {
		if err = unix.Fchdir(t.dir); err == nil {
			unix.Umask(umask)
			err = rawBind(unixSockaddr(t.base()))
		}
	})
	return 0, errnoOf(err, 0), false, false
}
