package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/lite-agent/lite-agent/sandbox/internal/cgroup"
	"github.com/lite-agent/lite-agent/sandbox/internal/seccomp"
	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
	"golang.org/x/sys/unix"
)

// What New does is decided here, before anything is built: decide reads a
// normalized policy and the host's probed facts (hostInfo) and returns a
// plan, with the Enforcement the sandbox will report. It is a pure
// function — it opens, probes and starts nothing — so every host profile
// is a table test (plan_linux_test.go), and `lite-agent sandbox check`,
// Trial, best effort and LevelContainer all read the one answer it gives.
// New's builder (sandbox_linux.go) only carries a plan out; what it finds
// it cannot make (a root skeleton whose grants cannot be laid out) only
// ever adds to Lost, never to what is enforced.
//
// Three kinds of outcome, each listed in the Enforcement:
//   - Missing: a guarantee the level must give and the host cannot. The
//     gate (below) refuses the policy unless BestEffort, and then the
//     plan runs without it, narrower (less network, never more).
//   - Lost: a guarantee of the package doc that this sandbox does not
//     give and that does not refuse it: what LevelContainer gives up by
//     design, and what the host cannot carry at any level without it
//     weakening confinement (the whole tree's memory bound without a
//     memory cgroup; ptys, a /proc, /tmp or root of its own).
//   - Notes: how each thing is enforced.

// plan is every choice New makes for a policy on a host.
type plan struct {
	enf Enforcement

	notify notifyKind
	// notifyCalls are the calls sent to the notification server (with
	// notifyNet): NetSupervised, or ConnectOnly under unrestricted.
	notifyCalls seccomp.NotifySpec
	filterMode  NetworkMode // the network rules of the seccomp programs
	llMode      NetworkMode // the network Landlock's TCP rules are for
	denyConnect bool        // connect(2) refused outright (no server)
	runProxy    bool        // run the domain proxy
	// capture: compile the change-capture child program (commands with
	// BeforeChange, and every command for the .git name rule).
	capture bool
	// captureThread: a captured command starts from a spawner thread of
	// its own whose program carries the capture calls, so its listener
	// is made in this process, not in the child (where handing it over
	// needs unshare(CLONE_FILES), which the host refuses).
	captureThread bool
	foreign       bool // the capture program notifies exit_group (foreign_linux.go)
	// ownWrites: every command is captured, and the process's own
	// Landlock domain writes only the sandbox's temporary directories,
	// the private /tmp (unless a read-write root lies beneath it) and
	// the writable devices: the other read-write roots are read-only to
	// it, and change there only through the supervisor. Calls in those
	// own places are then let through (notify's own_linux.go). Needs
	// Landlock ABI 3 (truncation governed) and temporary directories of
	// the sandbox's own (no Policy.TempDir); build narrows it where they
	// overlap a read-write root (ownRootFor).
	ownWrites bool

	cgroups cgroup.Plan
	newPID  bool
	newUser bool
	pidMax  string // per-namespace pid_max with newPID, or ""
	// initExe: in a PID namespace the command runs under our init
	// (pidinit), this program; "" for none.
	initExe string

	// mountNS: where the private read-only mount namespace is made
	// (spawn.MountMode); devpts, proc, root: the sandbox's own
	// instances the builder makes in it.
	mountNS spawn.MountMode
	devpts  bool
	proc    bool
	root    bool
	// template: with MountChild for an unprivileged user, commands after
	// the first are started inside a namespace template made once per
	// Sandbox (spawn.Template), each with a copy of its mount namespace,
	// instead of making the whole namespace again.
	template bool

	// sealed: the spawner threads carry every rule (internal/seccomp);
	// threadNotifies: their program sends notifyCalls to a per-thread
	// server, so children load no program of their own for it.
	sealed         bool
	threadNotifies bool
	// dropBounding: the child empties its capability bounding set;
	// threadBounding: the spawner thread empties its own once and
	// children born outside a new user namespace inherit it.
	dropBounding   bool
	threadBounding bool

	uidMap, gidMap string
	rlimits        []spawn.Rlimit
}

// decide makes the plan of a normalized policy q on host h, and applies
// the gate: an error wrapping ErrUnsupported names what is missing when q
// is not BestEffort.
func decide(q Policy, h *hostInfo) (*plan, error) {
	pl := &plan{}
	container := q.Level == LevelContainer
	var missing, lost, notes []string
	miss := func(format string, args ...any) { missing = append(missing, fmt.Sprintf(format, args...)) }
	lose := func(format string, args ...any) { lost = append(lost, fmt.Sprintf(format, args...)) }
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	// atLevel: a guarantee the full level must give (missing: refused
	// unless BestEffort) and the container level gives up (lost).
	atLevel := func(format string, args ...any) {
		if container {
			lose(format, args...)
		} else {
			miss(format, args...)
		}
	}

	// Kept at every level, failing closed.
	if h.abi == 0 {
		miss("Landlock file-system confinement (needs Linux 5.13+ with landlock among the enabled LSMs)")
	}
	if !h.seccomp {
		miss("seccomp filters")
	}

	// Processes: tracking the tree, the process limit, memory, signal
	// isolation. Cgroups first (see internal/cgroup's doc.go for why no
	// spawn ever migrates a process): a v2 directory when v2 delegates a
	// controller to us; v1 slots for what v2 lacks; a v2 directory
	// without controllers only to track the tree when no PID namespace
	// can. Cgroups are no namespace: the container level uses them too.
	cg := cgroup.Plan{}
	v2Pids := h.cgWritable["v2"] && slices.Contains(h.v2Subtree, "pids")
	v2Mem := h.cgWritable["v2"] && slices.Contains(h.v2Subtree, "memory")
	cg.V2, cg.V2Pids, cg.V2Mem = v2Pids || v2Mem, v2Pids, v2Mem
	cg.V1Pids = !v2Pids && h.cgWritable["pids"]
	cg.V1Mem = !v2Mem && h.cgWritable["memory"]
	// A v1 directory's tree is killed by pid, after /proc/PID/cgroup
	// says the pid is a member: under an outer PID namespace's /proc
	// that file is another process's, and nothing would be killed.
	cg.V1Track = !cg.V2 && cg.V1Pids && h.procOK == nil
	pidnsOK := h.pidns == nil && !container
	if !cg.Tracks() && h.cgWritable["v2"] && !pidnsOK {
		cg.V2 = true // the only way left to find the whole tree
	}
	pl.cgroups = cg
	// A PID namespace when no cgroup can find the whole tree, or when
	// Landlock cannot scope signals (ABI < 6): processes outside a PID
	// namespace have no pid inside it, so they cannot be signalled.
	if (!cg.Tracks() || h.abi < 6) && pidnsOK {
		pl.newPID = true
		pl.newUser = !h.root
	}
	switch {
	case cg.V2:
		note("process tree: cgroup v2 directory per command (cgroup.kill)")
	case cg.V1Track:
		note("process tree: cgroup v1 pids directory per command")
	case pl.newPID:
		note("process tree: PID namespace (under an init: the command is PID 2)")
	default:
		why := h.pidns
		if container {
			why = errors.New("the container level makes no PID namespace")
		}
		atLevel("killing the whole process tree: only the command's session is killed, so a process that calls setsid outlives the command, still confined (no writable cgroup, and no PID namespace: %v)", why)
	}
	if h.abi > 0 && h.abi < 6 && !pl.newPID {
		atLevel("isolation of signals (Landlock ABI %d < 6 and no PID namespace: a command can signal the user's other processes)", h.abi)
	}
	// The process limit. RLIMIT_NPROC does not bind uid 0, and elsewhere
	// counts every process of the user — except in a fresh user namespace,
	// where the count is per namespace. A PID namespace has its own pid_max
	// from Linux 6.14 on (no lower than 301).
	switch {
	case cg.PidsLimit():
		note("processes: cgroup pids.max")
	case !h.root && h.userns == nil && !container:
		pl.newUser = true
		note("processes: RLIMIT_NPROC in a user namespace")
	case pl.newPID && h.kernelAtLeast(6, 14) && q.Limits.Processes+1 >= 301:
		pl.pidMax = strconv.Itoa(q.Limits.Processes + 1)
		note("processes: pid_max of the PID namespace")
	case container:
		lose("the process limit (no writable pids cgroup, and the container level makes no namespace for one): a fork bomb is not stopped by the sandbox")
	case h.root:
		miss("process limit: root is exempt from RLIMIT_NPROC, no pids cgroup is writable, and no per-namespace pid_max (Linux 6.14+, limits of 300 or more)")
	default:
		miss("per-sandbox process limit (no pids cgroup and no user namespace)")
	}
	if cg.MemLimit() {
		note("memory: cgroup limit for the whole tree")
	} else {
		note("memory: RLIMIT_AS per process (no memory cgroup: the tree as a whole is not bounded, and MemoryExceeded is not reported)")
		lose("the memory limit of the whole process tree: each process is bounded by RLIMIT_AS alone, and MemoryExceeded is not reported (no writable memory cgroup)")
	}

	roLostAt := -1
	// File metadata (chmod, chown, utimensat), which Landlock does not
	// govern: every mount read-only but the read-write roots, in a private
	// mount namespace (spawn.MountMode). Unprivileged users need the user
	// namespace for it.
	switch {
	case container:
		// Lost, with what change capture still refuses: below, here.
		roLostAt = len(lost)
	case h.mountNS != nil:
		miss("read-only mounts outside the read-write roots, which stop chmod, chown and utimensat there (a private mount namespace: %v)", h.mountNS)
	default:
		pl.mountNS = spawn.MountChild
		if h.root && pl.pidMax == "" {
			pl.mountNS = spawn.MountThread
		}
		if !h.root {
			pl.newUser = true
			pl.template = true
		}
	}
	// What the sandbox mounts of its own there.
	noNS := "no private mount namespace"
	if container {
		noNS = "the container level makes no mount namespace"
	}
	wantPty := slices.ContainsFunc(q.SystemPaths, func(p string) bool { return devPty[p] }) && h.abi > 0
	switch {
	case !wantPty:
	case pl.mountNS == spawn.MountNone:
		lose("pseudo-terminals: off (%s to hide the host's devpts in)", noNS)
	case h.devpts != nil:
		lose("pseudo-terminals: off (a devpts instance of the sandbox's own cannot be mounted here: %v)", h.devpts)
	default:
		pl.devpts = true
	}
	if wantsProc(q.SystemPaths) && h.abi > 0 {
		switch {
		case pl.mountNS == spawn.MountNone:
			lose("a /proc of the sandbox's own: the host's stays, with only its global files readable (/proc/self unreadable; %s)", noNS)
		case pl.mountNS == spawn.MountChild && !pl.newPID && !h.root:
			lose("a /proc of the sandbox's own: the host's stays, with only its global files readable (no PID namespace of the command's own, the only one an unprivileged user may mount a procfs for)")
		case h.proc != nil:
			lose("a /proc of the sandbox's own: the host's stays, with only its global files readable (%v)", h.proc)
		default:
			pl.proc = true
		}
	}
	if h.abi > 0 {
		switch {
		case pl.mountNS == spawn.MountNone:
			lose("a root of the granted paths: the workspace's parents (/, /tmp, $HOME) cannot be listed (%s)", noNS)
			lose("a private /tmp: /tmp is not writable, so programs that ignore TMPDIR and write to /tmp fail (%s)", noNS)
		case !pl.proc:
			lose("a root of the granted paths: the workspace's parents (/, /tmp, $HOME) cannot be listed (no /proc of the sandbox's own to put in it)")
			lose("a private /tmp: /tmp is not writable, so programs that ignore TMPDIR and write to /tmp fail (no root of the sandbox's own to mount it in)")
		default:
			pl.root = true
		}
	}
	// Network. Every mode is served by the one notification server
	// (sandbox/internal/notify), which rests on seccomp user notification,
	// pidfd_getfd and a /proc that shows the pids it is told of. Under
	// none it lets the tree bind loopback and reach the ports it bound
	// itself, and nothing else (notify/ownports_linux.go); the seccomp
	// filter then lets IP sockets exist (as for loopback), and Landlock
	// still refuses every TCP port to the child itself: the server binds
	// and connects on its own copy of the socket. Domain grants under none
	// add the proxy's address as the one way out.
	mode := q.Network
	noServer := h.notifyUnusable()
	// Without unshare(CLONE_FILES) no child can hand its own listener to
	// us alone: the server's calls must then be on the spawner threads
	// (sealed, below), which can make no namespace.
	if noServer == nil && h.unshareFiles != nil && (pl.newPID || pl.newUser) {
		noServer = fmt.Errorf("%w, and the commands need namespaces, which a spawner thread carrying the server's calls cannot make", h.unshareFiles)
	}
	pl.filterMode = mode
	domains := len(q.AllowDomains) > 0 && mode != NetworkUnrestricted
	if noServer == nil {
		pl.notify = notifyNet
		if mode == NetworkNone {
			pl.filterMode = NetworkLoopback
		}
	}
	// unrestricted needs the server for connect only (the AF_UNIX rule);
	// every other mode sends it each call that names an address.
	pl.notifyCalls = seccomp.NetSupervised
	if mode == NetworkUnrestricted {
		pl.notifyCalls = seccomp.ConnectOnly
	}
	switch {
	case pl.notify == notifyNet:
	case mode == NetworkLoopback, mode == NetworkPrivate, domains:
		what := "loopback/private networks"
		if domains {
			what = "domain grants (the proxy as the only destination)"
		}
		miss("address filtering for %s needs seccomp user notification and pidfd_getfd (Linux 5.6+; here: %v)", what, noServer)
		// Best effort gives less network, not more.
		pl.filterMode = NetworkNone
		pl.denyConnect = true
		note("network: none (no address filtering for %s); connect(2) refused outright", mode)
	case mode == NetworkNone:
		pl.denyConnect = true // no unix connects at all rather than any
		note("connect(2) refused outright and no loopback listeners: no seccomp user notification")
		lose("the command's own loopback servers: connect(2) is refused outright, so a test that starts a server and connects to it fails (%v)", noServer)
	default:
		miss("confinement of pathname unix sockets (needs seccomp user notification and pidfd_getfd; here: %v)", noServer)
	}
	pl.llMode = pl.filterMode
	if domains && mode == NetworkNone {
		// With domains under none the child never connects itself (the
		// supervisor does), so every port stays refused to it.
		pl.llMode = NetworkNone
	}
	pl.runProxy = len(q.AllowDomains) > 0 && (pl.notify == notifyNet || mode == NetworkUnrestricted)

	// Change capture: the capture calls share the command's listener.
	// The child makes it, and hands it to us alone by unsharing the file
	// table it shared with us (CLONE_FILES) — or, where unshare is
	// refused, the command starts from a spawner thread of its own whose
	// program carries the capture calls (a listener in this process from
	// the start); that thread can neither make namespaces nor sit in v1
	// cgroup slots (whose kill would reach it).
	if q.CaptureChanges {
		if noServer != nil {
			what := "capturing changes, for checkpoints and the .git name rule (needs seccomp user notification and pidfd_getfd, Linux 5.6+; Policy.GitWritable drops the rule; here: %v)"
			if container {
				what = "rewind of the changes commands make, and the .git name rule: change capture cannot run (it needs seccomp user notification and pidfd_getfd; here: %v)"
			}
			atLevel(what, noServer)
		} else {
			pl.capture = true
			// Checked against namespaces and slots below.
			pl.captureThread = h.unshareFiles != nil
			pl.foreign = h.fanotify
			// Not lost: nothing is confined by it (foreign_linux.go).
			if pl.foreign {
				note("change capture: other processes' writes to the files a command changes are told apart (fanotify)")
			} else {
				note("change capture: other processes' writes to the files a command changes cannot be told apart (fanotify reports writers to CAP_SYS_ADMIN only)")
			}
		}
	}

	// A captured command's own spawner thread (no unshare(CLONE_FILES))
	// is outside the v1 slots, whose kill would reach it.
	if pl.captureThread && cg.Slots() {
		pl.captureThread, pl.capture, pl.foreign = false, false, false
		why := fmt.Errorf("%w, and a spawner thread of the command's own cannot sit in the v1 cgroup slots", h.unshareFiles)
		if container {
			lose("rewind of the changes commands make, and the .git name rule: change capture cannot run (%v)", why)
		} else {
			miss("capturing changes, for checkpoints and the .git name rule (%v)", why)
		}
	}

	if pl.capture && h.abi >= 3 && q.TempDir == "" && q.Workspace != "" {
		pl.ownWrites = true
		note(ownWritesNote)
	}

	// Read-only mounts at the container level: change capture refuses
	// chmod outside the writable roots (it performs each change itself,
	// and only beneath them); chown and utimensat it does not see.
	if roLostAt >= 0 {
		what := "chmod, chown and utimensat of files the user owns outside them are not refused"
		if pl.capture {
			what = "chown and utimensat of files the user owns outside them are not refused (chmod is, by change capture"
		}
		what = "read-only mounts outside the read-write roots: " + what
		if pl.capture {
			what += "; the container level makes no mount namespace)"
		} else {
			what += " (the container level makes no mount namespace)"
		}
		lost = slices.Insert(lost, roLostAt, what)
	}
	// The workspace's .git: bound read-only in the mount namespace, and
	// guarded by change capture (gitguard_linux.go). With neither, a
	// command can plant hooks the user's git runs outside the sandbox.
	if !q.GitWritable && !pl.capture && pl.mountNS == spawn.MountNone {
		lose("the workspace's .git: commands can write it, and so plant hooks and config that your git runs outside the sandbox (no mount namespace to bind it read-only, and no change capture to refuse the writes)")
	}

	// The PID namespace's init is this program: the confined first
	// process must be able to execute it.
	if pl.newPID {
		if pl.initExe = h.exe; pl.initExe == "" {
			note("PID namespace without an init: the command is PID 1 (its own executable could not be located)")
			lose("a command's usual signal semantics in its PID namespace: it runs as PID 1, which ignores signals it has no handler for (this program could not be located to be its init)")
		}
	}

	// seccomp: the main program goes on the spawner threads, the child
	// program into each child (internal/seccomp). A spawner thread that
	// needs neither clone3 (CLONE_INTO_CGROUP) nor namespace flags is
	// sealed: everything is on the thread, including the notification
	// server's calls, with one listener and one server per thread (a
	// process has at most one listener in its filter chain: with change
	// capture they stay in the child program, whose per-command listener
	// also carries the capture calls).
	//
	// Without unshare(CLONE_FILES) the threads are sealed whenever the
	// server serves commands (a v2 directory is then joined by a write,
	// clone3 being refused on the thread).
	pl.sealed = !pl.newPID && !pl.newUser && (!cg.V2 || pl.notify == notifyNet && h.unshareFiles != nil)
	// With captureThread a captured command's listener is on its own
	// thread, and the pooled threads keep theirs: no child ever makes one.
	pl.threadNotifies = pl.sealed && pl.notify == notifyNet && (!pl.capture || pl.captureThread)

	// Whether a command's result names a refused system call or set-id
	// mode: the seccomp refusal set goes to a notification server where
	// build puts it in a program with a listener whose server serves
	// that command alone (internal/seccomp's refusal_linux.go).
	childListens := pl.notify == notifyNet && !pl.threadNotifies
	plainNamed := childListens || pl.threadNotifies && cg.Slots()
	capturedNamed := pl.captureThread || pl.capture && (!pl.sealed || childListens)
	switch {
	case plainNamed && (capturedNamed || !pl.capture):
		note("refused system calls and set-id modes: named in each command's result (the notification server answers them EPERM)")
	case capturedNamed:
		note("refused system calls and set-id modes: named in the results of commands under change capture; other commands get EPERM, unnamed")
	case pl.notify == notifyNet:
		note("refused system calls and set-id modes: answered EPERM by a notification server that serves several commands at once, not named in results")
	default:
		note("refused system calls and set-id modes: EPERM from the seccomp filter itself, not named in results (no notification server here)")
	}

	// Capabilities: the bounding set and securebits need CAP_SETPCAP,
	// which root has, and so does the owner of a fresh user namespace. A
	// child born outside a new user namespace inherits its spawner
	// thread's credentials, bounding set included: with CAP_SETPCAP the
	// thread empties its own once, and such children skip the step (the
	// escape suite checks that they have none left). In a new user
	// namespace the kernel gives the child a full set: it drops it.
	pl.dropBounding = h.setpcap || pl.newUser
	pl.threadBounding = h.setpcap && !pl.newUser

	if pl.newUser {
		pl.uidMap = fmt.Sprintf("%d %d 1", h.uid, h.uid)
		pl.gidMap = fmt.Sprintf("%d %d 1", h.gid, h.gid)
	}
	pl.rlimits = append(pl.rlimits, spawn.Rlimit{Resource: unix.RLIMIT_CORE})
	pl.rlimits = append(pl.rlimits, lowered(h, unix.RLIMIT_FSIZE, uint64(q.Limits.FileBytes)))
	if !cg.MemLimit() {
		pl.rlimits = append(pl.rlimits, lowered(h, unix.RLIMIT_AS, uint64(q.Limits.MemoryBytes)))
	}
	if pl.newUser && !cg.PidsLimit() {
		pl.rlimits = append(pl.rlimits, lowered(h, unix.RLIMIT_NPROC, uint64(q.Limits.Processes)))
	}

	level := q.Level
	if level == "" {
		level = LevelFull
	}
	pl.enf = Enforcement{
		Level:        level,
		LandlockABI:  h.abi,
		Seccomp:      h.seccomp,
		Cgroup:       cg.Version(),
		NetworkMode:  string(pl.filterMode),
		Missing:      missing,
		Lost:         lost,
		Unprivileged: !h.root,
		Notes:        notes,
	}
	if pl.notify == notifyNet {
		pl.enf.NetworkMode = string(mode)
	}
	if err := gate(q, pl.enf); err != nil {
		return nil, err
	}
	return pl, nil
}

// gate is the one place that turns what a plan is missing into a refusal:
// fail closed unless the caller chose best effort.
func gate(q Policy, e Enforcement) error {
	if len(e.Missing) == 0 || q.BestEffort {
		return nil
	}
	return &RefusedError{Level: e.Level, Missing: slices.Clone(e.Missing)}
}

// notifyUnusable says why the notification server cannot serve commands
// here, or nil: it needs a listener, pidfd_getfd to take a command's
// sockets and descriptors, and a /proc that shows the pids it is told of.
func (h *hostInfo) notifyUnusable() error {
	switch {
	case h.notify != nil:
		return fmt.Errorf("seccomp user notification: %w", h.notify)
	case h.pidfdGetfd != nil:
		return fmt.Errorf("pidfd_getfd refused: %w", h.pidfdGetfd)
	case h.procOK != nil:
		return h.procOK
	}
	return nil
}

// lowered returns an rlimit of v, capped at the current hard limit (raising
// a hard limit needs CAP_SYS_RESOURCE, and the point is to lower it).
func lowered(h *hostInfo, res int, v uint64) spawn.Rlimit {
	if hard, ok := h.rlimitHard[res]; ok && hard != unix.RLIM_INFINITY && v > hard {
		v = hard
	}
	return spawn.Rlimit{Resource: res, Cur: v, Max: v}
}
