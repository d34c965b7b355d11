package gitignore

import (
	"bytes"
	"strings"
	"sync"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Pattern is one pattern of an ignore file, parsed as git's
// parse_path_pattern does.
type Pattern struct {
	// File and Line say where the pattern comes from ("sub/.gitignore",
	// 3); File is "" for patterns given in code (ParseLines).
	File string
	Line int
	// Text is the line as written, after trailing spaces were trimmed.
	Text string

	pattern  string // without the leading '!' and one trailing '/'
	base     string // the directory the file applies to, "" for the root
	nowild   int    // length of the literal prefix of pattern
	negative bool   // "!pattern": re-includes
	dirOnly  bool   // "pattern/": directories only
	noDir    bool   // no '/' in pattern: matches the base name at any depth
	endsWith bool   // "*literal": a suffix compare is enough
}

// Negative reports whether the pattern re-includes ("!pattern").
func (p *Pattern) Negative() bool { return p.negative }

// Compile parses one pattern body: no comment or "!" handling and no
// trimming, but a trailing '/' means directories only and a '/' anywhere
// else anchors the pattern, as in an ignore file. base is the directory
// it is relative to ("" for the root). It is what a glob filter with
// gitignore semantics needs.
func Compile(pattern, base string) *Pattern {
	p := &Pattern{Text: pattern, base: strings.Trim(base, "/")}
	p.parse(pattern)
	return p
}

// parse is git's parse_path_pattern (after the '!' check).
func (p *Pattern) parse(s string) {
	if strings.HasSuffix(s, "/") {
		// One slash only, as in git: "a//" keeps "a/" and matches nothing.
		s = s[:len(s)-1]
		p.dirOnly = true
	}
	p.noDir = !strings.Contains(s, "/")
	p.nowild = simpleLength(s)
	p.endsWith = len(s) > 0 && s[0] == '*' && simpleLength(s[1:]) == len(s)-1
	p.pattern = s
}

// Match reports whether the pattern matches rel, a '/'-separated path
// relative to the workspace root (not to the pattern's directory); isDir
// says whether rel is a directory. A negative pattern matches like any
// other: Negative says what the match means.
func (p *Pattern) Match(rel string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	if p.noDir {
		base := rel[strings.LastIndexByte(rel, '/')+1:]
		return p.matchBasename(base)
	}
	return p.matchPathname(rel)
}

// matchBasename is git's match_basename (case-sensitive).
func (p *Pattern) matchBasename(name string) bool {
	switch {
	case p.nowild == len(p.pattern):
		return p.pattern == name
	case p.endsWith:
		return strings.HasSuffix(name, p.pattern[1:])
	}
	return wildmatch(p.pattern, name)
}

// matchPathname is git's match_pathname: the pattern is relative to its
// file's directory, and its literal prefix is compared first.
func (p *Pattern) matchPathname(rel string) bool {
	pat, prefix := p.pattern, p.nowild
	if strings.HasPrefix(pat, "/") {
		pat, prefix = pat[1:], prefix-1
	}
	name := rel
	if p.base != "" {
		if rel == p.base || !paths.WithinClean(rel, p.base) { // both clean: the walk's
			return false
		}
		name = rel[len(p.base)+1:]
	}
	if prefix > 0 {
		if prefix > len(name) || pat[:prefix] != name[:prefix] {
			return false
		}
		pat, name = pat[prefix:], name[prefix:]
		if pat == "" && name == "" {
			return true
		}
	}
	// Like git, the rest is matched on its own: a "**" just after the
	// literal prefix counts as starting a segment.
	return wildmatch(pat, name)
}

// List is the patterns of one ignore file, in file order.
type List struct {
	patterns []Pattern
}

// Parse parses an ignore file. base is the directory it is in and applies
// to ("" for the workspace root); file names it in Pattern.File. It never
// fails: as in git, a line that makes no sense matches nothing.
func Parse(data []byte, base, file string) *List {
	l := &List{}
	base = strings.Trim(base, "/")
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // git skips a UTF-8 BOM
	for n := 1; len(data) > 0; n++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		l.add(string(line), base, file, n)
	}
	return l
}

// ParseLines makes a list of patterns given one per string (say, on a
// command line), relative to base. Their Pattern.File is "" and Line is
// the index from 1.
func ParseLines(lines []string, base string) *List {
	l := &List{}
	base = strings.Trim(base, "/")
	for i, s := range lines {
		l.add(s, base, "", i+1)
	}
	return l
}

// add parses one line as git's add_patterns_from_buffer and add_pattern do.
func (l *List) add(line, base, file string, n int) {
	if line == "" || line[0] == '#' {
		return
	}
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" {
		return
	}
	p := Pattern{File: file, Line: n, Text: line, base: base}
	s := line
	if s[0] == '!' {
		p.negative = true
		s = s[1:]
	}
	p.parse(s)
	l.patterns = append(l.patterns, p)
}

// trimTrailingSpaces is git's trim_trailing_spaces: spaces at the end are
// dropped unless the first of them is escaped with a backslash (a
// backslash escapes exactly the next byte, so "\\ " loses its space).
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i >= len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// Len returns the number of patterns.
func (l *List) Len() int {
	if l == nil {
		return 0
	}
	return len(l.patterns)
}

// Match returns the last pattern of l that matches rel (workspace-relative),
// negative or not, or nil: within one file the last match decides.
func (l *List) Match(rel string, isDir bool) *Pattern {
	if l == nil {
		return nil
	}
	for i := len(l.patterns) - 1; i >= 0; i-- {
		if p := &l.patterns[i]; p.Match(rel, isDir) {
			return p
		}
	}
	return nil
}

// Stack is the chain of ignore files that apply in one directory, the
// deepest on top. Stacks are immutable: Push returns a new one, sharing
// the rest, so concurrent walkers use them without locking.
type Stack struct {
	parent *Stack
	list   *List
}

// Push returns s with l on top (s itself when l has no patterns). A nil
// *Stack is the empty stack.
func (s *Stack) Push(l *List) *Stack {
	if l.Len() == 0 {
		return s
	}
	return &Stack{parent: s, list: l}
}

// Match returns the pattern that decides rel: the last match in the
// deepest file that has one; nil when none matches. It does not look at
// rel's parent directories (see Tree for that).
func (s *Stack) Match(rel string, isDir bool) *Pattern {
	for ; s != nil; s = s.parent {
		if p := s.list.Match(rel, isDir); p != nil {
			return p
		}
	}
	return nil
}

// Excluded reports whether the pattern that decides rel ignores it.
func (s *Stack) Excluded(rel string, isDir bool) bool {
	p := s.Match(rel, isDir)
	return p != nil && !p.negative
}

// Tree answers for any path of a workspace, loading the ignore files of
// each directory once, when first needed. As in git, a path is ignored
// when one of its parent directories is (git does not descend into an
// ignored directory, so nothing inside can be re-included), and otherwise
// when the pattern that decides it ignores it. Precedence, highest first:
// the high lists (command-line patterns, in git), the ignore files from the
// path's own directory up to the root, the low lists (.git/info/exclude).
type Tree struct {
	load      func(dir string) []*List
	high, low []*List

	mu     sync.Mutex
	stacks map[string]*Stack // directory -> the ignore files that apply to its entries
}

// NewTree returns a Tree whose per-directory ignore files come from load:
// given a workspace-relative directory ("" for the root), it returns the
// lists of that directory's ignore files, lowest precedence first (parsed
// with base dir). load is called at most once per directory, under the
// Tree's lock.
func NewTree(load func(dir string) []*List, high, low []*List) *Tree {
	return &Tree{load: load, high: high, low: low, stacks: map[string]*Stack{}}
}

// stack returns the stack of dir, building those of its parents first.
// Callers hold t.mu.
func (t *Tree) stack(dir string) *Stack {
	if s, ok := t.stacks[dir]; ok {
		return s
	}
	var s *Stack
	if dir != "" {
		parent := ""
		if i := strings.LastIndexByte(dir, '/'); i >= 0 {
			parent = dir[:i]
		}
		s = t.stack(parent)
	}
	for _, l := range t.load(dir) {
		s = s.Push(l)
	}
	t.stacks[dir] = s
	return s
}

// decide returns the pattern that decides rel with the ignore files of
// its directory stack s.
func (t *Tree) decide(s *Stack, rel string, isDir bool) *Pattern {
	for i := len(t.high) - 1; i >= 0; i-- {
		if p := t.high[i].Match(rel, isDir); p != nil {
			return p
		}
	}
	if p := s.Match(rel, isDir); p != nil {
		return p
	}
	for i := len(t.low) - 1; i >= 0; i-- {
		if p := t.low[i].Match(rel, isDir); p != nil {
			return p
		}
	}
	return nil
}

// Ignored reports whether rel (workspace-relative, '/'-separated, no
// leading or trailing slash) is ignored. When it is, name is the highest
// ignored path among rel and its parents (with a trailing '/' when it is a
// directory) and p the pattern that ignores it; otherwise p is nil.
func (t *Tree) Ignored(rel string, isDir bool) (name string, p *Pattern) {
	t.mu.Lock()
	defer t.mu.Unlock()
	dir, start := "", 0
	for {
		i := strings.IndexByte(rel[start:], '/')
		if i < 0 {
			// rel itself, with the files of its own directory.
			if p := t.decide(t.stack(dir), rel, isDir); p != nil && !p.negative {
				if isDir {
					return rel + "/", p
				}
				return rel, p
			}
			return "", nil
		}
		// A parent directory, judged by the files above it (not its own).
		sub := rel[:start+i]
		if p := t.decide(t.stack(dir), sub, true); p != nil && !p.negative {
			return sub + "/", p
		}
		dir, start = sub, start+i+1
	}
}
