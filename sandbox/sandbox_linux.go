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
	enf Enforcement
	h   *hostInfo

	pieces    *spawn.CPieces
	rawPieces spawn.Pieces // what a child loads itself
	notify    notifyKind
	// notifyCalls are the calls sent to the notification server (with
	// notifyNet): NetSupervised, or ConnectOnly under unrestricted.
	notifyCalls seccomp.NotifySpec
	spec        seccomp.MainSpec // network rules of the main program
	sealed      bool             // the spawner threads carry every rule (internal/seccomp)
	threadBPF   []byte           // the spawner threads' program
	// threadNotifies: the thread program sends notifyCalls to a
	// per-thread notification server, so children load no program of
	// their own.
	threadNotifies bool
	// threadBounding: the spawner threads empty their own capability
	// bounding set, which children outside a new user namespace inherit
	// (threadProgram.dropBounding), so theirs need no dropping.
	threadBounding bool

	cg     *cgroup.Manager
	plan   cgroup.Plan
	spMu   sync.Mutex
	spIdle []*spawner // spawner threads without a slot, idle
	spAll  []*spawner
	newPID bool
	pidMax string // per-namespace pid_max for newPID, or ""
	// withInit: in a PID namespace the command runs under our init
	// (pidinit), which gets initRlimits and applies initAS (RLIMIT_AS
	// for the command, "-" for none) itself after its exec.
	withInit    bool
	initExe     string // this program, canonical (with withInit)
	initRlimits []spawn.Rlimit
	initAS      string
	newUser     bool
	uidMap      string
	gidMap      string
	rlimits     []spawn.Rlimit
	tmpRoot     string // parent of per-command temp dirs; "" with Policy.TempDir
	tmpMu       sync.Mutex
	tmpPool     []string        // emptied per-command temp dirs, ready for reuse
	tmpOwned    map[string]bool // names of the directories made inside tmpRoot
	rwRoots     []string        // canonical read-write roots (unix sockets, capture)
	// mountNS: where the private read-only mount namespace is made
	// (spawn.MountMode); mounts are its writable roots and the sandbox's
	// own instances.
	mountNS spawn.MountMode
	mounts  *spawn.Mounts
	// workspaceReal is the canonical workspace (change capture), or "".
	workspaceReal string
	readable      []string // canonical readable roots (PATH trimming)
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
	// Policy.CaptureChanges.
	captureChild *spawn.Program

	mu      sync.Mutex
	closed  bool
	running map[*Process]struct{}
	wg      sync.WaitGroup
}

// New prepares a sandbox for p: it checks the policy, probes the kernel and
// builds the Landlock ruleset, the seccomp programs and the cgroup parents.
// When the kernel cannot enforce something the policy needs, New fails with
// an error wrapping ErrUnsupported that names it — unless p.BestEffort, and
// then Enforcement().Missing lists it.
func New(p Policy) (*Sandbox, error) {
	q, err := normalizePolicy(p)
	if err != nil {
		return nil, err
	}
	h := host()
	s := &Sandbox{pol: q, h: h, running: map[*Process]struct{}{}, tmpOwned: map[string]bool{}}
	var missing, notes []string
	miss := func(format string, args ...any) { missing = append(missing, fmt.Sprintf(format, args...)) }

	if h.abi == 0 {
		miss("Landlock file-system confinement (needs Linux 5.13+ with landlock among the enabled LSMs)")
	}
	if !h.seccomp {
		miss("seccomp filters")
	}

	// Network. Every mode is served by the one notification server
	// (sandbox/internal/notify), which rests on seccomp user notification and
	// pidfd_getfd. Under none it lets the tree bind loopback and reach
	// the ports it bound itself, and nothing else (notify/ownports_linux.go);
	// the seccomp filter then lets IP sockets exist (as for loopback), and
	// Landlock still refuses every TCP port to the child itself: the
	// server binds and connects on its own copy of the socket. Domain
	// grants under none add the proxy's address as the one way out.
	mode := q.Network
	canNotify := h.seccomp && h.notify && h.pidfdGetfd && h.procOK == nil && netSupervisor != nil
	filterMode := mode
	denyConnect := false
	domains := len(q.AllowDomains) > 0 && mode != NetworkUnrestricted
	if canNotify {
		s.notify = notifyNet
		if mode == NetworkNone {
			filterMode = NetworkLoopback
		}
	}
	// unrestricted needs the server for connect only (the AF_UNIX rule);
	// every other mode sends it each call that names an address.
	s.notifyCalls = seccomp.NetSupervised
	if mode == NetworkUnrestricted {
		s.notifyCalls = seccomp.ConnectOnly
	}
	switch {
	case s.notify == notifyNet:
	case mode == NetworkLoopback, mode == NetworkPrivate, domains:
		what := "loopback/private networks"
		if domains {
			what = "domain grants (the proxy as the only destination)"
		}
		miss("address filtering for %s needs seccomp user notification and pidfd_getfd (Linux 5.6+)", what)
		// Best effort gives less network, not more.
		filterMode = NetworkNone
		denyConnect = true
		notes = append(notes, "network: none (no address filtering for "+string(mode)+"); connect(2) refused outright")
	case mode == NetworkNone:
		denyConnect = true // no unix connects at all rather than any
		notes = append(notes, "connect(2) refused outright and no loopback listeners: no seccomp user notification")
	default:
		miss("confinement of pathname unix sockets (needs seccomp user notification and pidfd_getfd)")
	}

	if q.CaptureChanges && s.notify == notifyNone {
		miss("capturing changes, for checkpoints and the .git name rule (needs seccomp user notification and pidfd_getfd, Linux 5.6+; Policy.GitWritable drops the rule)")
	}
	foreignOK := q.CaptureChanges && foreignAvailable()
	if q.CaptureChanges {
		// Not a miss: nothing is confined by it (foreign_linux.go).
		if foreignOK {
			notes = append(notes, "change capture: other processes' writes to the files a command changes are told apart (fanotify)")
		} else {
			notes = append(notes, "change capture: other processes' writes to the files a command changes cannot be told apart (fanotify reports writers to CAP_SYS_ADMIN only)")
		}
	}

	// Processes: tracking the tree, the process limit, memory, signal
	// isolation. Cgroups first (see internal/cgroup's doc.go for why no
	// spawn ever migrates a process): a v2 directory when v2 delegates a controller to
	// us; v1 slots for what v2 lacks; a v2 directory without controllers
	// only to track the tree when nothing else can.
	plan := cgroup.Plan{}
	v2Pids := h.cgWritable["v2"] && slices.Contains(h.v2Subtree, "pids")
	v2Mem := h.cgWritable["v2"] && slices.Contains(h.v2Subtree, "memory")
	plan.V2, plan.V2Pids, plan.V2Mem = v2Pids || v2Mem, v2Pids, v2Mem
	plan.V1Pids = !v2Pids && h.cgWritable["pids"]
	plan.V1Mem = !v2Mem && h.cgWritable["memory"]
	plan.V1Track = !plan.V2 && plan.V1Pids
	if !plan.Tracks() && h.cgWritable["v2"] && !h.root && h.userns != nil {
		plan.V2 = true // the only way left to find the whole tree
	}
	if forced := testForceMechanism; forced != "" {
		plan = forcedPlan(forced, plan, h)
	}
	s.plan = plan
	usernsOK := h.userns == nil
	// A PID namespace when no cgroup can find the whole tree, or when
	// Landlock cannot scope signals (ABI < 6): processes outside a PID
	// namespace have no pid inside it, so they cannot be signalled.
	if !plan.Tracks() || h.abi < 6 {
		switch {
		case h.root:
			s.newPID = true
		case usernsOK:
			s.newPID, s.newUser = true, true
		}
	}
	switch {
	case plan.V2:
		notes = append(notes, "process tree: cgroup v2 directory per command (cgroup.kill)")
	case plan.V1Track:
		notes = append(notes, "process tree: cgroup v1 pids directory per command")
	case s.newPID:
		notes = append(notes, "process tree: PID namespace (under an init: the command is PID 2)")
	default:
		miss("killing the whole process tree (no writable cgroup, and no PID namespace: %v)", h.userns)
	}
	if h.abi > 0 && h.abi < 6 && !s.newPID {
		miss("isolation of signals and abstract unix sockets (Landlock ABI %d < 6 and no PID namespace)", h.abi)
	}
	// The process limit. RLIMIT_NPROC does not bind uid 0, and elsewhere
	// counts every process of the user — except in a fresh user namespace,
	// where the count is per namespace. A PID namespace has its own pid_max
	// from Linux 6.14 on (no lower than 301).
	switch {
	case plan.PidsLimit():
		notes = append(notes, "processes: cgroup pids.max")
	case !h.root && usernsOK:
		s.newUser = true
		notes = append(notes, "processes: RLIMIT_NPROC in a user namespace")
	case s.newPID && kernelAtLeast(6, 14) && q.Limits.Processes+1 >= 301:
		s.pidMax = strconv.Itoa(q.Limits.Processes + 1)
		notes = append(notes, "processes: pid_max of the PID namespace")
	case h.root:
		miss("process limit: root is exempt from RLIMIT_NPROC, no pids cgroup is writable, and no per-namespace pid_max (Linux 6.14+, limits of 300 or more)")
	default:
		miss("per-sandbox process limit (no pids cgroup and no user namespace)")
	}
	if plan.MemLimit() {
		notes = append(notes, "memory: cgroup limit for the whole tree")
	} else {
		notes = append(notes, "memory: RLIMIT_AS per process (no memory cgroup: the tree as a whole is not bounded, and MemoryExceeded is not reported)")
	}

	// File metadata (chmod, chown, utimensat), which Landlock does not
	// govern: every mount read-only but the read-write roots, in a private
	// mount namespace (spawn.MountMode). Unprivileged users need the user
	// namespace for it.
	switch err := mountNSProbe(); {
	case err != nil:
		miss("read-only mounts outside the read-write roots, which stop chmod, chown and utimensat there (a private mount namespace: %v)", err)
	default:
		s.mountNS = spawn.MountChild
		if h.root && s.pidMax == "" {
			s.mountNS = spawn.MountThread
		}
		if !h.root {
			s.newUser = true
		}
	}

	if len(missing) > 0 && !q.BestEffort {
		return nil, fmt.Errorf("%w: %s (set BestEffort to run without it)", ErrUnsupported, strings.Join(missing, "; "))
	}
	s.enf = Enforcement{
		LandlockABI:  h.abi,
		Seccomp:      h.seccomp,
		Cgroup:       plan.Version(),
		NetworkMode:  string(filterMode),
		Missing:      missing,
		Unprivileged: !h.root,
		Notes:        notes,
	}
	if s.notify == notifyNet {
		s.enf.NetworkMode = string(mode)
	}

	// seccomp: the main program goes on the spawner threads, the child
	// program into each child (internal/seccomp). A spawner thread that
	// needs neither clone3 (CLONE_INTO_CGROUP) nor namespace flags is
	// sealed: everything is on the thread, including the notification
	// server's calls, with one listener and one server per thread (a
	// process has at most one listener in its filter chain: with change
	// capture they stay in the child program, whose per-command listener
	// also carries the capture calls).
	s.sealed = !s.newPID && !s.newUser && !plan.V2
	s.spec = seccomp.MainSpec{Network: internalMode(filterMode), DenyConnect: denyConnect}
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
			if s.notify == notifyNet && !q.CaptureChanges {
				spec.Notify, childNotify = s.notifyCalls, seccomp.NotifySpec{}
				s.threadNotifies = true
			}
		}
		var err error
		if s.threadBPF, err = seccomp.Main(spec); err != nil {
			filtersDone <- err
			return
		}
		if !s.sealed || !childNotify.Empty() {
			if childBPF, err = seccomp.Child(!s.sealed, childNotify); err != nil {
				filtersDone <- err
				return
			}
			childNotifies = !childNotify.Empty()
		}
		if q.CaptureChanges && s.notify != notifyNone {
			bpf, err := seccomp.Child(!s.sealed, seccomp.WithCapture(childNotify, foreignOK))
			if err != nil {
				filtersDone <- err
				return
			}
			s.captureChild = spawn.NewProgram(bpf, true)
		}
		filtersDone <- nil
	}()

	ok := false
	defer func() {
		if !ok {
			s.release()
		}
	}()
	// The domain proxy runs here, in the parent, for the sandbox's
	// lifetime; commands can reach it only when the supervisor admits it.
	if len(q.AllowDomains) > 0 && (s.notify == notifyNet || mode == NetworkUnrestricted) {
		if s.proxy, err = startDomainProxy(q); err != nil {
			return nil, err
		}
		s.unregisterProxy = notify.RegisterProxy(s.proxy.Addr())
		s.enf.Notes = append(s.enf.Notes, "network: allowed domains through lite-agent's proxy at "+s.proxy.URL()+" (every other destination refused by the notification server)")
	}
	if s.devNull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
		return nil, err
	}
	tmp := q.TempDir
	if tmp == "" {
		if s.tmpRoot, err = tmpRootDir(); err != nil {
			return nil, fmt.Errorf("sandbox: temporary directory: %w", err)
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
	s.readable = canonical(append(append(append([]string(nil), s.rwRoots...), q.SystemPaths...), q.ReadOnlyPaths...))
	if s.mountNS != spawn.MountNone {
		mounts, whole, err := spawn.NewMounts(s.rwRoots)
		if err != nil {
			return nil, err
		}
		switch {
		case whole:
			s.mountNS = spawn.MountNone
			s.enf.Notes = append(s.enf.Notes, "metadata: no read-only mounts (a read-write root is /)")
		default:
			s.mounts = mounts
			where := "per command"
			if s.mountNS == spawn.MountThread {
				where = "per spawner thread"
			}
			s.enf.Notes = append(s.enf.Notes, "metadata: every mount read-only but the read-write roots (a private mount namespace "+where+"): no chmod, chown or utimensat outside them")
		}
	}
	s.enf.Notes = append(s.enf.Notes, s.protectGit()...)
	// Pseudo-terminals: only on a devpts of the sandbox's own, which every
	// namespace above mounts over the host's (spawn's devpts_linux.go).
	wantPty := slices.ContainsFunc(q.SystemPaths, func(p string) bool { return devPty[p] })
	switch added, off := s.mounts.AddDevpts(h.user(), s.mountNS, wantPty && h.abi > 0); {
	case added:
		s.enf.Notes = append(s.enf.Notes, "pseudo-terminals: a devpts instance of the sandbox's own over /dev/pts (the host's terminals have no path inside)")
	case off != "":
		s.enf.Notes = append(s.enf.Notes, "pseudo-terminals: off ("+off+"; the host's /dev/pts holds the user's other terminals)")
	}
	// /proc/self and the rest of a process's own /proc: on a /proc of the
	// sandbox's own (spawn's procfs_linux.go).
	if wantsProc(q.SystemPaths) && h.abi > 0 {
		if off := s.mounts.AddProc(h.user(), s.mountNS, s.newPID, procFiles(q.SystemPaths)); off != "" {
			s.enf.Notes = append(s.enf.Notes, "/proc: the host's, with only its global files readable ("+off+")")
		} else {
			s.enf.Notes = append(s.enf.Notes, "/proc: the sandbox's own (the command's processes only, /proc/self readable; no /proc/sys or /proc/net)")
		}
	}
	if s.notify == notifyNet {
		// A pathname unix socket is reachable (and may be created) in
		// every network mode beneath the read-write roots, and nowhere
		// else: the one AF_UNIX rule (notify/addr_linux.go).
		s.unixRule = notify.UnixPathsUnder(s.rwRoots...)
	}

	// In a PID namespace the command's parent is our init, which is this
	// program: the confined first process must be able to execute it (and
	// so may the command: the binary holds no secret, and it runs confined
	// like anything else).
	var initExe string
	if s.newPID {
		if exe, err := os.Executable(); err == nil {
			if initExe, err = filepath.EvalSymlinks(exe); err != nil {
				initExe = ""
			}
		}
		if initExe == "" {
			s.enf.Notes = append(s.enf.Notes, "PID namespace without an init: the command is PID 1 (its own executable could not be located)")
		}
	}
	rp := spawn.Pieces{RulesetFD: -1, LastCap: h.lastCap}
	// Landlock's TCP walls follow the policy's own mode: with domains
	// under none the child never connects itself (the supervisor does), so
	// every port stays refused to it.
	llMode := filterMode
	if domains && mode == NetworkNone {
		llMode = NetworkNone
	}
	if h.abi > 0 {
		attr := landlockHandled(h.abi, llMode)
		rules := landlockRules(&q, tmp)
		if initExe != "" {
			rules = append(rules, spawn.Rule{Path: initExe, Access: spawn.RO})
		}
		// The root: a skeleton of these grants, so that listing the
		// workspace's parents shows their names only (spawn's
		// rootfs_linux.go).
		// And in it a private /tmp (spawn's tmpfs_linux.go), bounded by
		// the memory limit, for the programs that write to /tmp whatever
		// TMPDIR says.
		off, tmpOff := s.mounts.AddRoot(h.user(), s.mountNS, rules, q.Limits.MemoryBytes)
		if off != "" {
			s.enf.Notes = append(s.enf.Notes, "listing: the workspace's parents (/, /tmp, $HOME) cannot be listed ("+off+")")
		} else {
			s.enf.Notes = append(s.enf.Notes, "listing: / is a skeleton of the granted paths (the workspace's parents list only granted names)")
		}
		if tmpOff != "" {
			s.enf.Notes = append(s.enf.Notes, "/tmp: NOT writable ("+tmpOff+"): programs that ignore TMPDIR and write to /tmp fail")
		} else {
			s.enf.Notes = append(s.enf.Notes, "/tmp: a private tmpfs of the sandbox's own (at most "+strconv.FormatInt(q.Limits.MemoryBytes>>20, 10)+" MiB, the memory limit), shared by its commands, invisible to the host and other sandboxes, gone at Close")
		}
		if rp.RulesetFD, err = spawn.BuildRuleset(attr, rules); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		// The rules of the sandbox's devpts, /proc and root, by fd.
		if err := s.mounts.AddRules(rp.RulesetFD, attr.Access_fs); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	// The seccomp programs compiled (libseccomp, ~0.3 ms) while the temp
	// dir and the ruleset were made.
	if err := <-filtersDone; err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	rp.ChildBPF, rp.ChildNotifies = childBPF, childNotifies
	// Capabilities: the bounding set and securebits need CAP_SETPCAP, which
	// root has, and so does the owner of a fresh user namespace.
	rp.DropBounding = h.setpcap || s.newUser
	rp.LockSecurebits = rp.DropBounding
	s.rawPieces = rp
	// A child born outside a new user namespace inherits its spawner
	// thread's credentials, bounding set included: with CAP_SETPCAP the
	// thread empties its own once, and such children skip the step (the
	// escape suite checks that they have none left). In a new user
	// namespace the kernel gives the child a full set: it drops it.
	s.threadBounding = h.setpcap && !s.newUser
	cp := rp
	cp.DropBounding = rp.DropBounding && !s.threadBounding
	s.pieces = spawn.NewCPieces(cp)

	if s.newUser {
		s.uidMap = fmt.Sprintf("%d %d 1", h.uid, h.uid)
		s.gidMap = fmt.Sprintf("%d %d 1", h.gid, h.gid)
	}
	s.rlimits = append(s.rlimits, spawn.Rlimit{Resource: unix.RLIMIT_CORE})
	s.rlimits = append(s.rlimits, lowered(h, unix.RLIMIT_FSIZE, uint64(q.Limits.FileBytes)))
	if !plan.MemLimit() {
		s.rlimits = append(s.rlimits, lowered(h, unix.RLIMIT_AS, uint64(q.Limits.MemoryBytes)))
	}
	if s.newUser && !plan.PidsLimit() {
		s.rlimits = append(s.rlimits, lowered(h, unix.RLIMIT_NPROC, uint64(q.Limits.Processes)))
	}
	if initExe != "" {
		s.withInit, s.initAS, s.initExe = true, "-", initExe
		for _, rl := range s.rlimits {
			if rl.Resource == unix.RLIMIT_AS {
				s.initAS = strconv.FormatUint(rl.Cur, 10)
				continue
			}
			s.initRlimits = append(s.initRlimits, rl)
		}
	}

	if plan.Any() {
		if s.cg, err = cgroup.NewManager(h.cg, plan, cgroup.Limits{Processes: q.Limits.Processes, MemoryBytes: q.Limits.MemoryBytes}); err != nil {
			return nil, fmt.Errorf("sandbox: cgroup: %w", err)
		}
	}
	// Make one spawner thread now, so that a kernel or hierarchy that
	// refuses it fails New, not the first Start.
	if plan.Slots() {
		sl, err := s.cg.AcquireSlot(s.newSlotThread)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		s.cg.ReleaseSlot(sl, false)
	} else {
		sp, err := s.acquireSpawner()
		if err != nil {
			return nil, err
		}
		s.releaseSpawner(sp)
	}
	ok = true
	return s, nil
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
	return startSpawner(prog, dirs,
		func(listener int, mountNS uint64) (func(), error) {
			return netSupervisor(listener, -1, 0, s.serverOptions(nil, mountNS))
		})
}

// serverOptions configures the notification server of one command
// (capt, its change capture, or nil) or of a spawner thread.
func (s *Sandbox) serverOptions(capt *notify.Capture, mountNS uint64) notify.Options {
	return s.withDomains(notify.Options{Mode: internalMode(s.pol.Network), Unix: s.unixRule, Capture: capt,
		OwnPorts: &s.ownPorts, MountNS: mountNS, RootDev: s.mounts.RootDevice(), TmpDev: s.mounts.TmpDevice(),
		PtyDev: s.mounts.PtyDevice()})
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

// lowered returns an rlimit of v, capped at the current hard limit (raising
// a hard limit needs CAP_SYS_RESOURCE, and the point is to lower it).
func lowered(h *hostInfo, res int, v uint64) spawn.Rlimit {
	if hard, ok := h.rlimitHard[res]; ok && hard != unix.RLIM_INFINITY && v > hard {
		v = hard
	}
	return spawn.Rlimit{Resource: res, Cur: v, Max: v}
}

func canonical(ps []string) []string {
	var out []string
	for _, p := range ps {
		if p == "" || procSelfLike(p) {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
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
	if p.ChildBPF, err = seccomp.Child(true, ns); err != nil {
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
	if s.cg != nil {
		first = s.cg.Close()
		s.cg = nil
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
	d, err := os.MkdirTemp(s.tmpRoot, "cmd-")
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
	// foreign attributes third parties' writes (foreign_linux.go); nil
	// without Command.ForeignChange or a privileged fanotify.
	foreign *foreignWatch
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
		return nil, err
	}
	go p.run(ctx)
	return p, nil
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
		return nil, errors.New("sandbox: Start after Close")
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
	if cmd.BeforeChange != nil || s.guardsGitNames() {
		if s.captureChild == nil {
			return nil, errors.New("sandbox: Command.BeforeChange needs a sandbox made with Policy.CaptureChanges")
		}
		// Before the spawn: the writer watch must be there before the
		// command's first change.
		if capt, p.foreign = s.newCapture(cmd); capt != nil {
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
	if s.plan.V2 {
		if p.v2, err = s.cg.AcquireV2(); err != nil {
			return nil, fmt.Errorf("sandbox: cgroup: %w", err)
		}
		req.CgroupDir, req.CgroupProcs = p.v2.FDs()
	}
	var res spawn.Result
	if s.plan.Slots() {
		// The slot's thread sits in the command's v1 cgroups: the child is
		// born there. The slot stays with the command until its tree is
		// gone.
		if p.slot, err = s.cg.AcquireSlot(s.newSlotThread); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		res, err = p.slot.Thread().(*spawner).spawn(req)
	} else {
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
			stop, err = netSupervisor(res.Listener, p.pidfd, p.pid, s.serverOptions(capt, s.commandMountNS(p.pid)))
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
			if within(real, r) {
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
	if p.stopSup != nil {
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
		st.MemoryExceeded = p.s.plan.V2Mem && s2.OOMKilled()
		st.ProcessLimitHit = p.s.plan.V2Pids && s2.PidsMaxHit()
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
	case p.slot != nil && p.s.plan.V1Track:
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
	case p.slot != nil && p.s.plan.V1Track:
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
