package sandbox

import (
	"slices"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
)

// The roots a captured command writes itself (plan.ownWrites).
//
// With change capture every change a command makes in the read-write
// roots is made by the supervisor, which records it; its temporary
// directories (TMPDIR) and the writable devices need no record. So the
// command's own Landlock domain grants it writes there alone: the
// workspace, the toolchain caches and the --allow-write roots are
// read-only to the process itself (their mounts stay read-write: the
// supervisor writes through them). That is what lets the supervisor
// answer a call in those own places with "go on" rather than make it
// (notify's own_linux.go): whatever the process's own call then reaches,
// it can change nothing the capture had to see.
//
// The private /tmp (and /dev/shm, /var/tmp, /run, the same tmpfs) is the
// process's own too unless a granted path, read-write or read-only, lies
// beneath one of them (a workspace in /tmp): Landlock grants a
// directory's rights to everything beneath it in the process's mount
// tree, and such a grant is mounted beneath the tmpfs, so a rule there
// would grant it too — a read-only grant's mount refuses a regular
// file's write, but not a FIFO's or a device's. Then the tmpfs is
// read-only to the process and its writes are the supervisor's, which
// writes no grant mounted there.

// ownWritesNote is the plan's note of ownWrites, and ownWritesOffNote
// what replaces it where build narrows it (ownRootFor).
const (
	ownWritesNote    = "change capture: a command writes itself only in its temporary directories (TMPDIR; the private /tmp too, unless a granted path lies beneath it) and the writable devices; every change elsewhere is made for it by the supervisor, which records it"
	ownWritesOffNote = "change capture: every change a command makes is made for it by the supervisor (its temporary directory lies inside a read-write root or holds one)"
)

// testOwnWritesKeepRoots is set by a test only: the process's domain
// keeps the read-write roots writable while calls in the own places are
// still let through — the capture without the Landlock half of its
// argument, to show the race that half closes (TestCaptureRaceOwnTemp).
var testOwnWritesKeepRoots bool

// ownRootFor reports whether the sandbox's temporary directories (tmp,
// their parent, made for this sandbox) can be the one read-write root the
// process writes itself, and sets s.ownRoot (and s.ownTmp, whether the
// private tmpfs can be the process's too): not when it lies inside
// another read-write root or holds one (a change there would be that
// root's, recorded or refused by its rules), nor without a workspace.
func (s *Sandbox) ownRootFor(tmp string) bool {
	real := canonical([]string{tmp})
	off := func() bool {
		if i := slices.Index(s.enf.Notes, ownWritesNote); i >= 0 {
			s.enf.Notes[i] = ownWritesOffNote
		}
		return false
	}
	if len(real) != 1 || s.workspaceReal == "" {
		return off()
	}
	for _, r := range s.rwRoots {
		if r != real[0] && (paths.WithinClean(real[0], r) || paths.WithinClean(r, real[0])) {
			return off()
		}
	}
	s.ownRoot = real[0]
	s.ownTmp = true
	for _, r := range append(canonical(s.pol.ReadOnlyPaths), s.rwRoots...) {
		for _, tp := range spawn.TmpfsPaths() {
			if r != real[0] && paths.WithinClean(r, tp) {
				s.ownTmp = false // the tmpfs's rule would grant r
			}
		}
	}
	return true
}

// ownWriteRules are the Landlock rules of the process's own domain: the
// read-write rules but tmp's made read-only.
func ownWriteRules(rules []spawn.Rule, tmp string) []spawn.Rule {
	out := make([]spawn.Rule, len(rules))
	for i, r := range rules {
		if r.Access == spawn.RW && r.Path != tmp {
			r.Access = spawn.RO
		}
		out[i] = r
	}
	return out
}

// capturesAll reports whether every command of the sandbox is captured,
// those without Command.BeforeChange with a hook that records nothing:
// for the .git name rule (guardsGitNames), or because the process cannot
// write the read-write roots itself (plan.ownWrites).
func (s *Sandbox) capturesAll() bool {
	return s.guardsGitNames() || s.ownWrites
}
