package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/lite-agent/lite-agent/internal/netproxy"
	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox/internal/cgroup"
	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
	"github.com/lite-agent/lite-agent/sandbox/internal/seccomp"
	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
	// The PID-namespace init, imported explicitly (as runc's main imports
	// libcontainer/nsenter): its C constructor must be in every program
	// that links the sandbox, since that program is what a command's
	// namespace re-executes as its init (Marker, below).
	"github.com/lite-agent/lite-agent/sandbox/internal/spawn/pidinit"
	"golang.org/x/sys/unix"
)

// netSupervisor starts the notification server (sandbox/internal/notify),
// which serves every network mode: the one place that decides a confined
// tree's socket calls (AF_UNIX addresses, IP destinations, binds and
// listens) and, with change capture, its file changes. It receives:
//
//   - listenerFD: a seccomp user-notification listener, already in this
//     process's fd table — a command's own (the child created it while
//     sharing the table, CLONE_FILES, then took a private copy without
//     it: it never holds its own listener), or a sealed spawner thread's,
//     shared by every command that thread starts; ownership passes to the
//     server, which closes it in stop, also on error;
//   - pidfd, pid: the command's main process — borrowed, valid until stop
//     returns, never to be closed by the server (notifications come from
//     any process of the tree: it uses their own ids) — or -1, 0 for a
//     spawner thread's listener;
//   - opts.Mode: the policy's network mode; opts.Unix: the rule for
//     AF_UNIX addresses (Sandbox.unixRule: pathname sockets at or beneath
//     a read-write root of the policy — workspace, temp dir,
//     ReadWritePaths —, nothing else, and no abstract names).
//
// It must decide every notification itself without
// SECCOMP_USER_NOTIF_FLAG_CONTINUE (but for sendto without an address):
// pathname sockets outside the sandbox must be refused. stop is called
// once the whole tree is gone (a thread's listener: when the spawner
// ends). When netSupervisor is nil (tests), policies that need it fail
// closed.
var netSupervisor = startServer

type notifyKind int

const (
	notifyNone notifyKind = iota
	notifyNet             // netSupervisor
)

// Sandbox is a policy prepared for this kernel: the Landlock ruleset, the
// seccomp programs and the cgroup parents exist once, and every command
// started through it reuses them.
type Sandbox struct {
	pol Policy
	h   *hostInfo
	// plan is what decide chose (plan_linux.go); the builder below only
	// carries it out.
	plan

	pieces    *spawn.CPieces
	rawPieces spawn.Pieces     // what a child loads itself
	spec      seccomp.MainSpec // network rules of the main program
	threadBPF []byte           // the spawner threads' program
	// With captureThread, the programs of a captured command's own
	// spawner thread: the sealed main program, then the notification
	// server's calls and the capture calls with their listener.
	captureThreadBPF, captureListenerBPF []byte

	cg     *cgroup.Manager
	spMu   sync.Mutex
	spIdle []*spawner // spawner threads without a slot, idle
	spAll  []*spawner
	// withInit: in a PID namespace the command runs under our init
	// (pidinit), which gets initRlimits and applies initAS (RLIMIT_AS
	// for the command, "-" for none) itself after its exec.
	withInit    bool
	initRlimits []spawn.Rlimit
	initAS      string
	tmpRoot     string // parent of per-command temp dirs; "" with Policy.TempDir
	// privateTmp: the canonical tmpRoot or Policy.TempDir, once
	// (ownTempRoot).
	privateOnce sync.Once
	privateTmp  string
	tmpMu       sync.Mutex
	tmpPool     []string        // emptied per-command temp dirs, ready for reuse
	tmpOwned    map[string]bool // names of the directories made inside tmpRoot
	rwRoots     []string        // canonical read-write roots (unix sockets, capture)
	// mounts are the mount namespace's writable roots and the sandbox's
	// own instances (with plan.mountNS).
	mounts *spawn.Mounts
	// tmpl is the namespace template commands after the first start in
	// (plan.template; nil until then, or when it could not be made:
	// commandTemplate).
	tmplMu      sync.Mutex
	tmpl        *spawn.Template
	tmplDead    []*spawn.Template // holders found killed, released at Close
	tmplStarted int               // commands started without it so far
	tmplOff     bool
	// ownRoot is the canonical parent of the sandbox's temporary
	// directories when the process writes only there itself
	// (plan.ownWrites, ownwrites_linux.go), or ""; ownTmp: the private
	// tmpfs is the process's to write too.
	ownRoot string
	ownTmp  bool
	// workspaceReal is the canonical workspace (change capture), or "".
	workspaceReal string
	readable      []string // canonical readable roots (PATH trimming)
	// privateTmpfs: commands have the sandbox's own /tmp, /dev/shm,
	// /var/tmp and /run (spawn.TmpfsPaths); readRoots are every
	// readable root as given and as resolved, made once for
	// ReadRefusals (readrefusals_linux.go).
	privateTmpfs  bool
	readRootsOnce sync.Once
	readRoots     []string
	devNull       *os.File
	// unixRule decides AF_UNIX addresses for the notification server by
	// rwRoots (nil unless notifyNet).
	unixRule func(notify.UnixRequest) bool
	// proxy is the domain proxy (domains_linux.go), nil without
	// AllowDomains; stopped by Close. unregisterProxy takes its address
	// out of the set every other sandbox's commands are refused
	// (notify.RegisterProxy).
	proxy           *netproxy.Proxy
	unregisterProxy func()
	// ownPorts: loopback ports its commands bound (network none with
	// domains: the only loopback ports they may connect to).
	ownPorts notify.PortSet

	pathMu  sync.Mutex
	pathIn  string
	pathOut string
	homeIn  string
	homeOK  bool

	// captureChild is the child program with the change-capture calls
	// (seccomp.WithCapture), for commands with BeforeChange; nil unless
	// plan.capture (and not captureThread).
	captureChild *spawn.Program

	mu      sync.Mutex
	closed  bool
	running map[*Process]struct{}
	wg      sync.WaitGroup
}

// New prepares a sandbox for p: it checks the policy, decides what this
// host can enforce of it (decide, plan_linux.go) and builds the Landlock
// ruleset, the seccomp programs and the cgroup parents. When the host
// cannot enforce something the policy's level needs, New fails with an
// error wrapping ErrUnsupported that names it — unless p.BestEffort, and
// then Enforcement().Missing lists it. What the sandbox runs without
// either way is in Enforcement().Lost.
func New(p Policy) (*Sandbox, error) {
	return newOnHost(p, host())
}

// Decide says what New would enforce for p on this host — the same
// decision, made without building anything — or the error New would
// refuse p with. Callers that only report (`lite-agent sandbox check`,
// the refusal of a session naming what another level would lose) read it
// instead of guessing from Probe.
func Decide(p Policy) (Enforcement, error) {
	q, err := normalizePolicy(p)
	if err != nil {
		return Enforcement{}, err
	}
	pl, err := decide(q, host())
	if err != nil {
		return Enforcement{}, err
	}
	return pl.enf, nil
}

// newOnHost is New on host h (tests hand it a real host with facts taken
// away, to build what another host would get).
func newOnHost(p Policy, h *hostInfo) (*Sandbox, error) {
	q, err := normalizePolicy(p)
	if err != nil {
		return nil, err
	}
	pl, err := decide(q, h)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{pol: q, h: h, plan: *pl, running: map[*Process]struct{}{}, tmpOwned: map[string]bool{}}
	s.enf.Missing = slices.Clone(pl.enf.Missing)
	s.enf.Lost = slices.Clone(pl.enf.Lost)
	s.enf.Notes = slices.Clone(pl.enf.Notes)
	ok := false
	defer func() {
		if !ok {
			s.release()
		}
	}()
	if err := s.build(); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// build carries out s.cgroups. Whatever it cannot make of the plan's
// conveniences (a root skeleton whose grants cannot be laid out, a
// private /tmp) goes to Enforcement's Lost, with a note; it never widens
// what the plan confines.
func (s *Sandbox) build() error {
	q, h := &s.pol, s.h
	// seccomp: the main program goes on the spawner threads, the child
	// program into each child (internal/seccomp), compiled (libseccomp,
	// ~0.3 ms, when not precompiled) while the temp dir and the ruleset
	// are made.
	s.spec = seccomp.MainSpec{Network: internalMode(s.filterMode), DenyConnect: s.denyConnect}
	var childNotify seccomp.NotifySpec
	if s.notify == notifyNet {
		childNotify = s.notifyCalls
	}
	var childBPF []byte
	var childNotifies bool
	filtersDone := make(chan error, 1)
	go func() {
		if !h.seccomp {
			filtersDone <- nil
			return
		}
		spec := s.spec
		if s.sealed {
			spec.Sealed = true
			if s.threadNotifies {
				spec.Notify, childNotify = s.notifyCalls, seccomp.NotifySpec{}
			}
		}
		// The refusal set (internal/seccomp's refusal_linux.go) goes
		// where a listener can name it: into the child programs when
		// every child of the pooled threads loads one, else it stays on
		// the thread.
		childBuilt := !s.sealed || !childNotify.Empty()
		spec.RefusalsInChild = childBuilt
		var err error
		if s.threadBPF, err = seccomp.Main(spec); err != nil {
			filtersDone <- err
			return
		}
		if childBuilt {
			if childBPF, err = seccomp.Child(seccomp.ChildSpec{Namespaces: !s.sealed, Refusals: true, Notify: childNotify}); err != nil {
				filtersDone <- err
				return
			}
			childNotifies = !childNotify.Empty()
		}
		switch {
		case s.captureThread:
			// Both programs are on the command's own thread: the
			// listener's carries the refusal set.
			spec.Notify, spec.RefusalsInChild = seccomp.NotifySpec{}, true
			if s.captureThreadBPF, err = seccomp.Main(spec); err != nil {
				filtersDone <- err
				return
			}
			if s.captureListenerBPF, err = seccomp.Child(seccomp.ChildSpec{Refusals: true, Notify: seccomp.WithCapture(s.notifyCalls, s.foreign)}); err != nil {
				filtersDone <- err
				return
			}
		case s.capture:
			bpf, err := seccomp.Child(seccomp.ChildSpec{Namespaces: !s.sealed, Refusals: childBuilt, Notify: seccomp.WithCapture(childNotify, s.foreign)})
			if err != nil {
				filtersDone <- err
				return
			}
			s.captureChild = spawn.NewProgram(bpf, true)
		}
		filtersDone <- nil
	}()
	filters := func() error {
		if filtersDone == nil {
			return nil
		}
		err := <-filtersDone
		filtersDone = nil
		return err
	}
	// Never return while the goroutine above still writes the fields.
	defer filters()

	var err error
	// The domain proxy runs here, in the parent, for the sandbox's
	// lifetime; commands can reach it only when the supervisor admits it.
	if s.runProxy {
		if s.proxy, err = startDomainProxy(*q); err != nil {
			return err
		}
		s.unregisterProxy = notify.RegisterProxy(s.proxy.Addr())
		s.enf.Notes = append(s.enf.Notes, "network: allowed domains through lite-agent's proxy at "+s.proxy.URL()+" (every other destination refused by the notification server)")
	}
	if s.devNull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
		return err
	}
	tmp := q.TempDir
	if tmp == "" {
		if s.tmpRoot, err = tmpRootDir(); err != nil {
			return fmt.Errorf("sandbox: temporary directory: %w", err)
		}
		tmp = s.tmpRoot
		// The root itself is the first command's TMPDIR: one mkdir less
		// for a sandbox that runs one command (the CLI). Commands running
		// at the same time get directories inside it (see releaseTmp).
		s.tmpPool = []string{s.tmpRoot}
	}
	s.rwRoots = canonical(append([]string{q.Workspace, tmp}, q.ReadWritePaths...))
	if ws := canonical([]string{q.Workspace}); len(ws) == 1 {
		s.workspaceReal = ws[0]
	}
	if s.ownWrites {
		s.ownWrites = s.ownRootFor(tmp)
	}
	s.readable = canonical(append(append(append([]string(nil), s.rwRoots...), q.SystemPaths...), q.ReadOnlyPaths...))
	if s.mountNS != spawn.MountNone {
		mounts, whole, err := spawn.NewMounts(s.rwRoots)
		if err != nil {
			return err
		}
		switch {
		case whole:
			// A read-write root is /: nothing is left outside the roots
			// to make read-only, so nothing is lost by going without.
			s.mountNS = spawn.MountNone
			s.enf.Notes = append(s.enf.Notes, "metadata: no read-only mounts (a read-write root is /)")
		default:
			s.mounts = mounts
			where := "per command"
			switch {
			case s.mountNS == spawn.MountThread:
				where = "per spawner thread"
			case s.template:
				where = "per command, copied from one made once per sandbox"
			}
			s.enf.Notes = append(s.enf.Notes, "metadata: every mount read-only but the read-write roots (a private mount namespace "+where+"): no chmod, chown or utimensat outside them")
		}
	}
	s.enf.Notes = append(s.enf.Notes, s.protectGit()...)
	// Pseudo-terminals: only on a devpts of the sandbox's own, which every
	// namespace above mounts over the host's (spawn's devpts_linux.go).
	wantPty := slices.ContainsFunc(q.SystemPaths, func(p string) bool { return devPty[p] })
	switch added, off := s.mounts.AddDevpts(h.user(), s.mountNS, wantPty && s.devpts); {
	case added:
		s.enf.Notes = append(s.enf.Notes, "pseudo-terminals: a devpts instance of the sandbox's own over /dev/pts (the host's terminals have no path inside)")
	case off != "":
		s.builtWithout("pseudo-terminals: off ("+off+"; the host's /dev/pts holds the user's other terminals)", "pseudo-terminals: off ("+off+")")
	case wantPty && h.abi > 0 && !s.devpts:
		s.enf.Notes = append(s.enf.Notes, "pseudo-terminals: off (the host's /dev/pts holds the user's other terminals)")
	}
	// /proc/self and the rest of a process's own /proc: on a /proc of the
	// sandbox's own (spawn's procfs_linux.go).
	if wantsProc(q.SystemPaths) && h.abi > 0 {
		off := "no /proc of the sandbox's own can be made here"
		if s.proc {
			off = s.mounts.AddProc(h.user(), s.mountNS, s.newPID, procFiles(q.SystemPaths))
		}
		switch {
		case off == "":
			s.enf.Notes = append(s.enf.Notes, "/proc: the sandbox's own (the command's processes only, /proc/self readable; no /proc/sys or /proc/net)")
		case s.proc:
			s.builtWithout("/proc: the host's, with only its global files readable ("+off+")",
				"a /proc of the sandbox's own: the host's stays, with only its global files readable ("+off+")")
		default:
			s.enf.Notes = append(s.enf.Notes, "/proc: the host's, with only its global files readable")
		}
	}
	if s.notify == notifyNet {
		// A pathname unix socket is reachable (and may be created) in
		// every network mode beneath the read-write roots, and nowhere
		// else: the one AF_UNIX rule (notify/addr_linux.go).
		s.unixRule = notify.UnixPathsUnder(s.rwRoots...)
	}

	rp := spawn.Pieces{RulesetFD: -1, LastCap: h.lastCap}
	if h.abi > 0 {
		attr := landlockHandled(h.abi, s.llMode)
		rules := landlockRules(q, tmp)
		if s.initExe != "" {
			rules = append(rules, spawn.Rule{Path: s.initExe, Access: spawn.RO})
		}
		// The root: a skeleton of these grants, so that listing the
		// workspace's parents shows their names only (spawn's
		// rootfs_linux.go).
		// And in it a private /tmp (spawn's tmpfs_linux.go), bounded by
		// the memory limit, for the programs that write to /tmp whatever
		// TMPDIR says.
		if s.root {
			off, tmpOff := s.mounts.AddRoot(h.user(), s.mountNS, rules, q.Limits.MemoryBytes)
			if off != "" {
				s.builtWithout("listing: the workspace's parents (/, /tmp, $HOME) cannot be listed ("+off+")",
					"a root of the granted paths: the workspace's parents (/, /tmp, $HOME) cannot be listed ("+off+")")
			} else {
				s.enf.Notes = append(s.enf.Notes, "listing: / is a skeleton of the granted paths (the workspace's parents list only granted names)")
			}
			if tmpOff != "" {
				s.builtWithout("/tmp: NOT writable ("+tmpOff+"): programs that ignore TMPDIR and write to /tmp fail",
					"a private /tmp: /tmp is not writable, so programs that ignore TMPDIR and write to /tmp fail ("+tmpOff+")")
			} else {
				s.privateTmpfs = true
				s.enf.Notes = append(s.enf.Notes, "/tmp: a private tmpfs of the sandbox's own (at most "+strconv.FormatInt(q.Limits.MemoryBytes>>20, 10)+" MiB, the memory limit; /dev/shm, /var/tmp and /run are on it too), shared by its commands, invisible to the host and other sandboxes, gone at Close")
			}
		} else {
			s.enf.Notes = append(s.enf.Notes, "listing: the workspace's parents (/, /tmp, $HOME) cannot be listed", "/tmp: NOT writable: programs that ignore TMPDIR and write to /tmp fail")
		}
		if s.ownWrites && !testOwnWritesKeepRoots {
			// The mounts above keep the roots read-write: the
			// supervisor writes there through them.
			rules = ownWriteRules(rules, tmp)
		}
		if rp.RulesetFD, err = spawn.BuildRuleset(attr, rules); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		// The rules of the sandbox's devpts, /proc and root, by fd.
		if err := s.mounts.AddRules(rp.RulesetFD, attr.Access_fs, !s.ownWrites || s.ownTmp || testOwnWritesKeepRoots); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	if err := filters(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	rp.ChildBPF, rp.ChildNotifies = childBPF, childNotifies
	rp.DropBounding = s.dropBounding
	rp.LockSecurebits = rp.DropBounding
	s.rawPieces = rp
	cp := rp
	cp.DropBounding = rp.DropBounding && !s.threadBounding
	s.pieces = spawn.NewCPieces(cp)

	if s.initExe != "" {
		s.withInit, s.initAS = true, "-"
		for _, rl := range s.rlimits {
			if rl.Resource == unix.RLIMIT_AS {
				s.initAS = strconv.FormatUint(rl.Cur, 10)
				continue
			}
			s.initRlimits = append(s.initRlimits, rl)
		}
	}

	if s.cgroups.Any() {
		if s.cg, err = cgroup.NewManager(h.cg, s.cgroups, cgroup.Limits{Processes: q.Limits.Processes, MemoryBytes: q.Limits.MemoryBytes}); err != nil {
			return fmt.Errorf("sandbox: cgroup: %w", err)
		}
	}
	// Make one spawner thread now, so that a kernel or hierarchy that
	// refuses it fails New, not the first Start.
	if s.cgroups.Slots() {
		sl, err := s.cg.AcquireSlot(s.newSlotThread)
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		s.cg.ReleaseSlot(sl, false)
	} else {
		sp, err := s.acquireSpawner()
		if err != nil {
			return err
		}
		s.releaseSpawner(sp)
	}
	return nil
}

// builtWithout records a convenience the plan asked for and the builder
// could not make: note says how things are, lost what is given up. It
// only ever adds to Lost, so it never needs the gate again.
func (s *Sandbox) builtWithout(note, lost string) {
	s.enf.Notes = append(s.enf.Notes, note)
	s.enf.Lost = append(s.enf.Lost, lost)
}

// acquireSpawner returns an idle spawner thread (no slot), starting one if
// none is idle.
func (s *Sandbox) acquireSpawner() (*spawner, error) {
	s.spMu.Lock()
	if n := len(s.spIdle); n > 0 {
		sp := s.spIdle[n-1]
		s.spIdle = s.spIdle[:n-1]
		s.spMu.Unlock()
		return sp, nil
	}
	s.spMu.Unlock()
	sp, err := s.newSpawner(nil)
	if err != nil {
		return nil, err
	}
	s.spMu.Lock()
	s.spAll = append(s.spAll, sp)
	s.spMu.Unlock()
	return sp, nil
}

// newSpawner starts a spawner thread in the v1 cgroup dirs (none: nil)
// with this policy's thread program and, for a sealed thread, its
// notification server: one for every command the thread starts (no direct
// child to name, no capture), resolving paths in the thread's mount
// namespace.
func (s *Sandbox) newSpawner(dirs []string) (*spawner, error) {
	var mounts *spawn.Mounts
	if s.mountNS == spawn.MountThread {
		mounts = s.mounts
	}
	prog := spawn.ThreadProgram{BPF: s.threadBPF, Notifies: s.threadNotifies, Mounts: mounts,
		DropBounding: s.threadBounding, LastCap: s.h.lastCap}
	refusals := &notify.RefusalLog{} // a sealed thread's server: its slot's command's (refusals_linux.go)
	return startSpawner(prog, dirs, refusals,
		func(listener int, mountNS uint64) (func(), error) {
			return netSupervisor(listener, -1, 0, s.serverOptions(nil, mountNS, refusals))
		})
}

// newCaptureSpawner starts the spawner thread of one captured command
// (plan.captureThread): the sealed main program, then a second one with
// the server's calls and the capture calls, whose listener's server
// serves capt. The thread makes
// no namespace and joins no v1 cgroup (the plan has neither with it).
func (s *Sandbox) newCaptureSpawner(capt *notify.Capture) (*spawner, error) {
	prog := spawn.ThreadProgram{BPF: s.captureThreadBPF, ListenerBPF: s.captureListenerBPF,
		DropBounding: s.threadBounding, LastCap: s.h.lastCap}
	refusals := &notify.RefusalLog{} // the thread serves this one command
	return startSpawner(prog, nil, refusals,
		func(listener int, mountNS uint64) (func(), error) {
			return netSupervisor(listener, -1, 0, s.serverOptions(capt, mountNS, refusals))
		})
}

// serverOptions configures the notification server of one command
// (capt, its change capture, or nil) or of a spawner thread, recording
// the refusals it makes in refusals.
func (s *Sandbox) serverOptions(capt *notify.Capture, mountNS uint64, refusals *notify.RefusalLog) notify.Options {
	return s.withDomains(notify.Options{Mode: internalMode(s.pol.Network), Unix: s.unixRule, Capture: capt,
		OwnPorts: &s.ownPorts, MountNS: mountNS, RootDev: s.mounts.RootDevice(), TmpDev: s.mounts.TmpDevice(),
		PtyDev: s.mounts.PtyDevice(), Refusals: refusals, Refused: seccomp.Refused})
}

// newSlotThread is newSpawner as a cgroup slot's thread (the dirs are the
// slot's, to join).
func (s *Sandbox) newSlotThread(dirs []string) (cgroup.Thread, error) {
	sp, err := s.newSpawner(dirs)
	if err != nil {
		return nil, err
	}
	return sp, nil
}

func (s *Sandbox) releaseSpawner(sp *spawner) {
	s.spMu.Lock()
	s.spIdle = append(s.spIdle, sp)
	s.spMu.Unlock()
}

func canonical(ps []string) []string {
	var out []string
	for _, p := range ps {
		if p == "" || procSelfLike(p) {
			continue
		}
		// Checked again once resolved: a granted path that is a link to
		// /proc/self (or through one) names the supervisor's own entry.
		if r, err := filepath.EvalSymlinks(p); err == nil && !procSelfLike(r) {
			out = append(out, r)
		}
	}
	return out
}

// Policy returns the normalized policy (defaults filled in).
func (s *Sandbox) Policy() Policy {
	p := s.pol
	p.ReadOnlyPaths = append([]string(nil), p.ReadOnlyPaths...)
	p.ReadWritePaths = append([]string(nil), p.ReadWritePaths...)
	p.SystemPaths = append([]string(nil), p.SystemPaths...)
	p.CredentialPatterns = append([]string(nil), p.CredentialPatterns...)
	p.Env = append([]string(nil), p.Env...)
	return p
}

// Enforcement says what this sandbox actually enforces.
func (s *Sandbox) Enforcement() Enforcement {
	e := s.enf
	e.Missing = append([]string(nil), e.Missing...)
	e.Notes = append([]string(nil), e.Notes...)
	return e
}

// confinement returns the pieces a process needs to confine itself under
// this policy: the Landlock ruleset fd (owned by the Sandbox, O_CLOEXEC: dup
// it without the flag to pass it across exec), the main and child seccomp
// programs (the child program carries the namespace rules and, when
// ChildNotifies, the calls for a supervisor the caller must serve), and how
// to drop capabilities. It is for a re-executed Go child that calls
// la_confine (spawn's confine.h) from a cgo constructor before its runtime
// starts.
func (s *Sandbox) confinement() (spawn.Pieces, error) {
	p := s.rawPieces
	if !s.h.seccomp {
		return p, nil
	}
	var err error
	if p.MainBPF, err = seccomp.Main(s.spec); err != nil {
		return p, err
	}
	var ns seccomp.NotifySpec
	if s.notify == notifyNet {
		ns = s.notifyCalls
	}
	if p.ChildBPF, err = seccomp.Child(seccomp.ChildSpec{Namespaces: true, Notify: ns}); err != nil {
		return p, err
	}
	p.ChildNotifies = !ns.Empty()
	return p, nil
}

// Close kills the commands still running, waits for them, and releases the
// ruleset, the cgroups and the temporary directory.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	procs := make([]*Process, 0, len(s.running))
	for p := range s.running {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
	s.wg.Wait()
	return s.release()
}

func (s *Sandbox) release() error {
	var first error
	s.spMu.Lock()
	sps := s.spAll
	s.spAll, s.spIdle = nil, nil
	s.spMu.Unlock()
	for _, sp := range sps {
		sp.Stop()
	}
	// No spawn is under way (the spawner threads are stopped): the
	// template's holder can go. Started commands keep their namespaces.
	s.tmplMu.Lock()
	s.tmpl.Close()
	for _, t := range s.tmplDead {
		t.Close()
	}
	s.tmpl, s.tmplDead, s.tmplOff = nil, nil, true
	s.tmplMu.Unlock()
	// The cgroups' removal (rmdirs) and the mounts' release (the
	// unmount of each detached tree) are the kernel's work: side by
	// side. Every command has ended (Close waited for them); the
	// temporary directory goes once the cgroups are gone.
	cgClosed := make(chan error, 1)
	if cg := s.cg; cg != nil {
		s.cg = nil
		go func() { cgClosed <- cg.Close() }()
	} else {
		cgClosed <- nil
	}
	if s.pieces != nil {
		s.pieces.Free()
		s.pieces = nil
	}
	s.mounts.Free()
	s.mounts = nil
	s.captureChild.Free()
	s.captureChild = nil
	if s.rawPieces.RulesetFD >= 0 {
		unix.Close(s.rawPieces.RulesetFD)
		s.rawPieces.RulesetFD = -1
	}
	first = <-cgClosed
	waitStaleSweep()
	if s.tmpRoot != "" {
		if err := removeAll(s.tmpRoot); err != nil && first == nil {
			first = err
		}
		s.tmpRoot = ""
	}
	if s.devNull != nil {
		s.devNull.Close()
		s.devNull = nil
	}
	if s.proxy != nil {
		s.unregisterProxy()
		s.proxy.Close()
		s.proxy = nil
	}
	return first
}

// acquireTmp returns an empty private temp directory for one command.
// Directories are pooled: on some file systems mkdir+rmdir cost half a
// millisecond, as much as the rest of a spawn.
func (s *Sandbox) acquireTmp() (string, error) {
	s.tmpMu.Lock()
	if n := len(s.tmpPool); n > 0 {
		d := s.tmpPool[n-1]
		s.tmpPool = s.tmpPool[:n-1]
		s.tmpMu.Unlock()
		return d, nil
	}
	s.tmpMu.Unlock()
	d, err := os.MkdirTemp(s.tmpRoot, tmpCommandPrefix+"*")
	if err == nil {
		s.tmpMu.Lock()
		s.tmpOwned[filepath.Base(d)] = true
		s.tmpMu.Unlock()
	}
	return d, err
}

// releaseTmp empties a command's temp directory (its whole tree is gone) and
// pools it; anything odd (the command replaced it, it cannot be emptied) and
// it is removed instead.
func (s *Sandbox) releaseTmp(d string) {
	root := d == s.tmpRoot
	// drop gives up on d: a directory made inside the root is removed; the
	// root itself is only removed by Close, and is not reused.
	drop := func() {
		if root {
			return
		}
		removeAll(d)
		s.tmpMu.Lock()
		delete(s.tmpOwned, filepath.Base(d))
		s.tmpMu.Unlock()
	}
	// Opened without following a symlink and only as a directory: one
	// the command replaced is dropped, never followed. (A raw descriptor:
	// os.Open would also try, and fail, to register it with the poller.)
	open := func() (int, error) {
		return unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	fd, err := open()
	if err == unix.EACCES {
		// The command took our own access away (chmod 000; root is not
		// stopped by it): a directory still, it gets its mode back, as
		// any other mode below does, and is looked at again.
		if fi, lerr := os.Lstat(d); lerr == nil && fi.IsDir() {
			os.Chmod(d, 0o700)
			fd, err = open()
		}
	}
	if err != nil {
		drop()
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		unix.Close(fd)
		drop()
		return
	}
	if st.Mode&0o7777 != 0o700 {
		unix.Fchmod(fd, 0o700)
	}
	names, err := dirNames(fd)
	unix.Close(fd)
	if err != nil {
		drop()
		return
	}
	for _, n := range names {
		if root && s.isOwnedTmp(n) {
			continue // another command's directory, not this one's leftovers
		}
		if removeAll(filepath.Join(d, n)) != nil {
			drop()
			return
		}
	}
	s.tmpMu.Lock()
	full := len(s.tmpPool) >= 16
	if !full {
		s.tmpPool = append(s.tmpPool, d)
	}
	s.tmpMu.Unlock()
	if full {
		drop()
	}
}

// dirNames lists the directory open at fd (but . and ..).
func dirNames(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

func (s *Sandbox) isOwnedTmp(name string) bool {
	s.tmpMu.Lock()
	defer s.tmpMu.Unlock()
	return s.tmpOwned[name]
}

// removeAll removes a temp tree a confined command may have left with
// unwritable directories.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// Run starts cmd and waits for its whole process tree to end.
func (s *Sandbox) Run(ctx context.Context, cmd *Command) (*ExitStatus, error) {
	p, err := s.start(ctx, cmd)
	if err != nil {
		s.startFailed(ctx, err)
		return nil, err
	}
	// The caller waits here anyway: its goroutine does what Start's
	// would, and no second goroutine has to be started and handed the
	// end (a wake-up per command). Kill and Close reach the process
	// through s.running as they do for Start.
	p.run(ctx)
	return p.Wait()
}

// Process is a running confined command.
type Process struct {
	s     *Sandbox
	pid   int
	pidfd int
	mntNS int           // a reference to its mount namespace (spawn.HoldMountNS), or -1
	v2    *cgroup.V2Set // v2 directory the tree lives in, or nil
	slot  *cgroup.Slot  // v1 slot the tree lives in, or nil
	// slotEmpty: finishTree saw the slot without a process of the tree.
	slotEmpty bool
	tmpDir    string
	start     time.Time
	stopSup   func()
	// refusals records what the command's own server refused, or is nil
	// (a sealed thread's server records them: refusals_linux.go).
	refusals *notify.RefusalLog
	// foreign attributes third parties' writes (foreign_linux.go); nil
	// without Command.ForeignChange or a privileged fanotify.
	foreign *foreignWatch
	// ownThread is the command's own spawner thread (plan.captureThread),
	// stopped, with its server, once the tree is gone; or nil.
	ownThread *spawner
	// capt is the command's change capture, or nil; writers the session's
	// set it belongs to (Command.Writers, writers_linux.go), with tree,
	// what tells its processes (set once it is spawned).
	capt    *notify.Capture
	writers *Writers
	tree    atomic.Pointer[treeIdentity]
	spawned atomic.Int32 // 1 once pid and the rest are set
	// initStatus reads the PID-namespace init's reports (nil without one).
	initStatus *bufio.Reader
	initPipe   *os.File

	stdinW   *os.File
	outR     []*os.File
	outDone  sync.WaitGroup
	budget   *outputBudget
	timedOut atomic.Bool
	killMu   sync.Mutex
	exited   bool
	done     chan struct{}
	status   *ExitStatus
	err      error
}

// Pid is the host pid of the command's main process.
func (p *Process) Pid() int { return p.pid }

// Wait waits until the command's whole process tree is gone and returns how
// the main process ended. It may be called more than once.
func (p *Process) Wait() (*ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

// Kill kills the whole process tree. Wait reports how it ended.
func (p *Process) Kill() {
	p.killTree()
}

// Start starts cmd confined and returns at once. The error is non-nil only
// when the sandbox could not start the command; a command that fails is a
// normal ExitStatus. When ctx ends, or Limits.WallTime passes, the whole tree
// is killed and ExitStatus.TimedOut is set.
func (s *Sandbox) Start(ctx context.Context, cmd *Command) (*Process, error) {
	p, err := s.start(ctx, cmd)
	if err != nil {
		s.startFailed(ctx, err)
		return nil, err
	}
	go p.run(ctx)
	return p, nil
}

// errClosed is Start's error after Close.
var errClosed = errors.New("sandbox: Start after Close")

// startFailed tells Policy.OnStartFailure that cmd could not be started,
// unless the caller gave up (its context ended) or closed the sandbox.
func (s *Sandbox) startFailed(ctx context.Context, err error) {
	if s.pol.OnStartFailure == nil || ctx.Err() != nil || errors.Is(err, errClosed) {
		return
	}
	s.pol.OnStartFailure(err)
}

// start starts cmd; the caller must then call p.run, which waits for the
// tree, reports and releases (Start: in a goroutine of its own).
func (s *Sandbox) start(ctx context.Context, cmd *Command) (*Process, error) {
	if cmd == nil || cmd.Path == "" {
		return nil, errors.New("sandbox: no command")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		s.wg.Done()
		return nil, err
	}
	outputLimit := s.pol.Limits.OutputBytes
	if cmd.StreamOutput {
		outputLimit = math.MaxInt64
	}
	p := &Process{s: s, pidfd: -1, mntNS: -1, start: time.Now(), done: make(chan struct{}),
		budget: newOutputBudget(outputLimit)}
	var childFiles []*os.File // our copies of the child's ends, closed after spawn
	ok := false
	defer func() {
		for _, f := range childFiles {
			f.Close()
		}
		if !ok {
			p.writers.remove(p)
			p.cleanup()
			s.wg.Done()
		}
	}()

	tmp := s.pol.TempDir
	if tmp == "" {
		d, err := s.acquireTmp()
		if err != nil {
			return nil, fmt.Errorf("sandbox: temporary directory: %w", err)
		}
		p.tmpDir, tmp = d, d
	}
	env := s.commandEnv(cmd.Env, tmp)
	dir := cmd.Dir
	if dir == "" {
		dir = s.pol.Workspace
	}
	if dir == "" {
		dir = tmp
	}
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("sandbox: working directory %q is not absolute", dir)
	}
	exe, err := lookPath(cmd.Path, env, dir)
	if err != nil {
		return nil, err
	}
	argv := cmd.Args
	if len(argv) == 0 {
		argv = []string{cmd.Path}
	}

	// Standard streams. Output always goes through pipes so that
	// Limits.OutputBytes holds whatever the writer is.
	var stdio [3]int
	switch in := cmd.Stdin.(type) {
	case nil:
		stdio[0] = int(s.devNull.Fd())
	case *os.File:
		stdio[0] = int(in.Fd())
	default:
		r, w, err := pipe(pipeOursWrite)
		if err != nil {
			return nil, err
		}
		childFiles = append(childFiles, r)
		p.stdinW = w
		stdio[0] = int(r.Fd())
		go func() {
			// Ends when the reader ends or the tree is gone (EPIPE).
			buf := make([]byte, 32<<10)
			for {
				n, err := in.Read(buf)
				if n > 0 {
					if _, werr := w.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					w.Close()
					return
				}
			}
		}()
	}
	outFD := func(wr interface{ Write([]byte) (int, error) }) (int, error) {
		if wr == nil {
			return int(s.devNull.Fd()), nil
		}
		r, w, err := pipe(pipeOursRead)
		if err != nil {
			return -1, err
		}
		childFiles = append(childFiles, w)
		p.outR = append(p.outR, r)
		p.outDone.Add(1)
		idx := p.budget.open(wr)
		go func() {
			defer p.outDone.Done()
			p.budget.forward(idx, r)
		}()
		return int(w.Fd()), nil
	}
	if stdio[1], err = outFD(cmd.Stdout); err != nil {
		return nil, err
	}
	if sameWriter(cmd.Stdout, cmd.Stderr) {
		stdio[2] = stdio[1]
	} else if stdio[2], err = outFD(cmd.Stderr); err != nil {
		return nil, err
	}

	req := &spawn.Request{
		Path: exe, Argv: argv, Envp: env, Dir: dir, Stdio: stdio,
		CgroupDir: -1, CgroupProcs: -1, Rlimits: s.rlimits,
		NewPID: s.newPID, NewUser: s.newUser, UIDMap: s.uidMap, GIDMap: s.gidMap,
		PidMax: s.pidMax, Pieces: s.pieces, NoClone3: s.sealed,
		NewNS: s.mountNS == spawn.MountChild, Mounts: s.mounts,
	}
	if req.NewNS && s.template {
		req.Template = s.commandTemplate()
	}
	if s.withInit {
		// The namespace's first process is our init, which starts the
		// command and reports on this pipe (pidinit).
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		childFiles = append(childFiles, w)
		p.initStatus = bufio.NewReader(r)
		p.initPipe = r
		req.Path, req.Rlimits, req.InitFD = "/proc/self/exe", s.initRlimits, int(w.Fd())
		req.Argv = append([]string{pidinit.Marker, strconv.Itoa(int(w.Fd())), s.initAS, exe}, argv...)
	}
	var capt *notify.Capture
	// A policy that asked for capture on a host (or at a level) that
	// runs without it says so in Enforcement (Lost, or Missing under
	// BestEffort): its commands run, their changes unannounced.
	if cmd.BeforeChange != nil && !s.pol.CaptureChanges {
		return nil, errors.New("sandbox: Command.BeforeChange needs a sandbox made with Policy.CaptureChanges")
	}
	if (cmd.BeforeChange != nil || s.capturesAll()) && s.capture {
		// Before the spawn: the writer watch must be there before the
		// command's first change.
		if capt, p.foreign = s.newCapture(cmd); capt != nil && !s.captureThread {
			req.Child = s.captureChild
			if cmd.BeforeChange != nil && cmd.Writers.registry() != nil {
				// Entered before the spawn: a seal that pauses the
				// session's writers quiesces this capture from its
				// first call (writers_linux.go).
				p.capt, p.writers = capt, cmd.Writers
				p.writers.add(p)
			}
		}
	}
	if s.cgroups.V2 {
		if p.v2, err = s.cg.AcquireV2(); err != nil {
			return nil, fmt.Errorf("sandbox: cgroup: %w", err)
		}
		req.CgroupDir, req.CgroupProcs = p.v2.FDs()
	}
	var res spawn.Result
	switch {
	case capt != nil && s.captureThread:
		// The command's own spawner thread, whose program sends the
		// capture calls to a server of this command's capture (a
		// listener made here: the child never holds one to hand over).
		// It ends with the tree (finishTree).
		if p.ownThread, err = s.newCaptureSpawner(capt); err != nil {
			return nil, err
		}
		res, err = p.ownThread.spawn(req)
		capt = nil // served by the thread's server
	case s.cgroups.Slots():
		// The slot's thread sits in the command's v1 cgroups: the child is
		// born there. The slot stays with the command until its tree is
		// gone.
		if p.slot, err = s.cg.AcquireSlot(s.newSlotThread); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		sp := p.slot.Thread().(*spawner)
		sp.refusals.Take() // none can be this command's yet
		res, err = sp.spawn(req)
	default:
		var sp *spawner
		if sp, err = s.acquireSpawner(); err != nil {
			return nil, err
		}
		res, err = sp.spawn(req)
		s.releaseSpawner(sp)
	}
	if err != nil {
		return nil, err
	}
	p.pid, p.pidfd = res.Pid, res.Pidfd
	if req.NewNS {
		p.mntNS = spawn.HoldMountNS(p.pidfd)
	}
	for _, f := range childFiles {
		f.Close()
	}
	childFiles = nil
	if p.initStatus != nil {
		// The init has started; wait for the command's execve.
		if err := p.initStarted(exe); err != nil {
			p.killTree()
			reapPidfd(p.pidfd)
			p.finishTree()
			if res.Listener >= 0 {
				unix.Close(res.Listener)
			}
			return nil, err
		}
	}

	if p.foreign != nil {
		// Events are attributed from here on; none can be read before
		// the tree's identity is known.
		id := p.identity()
		p.foreign.start(id.has)
		p.tree.Store(&id)
	}
	// A pause of the session's writers may stop the tree from now on.
	p.spawned.Store(1)
	if res.Listener >= 0 {
		var stop func()
		switch s.notify {
		case notifyNet:
			p.refusals = &notify.RefusalLog{}
			stop, err = netSupervisor(res.Listener, p.pidfd, p.pid, s.serverOptions(capt, s.commandMountNS(p.pid), p.refusals))
		default:
			unix.Close(res.Listener)
			err = errors.New("sandbox: internal: unexpected seccomp listener")
		}
		if err != nil {
			p.killTree()
			reapPidfd(p.pidfd)
			p.finishTree()
			return nil, fmt.Errorf("sandbox: starting the network supervisor: %w", err)
		}
		p.stopSup = stop
	}

	s.mu.Lock()
	s.running[p] = struct{}{}
	s.mu.Unlock()
	ok = true
	return p, nil
}

// commandTemplate returns the namespace template a command starts in
// (plan.template), or nil for a command that makes its namespaces itself.
// The first command of a Sandbox makes its own: a Sandbox that runs one
// command (`lite-agent sandbox run`) never pays for a template, which
// costs what one command's namespace costs. The second makes the
// template, and it and every later command start in it. When it cannot
// be made, commands go on making their own: the same namespace, made
// again each time. A template whose holder was killed (by a process of
// the same user outside the sandbox: nothing confined can) is made again.
func (s *Sandbox) commandTemplate() *spawn.Template {
	s.tmplMu.Lock()
	defer s.tmplMu.Unlock()
	if s.tmpl != nil && !s.tmpl.Alive() {
		// Released at Close, not now: a spawn that took it before it
		// died may still be using its descriptors (and fails, ESRCH).
		s.tmplDead = append(s.tmplDead, s.tmpl)
		s.tmpl = nil
	}
	if s.tmpl != nil || s.tmplOff {
		return s.tmpl
	}
	if s.tmplStarted++; s.tmplStarted < 2 {
		return nil
	}
	t, err := spawn.NewTemplate(s.mounts, s.h.user())
	if err != nil {
		s.tmplOff = true
		return nil
	}
	s.tmpl = t
	return t
}

// commandEnv is a command's environment: the policy's, extra on top,
// TMPDIR its temp dir, PATH without what it cannot read.
func (s *Sandbox) commandEnv(extra []string, tmp string) []string {
	env := filterEnv(os.LookupEnv, s.pol.Env, extra)
	env = envSet(env, "TMPDIR", tmp)
	if path, ok := envGet(env, "PATH"); ok {
		env = envSet(env, "PATH", s.trimmedPATH(path))
	}
	// A HOME the command cannot read (the caller's own, usually) breaks
	// tools that insist on their config files — git dies on an unreadable
	// ~/.gitconfig. Such a command gets its private temp dir as HOME:
	// empty, writable, gone afterwards.
	if home, ok := envGet(env, "HOME"); ok && !s.readableDir(home) {
		env = envSet(env, "HOME", tmp)
	}
	return s.proxyEnv(env)
}

// pipe returns a pipe; ours names the end we keep (pipeOursRead: the read
// end, for output; pipeOursWrite: the write end, for stdin). Our end is
// non-blocking, so the runtime poller serves it; the child's end stays
// blocking, as programs expect (O_NONBLOCK belongs to each end's open
// file, not to the pipe). A blocking read of the command's output held a
// thread and its P in the syscall: with both of a 2-P program's Ps so
// held, a ready goroutine — the notification server answering the
// command's exit_group — waited for sysmon to retake one, up to 10 ms.
func pipe(ours pipeEnd) (r, w *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	if err := unix.SetNonblock(fds[ours], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

// pipeEnd is the end of a pipe we keep: the index in pipe2's pair.
type pipeEnd int

const (
	pipeOursRead  pipeEnd = 0
	pipeOursWrite pipeEnd = 1
)

// trimmedPATH caches trimPath for the (usually unchanging) parent PATH.
func (s *Sandbox) trimmedPATH(path string) string {
	s.pathMu.Lock()
	defer s.pathMu.Unlock()
	if path != s.pathIn || s.pathOut == "" && path != "" {
		s.pathIn, s.pathOut = path, trimPath(path, s.readable)
	}
	return s.pathOut
}

// readableDir reports whether dir is beneath a root the sandbox can read
// (cached for the usually unchanging HOME).
func (s *Sandbox) readableDir(dir string) bool {
	s.pathMu.Lock()
	defer s.pathMu.Unlock()
	if dir == s.homeIn {
		return s.homeOK
	}
	ok := false
	if real, err := filepath.EvalSymlinks(dir); err == nil && filepath.IsAbs(real) {
		for _, r := range s.readable {
			if paths.Within(real, r) {
				ok = true
				break
			}
		}
	}
	s.homeIn, s.homeOK = dir, ok
	return ok
}

// lookPath finds file as execvp would in the child's PATH (relative to the
// working directory dir). Landlock still decides whether it may run.
func lookPath(file string, env []string, dir string) (string, error) {
	if strings.Contains(file, "/") {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		return file, nil
	}
	path, _ := envGet(env, "PATH")
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		c := filepath.Join(d, file)
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", fmt.Errorf("sandbox: %q: executable file not found in the sandbox's PATH", file)
}

// run waits for the main process, then for the rest of the tree, then
// reports.
func (p *Process) run(ctx context.Context) {
	exited := make(chan struct{})
	if wt := p.s.pol.Limits.WallTime; wt > 0 || ctx.Done() != nil {
		go func() {
			var timer <-chan time.Time
			if wt > 0 {
				t := time.NewTimer(wt - time.Since(p.start))
				defer t.Stop()
				timer = t.C
			}
			select {
			case <-ctx.Done():
			case <-timer:
			case <-exited:
				return
			}
			p.timedOut.Store(true)
			p.killTree()
		}()
	}
	var info childInfo
	var err error
	if p.stopSup != nil || p.ownThread != nil {
		info, err = waitPidfdPolled(p.pidfd)
	} else {
		info, err = waitPidfd(p.pidfd)
	}
	p.killMu.Lock()
	p.exited = true
	p.killMu.Unlock()
	close(exited)
	p.finishTree()

	st := &ExitStatus{TimedOut: p.timedOut.Load()}
	if err != nil {
		p.err = fmt.Errorf("sandbox: waiting for the command: %w", err)
	} else if ws, ok := p.initReport(); ok {
		// The init reported how the command ended.
		switch {
		case ws.Exited():
			st.Code = ws.ExitStatus()
		case ws.Signaled():
			st.Signal = ws.Signal()
			st.Code = 128 + int(ws.Signal())
		}
	} else {
		// No init, or it was killed (timeout, Kill) before the command
		// ended: the first process's own end.
		switch info.Code {
		case cldExited:
			st.Code = int(info.Status)
		case cldKilled, cldDumped:
			st.Signal = syscall.Signal(info.Status)
			st.Code = 128 + int(info.Status)
		}
	}
	if s2 := p.v2; s2 != nil {
		st.MemoryExceeded = p.s.cgroups.V2Mem && s2.OOMKilled()
		st.ProcessLimitHit = p.s.cgroups.V2Pids && s2.PidsMaxHit()
	}
	if sl := p.slot; sl != nil {
		oom, pidsMax := sl.Settle()
		st.MemoryExceeded = st.MemoryExceeded || oom
		st.ProcessLimitHit = st.ProcessLimitHit || pidsMax
	}
	st.DroppedBytes = p.budget.droppedBytes()
	st.OmittedAfter = p.budget.omittedAfter()
	st.OutputTruncated = st.DroppedBytes > 0
	st.Duration = time.Since(p.start)
	st.Refusals, st.MoreRefusals = p.takeRefusals()
	p.status = st
	p.writers.remove(p)
	p.cleanup()
	s := p.s
	s.mu.Lock()
	delete(s.running, p)
	s.mu.Unlock()
	close(p.done)
	s.wg.Done()
}

// finishTree makes sure nothing of the tree is left once the main process
// has exited (daemons that setsid'd or double-forked included), stops the
// supervisor and drains the output.
func (p *Process) finishTree() {
	switch {
	case p.v2 != nil:
		if p.v2.Populated() {
			p.v2.Kill()
			p.v2.WaitEmpty(10 * time.Second)
		}
	case p.slot != nil && p.s.cgroups.V1Track:
		p.slotEmpty = p.slot.Empty()
		if !p.slotEmpty {
			p.slot.Kill()
			p.slotEmpty = p.slot.WaitEmpty(10 * time.Second)
		}
	case p.s.newPID:
		// PID 1 of the namespace has exited: the kernel killed the rest
		// and waited for it before letting us reap PID 1.
	default:
		// Best effort: the session's process group.
		unix.Kill(-p.pid, unix.SIGKILL)
	}
	if p.stopSup != nil {
		p.stopSup()
		p.stopSup = nil
	}
	if p.ownThread != nil {
		p.ownThread.Stop() // the thread, then its server
		p.ownThread = nil
	}
	// The tree is gone: every write it made is queued. Read them before
	// Wait returns, so that the caller's seal knows them all.
	if p.foreign != nil {
		p.foreign.stop()
		p.foreign = nil
	}
	if p.stdinW != nil {
		p.stdinW.Close()
	}
	// Every writer of the output pipes is dead, so the readers see EOF at
	// once; the deadline is a safety net for the best-effort case, where a
	// stray process may still hold a pipe. Without output pipes (nil
	// writers) there is nothing to drain.
	if len(p.outR) == 0 {
		return
	}
	done := make(chan struct{})
	go func() { p.outDone.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(outputGrace):
		for _, r := range p.outR {
			r.Close()
		}
		// A caller's writer that blocks (an io.Pipe nobody reads) holds
		// its forwarder in Write, which closing our end cannot end: the
		// command is over, so Wait does not wait for it any longer.
		select {
		case <-done:
		case <-time.After(outputGrace):
		}
	}
}

// outputGrace is how long finishTree waits for the output to drain, twice
// (a variable for tests).
var outputGrace = 2 * time.Second

// killTree kills every process of the command.
func (p *Process) killTree() {
	p.killMu.Lock()
	defer p.killMu.Unlock()
	switch {
	case p.v2 != nil:
		p.v2.Kill()
		return
	case p.slot != nil && p.s.cgroups.V1Track:
		p.slot.Kill()
		return
	}
	if p.exited || p.pidfd < 0 {
		return
	}
	// PID namespace: SIGKILL to its PID 1 ends the namespace. Otherwise
	// (best effort) the main process and its session.
	unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
	if !p.s.newPID {
		unix.Kill(-p.pid, unix.SIGKILL)
	}
}

func (p *Process) cleanup() {
	if p.foreign != nil {
		p.foreign.stop() // a start that failed: close the group
		p.foreign = nil
	}
	if p.ownThread != nil {
		p.ownThread.Stop() // a start that failed
		p.ownThread = nil
	}
	for _, r := range p.outR {
		r.Close()
	}
	if p.initPipe != nil {
		p.initPipe.Close()
		p.initPipe, p.initStatus = nil, nil
	}
	// Under killMu: a Kill (the Sandbox's Close, a caller) reads these
	// while the command's own goroutine releases them.
	p.killMu.Lock()
	if p.v2 != nil {
		p.s.cg.ReleaseV2(p.v2)
		p.v2 = nil
	}
	if p.slot != nil {
		p.s.cg.ReleaseSlot(p.slot, p.slotEmpty)
		p.slot = nil
	}
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
		p.pidfd = -1
	}
	p.killMu.Unlock()
	if p.tmpDir != "" {
		p.s.releaseTmp(p.tmpDir)
		p.tmpDir = ""
	}
	spawn.ReleaseMountNS(p.mntNS)
	p.mntNS = -1
}

// si_code values of SIGCHLD (waitid).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// childInfo is siginfo_t as waitid(2) fills it for a child: the union of
// fields starts pointer-aligned after three ints.
type childInfo struct {
	Signo, Errno, Code int32
	_                  [unsafe.Sizeof(uintptr(0)) - 4]byte
	Pid                int32
	UID                uint32
	Status             int32
	_                  [128 - 3*4 - (unsafe.Sizeof(uintptr(0)) - 4) - 3*4]byte
}

// waitPidfd reaps the process of pidfd.
func waitPidfd(pidfd int) (childInfo, error) {
	var info childInfo
	for {
		_, _, e := unix.Syscall6(unix.SYS_WAITID, unix.P_PIDFD, uintptr(pidfd),
			uintptr(unsafe.Pointer(&info)), unix.WEXITED, 0, 0)
		if e != unix.EINTR {
			if e != 0 {
				return info, e
			}
			return info, nil
		}
	}
}

func reapPidfd(pidfd int) { waitPidfd(pidfd) }

// waitPidfdPolled is waitPidfd through the runtime's poller (a pidfd is
// readable once its process has exited), for a command whose seccomp
// notifications this process serves. A blocking waitid there held the
// caller's thread and P in a syscall while the rest of the program sat
// idle, with no thread left waiting in the poller: a notification (the
// command's exit_group, which change capture stops) was then seen only by
// sysmon's poll, up to 10 ms later — `lite-agent sandbox run -- /bin/true`
// took ~30 ms instead of ~16 once its commands were captured for the .git
// rule. Parked in the poller, the wait leaves a thread in epoll_wait that
// wakes for both. Commands without a server keep the plain wait (one
// syscall, no goroutine switch).
func waitPidfdPolled(pidfd int) (childInfo, error) {
	dup, err := unix.FcntlInt(uintptr(pidfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return waitPidfd(pidfd)
	}
	// The dup shares pidfd's open file description, O_NONBLOCK included:
	// it is cleared again before any blocking wait on pidfd (the
	// fallbacks below, and whoever waits on it later), which would
	// otherwise answer EAGAIN and lose the exit status.
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return waitPidfd(pidfd)
	}
	f := os.NewFile(uintptr(dup), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		unix.SetNonblock(pidfd, false)
		return waitPidfd(pidfd)
	}
	var info childInfo
	var werr error
	err = rc.Read(func(uintptr) bool {
		for {
			info = childInfo{}
			_, _, e := unix.Syscall6(unix.SYS_WAITID, unix.P_PIDFD, uintptr(pidfd),
				uintptr(unsafe.Pointer(&info)), unix.WEXITED|unix.WNOHANG, 0, 0)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			case 0:
				return info.Pid != 0 // WNOHANG: no pid while it runs
			default:
				werr = e
				return true
			}
		}
	})
	unix.SetNonblock(pidfd, false)
	if err != nil {
		return waitPidfd(pidfd)
	}
	return info, werr
}

// initStarted reads the init's first report: the command's execve
// succeeded, or why it failed (the error a direct spawn would give).
func (p *Process) initStarted(exe string) error {
	line, err := p.initStatus.ReadString('\n')
	switch {
	case err != nil:
		return fmt.Errorf("sandbox: the PID namespace's init ended before starting the command: %w", err)
	case line == "S\n":
		return nil
	case strings.HasPrefix(line, "E"):
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		return spawnError(p.s.mounts.ExecError(exe, syscall.Errno(n)))
	}
	return fmt.Errorf("sandbox: the PID namespace's init said %q", line)
}

// initReport returns the command's wait status as the init reported it
// once the command ended; false when there is no init or it ended first.
func (p *Process) initReport() (syscall.WaitStatus, bool) {
	if p.initStatus == nil {
		return 0, false
	}
	line, err := p.initStatus.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "X") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return 0, false
	}
	return syscall.WaitStatus(n), true
}
