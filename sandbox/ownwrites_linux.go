package sandbox

import (
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
// supervisor writes through them). So is the private /tmp: Landlock
// grants a directory's rights to everything beneath it in the
// process's mount tree, and a root whose path is beneath /tmp (a
// workspace in /tmp) is mounted beneath the private /tmp, so a rule on
// that tmpfs would grant the root too. Its writes are the supervisor's,
// as before. That is what lets the supervisor
// answer a call in those own places with "go on" rather than make it
// (notify's own_linux.go): whatever the process's own call then reaches,
// it can change nothing the capture had to see.

// testOwnWritesKeepRoots is set by a test only: the process's domain
// keeps the read-write roots writable while calls in the own places are
// still let through — the capture without the Landlock half of its
// argument, to show the race that half closes (TestCaptureRaceOwnTemp).
var testOwnWritesKeepRoots bool

// ownRootFor reports whether the sandbox's temporary directories (tmp,
// their parent, made for this sandbox) can be the one read-write root the
// process writes itself, and sets s.ownRoot: not when it lies inside
// another read-write root or holds one (a change there would be that
// root's, recorded or refused by its rules), nor without a workspace.
func (s *Sandbox) ownRootFor(tmp string) bool {
	real := canonical([]string{tmp})
	if len(real) != 1 || s.workspaceReal == "" {
		return false
	}
	for _, r := range s.rwRoots {
		if r != real[0] && (paths.WithinClean(real[0], r) || paths.WithinClean(r, real[0])) {
			return false
		}
	}
	s.ownRoot = real[0]
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
