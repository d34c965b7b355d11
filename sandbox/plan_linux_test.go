package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
)

// fullHost is a made-up host with everything: root, Landlock ABI 7,
// seccomp with a working listener, pidfd_getfd, a /proc that matches,
// every namespace, writable v1 pids and memory cgroups, Linux 6.18.
func fullHost() *hostInfo {
	return &hostInfo{
		kernel: [2]int{6, 18}, abi: 7, seccomp: true,
		cgWritable: map[string]bool{"pids": true, "memory": true},
		lastCap:    40, root: true, setpcap: true, uid: 0, gid: 0,
		rlimitHard: map[int]uint64{}, exe: "/usr/bin/lite-agent", fanotify: true,
	}
}

// Host profiles: edits of fullHost, each as the environment gives it.
var (
	eperm = syscall.EPERM

	asUser = func(h *hostInfo) {
		h.root, h.setpcap, h.uid, h.gid, h.fanotify = false, false, 1000, 1000, false
		h.cgWritable = map[string]bool{}
	}
	// Ubuntu 24.04's AppArmor restriction, Debian's sysctl: no user
	// namespaces for unprivileged users, so no namespace at all.
	noUserNS = func(h *hostInfo) {
		asUser(h)
		h.userns = eperm
		h.pidns, h.mountNS, h.devpts, h.proc = eperm, eperm, eperm, eperm
	}
	// A second listener is refused (an outer sandbox's: EBUSY).
	notifyBusy = func(h *hostInfo) { h.notify = fmt.Errorf("installing a listener failed (%w)", syscall.EBUSY) }
	// bwrap --unshare-pid with the outer /proc.
	outerProc = func(h *hostInfo) { h.procOK = errors.New("/proc/self is 5 but this process is 2") }
	// Docker's and Podman's default seccomp profile and capabilities, as
	// root in the container: no namespace flags, no unshare at all, no
	// mount calls, no pidfd_getfd (CAP_SYS_PTRACE), no fanotify, and a
	// read-only cgroupfs.
	dockerRoot = func(h *hostInfo) {
		h.pidfdGetfd, h.unshareFiles = eperm, eperm
		h.pidns, h.mountNS, h.devpts, h.proc = eperm, eperm, eperm, eperm
		h.cgWritable = map[string]bool{}
		h.fanotify = false
	}
	// The same container with --cap-add SYS_PTRACE: the notification
	// server works, but no child can hand it a listener of its own.
	dockerPtrace = func(h *hostInfo) {
		dockerRoot(h)
		h.pidfdGetfd = nil
	}
	dockerUser = func(h *hostInfo) {
		dockerRoot(h)
		asUser(h)
		h.userns = eperm
	}
)

// What goes with the mount namespace, and with cgroups.
var (
	noMountNS = []string{"pseudo-terminals: off", "a /proc of the sandbox's own", "a root of the granted paths", "a private /tmp"}
	noCgroups = []string{"the memory limit of the whole process tree"}
)

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func TestDecideHostProfiles(t *testing.T) {
	session := func(p *Policy) { p.CaptureChanges = true } // as an agent session asks
	for _, tc := range []struct {
		name   string
		host   []func(*hostInfo)
		policy func(*Policy)
		// refused: New fails (wrapping ErrUnsupported) with these in the
		// message; else missing (BestEffort) and lost are each listed.
		refused []string
		missing []string
		lost    []string
		check   func(t *testing.T, pl *plan)
	}{
		{name: "root, every mechanism", policy: session, check: func(t *testing.T, pl *plan) {
			if !pl.cgroups.V1Track || pl.newPID || pl.mountNS != spawn.MountThread || !pl.capture || pl.captureThread || !pl.devpts || !pl.proc || !pl.root || pl.template {
				t.Errorf("plan: %+v", pl)
			}
		}},
		{name: "unprivileged, user namespaces, no cgroups", host: []func(*hostInfo){asUser}, policy: session,
			lost: []string{"the memory limit of the whole process tree"},
			check: func(t *testing.T, pl *plan) {
				if !pl.newPID || !pl.newUser || pl.mountNS != spawn.MountChild || pl.sealed || !pl.template {
					t.Errorf("plan: %+v", pl)
				}
				if !hasRlimit(pl, "NPROC") || !hasRlimit(pl, "AS") {
					t.Errorf("rlimits: %+v", pl.rlimits)
				}
			}},
		{name: "root, no cgroups, Linux 6.18: PID namespace with pid_max", host: []func(*hostInfo){func(h *hostInfo) { h.cgWritable = map[string]bool{} }},
			lost: []string{"the memory limit of the whole process tree"},
			check: func(t *testing.T, pl *plan) {
				if !pl.newPID || pl.newUser || pl.pidMax != "513" || pl.mountNS != spawn.MountChild || pl.initExe == "" || pl.template {
					t.Errorf("plan: %+v", pl)
				}
			}},
		{name: "root, no cgroups, Linux 6.8: no process limit", host: []func(*hostInfo){func(h *hostInfo) { h.cgWritable = map[string]bool{}; h.kernel = [2]int{6, 8} }},
			refused: []string{"process limit: root is exempt from RLIMIT_NPROC"}},
		{name: "cgroup v2 delegating pids and memory", host: []func(*hostInfo){func(h *hostInfo) {
			h.cgWritable = map[string]bool{"v2": true}
			h.v2Subtree = []string{"cpu", "memory", "pids"}
		}}, check: func(t *testing.T, pl *plan) {
			if !pl.cgroups.V2 || !pl.cgroups.V2Pids || !pl.cgroups.V2Mem || pl.cgroups.Slots() || pl.newPID || pl.sealed {
				t.Errorf("plan: %+v", pl)
			}
		}},
		{name: "cgroup v2 without controllers and no PID namespace: tracked by v2", host: []func(*hostInfo){func(h *hostInfo) {
			h.cgWritable = map[string]bool{"v2": true, "memory": true}
			h.pidns = eperm
		}}, policy: func(p *Policy) { p.BestEffort = true },
			missing: []string{"process limit"},
			check: func(t *testing.T, pl *plan) {
				if !pl.cgroups.V2 || pl.newPID || !pl.cgroups.V1Mem {
					t.Errorf("plan: %+v", pl)
				}
			}},
		{name: "Landlock ABI 5: signals isolated by a PID namespace", host: []func(*hostInfo){func(h *hostInfo) { h.abi = 5 }}, check: func(t *testing.T, pl *plan) {
			if !pl.newPID || pl.mountNS != spawn.MountThread {
				t.Errorf("plan: %+v", pl)
			}
		}},
		{name: "Landlock ABI 5, no PID namespace", host: []func(*hostInfo){func(h *hostInfo) { h.abi = 5; h.pidns = eperm }},
			refused: []string{"isolation of signals (Landlock ABI 5 < 6"}},
		{name: "no Landlock", host: []func(*hostInfo){func(h *hostInfo) { h.abi = 0 }},
			refused: []string{"Landlock file-system confinement"}},
		{name: "user notification refused", host: []func(*hostInfo){notifyBusy}, policy: session,
			refused: []string{"capturing changes", "installing a listener failed"}},
		{name: "user notification refused, loopback", host: []func(*hostInfo){notifyBusy}, policy: func(p *Policy) { p.Network = NetworkLoopback },
			refused: []string{"address filtering for loopback/private networks"}},
		{name: "user notification refused, best effort", host: []func(*hostInfo){notifyBusy}, policy: func(p *Policy) { p.Network = NetworkPrivate; p.BestEffort = true },
			missing: []string{"address filtering"},
			check: func(t *testing.T, pl *plan) {
				if pl.notify != notifyNone || !pl.denyConnect || pl.filterMode != NetworkNone || pl.enf.NetworkMode != "none" {
					t.Errorf("best effort gave more network than none: %+v", pl)
				}
			}},
		{name: "pidfd_getfd refused", host: []func(*hostInfo){func(h *hostInfo) { h.pidfdGetfd = eperm }}, policy: session,
			refused: []string{"capturing changes", "pidfd_getfd refused"}},
		{name: "nested PID namespace with the outer /proc", host: []func(*hostInfo){outerProc}, policy: session,
			refused: []string{"capturing changes", "/proc/self is 5"}},
		{name: "user namespaces refused (Ubuntu 24.04)", host: []func(*hostInfo){noUserNS}, policy: session,
			refused: []string{"killing the whole process tree", "per-sandbox process limit", "read-only mounts outside the read-write roots"}},
		{name: "Docker default, root", host: []func(*hostInfo){dockerRoot}, policy: session,
			refused: []string{"capturing changes", "pidfd_getfd refused", "killing the whole process tree", "read-only mounts"}},
		{name: "Docker default, root, best effort: no namespace is tried", host: []func(*hostInfo){dockerRoot},
			policy:  func(p *Policy) { p.CaptureChanges, p.BestEffort = true, true },
			missing: []string{"capturing changes", "killing the whole process tree", "process limit", "read-only mounts"},
			lost:    join(noMountNS, noCgroups, []string{"the command's own loopback servers", "the workspace's .git: commands can write it"}),
			check: func(t *testing.T, pl *plan) {
				if pl.newPID || pl.newUser || pl.mountNS != spawn.MountNone || pl.capture {
					t.Errorf("best effort still plans what the host refuses: %+v", pl)
				}
			}},

		// The container level: no namespace, whatever the host has.
		{name: "container level on a full host", policy: func(p *Policy) { p.CaptureChanges, p.Level = true, LevelContainer },
			lost: join(noMountNS, []string{"read-only mounts outside the read-write roots"}),
			check: func(t *testing.T, pl *plan) {
				if pl.newPID || pl.newUser || pl.mountNS != spawn.MountNone || !pl.cgroups.V1Track || !pl.capture || pl.captureThread || !pl.sealed {
					t.Errorf("plan: %+v", pl)
				}
				if pl.devpts || pl.proc || pl.root {
					t.Errorf("container level plans instances of its own: %+v", pl)
				}
			}},
		{name: "container level, Docker default, root", host: []func(*hostInfo){dockerRoot}, policy: func(p *Policy) { p.CaptureChanges, p.Level = true, LevelContainer },
			lost: join(noMountNS, noCgroups, []string{"the command's own loopback servers", "rewind of the changes commands make", "killing the whole process tree", "the process limit",
				"read-only mounts", "the workspace's .git: commands can write it"}),
			check: func(t *testing.T, pl *plan) {
				if pl.notify != notifyNone || !pl.denyConnect || pl.capture || pl.newPID || pl.mountNS != spawn.MountNone || pl.cgroups.Any() {
					t.Errorf("plan: %+v", pl)
				}
				if !hasRlimit(pl, "AS") || hasRlimit(pl, "NPROC") {
					t.Errorf("rlimits: %+v", pl.rlimits)
				}
			}},
		{name: "container level, Docker default, root, loopback: fails closed", host: []func(*hostInfo){dockerRoot},
			policy:  func(p *Policy) { p.Network, p.Level = NetworkLoopback, LevelContainer },
			refused: []string{"address filtering for loopback/private networks", "pidfd_getfd refused"}},
		{name: "container level, Docker with SYS_PTRACE: capture on the command's own thread", host: []func(*hostInfo){dockerPtrace},
			policy: func(p *Policy) { p.CaptureChanges, p.Level = true, LevelContainer },
			lost:   join(noMountNS, noCgroups, []string{"killing the whole process tree", "the process limit", "read-only mounts"}),
			check: func(t *testing.T, pl *plan) {
				if pl.notify != notifyNet || !pl.capture || !pl.captureThread || !pl.sealed || !pl.threadNotifies || pl.denyConnect {
					t.Errorf("plan: %+v", pl)
				}
				for _, l := range pl.enf.Lost {
					if strings.Contains(l, "rewind") || strings.Contains(l, ".git") || strings.Contains(l, "loopback servers") {
						t.Errorf("lost although the server and capture run: %q", l)
					}
				}
			}},
		{name: "container level, unshare refused beside v1 slots: capture lost", host: []func(*hostInfo){func(h *hostInfo) { h.unshareFiles = eperm }},
			policy: func(p *Policy) { p.CaptureChanges, p.Level = true, LevelContainer },
			lost:   join(noMountNS, []string{"rewind of the changes commands make", "read-only mounts", "the workspace's .git: commands can write it"})},
		{name: "container level, Docker default, unprivileged", host: []func(*hostInfo){dockerUser}, policy: func(p *Policy) { p.CaptureChanges, p.Level = true, LevelContainer },
			lost: join(noMountNS, noCgroups, []string{"rewind of the changes commands make", "killing the whole process tree", "the process limit", "read-only mounts",
				"the command's own loopback servers", "the workspace's .git: commands can write it"}),
			check: func(t *testing.T, pl *plan) {
				if pl.newUser || pl.newPID || hasRlimit(pl, "NPROC") {
					t.Errorf("plan: %+v", pl)
				}
			}},
		{name: "container level, user namespaces refused", host: []func(*hostInfo){noUserNS}, policy: func(p *Policy) { p.CaptureChanges, p.Level = true, LevelContainer },
			lost: join(noMountNS, noCgroups, []string{"killing the whole process tree", "the process limit", "read-only mounts"}),
			check: func(t *testing.T, pl *plan) {
				if !pl.capture || pl.newUser {
					t.Errorf("plan: %+v", pl)
				}
			}},
		{name: "container level, Landlock ABI 4: signals lost", host: []func(*hostInfo){func(h *hostInfo) { h.abi = 4 }}, policy: func(p *Policy) { p.Level = LevelContainer },
			lost: join(noMountNS, []string{"isolation of signals (Landlock ABI 4 < 6", "read-only mounts", "the workspace's .git: commands can write it"})},
		{name: "container level keeps Landlock", host: []func(*hostInfo){func(h *hostInfo) { h.abi = 0 }}, policy: func(p *Policy) { p.Level = LevelContainer },
			refused: []string{"Landlock file-system confinement"}},
		{name: "container level keeps seccomp", host: []func(*hostInfo){func(h *hostInfo) { h.seccomp = false; h.notify = errors.New("no seccomp filters") }},
			policy: func(p *Policy) { p.Level = LevelContainer }, refused: []string{"seccomp filters"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, pl, err := decideOnProfile(t, tc.host, tc.policy)
			if tc.refused != nil {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("not refused: %v %+v", err, pl)
				}
				for _, s := range tc.refused {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("the refusal does not name %q: %v", s, err)
					}
				}
				if q.Level != LevelContainer && !strings.Contains(err.Error(), "Level container") {
					t.Errorf("the refusal does not name the container level: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			assertListed(t, "missing", pl.enf.Missing, tc.missing)
			assertListed(t, "lost", pl.enf.Lost, tc.lost)
			if !q.BestEffort && len(pl.enf.Missing) > 0 {
				t.Errorf("ran with missing %q without BestEffort", pl.enf.Missing)
			}
			if want := q.Level; want != "" && pl.enf.Level != want || want == "" && pl.enf.Level != LevelFull {
				t.Errorf("level %q", pl.enf.Level)
			}
			if tc.check != nil {
				tc.check(t, pl)
			}
		})
	}
}

// assertListed: every entry of list starts with one of want, and each
// of want starts an entry (or is contained in one): nothing lost or
// missing goes unlisted, nothing is listed that was not expected.
func assertListed(t *testing.T, what string, list, want []string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, l := range list {
			if strings.Contains(l, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s does not list %q: %q", what, w, list)
		}
	}
	for _, l := range list {
		expected := false
		for _, w := range want {
			if strings.Contains(l, w) {
				expected = true
			}
		}
		if !expected {
			t.Errorf("%s lists %q, not expected here (want %q)", what, l, want)
		}
	}
}

func hasRlimit(pl *plan, name string) bool {
	res := map[string]int{"AS": 9, "NPROC": 6}[name]
	for _, r := range pl.rlimits {
		if r.Resource == res {
			return true
		}
	}
	return false
}

// TestDecideIsWhatNewBuilds: Decide (what `sandbox check` reads) and New
// agree on this host, at both levels.
func TestDecideIsWhatNewBuilds(t *testing.T) {
	for _, level := range []Level{LevelFull, LevelContainer} {
		p := Policy{Workspace: t.TempDir(), CaptureChanges: true, Level: level, BestEffort: true}
		e, err := Decide(p)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		got := sb.Enforcement()
		sb.Close()
		if strings.Join(got.Missing, "|") != strings.Join(e.Missing, "|") || got.Level != e.Level || got.Cgroup != e.Cgroup {
			t.Errorf("level %s: Decide %+v, New %+v", level, e, got)
		}
		// New may only add to Lost (what it could not build).
		for _, l := range e.Lost {
			if !strings.Contains(strings.Join(got.Lost, "\n"), l) {
				t.Errorf("level %s: Decide lists %q lost, New does not: %q", level, l, got.Lost)
			}
		}
	}
}

// TestDecideOwnWrites: the process's own domain writes only its
// temporary directories (plan.ownWrites) where change capture runs, the
// ABI governs truncation (3+) and the temporary directories are the
// sandbox's own; anywhere else it writes the roots itself, as before.
func TestDecideOwnWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		host   func(*hostInfo)
		policy func(*Policy)
		want   bool
	}{
		{"a session", nil, func(p *Policy) { p.CaptureChanges = true }, true},
		{"no capture", nil, nil, false},
		{"Landlock ABI 2: truncation not governed", func(h *hostInfo) { h.abi = 2 }, func(p *Policy) { p.CaptureChanges = true }, false},
		{"Landlock ABI 3", func(h *hostInfo) { h.abi = 3 }, func(p *Policy) { p.CaptureChanges = true }, true},
		{"the caller's temporary directory", nil, func(p *Policy) { p.CaptureChanges, p.TempDir = true, os.TempDir() }, false},
		{"capture refused, best effort", notifyBusy, func(p *Policy) { p.CaptureChanges, p.BestEffort = true, true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fullHost()
			if tc.host != nil {
				tc.host(h)
			}
			p := Policy{Workspace: t.TempDir()}
			if tc.policy != nil {
				tc.policy(&p)
			}
			q, err := normalizePolicy(p)
			if err != nil {
				t.Fatal(err)
			}
			pl, err := decide(q, h)
			if err != nil {
				t.Fatal(err)
			}
			if pl.ownWrites != tc.want {
				t.Errorf("ownWrites %v, want %v (capture %v)", pl.ownWrites, tc.want, pl.capture)
			}
			noted := slices.ContainsFunc(pl.enf.Notes, func(n string) bool { return strings.Contains(n, "writes itself only in its temporary directories") })
			if noted != tc.want {
				t.Errorf("the note says so: %v, want %v: %q", noted, tc.want, pl.enf.Notes)
			}
		})
	}
}

// TestDecideSaysWhereRefusalsAreNamed: the note on refused system calls
// and set-id modes (printed by `sandbox check`) follows the programs build
// makes: named wherever a notification server serves one command at a
// time, only for captured commands where only their listener does, and
// not at all without user notification or on sealed threads shared
// outside cgroup slots (TestEscapeSeccomp and TestEscapeSetID hold each
// host's real commands to the note).
func TestDecideSaysWhereRefusalsAreNamed(t *testing.T) {
	const (
		all      = "named in each command's result"
		captured = "named in the results of commands under change capture"
		none     = "not named in results"
	)
	for _, tc := range []struct {
		name   string
		host   []func(*hostInfo)
		policy func(*Policy)
		want   string
	}{
		{"root, every mechanism", nil, nil, all},
		{"root, every mechanism, a session", nil, func(p *Policy) { p.CaptureChanges = true }, all},
		{"unprivileged, user namespaces", []func(*hostInfo){asUser}, nil, all},
		{"user notification refused", []func(*hostInfo){notifyBusy}, func(p *Policy) { p.BestEffort = true }, none},
		{"unprivileged container level, no cgroups: shared sealed threads", []func(*hostInfo){asUser},
			func(p *Policy) { p.Level = LevelContainer }, none},
		{"the same with change capture: each command's own listener", []func(*hostInfo){asUser},
			func(p *Policy) { p.Level, p.CaptureChanges = LevelContainer, true }, all},
		{"docker with SYS_PTRACE, a session: a captured command's own thread", []func(*hostInfo){dockerPtrace},
			func(p *Policy) { p.Level, p.CaptureChanges = LevelContainer, true }, captured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, pl, err := decideOnProfile(t, tc.host, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(pl.enf.Notes, func(n string) bool { return strings.HasPrefix(n, "refused system calls and set-id modes: ") })
			if i < 0 || !strings.Contains(pl.enf.Notes[i], tc.want) {
				t.Errorf("want %q in the note; notes %q (plan: notify %v sealed %v threadNotifies %v capture %v captureThread %v)",
					tc.want, pl.enf.Notes, pl.notify, pl.sealed, pl.threadNotifies, pl.capture, pl.captureThread)
			}
		})
	}
}

// decideOnProfile is decide on fullHost with edits, for a policy of a
// fresh workspace changed by policy (nil: as it is); it returns the
// normalized policy too.
func decideOnProfile(t *testing.T, edits []func(*hostInfo), policy func(*Policy)) (Policy, *plan, error) {
	t.Helper()
	h := fullHost()
	for _, edit := range edits {
		edit(h)
	}
	q, err := normalizePolicy(Policy{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if policy != nil {
		policy(&q)
	}
	pl, err := decide(q, h)
	return q, pl, err
}
