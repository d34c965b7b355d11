package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"unsafe"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
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
// answers it ENOSYS (seccomp_linux.go), so callers use openat. The kernel allows one
// listener per filter chain, so these share the listener of the network
// mode's supervisor (the connect supervisor, or the network supervisor),
// which hands them to the command's capturer: it works out which paths the
// call names, as the calling process sees them (its cwd or dirfd,
// symlinks, /proc/self), calls BeforeChange with those inside the
// workspace, and only then lets the call go on
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE). The cost grows with what the command
// touches — about one round trip per call — never with the workspace.
//
// CONTINUE is unsafe as a security decision (the process can change the
// path in its memory after the supervisor read it) and is not one here:
// Landlock and the main seccomp program still decide what the call may do.
// Capture serves honest programs. A process that races its own memory can
// make a change whose pre-image was not recorded; it still cannot reach
// outside the sandbox, and the checkpoint watcher sees the change. What
// must hold against any process — no set-id modes, no device nodes — is
// therefore a seccomp rule on registers, never a capture answer.
//
// Capture fails closed: a call whose paths cannot be resolved is refused
// with EPERM (see paths), and so is a hard link of a workspace file to a
// name outside the workspace (see link).
//
// Not captured: writes through a descriptor opened before the capture
// started (inherited, or opened before the checkpoint it lands in was
// opened), and changes of owner, timestamps or extended attributes, which
// checkpoints do not restore.

// captureCalls are the notified calls: name, and for open-like calls the
// flags argument (0: every call is notified).
var captureCalls = []struct {
	name    string
	flagArg uint
}{
	{"open", 1}, {"openat", 2}, {"creat", 0}, {"truncate", 0},
	{"unlink", 0}, {"unlinkat", 0}, {"rmdir", 0}, {"mkdir", 0}, {"mkdirat", 0},
	{"mknod", 0}, {"mknodat", 0}, {"rename", 0}, {"renameat", 0}, {"renameat2", 0},
	{"link", 0}, {"linkat", 0}, {"symlink", 0}, {"symlinkat", 0},
	{"chmod", 0}, {"fchmod", 0}, {"fchmodat", 0}, {"fchmodat2", 0},
	// bind makes a socket file; where the network supervisor already
	// receives bind, it calls beforeBind instead (see withCapture).
	{"bind", 0},
	// exit_group only where writers can be told apart (withCapture's
	// exits): the command's listener reads what the exiting process
	// wrote while it still exists (foreign_linux.go). That needs root,
	// where the tree is always tracked (cgroup or PID namespace) and
	// killed before its supervisor stops: no process is left to get
	// ENOSYS from an exit_group nobody answers.
	{"exit_group", 0},
}

// openWriteFlags make an open a possible change.
var openWriteFlags = []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC}

// withCapture adds the capture calls to a child program's notifications.
// They share its listener: the kernel allows one listener per process's
// filter chain, so the supervisor of the policy's network mode receives
// them and hands them to a capturer.
//
// With exits, exit_group is notified too (foreign_linux.go says why).
func withCapture(n notifySpec, exits bool) notifySpec {
	out := notifySpec{calls: append([]notifyCall(nil), n.calls...)}
	for _, c := range captureCalls {
		if c.name == "bind" && n.has("bind") {
			continue // the network supervisor's: it reports binds itself
		}
		if c.name == "exit_group" && !exits {
			continue
		}
		if c.flagArg == 0 {
			out.calls = append(out.calls, notifyCall{name: c.name})
			continue
		}
		// libseccomp compares an argument once per rule: one rule per flag.
		for _, fl := range openWriteFlags {
			out.calls = append(out.calls, notifyCall{name: c.name,
				conds: []seccomp.ScmpCondition{cond(c.flagArg, seccomp.CompareMaskedEqual, fl, fl)}})
		}
	}
	return out
}

var (
	captureNrOnce sync.Once
	captureNr     map[int32]string
)

// captureNumbers maps this architecture's numbers of captureCalls to
// their names.
func captureNumbers() map[int32]string {
	captureNrOnce.Do(func() {
		captureNr = map[int32]string{}
		for _, c := range captureCalls {
			if nr, err := seccomp.GetSyscallFromName(c.name); err == nil {
				captureNr[int32(nr)] = c.name
			}
		}
	})
	return captureNr
}

// capturer answers one command's capture notifications. Its supervisor
// calls it for one notification at a time, in the order received: two
// calls on one path are seen in the order they were made.
type capturer struct {
	workspace string // canonical
	hook      ChangeFunc
	nr        map[int32]string
	// bind: bind(2) notifications are this capturer's; false where the
	// network supervisor receives them (it calls beforeBind).
	binds bool
	// foreign is the command's fanotify listener (foreign_linux.go), or
	// nil: it marks every announced path before the hook records it.
	foreign *foreignWatch
	mu      sync.Mutex
	// names caches namesOf's walks for this command, keyed by inode and
	// link count; any captured call that changes names (link, rename,
	// unlink, mkdir, ...) empties it, and every such call of the tree is
	// captured, so a cached answer is the walk's answer. Without it a
	// build rewriting one multiply-linked file would walk each time.
	names map[[3]uint64][]string
}

func newCapturer(workspace string, hook ChangeFunc, bind bool) *capturer {
	if hook == nil || workspace == "" {
		return nil
	}
	return &capturer{workspace: workspace, hook: hook, nr: captureNumbers(), binds: bind}
}

// handles reports whether nr is a capture call.
func (c *capturer) handles(nr int32) bool {
	if c == nil {
		return false
	}
	name, ok := c.nr[nr]
	return ok && (name != "bind" || c.binds)
}

// answer calls the hook for the paths req is about to change and returns
// the response: continue, or an error when the hook refused, when the
// call would give a workspace file a name outside the workspace (a hard
// link: rule (a) below), or when the paths cannot be told (fail closed).
// idValid confirms the notification is still pending before the hook
// runs (the pid read from it still names the caller).
func (c *capturer) answer(req *seccompNotif, idValid func(uint64) bool) (flags uint32, errno unix.Errno) {
	c.mu.Lock()
	defer c.mu.Unlock()
	paths, errno := c.paths(req)
	if errno != 0 {
		return 0, errno
	}
	if len(paths) > 0 && idValid(req.ID) {
		c.foreign.announce(paths)
		if errno := c.callHook(paths); errno != 0 {
			return 0, errno
		}
	}
	return unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE, 0
}

// callHook calls the hook; an error refuses the change (ENOSPC when the
// hook says so, else EPERM).
func (c *capturer) callHook(paths []string) unix.Errno {
	if err := c.hook(paths); err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return unix.ENOSPC
		}
		return unix.EPERM
	}
	return 0
}

// beforeBind is the network supervisor's way in: it binds pathname unix
// sockets itself (netsup_linux.go) and calls this, with the path it
// resolved, before it does.
func (c *capturer) beforeBind(path string) unix.Errno {
	if c == nil || !within(path, c.workspace) || path == c.workspace {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.foreign.announce([]string{path})
	return c.callHook([]string{path})
}

// pathArg is one path a call names: a string in the process's memory,
// relative to a directory descriptor, and whether a final symlink is
// followed. inode: the call changes the content or mode of the inode the
// path names (a write-side open, truncate, chmod), which every other
// name of that inode shares (see namesOf).
type pathArg struct {
	dirfd  int32
	addr   uint64
	follow bool
	inode  bool
}

const atFDCWD = int32(unix.AT_FDCWD)

// errUnresolved: the capturer cannot tell which path a call names.
var errUnresolved = errors.New("sandbox: capture: path not resolvable")

// paths returns the workspace paths req is about to change, or the errno
// that refuses the call.
//
// Fail closed: when a path the call names cannot be resolved — the
// process's memory unreadable, its cwd or dirfd gone from /proc, a
// directory deeper than PATH_MAX (the kernel's d_path says ENAMETOOLONG),
// a cwd removed under the process (whose ".." still works), a component
// that cannot be looked at — the call fails with EPERM: a change that
// cannot be named cannot be recorded, and must not happen unrecorded.
// Directories are resolved through descriptors: /proc/PID/cwd or
// /proc/PID/fd/N opened as O_PATH pins the very directory the call will
// use, and the path read back from our descriptor is accepted only if it
// names that directory now (device and inode).
func (c *capturer) paths(req *seccompNotif) ([]string, unix.Errno) {
	a := req.Data.Args
	pid := int(req.Pid)
	var args []pathArg
	openFlags := func(flags uint64, dirfd int32, addr uint64) {
		if flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC) == 0 {
			return // a read: nothing changes
		}
		if flags&unix.O_TMPFILE == unix.O_TMPFILE {
			return // unnamed; a later linkat names it, and is captured
		}
		follow := flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
		args = append(args, pathArg{dirfd, addr, follow, true})
	}
	switch c.nr[req.Data.Nr] {
	case "exit_group":
		// The process is about to end: what it wrote is queued, and it
		// still exists, so the listener can tell it is the command's.
		c.foreign.drain()
		return nil, 0
	case "open", "openat", "creat", "truncate", "chmod", "fchmod", "fchmodat", "fchmodat2":
	default:
		c.names = nil // a name may change: the cached walks are stale
	}
	switch c.nr[req.Data.Nr] {
	case "open":
		openFlags(a[1], atFDCWD, a[0])
	case "openat":
		openFlags(a[2], int32(a[0]), a[1])
	case "creat", "truncate", "chmod":
		args = append(args, pathArg{atFDCWD, a[0], true, true})
	case "unlink", "rmdir", "mkdir", "mknod":
		args = append(args, pathArg{atFDCWD, a[0], false, false})
	case "unlinkat", "mkdirat", "mknodat":
		args = append(args, pathArg{int32(a[0]), a[1], false, false})
	case "fchmodat":
		args = append(args, pathArg{int32(a[0]), a[1], true, true})
	case "fchmodat2":
		args = append(args, pathArg{int32(a[0]), a[1], a[3]&unix.AT_SYMLINK_NOFOLLOW == 0, true})
	case "rename":
		args = append(args, pathArg{atFDCWD, a[0], false, false}, pathArg{atFDCWD, a[1], false, false})
	case "renameat", "renameat2":
		args = append(args, pathArg{int32(a[0]), a[1], false, false}, pathArg{int32(a[2]), a[3], false, false})
	case "symlink":
		args = append(args, pathArg{atFDCWD, a[1], false, false})
	case "symlinkat":
		args = append(args, pathArg{int32(a[1]), a[2], false, false})
	case "link":
		// link(2) never follows a final symlink of the source.
		return c.link(pid, pathArg{atFDCWD, a[0], false, false}, pathArg{atFDCWD, a[1], false, false})
	case "linkat":
		// AT_EMPTY_PATH with an empty name links the descriptor itself,
		// which resolveArg handles as it does fchmod's.
		return c.link(pid, pathArg{int32(a[0]), a[1], a[4]&unix.AT_SYMLINK_FOLLOW != 0, false}, pathArg{int32(a[2]), a[3], false, false})
	case "fchmod":
		args = append(args, pathArg{int32(a[0]), 0, true, true})
	case "bind":
		return c.bind(pid, a[1], a[2])
	}
	var out []string
	for _, pa := range args {
		rs, err := c.resolveArg(pid, pa)
		if err != nil {
			return c.unresolved(out)
		}
		out = c.addInside(out, rs)
		if pa.inode && len(rs) > 0 {
			names, err := c.namesOf(rs[len(rs)-1])
			if err != nil {
				return nil, unix.EPERM
			}
			out = c.addInside(out, names)
		}
	}
	return out, 0
}

// unresolved is the answer when a path could not be resolved: EPERM,
// except in tests that show what happens without the rule.
func (c *capturer) unresolved(out []string) ([]string, unix.Errno) {
	if testCaptureFailOpen {
		return out, 0
	}
	return nil, unix.EPERM
}

// addInside adds the paths of rs inside the workspace to out, once each.
func (c *capturer) addInside(out, rs []string) []string {
	for _, r := range rs {
		if within(r, c.workspace) && r != c.workspace && !hasString(out, r) {
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
// Like all of capture, (a) is decided on the strings the process passed,
// which a process racing its own memory can change after the check
// (Landlock and the main seccomp program stay the confinement); (c) then
// still finds the names when that link is written through.

// link applies rules (a) and (b) to link(old, new).
func (c *capturer) link(pid int, old, new pathArg) ([]string, unix.Errno) {
	srcs, err := c.resolveArg(pid, old)
	if err != nil {
		return c.unresolved(nil)
	}
	dsts, err := c.resolveArg(pid, new)
	if err != nil {
		return c.unresolved(nil)
	}
	if len(srcs) > 0 && len(dsts) > 0 {
		src, dst := srcs[len(srcs)-1], dsts[len(dsts)-1]
		if within(src, c.workspace) && !within(dst, c.workspace) {
			if fi, err := os.Lstat(src); err == nil && !fi.IsDir() {
				return nil, unix.EPERM // rule (a)
			}
		}
	}
	return c.addInside(c.addInside(nil, dsts), srcs), 0 // rule (b)
}

// namesOf returns the workspace names of p's inode when p is a regular
// file with more than one link (rule (c)): HardLinkNames on the
// workspace. p need not be inside the workspace (a name in TMPDIR).
func (c *capturer) namesOf(p string) ([]string, error) {
	var st, ws unix.Stat_t
	if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
		return nil, nil // absent (a new file), not a file, or one name
	}
	if err := unix.Stat(c.workspace, &ws); err != nil {
		return nil, err
	}
	if st.Dev != ws.Dev {
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

// bind: a unix socket bound to a pathname creates a file (a socket) that
// a rewind must remove. The name is never followed (bind fails on an
// existing path).
func (c *capturer) bind(pid int, addr, addrLen uint64) ([]string, unix.Errno) {
	if addrLen <= 2 || addrLen > uint64(unsafe.Sizeof(unix.RawSockaddrUnix{})) {
		return nil, 0 // not a pathname unix address: the kernel decides
	}
	sa := make([]byte, addrLen)
	if readMem(pid, addr, sa) != nil {
		return c.unresolved(nil)
	}
	if binary.NativeEndian.Uint16(sa) != unix.AF_UNIX || sa[2] == 0 {
		return nil, 0 // another family, or an abstract name: no file
	}
	path := sa[2:]
	if i := bytes.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	rs, err := c.resolveName(pid, atFDCWD, string(path), false)
	if err != nil {
		return c.unresolved(nil)
	}
	return c.addInside(nil, rs), 0
}

// resolveArg reads pa's name from the process and resolves it as the
// process would: the resolved path last, preceded by a followed final
// symlink (both may change). An empty result means the call names no
// file at all (an empty name on a pipe, a deleted file).
func (c *capturer) resolveArg(pid int, pa pathArg) ([]string, error) {
	name := ""
	if pa.addr != 0 {
		var err error
		if name, err = readString(pid, pa.addr); err != nil {
			return nil, err
		}
	}
	return c.resolveName(pid, pa.dirfd, name, pa.follow)
}

func (c *capturer) resolveName(pid int, dirfd int32, name string, follow bool) ([]string, error) {
	if strings.HasPrefix(name, "/") {
		return resolveFor(pid, name, follow)
	}
	base, ok, err := baseFor(pid, dirfd, name == "")
	if err != nil || !ok {
		return nil, err
	}
	if name == "" {
		return []string{base}, nil
	}
	return resolveFor(pid, base+"/"+name, follow)
}

// baseFor returns the canonical path of process pid's cwd (dirfd
// AT_FDCWD) or of its descriptor dirfd, resolved through a descriptor of
// our own: ok is false when there is nothing to record (self: the object
// is not a named file — a pipe, a socket, a deleted file; not self: it is
// not a directory, so the call fails with ENOTDIR).
func baseFor(pid int, dirfd int32, self bool) (path string, ok bool, err error) {
	link := "/proc/" + strconv.Itoa(pid) + "/cwd"
	if dirfd != atFDCWD {
		link = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(dirfd))
		if t, err := os.Readlink(link); err == nil && !strings.HasPrefix(t, "/") {
			// pipe:[...], socket:[...], anon_inode:...: no file name.
			return "", false, nil
		}
	}
	fd, err := unix.Open(link, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", false, err
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	switch {
	case !self && !isDir:
		return "", false, nil
	case st.Nlink == 0 && !isDir:
		return "", false, nil // a deleted or O_TMPFILE file: no name
	case st.Nlink == 0:
		return "", false, errUnresolved // a removed directory: its ".." still works
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", false, err // ENAMETOOLONG beyond PATH_MAX
	}
	var now unix.Stat_t
	if !strings.HasPrefix(p, "/") || unix.Stat(p, &now) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		// Renamed meanwhile, or a name the string cannot carry (a
		// directory whose name ends in " (deleted)"): refuse.
		return "", false, errUnresolved
	}
	return p, true, nil
}

// resolveFor resolves p as process pid would: symlinks followed (the last
// one only with follow), /proc/self and /proc/thread-self meaning pid's.
// It returns the resolved path and, when a followed final symlink was
// crossed, the link itself first (both may change: the link is what the
// checkpoint restores, the target what the write changes). A component
// that does not exist ends resolution: the rest is taken as written. A
// component that cannot be looked at (ENAMETOOLONG, EACCES, ...) is an
// error: the caller refuses the call.
func resolveFor(pid int, p string, follow bool) ([]string, error) {
	const maxLinks = 40
	if len(p) >= unix.PathMax {
		return nil, unix.ENAMETOOLONG
	}
	self := "/proc/" + strconv.Itoa(pid)
	var links []string
	resolved := "/"
	rest := p
	hops := 0
	for {
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			return append(links, resolved), nil
		}
		comp, after, _ := strings.Cut(rest, "/")
		rest = after
		switch comp {
		case ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, comp)
		last := strings.Trim(rest, "/") == ""
		if last && !follow {
			return append(links, next), nil
		}
		var target string
		switch next {
		case "/proc/self":
			target = self
		case "/proc/thread-self":
			target = self + "/task/" + strconv.Itoa(pid)
		default:
			fi, err := os.Lstat(next)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
					return append(links, filepath.Join(next, rest)), nil
				}
				return nil, err
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				resolved = next
				continue
			}
			if target, err = os.Readlink(next); err != nil {
				return nil, err
			}
			if last {
				links = append(links, next)
			}
		}
		if hops++; hops > maxLinks {
			return links, nil // ELOOP for the process too
		}
		if !strings.HasPrefix(target, "/") {
			target = filepath.Join(resolved, target)
		}
		rest = target + "/" + rest
		resolved = "/"
	}
}

// readString reads a NUL-terminated path from process pid's memory, a
// page at a time so that a string ending just before an unmapped page is
// still read.
func readString(pid int, addr uint64) (string, error) {
	var out []byte
	const page = 4096
	buf := make([]byte, page)
	for len(out) < unix.PathMax {
		n := page - int(addr%page)
		if err := readMem(pid, addr, buf[:n]); err != nil {
			return "", err
		}
		if i := strings.IndexByte(string(buf[:n]), 0); i >= 0 {
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
