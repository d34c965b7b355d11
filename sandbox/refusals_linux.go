package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// takeRefusals returns what rules refused the command, explained: its own
// server's record, or the record of the spawner thread that serves it —
// its own thread (a captured command where the plan has one), or its
// slot's sealed thread (one command per slot at a time).
func (p *Process) takeRefusals() ([]Refusal, int) {
	log := p.refusals
	if log == nil && p.ownThread != nil {
		log = p.ownThread.refusals // a captured command's own spawner thread
	}
	if log == nil && p.slot != nil {
		if sp, ok := p.slot.Thread().(*spawner); ok {
			log = sp.refusals
		}
	}
	list, more := log.Take()
	if len(list) == 0 {
		return nil, more
	}
	out := make([]Refusal, 0, len(list))
	for _, r := range list {
		out = append(out, explain(string(r.Rule), r.Op, r.Target, p.s.pol.Network))
	}
	return out, more
}

// privateRoot reports whether the canonical host path p lies in a private
// root where commands may make repositories (notify's private_linux.go):
// this sandbox's TMPDIR, or the temporary directory of any sandbox — of
// this process or another — by the name tmpdirs_linux.go gives them
// (another sandbox's may hold a repository a command there made, and a
// link from here must not lead into it).
func (s *Sandbox) privateRoot(p string) bool {
	if own := s.ownTempRoot(); own != "" && paths.Within(p, own) {
		return true
	}
	dir := systemTempDir()
	if dir == "" {
		return false
	}
	rest, ok := paths.Rel(dir, p)
	first, _, _ := strings.Cut(rest, "/")
	return ok && strings.HasPrefix(first, tmpPrefix)
}

// ownTempRoot is the canonical directory this sandbox's TMPDIRs live in:
// its temp root, or Policy.TempDir.
func (s *Sandbox) ownTempRoot() string {
	s.privateOnce.Do(func() {
		d := s.tmpRoot
		if d == "" {
			d = s.pol.TempDir
		}
		if d != "" {
			if r, err := filepath.EvalSymlinks(d); err == nil {
				s.privateTmp = r
			}
		}
	})
	return s.privateTmp
}

var systemTempDir = sync.OnceValue(func() string {
	d, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return ""
	}
	return d
})
