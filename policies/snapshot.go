package policies

import (
	"slices"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// snapshot is the Host of one SandboxPolicy call: it asks the Host
// beneath each file-system question once — whether a path exists, what a
// pattern matches, a path's real location — and answers repeats from
// memory. One policy asks the same few questions many times (every PATH
// entry's real path, each link into a version manager's install, each
// granted root's credential patterns: ~900 lookups for a PATH with
// rustup and pyenv, two thirds of them repeats), and is one decision made
// at one moment, so a file that appears while it is being made is seen by
// the next policy, as before; what the call itself creates (a profile's
// per-workspace cache, its generated configuration) makes it forget
// everything. It is never kept beyond the call.
type snapshot struct {
	Host
	exists map[string]bool
	globs  map[string][]string
	walker paths.Walker
}

func newSnapshot(h Host) *snapshot {
	return &snapshot{Host: h, exists: map[string]bool{}, globs: map[string][]string{}}
}

func (s *snapshot) Exists(p string) bool {
	e, ok := s.exists[p]
	if !ok {
		e = s.Host.Exists(p)
		s.exists[p] = e
	}
	return e
}

// Glob returns a copy: callers may change what they get.
func (s *snapshot) Glob(pattern string) []string {
	m, ok := s.globs[pattern]
	if !ok {
		m = s.Host.Glob(pattern)
		s.globs[pattern] = m
	}
	return slices.Clone(m)
}

// WorkspaceCache and WriteFile create files: what was remembered before
// may have changed, so the memory starts again.
func (s *snapshot) WorkspaceCache(workspace, profile string) (string, error) {
	s.forget()
	return s.Host.WorkspaceCache(workspace, profile)
}

func (s *snapshot) WriteFile(path string, data []byte) error {
	s.forget()
	return s.Host.WriteFile(path, data)
}

func (s *snapshot) forget() {
	clear(s.exists)
	clear(s.globs)
	s.walker = paths.Walker{}
}

// realPath is paths.Real, remembered.
func (s *snapshot) realPath(p string) string { return s.walker.Real(p) }

// VerifyWorkspaceCache and EvalSymlinks pass the optional capabilities of
// the Host beneath through, as plantProof does.
func (s *snapshot) VerifyWorkspaceCache(ws, profile, dir string) []string {
	if v, ok := s.Host.(cacheVerifier); ok {
		return v.VerifyWorkspaceCache(ws, profile, dir)
	}
	return nil
}

func (s *snapshot) EvalSymlinks(p string) (string, error) {
	if r, ok := s.Host.(symlinkResolver); ok {
		return r.EvalSymlinks(p)
	}
	return p, nil
}

// realPathOf is paths.Real of p, through h's memory when h is (or wraps)
// a snapshot.
func realPathOf(h Host, p string) string {
	switch x := h.(type) {
	case *snapshot:
		return x.realPath(p)
	case plantProof:
		return realPathOf(x.Host, p)
	}
	return paths.Real(p)
}
