package builtin

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// This file is a small .gitignore matcher for the grep tool. It implements
// the rules of gitignore(5) that matter in practice:
//
//   - blank lines and lines starting with '#' are ignored; "\#" and "\!"
//     escape a leading '#' or '!'; trailing spaces are dropped unless escaped;
//   - '!' negates a pattern (re-includes what an earlier pattern excluded);
//   - a trailing '/' makes a pattern match directories only;
//   - a pattern with a '/' at the start or in the middle is anchored to the
//     directory of its .gitignore; one without matches a name at any depth;
//   - '*', '?' and '[...]' never match '/'; a "**" path segment matches zero
//     or more directories ("**/x", "a/**/b", "a/**");
//   - within one file the last matching pattern wins, and a deeper
//     .gitignore wins over a shallower one.
//
// Like git, the walker never descends into an ignored directory, so a file
// cannot be re-included when one of its parent directories is excluded.
// github.com/sabhiram/go-gitignore (v0.0.0-20210923224102-525f6e181f06)
// was considered and not used. It translates each line into a regexp and
// has gaps that matter here: '?' is escaped into a literal question mark; a
// pattern with a slash in the middle ("doc/frotz") is not anchored and also
// matches "x/doc/frotz"; it knows nothing about directories, so "build/"
// only matches a path given with a trailing slash; other regexp
// metacharacters ('+', '(', '$') are not escaped; and it has no notion of
// nested .gitignore files.

// gitignorePattern is one parsed line of a .gitignore file.
type gitignorePattern struct {
	// segs are the '/'-separated parts of an anchored pattern, or the single
	// name pattern of an unanchored one. A "**" element matches any number
	// of path segments.
	segs     []string
	negate   bool // the line started with '!'
	dirOnly  bool // the line ended with '/'
	anchored bool // the pattern contains a '/' (other than a trailing one)
}

// gitignoreMatcher holds the patterns of one ignore file, in file order.
type gitignoreMatcher struct {
	patterns []gitignorePattern
}

// parseGitignore parses the contents of a .gitignore file. It never fails:
// lines it cannot make sense of simply match nothing, as in git.
func parseGitignore(data []byte) *gitignoreMatcher {
	m := &gitignoreMatcher{}
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if p, ok := parseGitignoreLine(string(line)); ok {
			m.patterns = append(m.patterns, p)
		}
	}
	return m
}

func parseGitignoreLine(line string) (gitignorePattern, bool) {
	var p gitignorePattern
	line = strings.TrimSuffix(line, "\r")
	if line == "" || line[0] == '#' {
		return p, false
	}
	// Drop trailing spaces that are not escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line[0] == '!' {
		p.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return p, false
	}
	if strings.Contains(line, "/") {
		p.anchored = true
		line = strings.TrimPrefix(line, "/")
		p.segs = strings.Split(line, "/")
	} else {
		p.segs = []string{line}
	}
	return p, true
}

// match reports whether a pattern of m matches rel, a '/'-separated path
// relative to the directory of the ignore file, and if so whether the last
// matching pattern ignores it (true) or re-includes it (false).
func (m *gitignoreMatcher) match(rel string, isDir bool) (matched, ignored bool) {
	base := rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		base = rel[i+1:]
	}
	for i := len(m.patterns) - 1; i >= 0; i-- {
		p := &m.patterns[i]
		if p.dirOnly && !isDir {
			continue
		}
		var ok bool
		if p.anchored {
			ok = gitignoreMatchSegs(p.segs, rel)
		} else {
			ok = gitignoreWildMatch(p.segs[0], base)
		}
		if ok {
			return true, !p.negate
		}
	}
	return false, false
}

// gitignoreNode is one ignore file in the chain from a directory up to the
// workspace root. Nodes are immutable once built, so the walker's workers
// share them without locking.
type gitignoreNode struct {
	parent *gitignoreNode
	// base is the workspace-relative directory the file applies to, "" for
	// the workspace root.
	base string
	m    *gitignoreMatcher
}

// push returns the chain with m (the ignore file of directory base) on top;
// a matcher without patterns adds nothing.
func (n *gitignoreNode) push(base string, m *gitignoreMatcher) *gitignoreNode {
	if m == nil || len(m.patterns) == 0 {
		return n
	}
	if base == "." {
		base = ""
	}
	return &gitignoreNode{parent: n, base: base, m: m}
}

// ignored reports whether rel (workspace-relative, '/'-separated) is
// ignored by the chain: the deepest ignore file that has a matching pattern
// decides.
func (n *gitignoreNode) ignored(rel string, isDir bool) bool {
	for ; n != nil; n = n.parent {
		sub := rel
		if n.base != "" {
			if len(rel) <= len(n.base) || rel[len(n.base)] != '/' || rel[:len(n.base)] != n.base {
				continue
			}
			sub = rel[len(n.base)+1:]
		}
		if matched, ign := n.m.match(sub, isDir); matched {
			return ign
		}
	}
	return false
}

// gitignoreMatchSegs matches the pattern segments segs against the
// '/'-separated path p, segment by segment; "**" matches zero or more
// whole segments.
func gitignoreMatchSegs(segs []string, p string) bool {
	for len(segs) > 0 {
		if segs[0] == "**" {
			rest := segs[1:]
			if len(rest) == 0 {
				// A trailing "/**" matches everything inside, which needs
				// at least one more segment.
				return p != ""
			}
			for {
				if gitignoreMatchSegs(rest, p) {
					return true
				}
				i := strings.IndexByte(p, '/')
				if i < 0 {
					return false
				}
				p = p[i+1:]
			}
		}
		if p == "" {
			return false
		}
		seg, rest := p, ""
		if i := strings.IndexByte(p, '/'); i >= 0 {
			seg, rest = p[:i], p[i+1:]
		}
		if !gitignoreWildMatch(segs[0], seg) {
			return false
		}
		segs, p = segs[1:], rest
		if p == "" {
			// The path is used up: only trailing "**" could still match,
			// and it needs a segment.
			return len(segs) == 0
		}
	}
	return p == ""
}

// gitignoreWildMatch matches one path segment name against a glob pattern
// with '*', '?', '[...]' (with '!' or '^' negation and ranges) and '\'
// escapes. Neither contains '/'.
func gitignoreWildMatch(pattern, name string) bool {
	// Iterative matching with backtracking to the last '*' only, which is
	// enough for patterns without '/' and runs in O(len(pattern)*len(name)).
	px, nx := 0, 0
	starPx, starNx := -1, -1
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				// Consecutive stars are one star inside a segment.
				for px < len(pattern) && pattern[px] == '*' {
					px++
				}
				starPx, starNx = px, nx
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px++
					nx += w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					if ok, end, valid := gitignoreMatchClass(pattern[px:], r); valid {
						if ok {
							px += end
							nx += w
							continue
						}
					} else if name[nx] == '[' {
						// An unterminated class is a literal '['.
						px++
						nx++
						continue
					}
				}
			case '\\':
				if px+1 < len(pattern) {
					if nx < len(name) && name[nx] == pattern[px+1] {
						px += 2
						nx++
						continue
					}
				} else if nx < len(name) && name[nx] == '\\' {
					px++
					nx++
					continue
				}
			default:
				if nx < len(name) && name[nx] == c {
					px++
					nx++
					continue
				}
			}
		}
		// Mismatch: let the last star absorb one more rune, if there is one.
		if starPx >= 0 && starNx < len(name) {
			_, w := utf8.DecodeRuneInString(name[starNx:])
			starNx += w
			px, nx = starPx, starNx
			continue
		}
		return false
	}
	return true
}

// gitignoreMatchClass matches r against the bracket expression at the start
// of pattern ("[...]"). It returns whether r is in the class, the length of
// the expression, and whether the expression is terminated at all.
func gitignoreMatchClass(pattern string, r rune) (matched bool, length int, valid bool) {
	i := 1
	negate := false
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		negate = true
		i++
	}
	first := true
	for i < len(pattern) {
		if pattern[i] == ']' && !first {
			return matched != negate, i + 1, true
		}
		first = false
		lo, w := gitignoreClassRune(pattern, i)
		if w == 0 {
			return false, 0, false
		}
		i += w
		hi := lo
		if i+1 < len(pattern) && pattern[i] == '-' && pattern[i+1] != ']' {
			h, w2 := gitignoreClassRune(pattern, i+1)
			if w2 == 0 {
				return false, 0, false
			}
			hi = h
			i += 1 + w2
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return false, 0, false
}

// gitignoreClassRune decodes one (possibly backslash-escaped) rune of a
// bracket expression at pattern[i:], returning it and its width in bytes
// (0 at the end of the pattern).
func gitignoreClassRune(pattern string, i int) (rune, int) {
	if i >= len(pattern) {
		return 0, 0
	}
	if pattern[i] == '\\' {
		if i+1 >= len(pattern) {
			return 0, 0
		}
		r, w := utf8.DecodeRuneInString(pattern[i+1:])
		return r, w + 1
	}
	r, w := utf8.DecodeRuneInString(pattern[i:])
	return r, w
}
