package notify

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Change capture: why and how.
//
// Checkpoints must hold the pre-image of every path a command changes —
// `sed -i`, `mv`, `rm`, a code generator — saved before the change. Scanning
// the workspace before and after each command costs time in proportion to
// the workspace; instead, in a sandbox made with Policy.CaptureChanges, a
// command with BeforeChange gets a child program that also sends the
// write-side calls to its supervisor: opening for writing (O_WRONLY,
// O_RDWR, O_CREAT, O_TRUNC), creat, truncate, unlink, rmdir, mkdir, mknod,
// rename, link, symlink, the chmod family and bind (a unix socket bound to
// a pathname is a new file). openat2 is not among them: the main program
// answers it ENOSYS (sandbox/internal/seccomp's rules_linux.go), so callers use
// openat. The kernel allows one listener per filter chain, so these share
// the listener of the notification server (server_linux.go), which hands
// them to the command's Capture: it resolves the paths the call names, as the calling process would (its root, cwd or dirfd,
// symlinks, /proc/self), calls BeforeChange with those inside the
// workspace, and then makes the call itself on what it resolved and hands
// back the result — a descriptor installed in the process for an open
// (capture_emulate_linux.go says how and why). The process's own call
// never runs, so a process racing its own memory, working directory or
// descriptors cannot make a change other than the one recorded. The cost
// grows with what the command touches — about one round trip per call —
// never with the workspace.
//
// The emulated call is confined as the process is: its credentials
// without capabilities, and the write rule of its Landlock domain (the
// read-write roots). What must hold against any process — no set-id
// modes, no device nodes — stays a seccomp rule on registers of the main
// program, which is decided before any notification.
//
// Capture fails closed: a call whose paths cannot be resolved, or that
// cannot be emulated, is refused with EPERM, and so is a hard link of a
// workspace file to a name outside the workspace (rule (a) below).
//
// Not captured: writes through a descriptor opened before the capture
// started (inherited), and changes of owner, timestamps or extended
// attributes, which checkpoints do not restore. Writes through a
// descriptor or a shared mapping the command opened in an earlier
// checkpoint make no call either: the session's registry of held files
// (held_linux.go, CaptureOptions.Held) is how a checkpoint accounts for
// them.

// CaptureCalls are the calls change capture needs notified (the sandbox's
// child program sends them, see its withCapture): name, and for open-like
// calls the flags argument (0: every call is notified). The one list: the
// program that traps them and the Capture that answers them both read it.
var CaptureCalls = []struct {
	Name    string
	FlagArg uint
}{
	{"open", 1}, {"openat", 2}, {"creat", 0}, {"truncate", 0},
	{"unlink", 0}, {"unlinkat", 0}, {"rmdir", 0}, {"mkdir", 0}, {"mkdirat", 0},
	{"mknod", 0}, {"mknodat", 0}, {"rename", 0}, {"renameat", 0}, {"renameat2", 0},
	{"link", 0}, {"linkat", 0}, {"symlink", 0}, {"symlinkat", 0},
	{"chmod", 0}, {"fchmod", 0}, {"fchmodat", 0}, {"fchmodat2", 0},
	// bind makes a socket file; where the server already receives bind
	// for the network rules, it calls beforeBind instead
	// (CaptureOptions.Binds false).
	{"bind", 0},
	// umask is only noted (and let go on): until a process of the tree
	// changes its umask, every process has the one the command started
	// with, read once (Capture.umaskOf).
	{"umask", 0},
	// exit_group only where writers can be told apart (the sandbox's
	// withCapture exits): the command's writer watch reads what the
	// exiting process wrote while it still exists (Watch.Drain). That
	// needs root, where the tree is always tracked (cgroup or PID
	// namespace) and killed before its server stops: no process is left
	// to get ENOSYS from an exit_group nobody answers.
	{"exit_group", 0},
}

// OpenWriteFlags make an open a possible change: an open-like call of
// CaptureCalls is notified when its flags carry one of them.
var OpenWriteFlags = []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC}

var (
	captureNrOnce sync.Once
	captureNr     map[int32]string
)

// captureNumbers maps this architecture's numbers of CaptureCalls to
// their names.
func captureNumbers() map[int32]string {
	captureNrOnce.Do(func() {
		captureNr = map[int32]string{}
		for _, c := range CaptureCalls {
			if nr, err := seccomp.GetSyscallFromName(c.Name); err == nil {
				captureNr[int32(nr)] = c.Name
			}
		}
	})
	return captureNr
}

// Capture answers one command's capture notifications. Its server calls
// it for one notification at a time, in the order received: two calls on
// one path are seen in the order they were made. Make one with
// NewCapture and hand it to Start in Options.Capture; the server closes
// it when it stops.
type Capture struct {
	workspace string // canonical
	hook      func(paths []string) error
	nr        map[int32]string
	// bind: bind(2) notifications are this capturer's; false where the
	// network supervisor receives them (it calls beforeBind).
	binds bool
	// foreign is the command's writer watch (CaptureOptions.Watch; never
	// nil: noWatch without one): it marks every announced path before the
	// hook records it.
	foreign Watch
	mu      sync.Mutex
	// names caches namesOf's walks for this command, keyed by inode and
	// link count; any captured call that changes names (link, rename,
	// unlink, mkdir, ...) empties it, and every such call of the tree is
	// captured, so a cached answer is the walk's answer. Without it a
	// build rewriting one multiply-linked file would walk each time.
	names map[[3]uint64][]string
	// wsDev is the workspace's device, once namesOf needed it.
	wsDev *uint64

	// roots are the canonical read-write roots and devices the device
	// files the policy lets a shell write to: the Landlock write rule
	// that emulated calls keep (capture_emulate_linux.go).
	roots   []string
	devices map[string]bool
	// mountNS is the inode of the command's own mount namespace, or 0
	// (sameRoot): set once the command is started, before its first
	// call is served.
	mountNS uint64
	// rootDev is the device of the sandbox's root skeleton, or 0
	// (skeletonPath; sandbox/internal/spawn/rootfs_linux.go).
	rootDev uint64
	// tmpDev is the device of the sandbox's private /tmp, or 0
	// (tmpPath).
	tmpDev uint64
	// ptyDev is the device of the sandbox's devpts instance, or 0
	// (ptyPath).
	ptyDev uint64
	// cred runs the emulated calls with the command's credentials, from
	// its first call on (credErr: they could not be taken); cr are those
	// credentials.
	cred    *credWorker
	credErr error
	cr      creds
	closed  bool
	// fifos are the FIFOs being opened on goroutines of their own
	// (openFIFO), pinned by O_PATH descriptors.
	fifoMu sync.Mutex
	fifos  map[int]struct{}
	// gitWritable: CaptureOptions.GitWritable.
	gitWritable bool
	// private: CaptureOptions.Private.
	private func(path string) bool
	// refusals records what a rule refused (the server's
	// Options.Refusals); op is the call being answered, for them.
	refusals *RefusalLog
	op       string
	// held: CaptureOptions.Held, or nil.
	held *HeldFiles
	// ownRoot is CaptureOptions.OwnRoot, and ownFD an O_PATH descriptor
	// of it (-1 when it could not be opened: calls there are then
	// resolved in full before they are let through); own_linux.go.
	ownRoot string
	ownFD   int
	ownTmp  bool // CaptureOptions.OwnTmp
	// tmpFD is an O_PATH descriptor of the command's /tmp, the tmpfs's
	// root (ownFastTmp): -1 until taken, -2 when it could not be.
	tmpFD int
	// pathBuf is readString's buffer for the call being answered.
	pathBuf [4096]byte
	// umask is the umask every process of the tree has while umaskMoved
	// is false (umaskKnown: read already). umask(2) is the only way to
	// change one, inherited at fork; every such call of the tree is
	// notified, and sets umaskMoved before it takes effect (the caller
	// waits in it), so until then the first process's umask, read once
	// from /proc, is everyone's. From then on it is read for each
	// creation.
	umask      int
	umaskKnown bool
	umaskMoved bool
}

// umaskOf is thread tid's umask, for a creation made on its behalf.
func (c *Capture) umaskOf(tid int) int {
	if c.umaskKnown && !c.umaskMoved {
		return c.umask
	}
	m := childUmask(tid)
	if !c.umaskMoved {
		c.umask, c.umaskKnown = m, true
	}
	return m
}

// CaptureOptions configures the change capture of one command.
type CaptureOptions struct {
	// Workspace is the canonical path of the workspace: the changes
	// recorded are those of paths beneath it.
	Workspace string
	// Hook is called with the workspace paths a call is about to change,
	// before the change is made; an error refuses the change (ENOSPC
	// when the error is ENOSPC, else EPERM).
	Hook func(paths []string) error
	// Binds: bind(2) notifications are the capture's to answer. False
	// where the network rules already receive bind: the server binds
	// pathname sockets itself and reports them before it does.
	Binds bool
	// Roots are the canonical read-write roots and Devices the device
	// files a shell may write to: the Landlock write rule that emulated
	// calls keep (capture_emulate_linux.go).
	Roots   []string
	Devices []string
	// Watch, if set, is the command's writer watch (the sandbox's
	// fanotify listener).
	Watch Watch
	// GitWritable lets the command create .git and HEAD names and change
	// paths in a .git (RefusedGitPath): the sandbox's Policy.GitWritable.
	// The zero value refuses them.
	GitWritable bool
	// Private reports whether a canonical host path lies in a private
	// root — a directory of the sandbox's own that the person never
	// runs git in and that is gone when its owner is (a sandbox's
	// TMPDIR) — where repositories may be made; the sandbox's private
	// /tmp is one too (onTmp). private_linux.go says what keeps a
	// repository made there from reaching a place the person runs git.
	Private func(path string) bool
	// Held, if set, is the session's registry of files opened for
	// writing (held_linux.go): every regular file with a workspace name
	// the command opens for writing is added to it before the process
	// gets the descriptor.
	Held *HeldFiles
	// OwnRoot, if set, is the canonical directory of the sandbox's
	// temporary directories, and says that the process's own Landlock
	// domain lets it change names and write files there, on the private
	// /tmp, on the writable devices and on its ptys, and nowhere else:
	// every other read-write root is read-only to the process itself.
	// A call that changes only such places is then the process's own to
	// make (own_linux.go).
	OwnRoot string
	// OwnTmp: the private /tmp is the process's own place too (its
	// domain writes it; no read-write root lies beneath it).
	OwnTmp bool
}

// Watch is a command's writer watch: it tells the command's writes to
// watched paths from anyone else's. The capture announces each path
// before its hook records it, runs the changes it makes on the
// command's behalf inside Own (so they count as the command's), and
// calls Drain when a process of the tree is about to exit.
type Watch interface {
	// Announce marks paths a process of the tree is about to change.
	Announce(paths []string)
	// AnnounceFiles is Announce of paths known to be no directories
	// (absent, files, symlinks), which need not be looked at.
	AnnounceFiles(paths []string)
	// Own runs op, a change made for the command, so that its events
	// are taken for the command's.
	Own(op func())
	// Drain reads and attributes every event queued now.
	Drain()
}

// noWatch is the Watch of a capture without one.
type noWatch struct{}

func (noWatch) Announce([]string)      {}
func (noWatch) AnnounceFiles([]string) {}
func (noWatch) Own(op func())          { op() }
func (noWatch) Drain()                 {}

// NewCapture returns the capture of one command, or nil when there is
// nothing to capture (no hook or no workspace).
func NewCapture(opts CaptureOptions) *Capture {
	if opts.Hook == nil || opts.Workspace == "" {
		return nil
	}
	devices := map[string]bool{}
	for _, p := range opts.Devices {
		devices[p] = true
	}
	var w Watch = noWatch{}
	if opts.Watch != nil {
		w = opts.Watch
	}
	c := &Capture{workspace: opts.Workspace, hook: opts.Hook, nr: captureNumbers(), binds: opts.Binds,
		roots: opts.Roots, devices: devices, foreign: w, gitWritable: opts.GitWritable, private: opts.Private,
		held: opts.Held, ownFD: -1, tmpFD: -1, ownTmp: opts.OwnTmp && opts.OwnRoot != ""}
	c.openOwnRoot(opts.OwnRoot)
	return c
}

// Quiesce waits for the call being answered to be done and holds off the
// next ones until release is called: meanwhile none of the command's
// captured calls is half-made (recorded but not yet performed), and any
// process making one waits in it. A checkpoint's seal runs inside it, so
// that every change the tree makes falls wholly into one checkpoint. The
// caller must not hold what a hook waits for (the checkpoint's barrier).
func (c *Capture) Quiesce() (release func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	return c.mu.Unlock
}

// refusesGit is the .git rule's answer to a change of what t names (0:
// allowed; always 0 with GitWritable): RefusedGitPath of its canonical
// path and of any other names given (an inode's hard links), and
// GitDirName of its last component as resolved, so a symlink followed to
// a new ".git" is judged by the name it creates. A name that would make
// a repository (.git, HEAD) is refused with EPERM; a path beneath a .git,
// one bound read-only at New or not (made later, nested deeper), with
// EROFS, what the read-only bind answers, so that git says "Read-only
// file system" either way. Removals are not judged (their callers do not
// ask): they plant nothing.
func (c *Capture) refusesGit(t *target, also ...string) unix.Errno {
	if c.gitWritable || c.inPrivate(t) {
		return 0
	}
	if GitDirName(t.base()) {
		return c.refused(RuleGit, t, unix.EPERM)
	}
	if t.dir >= 0 && CompletesGitDir(t.base(), func() bool {
		var st unix.Stat_t
		return unix.Fstatat(t.dir, "HEAD", &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	}) {
		return c.refused(RuleGit, t, unix.EPERM) // objects/, refs/ beside a HEAD: a repository
	}
	for _, p := range append([]string{t.path}, also...) {
		switch e := gitErrno(p); e {
		case 0:
		case unix.EROFS:
			return c.refused(RuleGitWrite, t, e)
		default:
			return c.refused(RuleGit, t, e)
		}
	}
	return 0
}

// refused records that rule refused the call being answered on t, and
// returns errno.
func (c *Capture) refused(rule RefusalRule, t *target, errno unix.Errno) unix.Errno {
	name := t.path
	if name == "" {
		name = "(a descriptor)"
	}
	c.refusals.add(Refusal{rule, c.op, name})
	return errno
}

// gitErrno is the .git rule's answer to a change of the canonical path
// p: 0, EPERM (p's last component makes a repository) or EROFS (p lies
// in a .git).
func gitErrno(p string) unix.Errno {
	if !RefusedGitPath(p) {
		return 0
	}
	if GitDirName(filepath.Base(p)) {
		return unix.EPERM
	}
	return unix.EROFS
}

// handles reports whether nr is a capture call.
func (c *Capture) handles(nr int32) bool {
	if c == nil {
		return false
	}
	name, ok := c.nr[nr]
	return ok && (name != "bind" || c.binds)
}

// callHook calls the hook; an error refuses the change (ENOSPC when the
// hook says so, else EPERM).
func (c *Capture) callHook(paths []string) unix.Errno {
	if err := c.hook(paths); err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return unix.ENOSPC
		}
		return unix.EPERM
	}
	return 0
}

// beforeBind is the network supervisor's way in: it binds pathname unix
// sockets itself (server_linux.go) and calls this, with the path it
// resolved, before it does.
func (c *Capture) beforeBind(path string) unix.Errno {
	if c == nil {
		return 0
	}
	if e := gitErrno(path); e != 0 && !c.gitWritable && (c.private == nil || !c.private(path)) {
		rule := RuleGit
		if e == unix.EROFS {
			rule = RuleGitWrite
		}
		c.refusals.add(Refusal{rule, "bind", path})
		return e // a socket file named .git or HEAD, or in a .git (RefusedGitPath)
	}
	if !paths.Within(path, c.workspace) || path == c.workspace {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.foreign.Announce([]string{path})
	return c.callHook([]string{path})
}

const atFDCWD = int32(unix.AT_FDCWD)

// addInside adds the paths of rs inside the workspace to out, once each.
func (c *Capture) addInside(out, rs []string) []string {
	for _, r := range rs {
		if paths.Within(r, c.workspace) && r != c.workspace && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// Hard links are a second name for the same bytes: writing through any
// name changes every name's content. Three rules keep a rewind able to
// bring the bytes back:
//
//	(a) link/linkat of an existing file inside the workspace to a new
//	    name outside it (TMPDIR, a read-write path) is refused (EPERM):
//	    a write through that name would be outside what capture records;
//	(b) link/linkat inside the workspace records the source as well as
//	    the new name;
//	(c) a write-side open, truncate or chmod of a regular file with
//	    st_nlink > 1 on the workspace's file system — inside the
//	    workspace or not, so a link made by a process that raced rule (a)
//	    is still found — records every name of that inode in the
//	    workspace (namesOf). The walk is bounded; past the bound the call
//	    is refused.
//
// (a) is decided on the names as resolved, on which the link is then
// made (capture_emulate_linux.go): no race can make another link than the
// one judged. (c) also finds links made before the command ran.

// namesOf returns the workspace names of p's inode when p is a regular
// file with more than one link (rule (c)): HardLinkNames on the
// workspace. p need not be inside the workspace (a name in TMPDIR). known,
// if set, is p's lstat, just taken by the caller.
func (c *Capture) namesOf(p string, known *unix.Stat_t) ([]string, error) {
	var st unix.Stat_t
	if known != nil {
		st = *known
	} else if unix.Lstat(p, &st) != nil {
		return nil, nil // absent: a new file
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
		return nil, nil // not a file, or one name
	}
	wsDev, ok := c.workspaceDev()
	if !ok {
		return nil, unix.ENOENT
	}
	if st.Dev != wsDev {
		return nil, nil // no name of it can be in the workspace
	}
	key := [3]uint64{st.Dev, st.Ino, st.Nlink}
	if out, ok := c.names[key]; ok {
		return out, nil
	}
	// p itself may be outside the workspace (rule (c) for a name in
	// TMPDIR): HardLinkNames stats it under a name of its own.
	fsys := inodeFS{FS: os.DirFS(c.workspace), path: p}
	rel, err := HardLinkNames(fsys, inodeName)
	if err != nil {
		return nil, err // not cached: the next call walks again
	}
	out := make([]string, 0, len(rel))
	for _, r := range rel {
		out = append(out, filepath.Join(c.workspace, r))
	}
	if c.names == nil {
		c.names = map[[3]uint64][]string{}
	}
	c.names[key] = out
	return out, nil
}

// workspaceDev is the device of the workspace's file system, looked up
// once per command (false: the workspace cannot be stat'ed, asked again
// next time).
func (c *Capture) workspaceDev() (uint64, bool) {
	if c.wsDev == nil {
		var ws unix.Stat_t
		if err := unix.Stat(c.workspace, &ws); err != nil {
			return 0, false
		}
		c.wsDev = &ws.Dev
	}
	return *c.wsDev, true
}

// inodeFS is the workspace as an fs.FS, with one extra name, inodeName,
// that stats as the file at path (which may lie outside the workspace):
// HardLinkNames then looks for that inode's names in the workspace.
type inodeFS struct {
	fs.FS
	path string
}

const inodeName = "\x00inode" // no directory entry can have this name

func (f inodeFS) Stat(name string) (fs.FileInfo, error) {
	if name == inodeName {
		return os.Stat(f.path)
	}
	return fs.Stat(f.FS, name)
}

// readString reads a NUL-terminated path from process pid's memory, a
// page at a time so that a string ending just before an unmapped page is
// still read, through buf (the caller's, reused: a path read is one
// allocation, its string).
func readString(pid int, addr uint64, buf *[4096]byte) (string, error) {
	var out []byte
	const page = 4096
	for len(out) < unix.PathMax {
		n := page - int(addr%page)
		if err := readMem(pid, addr, buf[:n]); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			if out == nil {
				return string(buf[:i]), nil
			}
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:n]...)
		addr += uint64(n)
	}
	return "", unix.ENAMETOOLONG
}

func readMem(pid int, addr uint64, buf []byte) error {
	n, err := unix.ProcessVMReadv(pid,
		[]unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}, 0)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return unix.EFAULT
	}
	return nil
}
