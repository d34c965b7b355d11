package sandbox

import (
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
)

// ReadRefusals names the paths a command's output reports it could not
// open that commands of this sandbox may not read (see "Reads outside the
// grants" in readrefusals.go): each a Refusal of rule "read", in the
// order the output names them, at most a few. Pass the output a failed
// command's caller keeps (the bash tool's head and tail); only its last
// lines are read. RefusalNote names one of them when no rule the
// sandbox recorded was refused.
//
// It asks the file system nothing about the paths the output names, so
// its answer does not depend on whether they exist outside.
func (s *Sandbox) ReadRefusals(output string) []Refusal {
	sc := readScope{roots: s.readableRoots(), credentials: s.pol.CredentialPatterns}
	if s.privateTmpfs {
		sc.own = spawn.TmpfsPaths()
	}
	// The HOME a command sees (commandEnv): the policy's when commands
	// can read it, else the command's own temporary directory.
	if home, ok := envGet(filterEnv(os.LookupEnv, s.pol.Env, nil), "HOME"); ok && filepath.IsAbs(home) {
		if s.readableDir(home) {
			sc.home = home
		} else {
			sc.personHome = filepath.Clean(home)
			if sc.tempHomes = s.pol.TempDir; sc.tempHomes == "" {
				sc.tempHomes = s.tmpRoot
			}
		}
	}
	return readRefusalsOf(output, sc)
}

// readableRoots are the roots commands may read, each as the policy gives
// it and as resolved (a command names /lib/x where the grant is /lib and
// its real path /usr/lib), cleaned: the workspace, the read-write and
// temporary roots, the system and read-only paths.
func (s *Sandbox) readableRoots() []string {
	s.readRootsOnce.Do(func() {
		q := &s.pol
		tmp := q.TempDir
		if tmp == "" {
			tmp = s.tmpRoot
		}
		given := append([]string{q.Workspace, tmp}, q.ReadWritePaths...)
		given = append(given, q.SystemPaths...)
		given = append(given, q.ReadOnlyPaths...)
		roots := append([]string(nil), s.readable...)
		for _, p := range given {
			if p != "" && filepath.IsAbs(p) && !procSelfLike(p) {
				roots = append(roots, filepath.Clean(p))
			}
		}
		s.readRoots = roots
	})
	return s.readRoots
}
