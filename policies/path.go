package policies

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
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

// maxSymlinks bounds the links followed in one path, as the kernel does.
const maxSymlinks = 40

// realPath resolves abs (absolute, possibly with . and ..) as the kernel
// would, tolerating components that do not exist yet.
func realPath(abs string) string { return resolveFrom("/", abs) }

// resolveFrom resolves rest relative to dest, a real directory.
func resolveFrom(dest, rest string) string {
	links := 0
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(rest, "/")
		switch comp {
		case "", ".":
			continue
		case "..":
			dest = filepath.Dir(dest)
			continue
		}
		next := filepath.Join(dest, comp)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Clean(next + "/" + rest)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			dest = next
			continue
		}
		links++
		target, err := os.Readlink(next)
		if err != nil || links > maxSymlinks {
			return filepath.Clean(next + "/" + rest)
		}
		if filepath.IsAbs(target) {
			dest = "/"
		}
		rest = target + "/" + rest
	}
	return dest
}

// absolute makes p absolute: relative to workspace, ~/ to home. It does
// not clean it (see realPath).
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
		return filepath.Clean(p), realPath(p)
	}
	return filepath.Clean(workspace + "/" + p), resolveFrom(workspace, p)
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
	real := realPath(prefix)
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
	if !within(pp.dir, name) {
		return false
	}
	ok, _ := doublestar.Match(pp.glob, name)
	return ok
}

// within reports whether p is root or beneath it.
func within(root, p string) bool {
	if p == root {
		return true
	}
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return len(p) > len(root) && p[len(root)] == '/' && p[:len(root)] == root
}
