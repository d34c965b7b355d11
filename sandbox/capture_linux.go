package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

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
// rename, link, symlink and the chmod family. The kernel allows one
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
// outside the sandbox, and the checkpoint watcher sees the change.
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
}

// openWriteFlags make an open a possible change.
var openWriteFlags = []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC}

// withCapture adds the capture calls to a child program's notifications.
// They share its listener: the kernel allows one listener per process's
// filter chain, so the supervisor of the policy's network mode receives
// them and hands them to a capturer.
func withCapture(n notifySpec) notifySpec {
	out := notifySpec{calls: append([]notifyCall(nil), n.calls...)}
	for _, c := range captureCalls {
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
	mu        sync.Mutex
}

func newCapturer(workspace string, hook ChangeFunc) *capturer {
	if hook == nil || workspace == "" {
		return nil
	}
	return &capturer{workspace: workspace, hook: hook, nr: captureNumbers()}
}

// handles reports whether nr is a capture call.
func (c *capturer) handles(nr int32) bool {
	if c == nil {
		return false
	}
	_, ok := c.nr[nr]
	return ok
}

// answer calls the hook for the paths req is about to change and returns
// the response: continue, or an error when the hook refused. idValid
// confirms the notification is still pending before the hook runs (the
// pid read from it still names the caller).
func (c *capturer) answer(req *seccompNotif, idValid func(uint64) bool) (flags uint32, errno unix.Errno) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if paths := c.paths(req); len(paths) > 0 && idValid(req.ID) {
		if err := c.hook(paths); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return 0, unix.ENOSPC
			}
			return 0, unix.EPERM
		}
	}
	return unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE, 0
}

// pathArg is one path a call names: a string in the process's memory,
// relative to a directory descriptor, and whether a final symlink is
// followed.
type pathArg struct {
	dirfd  int32
	addr   uint64
	follow bool
}

const atFDCWD = int32(unix.AT_FDCWD)

// paths returns the workspace paths req is about to change.
func (c *capturer) paths(req *seccompNotif) []string {
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
		args = append(args, pathArg{dirfd, addr, follow})
	}
	switch c.nr[req.Data.Nr] {
	case "open":
		openFlags(a[1], atFDCWD, a[0])
	case "openat":
		openFlags(a[2], int32(a[0]), a[1])
	case "creat", "truncate", "chmod":
		args = append(args, pathArg{atFDCWD, a[0], true})
	case "unlink", "rmdir", "mkdir", "mknod":
		args = append(args, pathArg{atFDCWD, a[0], false})
	case "unlinkat", "mkdirat", "mknodat":
		args = append(args, pathArg{int32(a[0]), a[1], false})
	case "fchmodat":
		args = append(args, pathArg{int32(a[0]), a[1], true})
	case "fchmodat2":
		args = append(args, pathArg{int32(a[0]), a[1], a[3]&unix.AT_SYMLINK_NOFOLLOW == 0})
	case "rename":
		args = append(args, pathArg{atFDCWD, a[0], false}, pathArg{atFDCWD, a[1], false})
	case "renameat", "renameat2":
		args = append(args, pathArg{int32(a[0]), a[1], false}, pathArg{int32(a[2]), a[3], false})
	case "link", "symlink":
		args = append(args, pathArg{atFDCWD, a[1], false})
	case "linkat":
		args = append(args, pathArg{int32(a[2]), a[3], false})
	case "symlinkat":
		args = append(args, pathArg{int32(a[1]), a[2], false})
	case "fchmod":
		args = append(args, pathArg{int32(a[0]), 0, true})
	}
	var out []string
	for _, pa := range args {
		name := ""
		if pa.addr != 0 {
			var err error
			if name, err = readString(pid, pa.addr); err != nil {
				continue
			}
		}
		p, err := absoluteFor(pid, pa.dirfd, name)
		if err != nil {
			continue
		}
		for _, r := range resolveFor(pid, p, pa.follow) {
			if within(r, c.workspace) && r != c.workspace && !hasString(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// absoluteFor makes name (relative to dirfd of process pid) absolute; an
// empty name is the descriptor itself (AT_EMPTY_PATH, fchmod).
func absoluteFor(pid int, dirfd int32, name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return name, nil
	}
	var base string
	var err error
	proc := "/proc/" + strconv.Itoa(pid)
	if dirfd == atFDCWD {
		base, err = os.Readlink(proc + "/cwd")
	} else {
		base, err = os.Readlink(proc + "/fd/" + strconv.Itoa(int(dirfd)))
	}
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(base, "/") {
		return "", errors.New("not a path") // pipe:[...], socket:[...]
	}
	if name == "" {
		return base, nil
	}
	return base + "/" + name, nil
}

// resolveFor resolves p as process pid would: symlinks followed (the last
// one only with follow), /proc/self and /proc/thread-self meaning pid's.
// It returns the resolved path and, when a followed final symlink was
// crossed, the link itself first (both may change: the link is what the
// checkpoint restores, the target what the write changes). A component
// that does not exist ends resolution: the rest is taken as written.
func resolveFor(pid int, p string, follow bool) []string {
	const maxLinks = 40
	self := "/proc/" + strconv.Itoa(pid)
	var links []string
	resolved := "/"
	rest := p
	hops := 0
	for {
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			return append(links, resolved)
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
			return append(links, next)
		}
		var target string
		switch next {
		case "/proc/self":
			target = self
		case "/proc/thread-self":
			target = self + "/task/" + strconv.Itoa(pid)
		default:
			fi, err := os.Lstat(next)
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				if err != nil {
					return append(links, filepath.Join(next, rest))
				}
				resolved = next
				continue
			}
			if target, err = os.Readlink(next); err != nil {
				return append(links, next)
			}
			if last {
				links = append(links, next)
			}
		}
		if hops++; hops > maxLinks {
			return links // ELOOP for the process too
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
