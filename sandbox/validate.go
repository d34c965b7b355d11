package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/lite-agent/lite-agent/internal/paths"
)

// Defaults of Limits (see the field docs).
const (
	defaultMemoryBytes = 4 << 30
	defaultProcesses   = 512
	defaultFileBytes   = 1 << 30
	defaultOutputBytes = 1 << 20
)

// normalizePolicy checks p and returns a copy with every default filled in:
// Network, Env, SystemPaths (missing default paths skipped) and Limits. It
// touches nothing but the file system's metadata, so it is the same on
// every platform.
func normalizePolicy(p Policy) (Policy, error) {
	q := p
	if q.Workspace != "" {
		ws, err := checkPath("workspace", q.Workspace, true)
		if err != nil {
			return Policy{}, err
		}
		q.Workspace = ws
	}
	var err error
	if q.ReadOnlyPaths, err = checkPaths("read-only path", p.ReadOnlyPaths); err != nil {
		return Policy{}, err
	}
	if q.ReadWritePaths, err = checkPaths("read-write path", p.ReadWritePaths); err != nil {
		return Policy{}, err
	}
	if p.SystemPaths == nil {
		q.SystemPaths = existing(DefaultSystemPaths())
	} else {
		for _, s := range p.SystemPaths {
			if !filepath.IsAbs(s) {
				return Policy{}, fmt.Errorf("sandbox: system path %q is not absolute", s)
			}
		}
		// System paths differ between distributions (/lib32, /libx32):
		// missing ones are skipped rather than refused.
		q.SystemPaths = existing(p.SystemPaths)
	}
	if q.CredentialPatterns, err = checkPatterns(p.CredentialPatterns); err != nil {
		return Policy{}, err
	}
	if q.TempDir != "" {
		if q.TempDir, err = checkPath("temporary directory", q.TempDir, true); err != nil {
			return Policy{}, err
		}
	}
	mode, err := ParseNetworkMode(string(p.Network))
	if err != nil {
		return Policy{}, fmt.Errorf("sandbox: %w", err)
	}
	q.Network = mode
	// Domain grants: a malformed one is refused here, by the proxy's own
	// parser (one grammar), before anything starts.
	q.AllowDomains = append([]string(nil), p.AllowDomains...)
	q.DenyDomains = append([]string(nil), p.DenyDomains...)
	if _, err := domainRules(q); err != nil {
		return Policy{}, err
	}
	if p.Env == nil {
		q.Env = DefaultEnv()
	} else {
		q.Env = append([]string(nil), p.Env...)
	}
	l := &q.Limits
	if l.WallTime < 0 || l.MemoryBytes < 0 || l.Processes < 0 || l.FileBytes < 0 || l.OutputBytes < 0 {
		return Policy{}, fmt.Errorf("sandbox: negative limit in %+v", p.Limits)
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = defaultMemoryBytes
	}
	if l.Processes == 0 {
		l.Processes = defaultProcesses
	}
	if l.FileBytes == 0 {
		l.FileBytes = defaultFileBytes
	}
	if l.OutputBytes == 0 {
		l.OutputBytes = defaultOutputBytes
	}
	return q, nil
}

// checkPath requires an absolute, existing path (a directory when dir) and
// returns it cleaned. Symlinks are not resolved here: Landlock resolves them
// when the rule is made.
func checkPath(what, p string, dir bool) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("sandbox: %s %q is not an absolute path", what, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("sandbox: %s %q: %w", what, p, err)
	}
	if dir && !fi.IsDir() {
		return "", fmt.Errorf("sandbox: %s %q is not a directory", what, p)
	}
	return filepath.Clean(p), nil
}

func checkPaths(what string, ps []string) ([]string, error) {
	if ps == nil {
		return nil, nil
	}
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		c, err := checkPath(what, p, false)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// checkPatterns requires absolute, well-formed doublestar patterns
// (Policy.CredentialPatterns) and returns a copy: a malformed one is a
// mistake of whoever filled them in, said at New, not a note that
// silently never matches.
func checkPatterns(ps []string) ([]string, error) {
	if ps == nil {
		return nil, nil
	}
	for _, p := range ps {
		if !filepath.IsAbs(p) || !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("sandbox: credential pattern %q is not an absolute doublestar pattern", p)
		}
	}
	return slices.Clone(ps), nil
}

func existing(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if _, err := os.Stat(p); err == nil {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

// procSelfLike reports whether p names per-process /proc entries
// (/proc/self, /proc/thread-self, /proc/<pid>, or beneath them). A Landlock
// rule on such a path would be made on the supervisor's own /proc/<pid>
// directory — never the child's — and would hand the child read access to
// its supervisor's /proc entries. They are skipped; see the package design
// notes on /proc.
func procSelfLike(p string) bool {
	rest, ok := paths.Rel("/proc", p)
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, "/")
	if first == "self" || first == "thread-self" {
		return true
	}
	if first == "" {
		return false
	}
	for _, c := range first {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
