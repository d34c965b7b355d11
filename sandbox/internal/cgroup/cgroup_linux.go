package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Info is where this process sits in each hierarchy: what Detect found,
// for the caller to decide a Plan by (and to report) and for NewManager to
// make its directories under.
type Info struct {
	V2Base        string            // <cgroup2 mount>/<our cgroup>, "" if no cgroup2
	v2Controllers []string          // available in V2Base/cgroup.controllers
	V1            map[string]string // controller ("pids", "memory") -> <mount>/<our cgroup>
}

// Detect reads /proc/self/cgroup and /proc/self/mountinfo: the cgroup2
// directory this process belongs to and its v1 pids and memory ones. It
// creates nothing and checks no permission (the caller decides what is
// writable); a host without cgroups gives an empty Info.
func Detect() Info {
	info := Info{V1: map[string]string{}}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return info
	}
	paths := map[string]string{} // controller (or "" for v2) -> path
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			paths[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return info
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f := strings.Fields(pre)
		g := strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		root, mnt := unescapeMount(f[3]), unescapeMount(f[4])
		switch g[0] {
		case "cgroup2":
			p, ok := paths[""]
			if !ok || info.V2Base != "" {
				continue
			}
			if base, ok := joinCgroup(mnt, root, p); ok {
				info.V2Base = base
			}
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				if opt != "pids" && opt != "memory" {
					continue
				}
				p, ok := paths[opt]
				if !ok {
					continue
				}
				if _, dup := info.V1[opt]; dup {
					continue
				}
				if base, ok := joinCgroup(mnt, root, p); ok {
					info.V1[opt] = base
				}
			}
		}
	}
	if info.V2Base != "" {
		if b, err := os.ReadFile(filepath.Join(info.V2Base, "cgroup.controllers")); err == nil {
			info.v2Controllers = strings.Fields(string(b))
		}
	}
	return info
}

// joinCgroup maps a cgroup path (as in /proc/self/cgroup) to a directory
// under a mount whose root is root (not "/" inside containers and
// bind mounts).
func joinCgroup(mnt, root, p string) (string, bool) {
	rel, ok := paths.Rel(root, p)
	if !ok {
		return "", false
	}
	return filepath.Join(mnt, rel), true
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Plan is which hierarchies a Sandbox uses, and for what. The sandbox
// decides it (from Info, what is writable and what v2 delegates, and its
// test hooks); the manager only carries it out, and the sandbox reads it
// again to know how a command's tree is tracked.
type Plan struct {
	V2      bool // a v2 directory per command, the child born in it
	V2Pids  bool // ... with pids.max
	V2Mem   bool // ... with memory.max
	V1Pids  bool // a v1 pids directory per command (slot)
	V1Mem   bool // a v1 memory directory per command (slot)
	V1Track bool // find and kill the tree through the slot's pids directory
}

// Any says the plan needs a Manager at all.
func (p Plan) Any() bool { return p.V2 || p.Slots() }

// Slots says commands start from v1 slots (AcquireSlot), not from an idle
// spawner thread.
func (p Plan) Slots() bool { return p.V1Pids || p.V1Mem }

// PidsLimit says a pids controller bounds each command's tree.
func (p Plan) PidsLimit() bool { return p.V2Pids || p.V1Pids }

// MemLimit says a memory controller bounds each command's tree.
func (p Plan) MemLimit() bool { return p.V2Mem || p.V1Mem }

// Tracks says a cgroup finds (and kills) each command's whole tree.
func (p Plan) Tracks() bool { return p.V2 || p.V1Track }

// Version is the hierarchy that enforces the limits, as the sandbox
// reports it (Enforcement.Cgroup: "v2", "v1", or "" for none).
func (p Plan) Version() string {
	switch {
	case p.V2Pids || p.V2Mem:
		return "v2"
	case p.Slots():
		return "v1"
	case p.V2:
		return "v2"
	}
	return ""
}

// Limits are the per-command bounds a Manager writes into each directory:
// the sandbox's Limits.Processes and Limits.MemoryBytes.
type Limits struct {
	Processes   int
	MemoryBytes int64
}

var sandboxSeq atomic.Int64

// Manager owns one Sandbox's cgroup directories: the per-Sandbox parents
// NewManager makes, and the pooled per-command v2 sets and v1 slots under
// them, until Close.
type Manager struct {
	plan   Plan
	limits Limits
	self   int // our pid: present in a slot's cgroup.procs (the spawner thread)
	// per-Sandbox parents
	v2Dir, v1PidsDir, v1MemDir string
	// swept is closed when cleanStale has gone through the hierarchies'
	// bases: it runs beside the first command (reading a base of a few
	// hundred entries is a few hundred µs that `sandbox run -- CMD` would
	// wait for), and close waits for it.
	swept chan struct{}

	mu     sync.Mutex
	n      int
	v2Free []*V2Set
	v2All  []*V2Set
	slots  []*Slot // idle
	allSl  []*Slot
}

// V2Set is one command's v2 directory (AcquireV2): the child is born in
// it (FDs), and it tells when the tree is gone (Populated, WaitEmpty),
// kills it (Kill) and says which limit it hit (OOMKilled, PidsMaxHit).
type V2Set struct {
	dir      string
	dirFile  *os.File // for CLONE_INTO_CGROUP
	procs    *os.File // cgroup.procs, for kernels without clone3
	events   *os.File // cgroup.events, for "populated"
	killFile string   // cgroup.kill (5.14+), or ""
	oomBase  int64
	maxBase  int64
}

// Slot is one command's v1 directories and the spawner thread parked in
// them (AcquireSlot): the command is started from Thread, so it is born in
// them; Empty, WaitEmpty and Kill work on its tree, Settle says which limit
// it hit.
type Slot struct {
	pids, mem string
	sp        Thread
	self      int // our pid: present in the slot's cgroup.procs (the thread)
	oomBase   int64
	maxBase   int64
	// Kept open for every command of the slot (-1: absent), read with
	// pread at offset 0, which has the kernel format them afresh: a
	// command's end costs one syscall per file rather than an open, two
	// reads and a close through the hierarchy's paths. cgroup.procs is
	// not among them: v1 caches its pid list per open file, so a kept
	// descriptor could answer with a list from before the last exit.
	pidsCurrent, pidsEvents, oomControl int
}

// Thread is what a v1 slot keeps parked in its directories: the spawner
// thread AcquireSlot's callback starts once they exist (joined to them
// first thing: JoinV1), which every command of the slot is started from.
// The slot stops it, which takes it out of them, before they are removed.
type Thread interface{ Stop() }

// JoinV1 moves the calling thread (a spawner thread, first thing) into
// the v1 cgroup directories dirs; nil when there are none. It is what a
// Thread runs before anything else (spawn.StartSpawner's join).
func JoinV1(dirs []string) func() error {
	if len(dirs) == 0 {
		return nil
	}
	return func() error {
		for _, d := range dirs {
			// "tasks" moves this thread only; cgroup.procs would move the
			// whole Go process. "0" (the writing thread) rather than our tid:
			// a thread moving itself is the one migration the kernel does
			// without its global threadgroup rwsem (cgroup_procs_write_start),
			// whose write lock waits for an RCU grace period — 0.04 ms
			// instead of 5-15 ms here.
			if err := writeFile(filepath.Join(d, "tasks"), "0"); err != nil {
				return fmt.Errorf("sandbox: cgroup: moving the spawner thread into %s: %w", d, err)
			}
		}
		return nil
	}
}

// NewManager creates the per-Sandbox directories the plan needs, and
// sweeps, beside the first command, the directories of lite-agent
// processes that died without Close (Close waits for the sweep).
func NewManager(info Info, plan Plan, limits Limits) (*Manager, error) {
	m := &Manager{plan: plan, limits: limits, self: os.Getpid()}
	// Named by who made it: its pid, a sequence number, and its PID
	// namespace, without which two lite-agents nested in other sandboxes
	// (each PID 2 of its namespace) would take each other's names.
	name := fmt.Sprintf("lite-agent.%d.%d.%d", os.Getpid(), sandboxSeq.Add(1), pidNamespace())
	var made, bases []string
	fail := func(err error) (*Manager, error) {
		for i := len(made) - 1; i >= 0; i-- {
			unix.Rmdir(made[i])
		}
		return nil, err
	}
	mk := func(base string) (string, error) {
		bases = append(bases, base)
		d := filepath.Join(base, name)
		err := os.Mkdir(d, 0o755)
		if errors.Is(err, os.ErrExist) {
			// Its name is this process's (pid and PID namespace), so its
			// maker is gone: it is stale (its commands killed first).
			removeStale(d, isV2(base))
			err = os.Mkdir(d, 0o755)
		}
		if err != nil {
			return "", err
		}
		made = append(made, d)
		return d, nil
	}
	var err error
	if plan.V2 {
		if m.v2Dir, err = mk(info.V2Base); err != nil {
			return fail(err)
		}
		// Delegate the controllers to the command directories. Our parent
		// already has them in its subtree_control (the plan checked); our
		// new directory has no processes, so this is allowed.
		var ctl []string
		if plan.V2Pids {
			ctl = append(ctl, "+pids")
		}
		if plan.V2Mem {
			ctl = append(ctl, "+memory")
		}
		if len(ctl) > 0 {
			if err := writeFile(filepath.Join(m.v2Dir, "cgroup.subtree_control"), strings.Join(ctl, " ")); err != nil {
				return fail(err)
			}
		}
	}
	if plan.V1Pids {
		if m.v1PidsDir, err = mk(info.V1["pids"]); err != nil {
			return fail(err)
		}
	}
	if plan.V1Mem {
		if m.v1MemDir, err = mk(info.V1["memory"]); err != nil {
			return fail(err)
		}
	}
	// Our own directories are made first: cleanStale skips this pid's.
	m.swept = make(chan struct{})
	go func() {
		defer close(m.swept)
		for _, b := range bases {
			cleanStale(b)
		}
	}()
	return m, nil
}

// cleanStale removes directories left by lite-agent processes that died
// without Close (kill -9): the commands still running in them, which lost
// their supervisor, are killed first (best effort). Only a directory whose
// maker is known to be gone is touched: one made in this process's PID
// namespace by a pid that no longer exists (or, in the older format
// without a namespace, by a pid /proc no longer shows). A directory of
// another PID namespace is left alone: its pid means nothing here.
func cleanStale(base string) {
	v2 := isV2(base)
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	self, ns := os.Getpid(), pidNamespace()
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "lite-agent.")
		if !ok || !e.IsDir() {
			continue
		}
		parts := strings.Split(rest, ".")
		pid, err := strconv.Atoi(parts[0])
		if err != nil || pid == self {
			continue
		}
		if len(parts) >= 3 {
			if owner, err := strconv.ParseUint(parts[2], 10, 64); err != nil || owner == 0 || owner != ns {
				continue
			}
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		removeStale(filepath.Join(base, e.Name()), v2)
	}
}

// removeStale kills what still runs in a stale set's command directories,
// then removes the set.
func removeStale(set string, v2 bool) {
	if cmds, err := os.ReadDir(set); err == nil {
		for _, c := range cmds {
			if c.IsDir() {
				killMembers(filepath.Join(set, c.Name()), -1, v2)
			}
		}
	}
	removeCgroupTree(set)
}

func isV2(base string) bool {
	_, err := os.Stat(filepath.Join(base, "cgroup.controllers"))
	return err == nil
}

// pidfdGetPIDNamespace is PIDFD_GET_PID_NAMESPACE, _IO(0xFF, 5) (Linux
// 6.11): a namespace fd of the pidfd's process.
const pidfdGetPIDNamespace = 0xFF05

// pidNamespace is the inode of this process's PID namespace, asked of a
// pidfd of itself (no /proc, which may be an outer namespace's), else of
// /proc/self when /proc shows this process; 0 when neither says.
var pidNamespace = sync.OnceValue(func() uint64 {
	var st unix.Stat_t
	if pfd, err := unix.PidfdOpen(os.Getpid(), 0); err == nil {
		nsfd, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(pfd), pidfdGetPIDNamespace, 0)
		unix.Close(pfd)
		if e == 0 {
			defer unix.Close(int(nsfd))
			if unix.Fstat(int(nsfd), &st) == nil {
				return st.Ino
			}
		}
	}
	if self, err := os.Readlink("/proc/self"); err == nil && self == strconv.Itoa(os.Getpid()) && unix.Stat("/proc/self/ns/pid", &st) == nil {
		return st.Ino
	}
	return 0
})

func removeCgroupTree(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	unix.Rmdir(dir)
}

func (m *Manager) nextName() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	return "c" + strconv.Itoa(m.n)
}

// AcquireV2 returns an empty v2 directory for one command, pooled or
// new (with the plan's limits), its counters read as the command's start.
func (m *Manager) AcquireV2() (*V2Set, error) {
	m.mu.Lock()
	var s *V2Set
	if n := len(m.v2Free); n > 0 {
		s, m.v2Free = m.v2Free[n-1], m.v2Free[:n-1]
	}
	m.mu.Unlock()
	if s == nil {
		var err error
		if s, err = m.createV2(); err != nil {
			return nil, err
		}
	}
	s.oomBase = readKeyed(filepath.Join(s.dir, "memory.events"), "oom_kill")
	s.maxBase = readKeyed(filepath.Join(s.dir, "pids.events"), "max")
	return s, nil
}

func (m *Manager) createV2() (*V2Set, error) {
	s := &V2Set{dir: filepath.Join(m.v2Dir, m.nextName())}
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.remove()
		}
	}()
	l := m.limits
	if m.plan.V2Pids {
		if err := writeFile(filepath.Join(s.dir, "pids.max"), strconv.Itoa(l.Processes)); err != nil {
			return nil, err
		}
	}
	if m.plan.V2Mem {
		if err := writeFile(filepath.Join(s.dir, "memory.max"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return nil, err
		}
		// The limit is on memory, not memory+swap; and an OOM kills the
		// whole group, ending the tree at once.
		writeFile(filepath.Join(s.dir, "memory.swap.max"), "0")
		writeFile(filepath.Join(s.dir, "memory.oom.group"), "1")
	}
	if _, err := os.Stat(filepath.Join(s.dir, "cgroup.kill")); err == nil {
		s.killFile = filepath.Join(s.dir, "cgroup.kill")
	}
	var err error
	if s.dirFile, err = os.Open(s.dir); err != nil {
		return nil, err
	}
	if s.procs, err = os.OpenFile(filepath.Join(s.dir, "cgroup.procs"), os.O_WRONLY, 0); err != nil {
		return nil, err
	}
	if s.events, err = os.Open(filepath.Join(s.dir, "cgroup.events")); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.v2All = append(m.v2All, s)
	m.mu.Unlock()
	ok = true
	return s, nil
}

// ReleaseV2 pools a directory once its tree is gone.
func (m *Manager) ReleaseV2(s *V2Set) {
	if s.Populated() {
		return // should not happen; leave it to Close
	}
	m.mu.Lock()
	m.v2Free = append(m.v2Free, s)
	m.mu.Unlock()
}

// AcquireSlot returns an idle slot, making one when none is free: its
// directories (with the plan's limits), then its thread, started by
// newThread with the directories to join.
func (m *Manager) AcquireSlot(newThread func(dirs []string) (Thread, error)) (*Slot, error) {
	m.mu.Lock()
	var sl *Slot
	if n := len(m.slots); n > 0 {
		sl, m.slots = m.slots[n-1], m.slots[:n-1]
	}
	m.mu.Unlock()
	if sl == nil {
		var err error
		if sl, err = m.createSlot(newThread); err != nil {
			return nil, err
		}
	}
	// The counters' values at the start: those the previous command left
	// (nothing runs in an idle slot), read once when the slot is made.
	return sl, nil
}

// Thread is the spawner thread parked in the slot's directories.
func (sl *Slot) Thread() Thread { return sl.sp }

// Settle records the counters a finished command left, as the next
// command's starting point, and reports what this one hit.
func (sl *Slot) Settle() (oom, pidsMax bool) {
	o, m := sl.oomKills(), sl.maxEvents()
	oom, pidsMax = o > sl.oomBase, m > sl.maxBase
	sl.oomBase, sl.maxBase = o, m
	return oom, pidsMax
}

func (m *Manager) createSlot(newThread func(dirs []string) (Thread, error)) (*Slot, error) {
	name := m.nextName()
	sl := &Slot{self: m.self, pidsCurrent: -1, pidsEvents: -1, oomControl: -1}
	ok := false
	defer func() {
		if !ok {
			sl.remove()
		}
	}()
	l := m.limits
	if m.plan.V1Pids {
		sl.pids = filepath.Join(m.v1PidsDir, name)
		if err := os.Mkdir(sl.pids, 0o755); err != nil {
			return nil, err
		}
		// +1: the spawner thread parked here is a task of the cgroup.
		if err := writeFile(filepath.Join(sl.pids, "pids.max"), strconv.Itoa(l.Processes+1)); err != nil {
			return nil, err
		}
	}
	if m.plan.V1Mem {
		sl.mem = filepath.Join(m.v1MemDir, name)
		if err := os.Mkdir(sl.mem, 0o755); err != nil {
			return nil, err
		}
		if err := writeFile(filepath.Join(sl.mem, "memory.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return nil, err
		}
		// With swap accounting, bound memory+swap too (else the tree could
		// swap out past the limit). Absent without swap accounting: fine.
		writeFile(filepath.Join(sl.mem, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10))
	}
	// Absent files (an error here) only lose the fast path: the readers
	// fall back to opening by path.
	open := func(dir, name string) int {
		if dir == "" {
			return -1
		}
		fd, err := unix.Open(filepath.Join(dir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1
		}
		return fd
	}
	sl.pidsCurrent, sl.pidsEvents = open(sl.pids, "pids.current"), open(sl.pids, "pids.events")
	sl.oomControl = open(sl.mem, "memory.oom_control")
	var dirs []string
	for _, d := range []string{sl.pids, sl.mem} {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	sp, err := newThread(dirs)
	if err != nil {
		return nil, err
	}
	sl.sp = sp
	sl.oomBase, sl.maxBase = sl.oomKills(), sl.maxEvents()
	m.mu.Lock()
	m.allSl = append(m.allSl, sl)
	m.mu.Unlock()
	ok = true
	return sl, nil
}

// ReleaseSlot pools a slot once its tree is gone; seenEmpty says the
// caller found it empty after the command's main process was reaped (no
// process can enter an empty slot: only a member's fork would, and the
// spawner thread starts nothing until the slot is acquired again).
func (m *Manager) ReleaseSlot(sl *Slot, seenEmpty bool) {
	if !seenEmpty && !sl.Empty() {
		return
	}
	m.mu.Lock()
	m.slots = append(m.slots, sl)
	m.mu.Unlock()
}

// Close removes every directory; trees still in them are killed first,
// and the slots' threads stopped. The Manager is not used after.
func (m *Manager) Close() error {
	<-m.swept
	m.mu.Lock()
	v2, sls := m.v2All, m.allSl
	m.v2All, m.v2Free, m.allSl, m.slots = nil, nil, nil, nil
	m.mu.Unlock()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, s := range v2 {
		if s.Populated() {
			s.Kill()
			s.WaitEmpty(2 * time.Second)
		}
		keep(s.remove())
	}
	for _, sl := range sls {
		if !sl.Empty() {
			sl.Kill()
			sl.WaitEmpty(2 * time.Second)
		}
		keep(sl.remove())
	}
	for _, d := range []string{m.v2Dir, m.v1PidsDir, m.v1MemDir} {
		if d != "" {
			keep(rmdirRetry(d))
		}
	}
	return first
}

func (s *V2Set) remove() error {
	for _, f := range []*os.File{s.dirFile, s.procs, s.events} {
		if f != nil {
			f.Close()
		}
	}
	s.dirFile, s.procs, s.events = nil, nil, nil
	return rmdirRetry(s.dir)
}

// remove ends the spawner thread (which leaves the cgroups with it) and
// removes the directories.
func (sl *Slot) remove() error {
	if sl.sp != nil {
		sl.sp.Stop()
		sl.sp = nil
	}
	for _, fd := range []*int{&sl.pidsCurrent, &sl.pidsEvents, &sl.oomControl} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	var first error
	for _, d := range []string{sl.pids, sl.mem} {
		if d != "" {
			if err := rmdirRetry(d); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// rmdirRetry removes a cgroup directory; right after its last task exited
// the kernel may still report it busy for a moment.
func rmdirRetry(d string) error {
	var err error
	for i := 0; i < 250; i++ {
		if err = unix.Rmdir(d); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	procs, _ := readSmall(filepath.Join(d, "tasks"))
	return fmt.Errorf("removing %s (tasks: %q): %w", d, procs, err)
}

// FDs are the descriptors a spawn puts the child into the directory with:
// the directory (clone3 CLONE_INTO_CGROUP) and its cgroup.procs (kernels
// without clone3).
func (s *V2Set) FDs() (dir, procs int) { return int(s.dirFile.Fd()), int(s.procs.Fd()) }

// Members lists the processes in the directory now.
func (s *V2Set) Members() []int { return readPids(filepath.Join(s.dir, "cgroup.procs")) }

// Populated reports whether a process is left in the directory
// (cgroup.events; true when it cannot tell).
func (s *V2Set) Populated() bool {
	if s.events == nil {
		return false
	}
	b := make([]byte, 256)
	n, err := s.events.ReadAt(b, 0)
	if n == 0 && err != nil {
		return true // cannot tell: assume the worst
	}
	for _, line := range strings.Split(string(b[:n]), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return true
}

// Kill kills every process of the directory. cgroup.kill is atomic in the
// kernel: it also catches processes forked while it runs.
func (s *V2Set) Kill() {
	if s.killFile != "" && writeFile(s.killFile, "1") == nil {
		return
	}
	killMembers(s.dir, -1, true)
}

// WaitEmpty waits until the directory has no process left, up to d. kernfs
// wakes pollers of cgroup.events (POLLPRI) on every change.
func (s *V2Set) WaitEmpty(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for s.Populated() {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		ms := min(max(int(left/time.Millisecond), 1), 50)
		unix.Poll([]unix.PollFd{{Fd: int32(s.events.Fd()), Events: unix.POLLPRI}}, ms)
	}
	return true
}

func (s *V2Set) oomKills() int64 { return readKeyed(filepath.Join(s.dir, "memory.events"), "oom_kill") }
func (s *V2Set) maxEvents() int64 {
	return readKeyed(filepath.Join(s.dir, "pids.events"), "max")
}

// OOMKilled reports whether the memory limit killed a process of the
// directory since AcquireV2 (memory.events oom_kill).
func (s *V2Set) OOMKilled() bool { return s.oomKills() > s.oomBase }

// PidsMaxHit reports whether a fork failed on pids.max since AcquireV2
// (pids.events max).
func (s *V2Set) PidsMaxHit() bool { return s.maxEvents() > s.maxBase }

// Empty reports whether no command process is left in the slot (our own
// pid is there: the spawner thread).
func (sl *Slot) Empty() bool {
	// pids.current counts every task charged to the cgroup: a process is
	// charged before it exists (fork) and uncharged only once reaped, and
	// the spawner thread parked here is one. 1 is therefore proof that
	// nothing of a command is left, in one pread — the common case, a
	// tree that ended with its main process. Anything else (an unreaped
	// orphan counts, though it runs nothing) is decided by the list.
	if sl.pidsCurrent >= 0 {
		if b, err := preadSmall(sl.pidsCurrent); err == nil && strings.TrimSpace(string(b)) == "1" {
			return true
		}
	}
	// Both directories hold the same processes (born in both): one is
	// enough to look at.
	d := sl.pids
	if d == "" {
		d = sl.mem
	}
	for _, pid := range readPids(filepath.Join(d, "cgroup.procs")) {
		if pid != sl.self {
			return false
		}
	}
	return true
}

// Members lists the command processes in the slot now (not our own pid).
func (sl *Slot) Members() []int {
	d := sl.pids
	if d == "" {
		d = sl.mem
	}
	var out []int
	for _, pid := range readPids(filepath.Join(d, "cgroup.procs")) {
		if pid != sl.self {
			out = append(out, pid)
		}
	}
	return out
}

// Kill kills every command process of the slot (v1 has no cgroup.kill).
func (sl *Slot) Kill() {
	if sl.pids != "" {
		killMembers(sl.pids, sl.self, false)
	} else if sl.mem != "" {
		killMembers(sl.mem, sl.self, false)
	}
}

// WaitEmpty waits until no command process is left in the slot, up to d.
func (sl *Slot) WaitEmpty(d time.Duration) bool {
	deadline := time.Now().Add(d)
	sleep := 100 * time.Microsecond
	for !sl.Empty() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, 5*time.Millisecond)
	}
	return true
}

func (sl *Slot) oomKills() int64 {
	if sl.mem == "" {
		return 0
	}
	return readKeyedFD(sl.oomControl, filepath.Join(sl.mem, "memory.oom_control"), "oom_kill")
}

func (sl *Slot) maxEvents() int64 {
	if sl.pids == "" {
		return 0
	}
	return readKeyedFD(sl.pidsEvents, filepath.Join(sl.pids, "pids.events"), "max")
}

// killMembers kills the processes listed in dir/cgroup.procs, except skip,
// until none is left (or 100 rounds). Each is killed through a pidfd after
// checking, with the pidfd held, that the pid still belongs to this cgroup,
// so a recycled pid is never hit. The pids limit bounds how many there can
// be, and a process with SIGKILL pending cannot fork: a few rounds finish
// even a fork bomb.
func killMembers(dir string, skip int, v2 bool) {
	// /proc/PID/cgroup shows paths relative to the hierarchy's root; ours
	// end in /lite-agent.<pid>.<n>.<pidns>/c<k>, unique to this set.
	rel := "/" + filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
	for round := 0; round < 100; round++ {
		any := false
		for _, pid := range readPids(filepath.Join(dir, "cgroup.procs")) {
			if pid == skip {
				continue
			}
			any = true
			killIfMember(pid, rel, v2)
		}
		if !any {
			return
		}
		if round > 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

func killIfMember(pid int, rel string, v2 bool) {
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(pfd)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return
	}
	member := false
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" || !v2 && (slices.Contains(strings.Split(parts[1], ","), "pids") || slices.Contains(strings.Split(parts[1], ","), "memory")) {
			if strings.HasSuffix(parts[2], rel) {
				member = true
			}
		}
	}
	// Still alive after the read => the pid was not recycled in between,
	// so what we read was this process's membership.
	if member && unix.PidfdSendSignal(pfd, 0, nil, 0) == nil {
		unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0)
	}
}

// readSmall reads a small kernel file with three syscalls (os.ReadFile
// adds a stat and buffer growth; cgroup files are read on every spawn).
func readSmall(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, buf)
		if n > 0 {
			out = append(out, buf[:n]...)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return out, err
		}
		if n == 0 || len(out) > 1<<20 {
			return out, nil
		}
	}
}

// preadSmall reads a small kernel file kept open, from its start.
func preadSmall(fd int) ([]byte, error) {
	buf := make([]byte, 512)
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == len(buf) {
			return nil, unix.EOVERFLOW // not small: the caller reads by path
		}
		return buf[:n], nil
	}
}

// readKeyedFD is readKeyed through fd when it is open (>= 0), else path.
func readKeyedFD(fd int, path, key string) int64 {
	if fd >= 0 {
		if b, err := preadSmall(fd); err == nil {
			return keyed(b, key)
		}
	}
	return readKeyed(path, key)
}

func readKeyed(path, key string) int64 {
	b, err := readSmall(path)
	if err != nil {
		return 0
	}
	return keyed(b, key)
}

// keyed returns the value of "key value" in a flat-keyed file's text.
func keyed(b []byte, key string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func readPids(path string) []int {
	b, err := readSmall(path)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
