package policies

import (
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Paths are matched as the kernel will resolve them. A call's path is made
// absolute against the workspace and then has two forms:
//
//   - lexical: cleaned as text ("src/../.git/config" → WS/.git/config);
//   - real: resolved component by component like the kernel does, so a
//     symlink is followed before a ".." after it applies to its target's
//     parent; the first component that does not exist ends the resolution
//     (nothing beyond it can be a symlink yet) and the rest is cleaned.
//
// A deny or ask rule matches when either form matches; an allow rule only
// when the real form does, so a symlink inside an allowed directory that
// points elsewhere is not allowed by it. Patterns get the same two forms:
// the directory part before the first glob character is resolved too.

// absolute makes p absolute: relative to workspace, ~/ to home. It does
// not clean it (paths.Real resolves its ".." as the kernel does).
func absolute(workspace, home, p string) (string, bool) {
	switch {
	case p == "~":
		if home == "" {
			return "", false
		}
		return home, true
	case strings.HasPrefix(p, "~/"):
		if home == "" {
			return "", false
		}
		return home + "/" + p[2:], true
	case filepath.IsAbs(p):
		return p, true
	}
	return workspace + "/" + p, true
}

// pathForms returns the lexical and real forms of a path a call names.
// workspace must be real (symlinks resolved): a relative path is resolved
// from it rather than from "/", which saves a system call per component
// of the workspace's own path.
func pathForms(workspace, p string) (lexical, real string) {
	if filepath.IsAbs(p) {
		return filepath.Clean(p), paths.Real(p)
	}
	return filepath.Clean(workspace + "/" + p), paths.RealFrom(workspace, p)
}

// patternForms returns the lexical and real forms of a path pattern: the
// literal directory part before the first glob character is resolved.
func patternForms(workspace, home, pat string) ([]string, bool) {
	abs, ok := absolute(workspace, home, pat)
	if !ok {
		return nil, false
	}
	lexical := filepath.Clean(abs)
	// Split at the last '/' before the first meta character.
	meta := strings.IndexAny(lexical, "*?[{\\")
	prefix, suffix := lexical, ""
	if meta >= 0 {
		cut := strings.LastIndex(lexical[:meta], "/")
		prefix, suffix = lexical[:cut], lexical[cut:]
		if prefix == "" {
			prefix = "/"
		}
	}
	real := paths.Real(prefix)
	if suffix != "" {
		real = strings.TrimSuffix(real, "/") + suffix
	}
	if real == lexical {
		return []string{lexical}, true
	}
	return []string{lexical, real}, true
}

// pathPattern is one form of a path pattern, with the literal directory
// before its first glob character: a path outside that directory cannot
// match, which is checked before the (much slower) glob match.
type pathPattern struct {
	glob   string
	dir    string // the literal directory; "" when the whole pattern is literal
	isGlob bool
}

func newPathPattern(p string) pathPattern {
	meta := strings.IndexAny(p, "*?[{\\")
	if meta < 0 {
		return pathPattern{glob: p}
	}
	dir := p[:strings.LastIndex(p[:meta], "/")]
	if dir == "" {
		dir = "/"
	}
	return pathPattern{glob: p, dir: dir, isGlob: true}
}

func (pp pathPattern) match(name string) bool {
	if !pp.isGlob {
		return name == pp.glob
	}
	if !paths.WithinClean(name, pp.dir) { // both clean: pathForms, newPathPattern
		return false
	}
	ok, _ := doublestar.Match(pp.glob, name)
	return ok
}
