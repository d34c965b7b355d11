package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroups give each command a process limit that also binds root (pids.max),
// a memory limit for the whole tree, and — where the kernel has it — an
// atomic way to kill the tree (cgroup.kill) and to learn that it is gone
// (cgroup.events "populated 0"). They are optional: without a writable
// hierarchy the sandbox falls back to rlimits and a PID namespace (see
// sandbox_linux.go), or fails closed.
//
// Layout: under the cgroup this process already belongs to (so that an
// outer limit, such as a systemd unit's or a container's, still applies),
// one directory per Sandbox, lite-agent.<pid>.<n>, and in it one directory
// per running command, c<k>. Command directories are pooled (v2 sets and v1
// slots below): making one costs a mkdir and, for a slot, a migration;
// reusing an empty one costs nothing. Directories of processes that died
// without Close are removed by the next New (cleanStale). This package
// never writes to the caller's own cgroup or an ancestor's.

// cgroupInfo is where this process sits in each hierarchy.
type cgroupInfo struct {
	v2Base        string            // <cgroup2 mount>/<our cgroup>, "" if no cgroup2
	v2Controllers []string          // available in v2Base/cgroup.controllers
	v1            map[string]string // controller -> <mount>/<our cgroup>
}

func detectCgroups() cgroupInfo {
	info := cgroupInfo{v1: map[string]string{}}
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
			if !ok || info.v2Base != "" {
				continue
			}
			if base, ok := joinCgroup(mnt, root, p); ok {
				info.v2Base = base
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
				if _, dup := info.v1[opt]; dup {
					continue
				}
				if base, ok := joinCgroup(mnt, root, p); ok {
					info.v1[opt] = base
				}
			}
		}
	}
	if info.v2Base != "" {
		if b, err := os.ReadFile(filepath.Join(info.v2Base, "cgroup.controllers")); err == nil {
			info.v2Controllers = strings.Fields(string(b))
		}
	}
	return info
}

// joinCgroup maps a cgroup path (as in /proc/self/cgroup) to a directory
// under a mount whose root is root (not "/" inside containers and
// bind mounts).
func joinCgroup(mnt, root, p string) (string, bool) {
	if root == "/" {
		return filepath.Join(mnt, p), true
	}
	if rel, ok := strings.CutPrefix(p, root); ok && (rel == "" || rel[0] == '/') {
		return filepath.Join(mnt, rel), true
	}
	return "", false
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

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cgroupPlan is which hierarchies a Sandbox uses, and for what.
type cgroupPlan struct {
	v2      bool // a v2 directory per command, the child born in it
	v2Pids  bool // ... with pids.max
	v2Mem   bool // ... with memory.max
	v1Pids  bool // a v1 pids directory per command (slot)
	v1Mem   bool // a v1 memory directory per command (slot)
	v1Track bool // find and kill the tree through the slot's pids directory
}

func (p cgroupPlan) any() bool       { return p.v2 || p.slots() }
func (p cgroupPlan) slots() bool     { return p.v1Pids || p.v1Mem }
func (p cgroupPlan) pidsLimit() bool { return p.v2Pids || p.v1Pids }
func (p cgroupPlan) memLimit() bool  { return p.v2Mem || p.v1Mem }
func (p cgroupPlan) tracks() bool    { return p.v2 || p.v1Track }

func (p cgroupPlan) version() string {
	switch {
	case p.v2Pids || p.v2Mem:
		return "v2"
	case p.slots():
		return "v1"
	case p.v2:
		return "v2"
	}
	return ""
}

var sandboxSeq atomic.Int64

// Joining a cgroup — writing to cgroup.procs or tasks — takes the kernel's
// global threadgroup rwsem for writing, and that waits for an RCU grace
// period whenever no other migration happened in the last few tens of
// milliseconds: 7-15 ms here, measured, against 6 µs back to back. So no
// spawn ever migrates a process:
//
//   - v2: the child is born in its directory (clone3 CLONE_INTO_CGROUP,
//     which takes the locks only for reading);
//   - v1 has no such flag, but in v1 a single thread can be moved, and a
//     child forked by a thread is born in that thread's cgroups. So each
//     per-command set of v1 directories is a "slot" with a spawner thread
//     parked in it (spawner_linux.go): the thread migrates once, when the
//     slot is made, and every command started from it is born inside.
//     Slots are pooled; a slot is reused once its last command's tree is
//     gone.

// cgroupManager owns one Sandbox's cgroup directories.
type cgroupManager struct {
	plan   cgroupPlan
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
	v2Free []*v2Set
	v2All  []*v2Set
	slots  []*slot // idle
	allSl  []*slot
}

// v2Set is one command's v2 directory.
type v2Set struct {
	dir      string
	dirFile  *os.File // for CLONE_INTO_CGROUP
	procs    *os.File // cgroup.procs, for kernels without clone3
	events   *os.File // cgroup.events, for "populated"
	killFile string   // cgroup.kill (5.14+), or ""
	oomBase  int64
	maxBase  int64
}

// slot is one command's v1 directories and the spawner thread parked in
// them.
type slot struct {
	pids, mem string
	sp        *spawner
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

// newCgroupManager creates the per-Sandbox directories the plan needs.
func newCgroupManager(info cgroupInfo, plan cgroupPlan, limits Limits) (*cgroupManager, error) {
	m := &cgroupManager{plan: plan, limits: limits, self: os.Getpid()}
	name := fmt.Sprintf("lite-agent.%d.%d", os.Getpid(), sandboxSeq.Add(1))
	var made, bases []string
	fail := func(err error) (*cgroupManager, error) {
		for i := len(made) - 1; i >= 0; i-- {
			unix.Rmdir(made[i])
		}
		return nil, err
	}
	mk := func(base string) (string, error) {
		bases = append(bases, base)
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", err
		}
		made = append(made, d)
		return d, nil
	}
	var err error
	if plan.v2 {
		if m.v2Dir, err = mk(info.v2Base); err != nil {
			return fail(err)
		}
		// Delegate the controllers to the command directories. Our parent
		// already has them in its subtree_control (the plan checked); our
		// new directory has no processes, so this is allowed.
		var ctl []string
		if plan.v2Pids {
			ctl = append(ctl, "+pids")
		}
		if plan.v2Mem {
			ctl = append(ctl, "+memory")
		}
		if len(ctl) > 0 {
			if err := writeFile(filepath.Join(m.v2Dir, "cgroup.subtree_control"), strings.Join(ctl, " ")); err != nil {
				return fail(err)
			}
		}
	}
	if plan.v1Pids {
		if m.v1PidsDir, err = mk(info.v1["pids"]); err != nil {
			return fail(err)
		}
	}
	if plan.v1Mem {
		if m.v1MemDir, err = mk(info.v1["memory"]); err != nil {
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
// their supervisor, are killed first (best effort).
func cleanStale(base string) {
	_, err := os.Stat(filepath.Join(base, "cgroup.controllers"))
	v2 := err == nil
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "lite-agent.")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, ".")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		set := filepath.Join(base, e.Name())
		if cmds, err := os.ReadDir(set); err == nil {
			for _, c := range cmds {
				if c.IsDir() {
					killMembers(filepath.Join(set, c.Name()), -1, v2)
				}
			}
		}
		removeCgroupTree(set)
	}
}

func removeCgroupTree(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	unix.Rmdir(dir)
}

func (m *cgroupManager) nextName() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	return "c" + strconv.Itoa(m.n)
}

// acquireV2 returns an empty v2 directory for one command.
func (m *cgroupManager) acquireV2() (*v2Set, error) {
	m.mu.Lock()
	var s *v2Set
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

func (m *cgroupManager) createV2() (*v2Set, error) {
	s := &v2Set{dir: filepath.Join(m.v2Dir, m.nextName())}
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
	if m.plan.v2Pids {
		if err := writeFile(filepath.Join(s.dir, "pids.max"), strconv.Itoa(l.Processes)); err != nil {
			return nil, err
		}
	}
	if m.plan.v2Mem {
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

// releaseV2 pools a directory once its tree is gone.
func (m *cgroupManager) releaseV2(s *v2Set) {
	if s.populated() {
		return // should not happen; leave it to close
	}
	m.mu.Lock()
	m.v2Free = append(m.v2Free, s)
	m.mu.Unlock()
}

// acquireSlot returns an idle slot, making one (and its spawner thread)
// when none is free.
func (m *cgroupManager) acquireSlot(newSpawner func(dirs []string) (*spawner, error)) (*slot, error) {
	m.mu.Lock()
	var sl *slot
	if n := len(m.slots); n > 0 {
		sl, m.slots = m.slots[n-1], m.slots[:n-1]
	}
	m.mu.Unlock()
	if sl == nil {
		var err error
		if sl, err = m.createSlot(newSpawner); err != nil {
			return nil, err
		}
	}
	// The counters' values at the start: those the previous command left
	// (nothing runs in an idle slot), read once when the slot is made.
	return sl, nil
}

// settle records the counters a finished command left, as the next
// command's starting point, and reports what this one hit.
func (sl *slot) settle() (oom, pidsMax bool) {
	o, m := sl.oomKills(), sl.maxEvents()
	oom, pidsMax = o > sl.oomBase, m > sl.maxBase
	sl.oomBase, sl.maxBase = o, m
	return oom, pidsMax
}

func (m *cgroupManager) createSlot(newSpawner func(dirs []string) (*spawner, error)) (*slot, error) {
	name := m.nextName()
	sl := &slot{pidsCurrent: -1, pidsEvents: -1, oomControl: -1}
	ok := false
	defer func() {
		if !ok {
			sl.remove()
		}
	}()
	l := m.limits
	if m.plan.v1Pids {
		sl.pids = filepath.Join(m.v1PidsDir, name)
		if err := os.Mkdir(sl.pids, 0o755); err != nil {
			return nil, err
		}
		// +1: the spawner thread parked here is a task of the cgroup.
		if err := writeFile(filepath.Join(sl.pids, "pids.max"), strconv.Itoa(l.Processes+1)); err != nil {
			return nil, err
		}
	}
	if m.plan.v1Mem {
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
	sp, err := newSpawner(dirs)
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

// releaseSlot pools a slot once its tree is gone; seenEmpty says the
// caller found it empty after the command's main process was reaped (no
// process can enter an empty slot: only a member's fork would, and the
// spawner thread starts nothing until the slot is acquired again).
func (m *cgroupManager) releaseSlot(sl *slot, seenEmpty bool) {
	if !seenEmpty && !sl.empty(m.self) {
		return
	}
	m.mu.Lock()
	m.slots = append(m.slots, sl)
	m.mu.Unlock()
}

// close removes every directory; trees still in them are killed first.
func (m *cgroupManager) close() error {
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
		if s.populated() {
			s.kill()
			s.waitEmpty(2 * time.Second)
		}
		keep(s.remove())
	}
	for _, sl := range sls {
		if !sl.empty(m.self) {
			sl.kill(m.self)
			sl.waitEmpty(m.self, 2*time.Second)
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

func (s *v2Set) remove() error {
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
func (sl *slot) remove() error {
	if sl.sp != nil {
		sl.sp.stop()
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

func (s *v2Set) populated() bool {
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

// kill kills every process of the directory. cgroup.kill is atomic in the
// kernel: it also catches processes forked while it runs.
func (s *v2Set) kill() {
	if s.killFile != "" && writeFile(s.killFile, "1") == nil {
		return
	}
	killMembers(s.dir, -1, true)
}

// waitEmpty waits until the directory has no process left, up to d. kernfs
// wakes pollers of cgroup.events (POLLPRI) on every change.
func (s *v2Set) waitEmpty(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for s.populated() {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		ms := min(max(int(left/time.Millisecond), 1), 50)
		unix.Poll([]unix.PollFd{{Fd: int32(s.events.Fd()), Events: unix.POLLPRI}}, ms)
	}
	return true
}

func (s *v2Set) oomKills() int64 { return readKeyed(filepath.Join(s.dir, "memory.events"), "oom_kill") }
func (s *v2Set) maxEvents() int64 {
	return readKeyed(filepath.Join(s.dir, "pids.events"), "max")
}

// empty reports whether no command process is left in the slot (our own
// pid is there: the spawner thread).
func (sl *slot) empty(self int) bool {
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
		if pid != self {
			return false
		}
	}
	return true
}

// kill kills every command process of the slot (v1 has no cgroup.kill).
func (sl *slot) kill(self int) {
	if sl.pids != "" {
		killMembers(sl.pids, self, false)
	} else if sl.mem != "" {
		killMembers(sl.mem, self, false)
	}
}

func (sl *slot) waitEmpty(self int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	sleep := 100 * time.Microsecond
	for !sl.empty(self) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, 5*time.Millisecond)
	}
	return true
}

func (sl *slot) oomKills() int64 {
	if sl.mem == "" {
		return 0
	}
	return readKeyedFD(sl.oomControl, filepath.Join(sl.mem, "memory.oom_control"), "oom_kill")
}

func (sl *slot) maxEvents() int64 {
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
	// end in /lite-agent.<pid>.<n>/c<k>, unique to this set.
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
		if v2 && parts[0] == "0" || !v2 && (hasString(strings.Split(parts[1], ","), "pids") || hasString(strings.Split(parts[1], ","), "memory")) {
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

var kernelVersion = sync.OnceValue(func() [2]int {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return [2]int{}
	}
	rel := unix.ByteSliceToString(u.Release[:])
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
})

func kernelAtLeast(major, minor int) bool {
	v := kernelVersion()
	return v[0] > major || v[0] == major && v[1] >= minor
}
