package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/lite-agent/lite-agent/sandbox/internal/cgroup"
	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
	"golang.org/x/sys/unix"
)

// hostInfo is what this kernel and this user offer: every fact New's
// decision (decide, plan_linux.go) reads, probed once per process by
// trying what asking cannot tell. Tests hand decide made-up hosts, and
// newOnHost a real one with facts taken away.
type hostInfo struct {
	caps    Capabilities
	kernel  [2]int // major, minor (uname)
	abi     int    // Landlock ABI, 0: none
	seccomp bool
	// notify is nil when a seccomp listener can be installed: refused
	// (EBUSY) when an outer sandbox's filter already has one, and by
	// gVisor and seccomp profiles (EINVAL, EPERM).
	notify error
	// pidfdGetfd is nil when pidfd_getfd works on a real pidfd (a
	// container without CAP_SYS_PTRACE refuses it).
	pidfdGetfd error
	// procOK is nil when /proc/self is this process (getpid): the
	// notification server reads /proc/PID of the pids it is told of, which
	// under an outer PID namespace with the outer /proc (bwrap
	// --unshare-pid --bind / /) name other processes.
	procOK error
	userns error // nil: user+PID namespaces work for this user (non-root only)
	// pidns is nil when a command can get a PID namespace: root
	// directly, others inside their user namespace.
	pidns error
	// mountNS is nil when commands can get the private read-only mount
	// namespace (root directly, others in a user namespace); devpts and
	// proc, when it is, whether a devpts instance and a /proc of the
	// sandbox's own can be mounted there.
	mountNS, devpts, proc error
	// unshareFiles is nil when unshare(CLONE_FILES) works: how a child
	// gives its own seccomp listener to the parent alone (Docker's
	// default profile refuses unshare outright).
	unshareFiles error
	fanotify     bool // a privileged fanotify listener (foreign_linux.go)
	cg           cgroup.Info
	cgWritable   map[string]bool // "v2", "pids", "memory"
	v2Subtree    []string        // controllers our v2 parent delegates to children
	lastCap      int
	root         bool
	setpcap      bool // CAP_SETPCAP in the effective set
	uid, gid     int
	rlimitHard   map[int]uint64
	// exe is this program, canonical: the PID namespace's init
	// (pidinit) when a command gets one; "" when it cannot be located.
	exe string
}

var host = sync.OnceValue(probeHost)

var rootUserNS = sync.OnceValue(func() error { return spawn.ProbeUserNS(0, 0) })

// Probe reports what this kernel and this user can enforce. It is computed
// once per process (it creates and removes a test cgroup and a user
// namespace) and then cached.
func Probe() Capabilities {
	h := host()
	c := h.caps
	if h.root {
		c.UserNamespaces = rootUserNS() == nil
	}
	c.CgroupV1 = append([]string(nil), c.CgroupV1...)
	c.Notes = append([]string(nil), c.Notes...)
	return c
}

// ProbeInBackground starts the probe of this host that New, Decide and
// Probe read (made once per process) on a goroutine of its own, so that
// a caller with other work before its first New — `sandbox run` building
// its policy — finds it made rather than waiting for it. New waits for a
// probe under way; calling this again, or after New, does nothing.
func ProbeInBackground() { go host() }

func probeHost() *hostInfo {
	h := &hostInfo{
		uid: os.Getuid(), gid: os.Getgid(),
		root:       os.Geteuid() == 0,
		cgWritable: map[string]bool{},
		rlimitHard: map[int]uint64{},
	}
	c := &h.caps
	c.Root = h.root
	// The namespace probes (clones of this process, ~0.3 ms) run beside
	// the rest, which waits for them where their answers are needed.
	usr := spawn.User{Root: h.root, UID: h.uid, GID: h.gid}
	var ns nsFacts
	nsDone := make(chan struct{})
	go func() {
		defer close(nsDone)
		ns = probeNamespaces(usr)
	}()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		c.Kernel = unix.ByteSliceToString(u.Release[:])
		h.kernel = parseKernelVersion(c.Kernel)
	}

	if abi, err := spawn.LandlockABI(); err == nil {
		h.abi = abi
	} else {
		c.Notes = append(c.Notes, fmt.Sprintf("Landlock unavailable (%v): no file-system confinement", err))
	}
	c.LandlockABI = h.abi

	// seccomp: ask which actions the kernel implements (4.14+), then try
	// what asking cannot tell: a listener is refused (EBUSY) when a filter
	// of an outer sandbox already has one, and gVisor and seccomp profiles
	// refuse the flag or the call (EINVAL, EPERM).
	h.seccomp = seccompActionAvail(unix.SECCOMP_RET_KILL_PROCESS) && seccompActionAvail(unix.SECCOMP_RET_ERRNO)
	switch {
	case !h.seccomp:
		h.notify = errors.New("no seccomp filters")
	case !seccompActionAvail(unix.SECCOMP_RET_USER_NOTIF):
		h.notify = errors.New("the kernel has no SECCOMP_RET_USER_NOTIF (Linux 5.0+)")
	default:
		if err := trialListener(); err != nil {
			h.notify = fmt.Errorf("installing a listener failed (%w)", err)
			c.Notes = append(c.Notes, fmt.Sprintf("seccomp user notification: installing a listener failed (%v): no address filtering, no change capture", err))
		}
	}
	c.Seccomp, c.SeccompUserNotify = h.seccomp, h.notify == nil
	if err := trialPidfdGetfd(); err != nil {
		h.pidfdGetfd = err
		c.Notes = append(c.Notes, fmt.Sprintf("pidfd_getfd on a real pidfd failed (%v; a container without CAP_SYS_PTRACE refuses it): no address filtering, no change capture", err))
	}
	c.PidfdGetfd = h.pidfdGetfd == nil
	h.procOK = trialProc()
	c.ProcMatchesPID = h.procOK == nil
	if h.procOK != nil {
		c.Notes = append(c.Notes, fmt.Sprintf("%v: the notification server cannot read the processes it is told of (no address filtering, no change capture)", h.procOK))
	}
	if err := spawn.ProbeUnshareFiles(); err != nil {
		h.unshareFiles = fmt.Errorf("unshare(CLONE_FILES): %w", err)
		c.Notes = append(c.Notes, fmt.Sprintf("unshare(CLONE_FILES) refused (%v; a container's default seccomp profile refuses unshare): a command's change-capture listener is made on a spawner thread of its own", err))
	}
	c.UnshareFiles = h.unshareFiles == nil

	h.lastCap = 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			h.lastCap = n
		}
	}
	h.setpcap = hasEffectiveCap(unix.CAP_SETPCAP)
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			h.exe = exe
		}
	}

	<-nsDone
	h.userns, h.pidns, h.mountNS = ns.userns, ns.pidns, ns.mountNS
	c.UserNamespaces = ns.userNamespaces
	c.Notes = append(c.Notes, ns.notes...)
	c.PIDNamespaces = h.pidns == nil
	c.ReadOnlyMounts = h.mountNS == nil
	if h.mountNS != nil {
		c.Notes = append(c.Notes, fmt.Sprintf("no private mount namespace (%v): chmod, chown and utimensat outside the read-write roots cannot be refused (LevelFull refuses unless BestEffort)", h.mountNS))
		h.devpts, h.proc = h.mountNS, h.mountNS
	} else {
		h.devpts = spawn.ProbeDevpts(usr)
		h.proc = spawn.ProbeProc(usr)
	}
	h.fanotify = foreignAvailable()
	c.Fanotify = h.fanotify

	h.cg = cgroup.Detect()
	c.CgroupV2 = h.cg.V2Base != ""
	for _, ctl := range []string{"pids", "memory"} {
		if _, ok := h.cg.V1[ctl]; ok {
			c.CgroupV1 = append(c.CgroupV1, ctl)
		}
	}
	if h.cg.V2Base != "" && canMkdir(h.cg.V2Base) {
		h.cgWritable["v2"] = true
		if b, err := os.ReadFile(filepath.Join(h.cg.V2Base, "cgroup.subtree_control")); err == nil {
			h.v2Subtree = strings.Fields(string(b))
		}
		// Only controllers our cgroup already delegates are used: this
		// package never rewrites the caller's cgroup or an ancestor.
	}
	for _, ctl := range []string{"pids", "memory"} {
		if base, ok := h.cg.V1[ctl]; ok && canMkdir(base) {
			h.cgWritable[ctl] = true
		}
	}
	c.CgroupWritable = len(h.cgWritable) > 0
	if !c.CgroupWritable {
		c.Notes = append(c.Notes, "no writable cgroup: memory is bounded per process (RLIMIT_AS), not per tree")
	}
	if h.abi > 0 && h.abi < 6 {
		c.Notes = append(c.Notes, fmt.Sprintf("Landlock ABI %d < 6: signals and abstract unix sockets are isolated with a PID namespace and seccomp instead of Landlock scoping", h.abi))
	}
	if h.abi > 0 && h.abi < 4 {
		c.Notes = append(c.Notes, fmt.Sprintf("Landlock ABI %d < 4: TCP ports are not restricted by Landlock (seccomp still refuses IP sockets in network mode none)", h.abi))
	}
	if !h.root {
		c.Notes = append(c.Notes, "unprivileged: the capability bounding set is dropped only inside a user namespace (no_new_privs makes it moot otherwise)")
	}
	for _, r := range []int{unix.RLIMIT_AS, unix.RLIMIT_FSIZE, unix.RLIMIT_NPROC, unix.RLIMIT_CORE} {
		var rl unix.Rlimit
		if unix.Getrlimit(r, &rl) == nil {
			h.rlimitHard[r] = rl.Max
		} else {
			h.rlimitHard[r] = unix.RLIM_INFINITY
		}
	}
	return h
}

// nsFacts are the namespace answers of probeHost, made beside its other
// probes (probeNamespaces).
type nsFacts struct {
	userns, pidns, mountNS error
	userNamespaces         bool // Capabilities.UserNamespaces, for non-root
	notes                  []string
}

// probeNamespaces probes the namespaces a command of u may get. Root
// never needs a user namespace (and making one costs a clone): its PID
// namespace is tried directly; Probe() asks about user namespaces on its
// own.
func probeNamespaces(usr spawn.User) nsFacts {
	var f nsFacts
	if _, _, ok := spawn.ProbeNamespaces(usr); ok {
		// One child had every namespace (user, unprivileged; PID; mount)
		// and mounted the sandbox's own devpts and /proc there: what the
		// probes one by one below find, at a quarter of the clones.
		// ProbeDevpts and ProbeProc return what it found.
		f.userNamespaces = !usr.Root
		return f
	}
	if usr.Root {
		if f.pidns = spawn.ProbePIDNS(); f.pidns != nil {
			f.notes = append(f.notes, fmt.Sprintf("PID namespaces cannot be made (%v)", f.pidns))
		}
		f.mountNS = spawn.ProbeMountNS(usr)
		return f
	}
	f.userns = spawn.ProbeUserNS(usr.UID, usr.GID)
	f.userNamespaces = f.userns == nil
	f.pidns = f.userns
	if f.userns != nil {
		f.notes = append(f.notes, fmt.Sprintf("user namespaces unavailable to this user (%v): no PID namespace and no per-sandbox RLIMIT_NPROC", f.userns))
		f.mountNS = fmt.Errorf("no user namespace: %w", f.userns)
	} else {
		f.mountNS = spawn.ProbeMountNS(usr)
	}
	return f
}

func seccompActionAvail(action uint32) bool {
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	return e == 0
}

func hasEffectiveCap(c int) bool {
	// capget of the thread group leader (pid, not 0: the calling thread
	// may be any of the runtime's), as /proc/self/status reports it, at a
	// fraction of the cost of having the kernel format that file.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3, Pid: int32(os.Getpid())}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil || c < 0 || c >= 64 {
		return false
	}
	return data[c/32].Effective&(1<<uint(c%32)) != 0
}

// canMkdir reports whether this user may create child cgroups under base:
// cgroupfs permissions are plain file modes (delegation is ownership), so
// access(2) answers without creating anything. A read-only cgroupfs mount
// (containers) fails the same check with EROFS.
func canMkdir(base string) bool {
	return unix.Faccessat(unix.AT_FDCWD, base, unix.W_OK|unix.X_OK, unix.AT_EACCESS) == nil
}

// parseKernelVersion reads the major and minor release of a uname
// release string ("6.18.4-arch1" -> 6, 18), for the few choices a feature
// probe cannot make (hostInfo.kernelAtLeast).
func parseKernelVersion(rel string) [2]int {
	var v [2]int
	parts := strings.SplitN(rel, ".", 3)
	for i := 0; i < 2 && i < len(parts); i++ {
		num := parts[i]
		end := 0
		for end < len(num) && num[end] >= '0' && num[end] <= '9' {
			end++
		}
		v[i], _ = strconv.Atoi(num[:end])
	}
	return v
}

func (h *hostInfo) kernelAtLeast(major, minor int) bool {
	return h.kernel[0] > major || h.kernel[0] == major && h.kernel[1] >= minor
}

// trialListener installs a seccomp filter with a notification listener on
// a throwaway thread: the goroutine ends locked to it, so the Go runtime
// ends the thread, and the filter (and no_new_privs, set on that thread
// only) with it. The filter allows everything; only the listener is tried.
func trialListener() error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the filter
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- fmt.Errorf("no_new_privs: %w", err)
			return
		}
		allow := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
		prog := unix.SockFprog{Len: 1, Filter: &allow[0]}
		fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)))
		runtime.KeepAlive(allow)
		if e != 0 {
			done <- fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER): %w", e)
			return
		}
		unix.Close(int(fd))
		done <- nil
	}()
	return <-done
}

// trialPidfdGetfd copies one of this process's descriptors through a pidfd
// of its own, the call the notification server makes on a child's.
func trialPidfdGetfd() error {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, pidfd, 0)
	if err != nil {
		return fmt.Errorf("pidfd_getfd: %w", err)
	}
	unix.Close(fd)
	return nil
}

// trialProc compares /proc/self with getpid().
func trialProc() error {
	self, err := os.Readlink("/proc/self")
	if err != nil {
		return fmt.Errorf("/proc/self: %w", err)
	}
	if pid := strconv.Itoa(os.Getpid()); self != pid {
		return fmt.Errorf("/proc/self is %s but this process is %s (a PID namespace with the outer /proc)", self, pid)
	}
	return nil
}
