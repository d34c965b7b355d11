package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/lite-agent/lite-agent/internal/gitignore"
	"github.com/lite-agent/lite-agent/internal/nocap"
	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/internal/safefile"
	"github.com/lite-agent/lite-agent/tools"
)

// Limits of the grep tool. The output limits keep one call from flooding the
// model's context; the file limits bound memory.
const (
	grepMaxOutputLines = 1000
	grepMaxOutputBytes = 100 << 10
	// grepMaxLineBytes shortens very long lines (minified code, data) in
	// content mode.
	grepMaxLineBytes = 500
	// Files above grepBigFileBytes are read one at a time; files above
	// grepMaxFileBytes are not searched (the output says which).
	grepBigFileBytes = 8 << 20
	grepMaxFileBytes = 512 << 20
	// grepMaxIgnoreFileBytes bounds how much of a .gitignore is read.
	grepMaxIgnoreFileBytes = 1 << 20
)

const (
	grepModeContent = "content"
	grepModeFiles   = "files_with_matches"
	grepModeCount   = "count"
)

type grepInput struct {
	Pattern         string `json:"pattern" jsonschema:"Regular expression to search for, Go RE2 syntax (like ripgrep's default engine), matched against each line. Escape literal metacharacters: \\. \\( \\[ \\{ \\*. Lookaround and backreferences are not supported."`
	Path            string `json:"path,omitempty" jsonschema:"File or directory to search, relative to the workspace (or absolute inside it). Defaults to the whole workspace."`
	Glob            string `json:"glob,omitempty" jsonschema:"Only search files matching this glob, e.g. *.go, *.{ts,tsx}, src/**/*.py. Without a slash it matches file names at any depth; with one it matches the path. Start with ! to exclude instead, e.g. !*_test.go."`
	OutputMode      string `json:"output_mode,omitempty" jsonschema:"files_with_matches (default): the paths of matching files; content: the matching lines as path:line:text; count: path:number of matching lines."`
	Context         int    `json:"context,omitempty" jsonschema:"Lines of context to show before and after each matching line (content mode only)."`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema:"Match letters regardless of case."`
}

const grepDescription = `Search the contents of files in the workspace with a regular expression, like ripgrep. Use it, rather than grep or rg through bash, to find where something is defined or used.

- pattern: Go RE2 regular expression matched line by line (e.g. "func \w+Handler", "TODO|FIXME", "import .*react"). Escape literal metacharacters: "interface\{\}", "\.get\(". No lookaround or backreferences.
- output_mode: "files_with_matches" (default) lists the matching files; "content" shows matching lines as path:LINE:text, with context lines as path-LINE-text and "--" between separate groups; "count" shows path:N, the number of matching lines per file.
- path: a file or directory to search; default the whole workspace.
- glob: filter files by name, e.g. "*.go", "*.{ts,tsx}", "src/**/*.py"; "!*_test.go" excludes.
- context: lines shown before and after each match in content mode.
- case_insensitive: ignore case.

Files ignored by .gitignore, the .git directory and binary files are skipped, and symlinks are not followed; hidden files are searched. Results are sorted by path, all paths are relative to the workspace. Output is capped at 1000 lines or 100 KiB: start with files_with_matches or count on a broad search, then narrow it with path, glob or a more specific pattern before asking for content.`

// Grep searches file contents under the workspace. It reads only through
// the call's os.Root, so nothing outside the workspace is read.
var Grep = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("grep", grepDescription, unprivileged(grepHandler), &tools.Options{
		Security:    readOnlySecurity,
		InputSchema: grepInputSchema(),
		Annotations: &tools.Annotations{
			Title:         "Search file contents",
			ReadOnlyHint:  true,
			OpenWorldHint: tools.Bool(false),
		},
	}))
})

// grepInputSchema is the schema inferred from grepInput, with what struct
// tags cannot say: the output_mode enum and default, and the lower bounds.
func grepInputSchema() *jsonschema.Schema {
	s, err := jsonschema.For[grepInput](nil)
	if err != nil {
		panic(fmt.Errorf("grep: inferring the input schema: %w", err))
	}
	mode := s.Properties["output_mode"]
	mode.Enum = []any{grepModeFiles, grepModeContent, grepModeCount}
	mode.Default = json.RawMessage(`"` + grepModeFiles + `"`)
	minLen := 1
	s.Properties["pattern"].MinLength = &minLen
	zero, maxContext := 0.0, 100.0
	s.Properties["context"].Minimum = &zero
	s.Properties["context"].Maximum = &maxContext
	return s
}

func grepHandler(ctx *tools.Context, in grepInput) (*tools.Result, error) {
	if in.OutputMode == "" {
		in.OutputMode = grepModeFiles
	}
	m, err := newGrepMatcher(in.Pattern, in.CaseInsensitive)
	if err != nil {
		return nil, err
	}
	rel, err := resolvePath(ctx, in.Path)
	if err != nil {
		return nil, err
	}
	fi, err := ctx.Root.Stat(rel)
	if err != nil {
		return nil, rootErr(ctx, grepDisplayPath(in.Path), err)
	}
	s := &grepSearch{
		ctx:     ctx.Context(),
		m:       m,
		mode:    in.OutputMode,
		context: max(in.Context, 0),
		glob:    newGrepGlobFilter(in.Glob),
		start:   grepSlashRel(rel),
		root:    ctx.Root,
		ws:      ctx.Root.Name(),
		bigSem:  make(chan struct{}, 1),
	}
	switch {
	case fi.Mode().IsRegular():
		// A file named explicitly is searched even if it is ignored or does
		// not match the glob, as with rg.
		w := s.newWorker()
		s.searchFile(w, ctx.Root, rel, s.start)
		s.results = w.results
	case fi.IsDir():
		if err := s.walk(ctx, rel); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s is neither a regular file nor a directory (mode %v); give grep a file or a directory", grepDisplayPath(in.Path), fi.Mode().Type())
	}
	if err := s.ctx.Err(); err != nil {
		return nil, fmt.Errorf("the search was cancelled before it finished: %w", err)
	}
	return tools.Text(s.render(in)), nil
}

func grepDisplayPath(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// grepSlashRel turns a cleaned relative path into the workspace-relative,
// '/'-separated form used in output ("" for the workspace root).
func grepSlashRel(rel string) string {
	if rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// grepMatcher finds matching lines. Lines are matched one at a time, as in
// rg, but the file is scanned as a whole: with a literal that every match
// must contain, bytes.Index finds candidates and only their lines are run
// through the regexp; without one, a multi-line variant of the regexp
// scans the buffer and the line of each hit is checked.
type grepMatcher struct {
	line *regexp.Regexp // the pattern, as matched against one line
	buf  *regexp.Regexp // the same with (?m), to scan whole buffers
	lit  []byte         // every match contains lit; nil when unknown
	// fold, for case-insensitive patterns without such a literal, is an
	// ASCII string every match contains regardless of case.
	fold *grepFoldLit
	// exact: the pattern is the literal lit, so a hit needs no check.
	exact bool
	// perLine: the pattern uses \A or \z, which a buffer scan cannot
	// honour line by line, so every line is matched on its own.
	perLine bool
}

func newGrepMatcher(pattern string, caseInsensitive bool) (*grepMatcher, error) {
	if caseInsensitive {
		pattern = "(?i)" + pattern
	}
	line, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %v. The pattern uses Go RE2 syntax: escape literal metacharacters such as ( [ { . * + ? with a backslash; lookaround and backreferences are not supported", pattern, grepRegexpError(err))
	}
	buf, err := regexp.Compile("(?m)" + pattern)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %v", pattern, grepRegexpError(err))
	}
	m := &grepMatcher{line: line, buf: buf}
	if re, err := syntax.Parse(pattern, syntax.Perl); err == nil {
		re = re.Simplify()
		if lit, fold := grepRequiredLiteral(re); lit != "" && !fold {
			m.lit = []byte(lit)
			m.exact = re.Op == syntax.OpLiteral && !strings.Contains(lit, "\n")
		} else if lit != "" {
			m.fold = newGrepFoldLit(lit)
		}
		m.perLine = grepHasTextAnchor(re)
	}
	return m, nil
}

// grepHasTextAnchor reports whether re contains \A or \z.
func grepHasTextAnchor(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	return slices.ContainsFunc(re.Sub, grepHasTextAnchor)
}

// grepRegexpError drops the "error parsing regexp: " prefix of a
// regexp/syntax error; the message already says it is a regular expression.
func grepRegexpError(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: `%s`", se.Code, se.Expr)
	}
	return err.Error()
}

// grepRequiredLiteral returns a string that every match of re contains, and
// whether it is matched regardless of case, or "" if it finds none. It
// prefers the longest, and an exact literal to a case-folded one.
func grepRequiredLiteral(re *syntax.Regexp) (lit string, fold bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return grepRequiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return grepRequiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		score := func(l string, f bool) int {
			if f {
				return 2 * len(l)
			}
			return 2*len(l) + 1
		}
		for _, sub := range re.Sub {
			if l, f := grepRequiredLiteral(sub); l != "" && (lit == "" || score(l, f) > score(lit, fold)) {
				lit, fold = l, f
			}
		}
		return lit, fold
	}
	return "", false
}

// grepFoldLit finds an ASCII string regardless of ASCII case: IndexByte
// looks for one byte of it (in both cases), and the rest is compared there.
type grepFoldLit struct {
	lower  []byte // the string, in lower case
	anchor int    // the index in lower of the byte searched for
	a, b   byte   // the anchor byte in both cases (equal if not a letter)
}

// grepLetterRank orders letters from most to least common in source code;
// the rarest letter of a string makes the best anchor.
const grepLetterRank = "etaoinrsldchupmfgbywvkxjqz"

// newGrepFoldLit picks, from the case-folded literal lit, the longest run
// that case folding keeps within ASCII ('k' and 's' also fold to the
// Kelvin sign and the long s, so they end a run), or returns nil if the
// run is too short to help.
func newGrepFoldLit(lit string) *grepFoldLit {
	best, cur := "", 0
	for i := 0; i <= len(lit); i++ {
		if i < len(lit) {
			c := lit[i]
			if c < utf8.RuneSelf && c != 'k' && c != 'K' && c != 's' && c != 'S' {
				continue
			}
		}
		if i-cur > len(best) {
			best = lit[cur:i]
		}
		cur = i + 1
	}
	if len(best) < 2 {
		return nil
	}
	f := &grepFoldLit{lower: []byte(strings.ToLower(best))}
	rank := -1
	for i, c := range f.lower {
		r := strings.IndexByte(grepLetterRank, c)
		if r < 0 { // not a letter: one byte to look for
			f.anchor, rank = i, len(grepLetterRank)
			break
		}
		if r > rank {
			f.anchor, rank = i, r
		}
	}
	c := f.lower[f.anchor]
	f.a, f.b = c, c
	if 'a' <= c && c <= 'z' {
		f.b = c - 'a' + 'A'
	}
	return f
}

// grepFoldFinder searches one buffer for a grepFoldLit. It remembers where
// the next anchor bytes are, so each IndexByte covers the buffer once.
type grepFoldFinder struct {
	f            *grepFoldLit
	buf          []byte
	nextA, nextB int // positions of the next anchor bytes; len(buf) = none
}

func newGrepFoldFinder(f *grepFoldLit, buf []byte) *grepFoldFinder {
	return &grepFoldFinder{f: f, buf: buf, nextA: -1, nextB: -1}
}

// index returns the start of the first occurrence at or after from, or -1.
func (ff *grepFoldFinder) index(from int) int {
	f, buf := ff.f, ff.buf
	for {
		p := from + f.anchor // the anchor byte of a match starting at from
		if p+len(f.lower)-f.anchor > len(buf) {
			return -1
		}
		if ff.nextA < p {
			ff.nextA = grepIndexByteFrom(buf, p, f.a)
		}
		if f.b != f.a && ff.nextB < p {
			ff.nextB = grepIndexByteFrom(buf, p, f.b)
		}
		next := ff.nextA
		if f.b != f.a {
			next = min(next, ff.nextB)
		}
		if next >= len(buf) {
			return -1
		}
		start := next - f.anchor
		if start+len(f.lower) <= len(buf) && grepEqualFoldASCII(buf[start:start+len(f.lower)], f.lower) {
			return start
		}
		from = start + 1
	}
}

// grepIndexByteFrom is the index of c in buf at or after from, or len(buf).
func grepIndexByteFrom(buf []byte, from int, c byte) int {
	if i := bytes.IndexByte(buf[from:], c); i >= 0 {
		return from + i
	}
	return len(buf)
}

// grepEqualFoldASCII reports whether s equals lower, ignoring ASCII case.
func grepEqualFoldASCII(s, lower []byte) bool {
	for i, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// scan calls fn with the start and end offsets (end excludes the newline)
// of each line of buf that matches, in order, until fn returns false.
func (m *grepMatcher) scan(buf []byte, fn func(start, end int) bool) {
	if m.perLine {
		m.scanLines(buf, fn)
		return
	}
	var ff *grepFoldFinder
	if m.fold != nil {
		ff = newGrepFoldFinder(m.fold, buf)
	}
	pos := 0
	for pos < len(buf) {
		var hit, hitEnd int
		if m.lit != nil {
			i := bytes.Index(buf[pos:], m.lit)
			if i < 0 {
				return
			}
			hit, hitEnd = pos+i, -1
		} else if ff != nil {
			if hit = ff.index(pos); hit < 0 {
				return
			}
			hitEnd = -1
		} else {
			loc := m.buf.FindIndex(buf[pos:])
			if loc == nil {
				return
			}
			hit, hitEnd = pos+loc[0], pos+loc[1]
		}
		// pos is always the start of a line, so the hit's line starts after
		// the last newline between pos and the hit.
		start := pos + bytes.LastIndexByte(buf[pos:hit], '\n') + 1
		end := len(buf)
		if i := bytes.IndexByte(buf[hit:], '\n'); i >= 0 {
			end = hit + i
		}
		// A hit of the buffer regexp that ends inside its line is a match
		// of the line; any other candidate is checked on its line alone.
		if m.exact || (hitEnd >= 0 && hitEnd <= end) || m.line.Match(buf[start:end]) {
			if !fn(start, end) {
				return
			}
		}
		if end == len(buf) {
			return
		}
		pos = end + 1
	}
}

// scanLines is scan for patterns that must see each line on its own.
func (m *grepMatcher) scanLines(buf []byte, fn func(start, end int) bool) {
	for pos := 0; pos < len(buf); {
		end := len(buf)
		if i := bytes.IndexByte(buf[pos:], '\n'); i >= 0 {
			end = pos + i
		}
		if m.line.Match(buf[pos:end]) && !fn(pos, end) {
			return
		}
		pos = end + 1
	}
}

// grepGlobFilter is the glob input: include patterns (any may match) and
// exclude patterns (none may match), with gitignore's pattern semantics
// (internal/gitignore): the same '*', '?', "[...]" and "**" as ignore files.
type grepGlobFilter struct {
	include, exclude []*gitignore.Pattern
}

// newGrepGlobFilter parses the glob input. Braces are expanded first
// ("*.{ts,tsx}" is "*.ts" or "*.tsx"), and a leading '!' excludes.
func newGrepGlobFilter(glob string) *grepGlobFilter {
	glob = strings.TrimSpace(glob)
	if glob == "" {
		return nil
	}
	f := &grepGlobFilter{}
	exclude := strings.HasPrefix(glob, "!")
	glob = strings.TrimPrefix(glob, "!")
	for _, g := range grepExpandBraces(glob) {
		g = strings.TrimPrefix(g, "./")
		// Files only: a trailing slash means nothing here.
		p := gitignore.Compile(strings.TrimSuffix(g, "/"), "")
		if exclude {
			f.exclude = append(f.exclude, p)
		} else {
			f.include = append(f.include, p)
		}
	}
	return f
}

// grepExpandBraces expands the first {a,b,...} group of glob, recursively;
// unbalanced braces are left as they are.
func grepExpandBraces(glob string) []string {
	open := strings.IndexByte(glob, '{')
	if open < 0 {
		return []string{glob}
	}
	depth := 0
	var parts []string
	last := open + 1
	for i := open; i < len(glob); i++ {
		switch glob[i] {
		case '{':
			depth++
		case ',':
			if depth == 1 {
				parts = append(parts, glob[last:i])
				last = i + 1
			}
		case '}':
			depth--
			if depth == 0 {
				parts = append(parts, glob[last:i])
				var out []string
				for _, p := range parts {
					out = append(out, grepExpandBraces(glob[:open]+p+glob[i+1:])...)
				}
				return out
			}
		}
	}
	return []string{glob}
}

// match reports whether the file at rel (workspace-relative) passes the
// filter. A pattern with a slash may match the path relative to the
// workspace or to the searched directory (searchRel).
func (f *grepGlobFilter) match(rel, searchRel string) bool {
	if f == nil {
		return true
	}
	sub := rel
	if r, ok := paths.Rel(searchRel, rel); searchRel != "" && ok && r != "." {
		sub = r
	}
	matches := func(p *gitignore.Pattern) bool {
		return p.Match(rel, false) || (sub != rel && p.Match(sub, false))
	}
	for _, p := range f.exclude {
		if matches(p) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		if matches(p) {
			return true
		}
	}
	return false
}

// grepSearch is one grep call.
type grepSearch struct {
	ctx     context.Context
	m       *grepMatcher
	mode    string
	context int
	glob    *grepGlobFilter
	start   string   // the searched path, workspace-relative ("" = root)
	root    *os.Root // the workspace
	ws      string   // its path, to read ignore files beneath it (safefile)
	// bigSem lets one file above grepBigFileBytes be in memory at a time.
	bigSem chan struct{}

	results  []grepFileResult
	searched atomic.Int64 // files searched
	binary   atomic.Int64 // files skipped as binary

	mu       sync.Mutex
	tooBig   []string // files skipped for their size
	errCount int      // paths that could not be read
	errFirst []string // the first few of those errors
}

// grepFileResult is what one file contributed.
type grepFileResult struct {
	path  string
	count int // matching lines
	// nLines counts the output lines of content mode; lines holds them
	// (at most grepMaxOutputLines+1) once they are rendered.
	lines  []string
	nLines int
}

// grepWorker is the per-goroutine state of a search.
type grepWorker struct {
	buf     []byte
	results []grepFileResult
}

func (s *grepSearch) newWorker() *grepWorker { return &grepWorker{} }

func (s *grepSearch) noteErr(rel string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errCount++
	if len(s.errFirst) < 3 {
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		if rel == "" {
			rel = "."
		}
		s.errFirst = append(s.errFirst, rel+": "+msg)
	}
}

// readFile reads name in dir into the worker's buffer (or, for a big file,
// a buffer of its own). ok is false when the file is not to be searched.
// The caller must call release when done with the data.
func (s *grepSearch) readFile(w *grepWorker, dir *os.Root, name, rel string) (data []byte, release func(), ok bool) {
	// O_NONBLOCK: should the file have been replaced by a FIFO since it was
	// listed, opening it must not wait for a writer. (It also spares os
	// two fcntl calls per file; reads of regular files ignore the flag.)
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		s.noteErr(rel, err)
		return nil, nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.noteErr(rel, err)
		return nil, nil, false
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, false
	}
	size := fi.Size()
	release = func() {}
	buf := w.buf
	switch {
	case size > grepMaxFileBytes:
		s.mu.Lock()
		s.tooBig = append(s.tooBig, rel)
		s.mu.Unlock()
		return nil, nil, false
	case size > grepBigFileBytes:
		select {
		case s.bigSem <- struct{}{}:
		case <-s.ctx.Done():
			return nil, nil, false
		}
		buf = make([]byte, 0, size+1)
		release = func() { <-s.bigSem }
	case int64(cap(buf)) < size+1:
		buf = make([]byte, 0, max(size+1, 64<<10))
		w.buf = buf
	}
	buf = buf[:0]
	// Read the file (to EOF when Stat reports no size, as for files of
	// pseudo-filesystems), but stop as soon as its start shows it is binary.
	probed := false
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= grepMaxFileBytes {
				break
			}
			buf = slices.Grow(buf, len(buf))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == nil && n > 0 && int64(len(buf)) == size {
			// All that Stat promised has been read; skip the read that
			// would only report EOF (a file that grows meanwhile is cut
			// here, as rg would cut it).
			err = io.EOF
		}
		if !probed && (len(buf) >= looksBinarySniffBytes || err != nil) {
			probed = true
			// The same test as read_file's, so both tools agree on what
			// is binary.
			if looksBinary(buf) {
				release()
				s.binary.Add(1)
				return nil, nil, false
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			release()
			s.noteErr(rel, err)
			return nil, nil, false
		}
	}
	return buf, release, true
}

// searchFile searches one file, dir/name, shown as rel.
func (s *grepSearch) searchFile(w *grepWorker, dir *os.Root, name, rel string) {
	data, release, ok := s.readFile(w, dir, name, rel)
	if !ok {
		return
	}
	defer release()
	s.searched.Add(1)
	switch s.mode {
	case grepModeFiles:
		found := false
		s.m.scan(data, func(int, int) bool { found = true; return false })
		if found {
			w.results = append(w.results, grepFileResult{path: rel, count: 1})
		}
	case grepModeCount:
		n := 0
		s.m.scan(data, func(int, int) bool { n++; return true })
		if n > 0 {
			w.results = append(w.results, grepFileResult{path: rel, count: n})
		}
	default:
		// Only the counts: the lines are rendered again for the files that
		// are shown (see render), so a search with many matches does not
		// hold them all in memory.
		if r, ok := s.contentLines(data, rel, false); ok {
			w.results = append(w.results, r)
		}
	}
}

// contentLines renders the content-mode output of one file: it counts the
// output lines, and keeps (the first grepMaxOutputLines+1 of) them if keep.
func (s *grepSearch) contentLines(data []byte, rel string, keep bool) (grepFileResult, bool) {
	r := grepFileResult{path: rel}
	emit := func(sep byte, n int, text []byte) {
		r.nLines++
		if !keep || len(r.lines) > grepMaxOutputLines {
			return
		}
		r.lines = append(r.lines, grepFormatLine(rel, sep, n, text))
	}
	if s.context == 0 {
		lineNo, counted := 1, 0
		s.m.scan(data, func(start, end int) bool {
			lineNo += bytes.Count(data[counted:start], []byte{'\n'})
			counted = start
			r.count++
			emit(':', lineNo, data[start:end])
			return true
		})
		return r, r.count > 0
	}
	// With context: collect the matching lines, then print each with its
	// neighbours, merging groups that touch or overlap.
	type span struct{ start, end, no int }
	var hits []span
	lineNo, counted := 1, 0
	s.m.scan(data, func(start, end int) bool {
		lineNo += bytes.Count(data[counted:start], []byte{'\n'})
		counted = start
		hits = append(hits, span{start, end, lineNo})
		return true
	})
	if len(hits) == 0 {
		return r, false
	}
	r.count = len(hits)
	// lines[i] is the start offset of line i+1.
	var starts []int
	for off := 0; off <= len(data); {
		starts = append(starts, off)
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	if n := len(starts); n > 1 && starts[n-1] == len(data) {
		starts = starts[:n-1] // a final newline does not start a line
	}
	lineText := func(no int) []byte {
		start := starts[no-1]
		end := len(data)
		if no < len(starts) {
			end = starts[no] - 1
		}
		return bytes.TrimSuffix(data[start:end], []byte{'\n'})
	}
	last := 0 // last line printed
	for i, h := range hits {
		from := max(h.no-s.context, 1)
		if last > 0 && from > last+1 {
			emit('-', 0, nil) // separator
		}
		for no := max(from, last+1); no < h.no; no++ {
			emit('-', no, lineText(no))
		}
		emit(':', h.no, data[h.start:h.end])
		last = h.no
		to := min(h.no+s.context, len(starts))
		if i+1 < len(hits) {
			to = min(to, hits[i+1].no-1)
		}
		for no := last + 1; no <= to; no++ {
			emit('-', no, lineText(no))
		}
		last = max(last, to)
	}
	return r, true
}

// grepFormatLine formats one content-mode line: path:N:text for a match,
// path-N-text for context, and "--" for a separator (n == 0). The path
// is quoted as glob shows it (names.go).
func grepFormatLine(rel string, sep byte, n int, text []byte) string {
	if n == 0 {
		return "--"
	}
	text = bytes.TrimSuffix(text, []byte{'\r'})
	cut := 0
	if len(text) > grepMaxLineBytes {
		keep := grepMaxLineBytes
		for keep > 0 && !utf8.RuneStart(text[keep]) {
			keep--
		}
		cut = len(text) - keep
		text = text[:keep]
	}
	var b strings.Builder
	b.Grow(len(rel) + len(text) + 24)
	b.WriteString(quotePath(rel))
	b.WriteByte(sep)
	b.WriteString(strconv.Itoa(n))
	b.WriteByte(sep)
	b.Write(text)
	if cut > 0 {
		fmt.Fprintf(&b, " [… %d more bytes]", cut)
	}
	return b.String()
}

// Walking. A directory is read by whichever worker pops it; its
// subdirectories and files go back on a shared LIFO stack, so files are
// searched while the walk goes on and the walk itself is parallel. Every
// directory is opened as an os.Root beneath its parent's, so files are
// opened by name, one component at a time, and nothing can resolve outside
// the workspace; symlinks are skipped altogether.

// grepDir is an open directory with work pending on it.
type grepDir struct {
	root *os.Root
	rel  string           // workspace-relative, "" for the workspace root
	ign  *gitignore.Stack // the ignore files that apply to its entries
	refs atomic.Int32     // queued items that need root; closed at zero
}

func (d *grepDir) release() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

// grepItem is a unit of work: the file or directory name in dir.
type grepItem struct {
	dir   *grepDir
	name  string
	rel   string
	isDir bool
}

// grepQueue is the shared work stack.
type grepQueue struct {
	mu      sync.Mutex
	cond    sync.Cond
	items   []grepItem
	pending int // items queued or in progress
}

func (q *grepQueue) push(items ...grepItem) {
	q.mu.Lock()
	q.items = append(q.items, items...)
	q.pending += len(items)
	q.mu.Unlock()
	if len(items) == 1 {
		q.cond.Signal()
	} else {
		q.cond.Broadcast()
	}
}

// pop returns the next item, or false when all work is done.
func (q *grepQueue) pop() (grepItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 {
		if q.pending == 0 {
			return grepItem{}, false
		}
		q.cond.Wait()
	}
	it := q.items[len(q.items)-1]
	q.items[len(q.items)-1] = grepItem{}
	q.items = q.items[:len(q.items)-1]
	return it, true
}

// done marks one popped item finished.
func (q *grepQueue) done() {
	q.mu.Lock()
	q.pending--
	finished := q.pending == 0
	q.mu.Unlock()
	if finished {
		q.cond.Broadcast()
	}
}

// walk searches the directory rel of root with a pool of workers.
func (s *grepSearch) walk(ctx *tools.Context, rel string) error {
	dirRoot, err := ctx.Root.OpenRoot(rel)
	if err != nil {
		return rootErr(ctx, rel, err)
	}
	top := &grepDir{root: dirRoot, rel: s.start, ign: s.ancestorIgnores(s.start)}
	top.refs.Store(1)

	q := &grepQueue{}
	q.cond.L = &q.mu
	q.items = append(q.items, grepItem{dir: top, rel: s.start, isDir: true})
	q.pending = 1

	// Reads from the page cache are CPU work, so about one worker per CPU;
	// at least two so that a slow read does not stall the walk.
	workers := max(runtime.NumCPU(), 2)
	perWorker := make([][]grepFileResult, workers)
	var wg sync.WaitGroup
	var dropErr atomic.Pointer[error]
	for i := range workers {
		wg.Go(func() {
			w := s.newWorker()
			// Each worker reads on its own thread: it drops root's
			// override for itself (see unprivileged). A worker that
			// cannot does no work; the search then fails below rather
			// than answer with what the others found.
			if err := nocap.Do(func() error { s.work(q, w); return nil }); err != nil {
				dropErr.Store(&err)
			}
			perWorker[i] = w.results
		})
	}
	wg.Wait()
	if err := dropErr.Load(); err != nil {
		return *err
	}
	for _, r := range perWorker {
		s.results = append(s.results, r...)
	}
	return nil
}

// work runs one worker's loop: directories and files from the queue until
// it is empty.
func (s *grepSearch) work(q *grepQueue, w *grepWorker) {
	for {
		it, ok := q.pop()
		if !ok {
			break
		}
		if s.ctx.Err() == nil {
			if it.isDir {
				s.readDir(q, it)
			} else {
				s.searchFile(w, it.dir.root, it.name, it.rel)
			}
		}
		it.dir.release()
		q.done()
	}
}

// ancestorIgnores loads the ignore files that apply to the directory
// start from above it: .git/info/exclude and the .gitignore files of the
// workspace root and of each directory between it and start. The .gitignore
// of start itself is read when start is walked.
func (s *grepSearch) ancestorIgnores(start string) *gitignore.Stack {
	var n *gitignore.Stack
	// .git/info/exclude has the lowest precedence: at the bottom.
	n = n.Push(s.readIgnore("", ".git/info/exclude"))
	if start == "" {
		return n
	}
	dir := ""
	for _, part := range strings.Split(start, "/") {
		n = n.Push(s.readIgnore(dir, grepJoin(dir, ".gitignore")))
		dir = grepJoin(dir, part)
	}
	return n
}

// grepJoin joins a workspace-relative directory ("" = root) and a name.
func grepJoin(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// readIgnore reads and parses the ignore file name (workspace-relative)
// whose patterns apply to directory base. The agent can write ignore files,
// so they are read with safefile: no symlink anywhere on the path, a FIFO
// or device refused without blocking, at most grepMaxIgnoreFileBytes. A
// missing or refused file is empty: the search then skips less, never
// more.
func (s *grepSearch) readIgnore(base, name string) *gitignore.List {
	data, err := safefile.ReadFileBeneath(s.ws, filepath.FromSlash(name), grepMaxIgnoreFileBytes)
	if err != nil {
		return nil
	}
	return gitignore.Parse(data, base, name)
}

// readDir lists the directory item it (opening it beneath its parent),
// and pushes its subdirectories and files that are not ignored.
func (s *grepSearch) readDir(q *grepQueue, it grepItem) {
	d := it.dir
	if it.name != "" {
		// A subdirectory: open it beneath its parent.
		sub, err := it.dir.root.OpenRoot(it.name)
		if err != nil {
			s.noteErr(it.rel, err)
			return
		}
		d = &grepDir{root: sub, rel: it.rel, ign: it.dir.ign}
	}
	d.refs.Add(1) // held while listing
	defer d.release()

	f, err := d.root.Open(".")
	if err != nil {
		s.noteErr(it.rel, err)
		return
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		s.noteErr(it.rel, err)
		// Search what could be listed.
	}
	for _, e := range entries {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			d.ign = d.ign.Push(s.readIgnore(d.rel, grepJoin(d.rel, ".gitignore")))
			break
		}
	}
	items := make([]grepItem, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		typ := e.Type()
		rel := grepJoin(d.rel, name)
		switch {
		case typ.IsDir():
			if paths.IsGitName(name) || d.ign.Excluded(rel, true) {
				continue
			}
		case typ.IsRegular():
			if d.ign.Excluded(rel, false) || !s.glob.match(rel, s.start) {
				continue
			}
		default:
			// Symlinks, sockets, devices and pipes are not searched.
			continue
		}
		items = append(items, grepItem{dir: d, name: name, rel: rel, isDir: typ.IsDir()})
	}
	if len(items) > 0 {
		d.refs.Add(int32(len(items)))
		q.push(items...)
	}
}

// render assembles the output: sorted, capped, with notes.
func (s *grepSearch) render(in grepInput) string {
	slices.SortFunc(s.results, func(a, b grepFileResult) int { return grepComparePaths(a.path, b.path) })
	var b strings.Builder
	w := s.newWorker()
	shown, total, matchLines := 0, 0, 0
	truncated := false
	add := func(line string) {
		total++
		if truncated {
			return
		}
		if shown >= grepMaxOutputLines || b.Len()+len(line)+1 > grepMaxOutputBytes {
			truncated = true
			return
		}
		b.WriteString(line)
		b.WriteByte('\n')
		shown++
	}
	for i, r := range s.results {
		matchLines += r.count
		switch s.mode {
		case grepModeFiles:
			add(quotePath(r.path))
		case grepModeCount:
			add(quotePath(r.path) + ":" + strconv.Itoa(r.count))
		default:
			if s.context > 0 && i > 0 {
				add("--")
			}
			if truncated {
				total += r.nLines
				continue
			}
			lines := s.renderFile(w, r)
			for _, l := range lines {
				add(l)
			}
			// Lines that were not even kept still count towards the total
			// (the output is already truncated when there are any).
			total += max(r.nLines-len(lines), 0)
		}
	}
	where := "the workspace"
	if s.start != "" {
		where = s.start
	}
	if len(s.results) == 0 {
		fmt.Fprintf(&b, "No matches for %q in %s", in.Pattern, where)
		if in.Glob != "" {
			fmt.Fprintf(&b, " (files matching %q)", in.Glob)
		}
		fmt.Fprintf(&b, ": searched %d files. Files ignored by .gitignore, the .git directory and binary files are not searched.\n", s.searched.Load())
	}
	if truncated {
		var what string
		switch s.mode {
		case grepModeFiles:
			what = fmt.Sprintf("the first %d of %d matching files", shown, total)
		case grepModeCount:
			what = fmt.Sprintf("the counts of %d of %d matching files (%d matching lines in all)", shown, total, matchLines)
		default:
			what = fmt.Sprintf("%d of %d output lines (%d matching lines in %d files)", shown, total, matchLines, len(s.results))
		}
		fmt.Fprintf(&b, "\n[Output truncated: showing %s; the limit is %d lines or %d KiB. Narrow the search with a more specific pattern, a path to a subdirectory or file, or a glob such as \"*.go\"", what, grepMaxOutputLines, grepMaxOutputBytes>>10)
		if s.mode == grepModeContent {
			b.WriteString(`, or use output_mode "count" or "files_with_matches" to see where the matches are first`)
		}
		b.WriteString(".]\n")
	}
	if n := s.binary.Load(); n > 0 && len(s.results) == 0 {
		if n == 1 {
			b.WriteString("(1 binary file was skipped.)\n")
		} else {
			fmt.Fprintf(&b, "(%d binary files were skipped.)\n", n)
		}
	}
	if len(s.tooBig) > 0 {
		slices.Sort(s.tooBig)
		fmt.Fprintf(&b, "\n[Not searched, larger than %d MiB: %s]\n", grepMaxFileBytes>>20, strings.Join(s.tooBig, ", "))
	}
	if s.errCount > 0 {
		fmt.Fprintf(&b, "\n[%d paths could not be read, e.g. %s]\n", s.errCount, strings.Join(s.errFirst, "; "))
	}
	return strings.ToValidUTF8(strings.TrimRight(b.String(), "\n"), "\uFFFD")
}

// renderFile reads a matching file again and returns its content-mode
// output lines. Should it have become unreadable since the search, the
// output says so in its place.
func (s *grepSearch) renderFile(w *grepWorker, r grepFileResult) []string {
	data, release, ok := s.readFile(w, s.root, filepath.FromSlash(r.path), r.path)
	if !ok {
		return []string{quotePath(r.path) + ": (could not be read again to show its matches)"}
	}
	defer release()
	again, _ := s.contentLines(data, r.path, true)
	return again.lines
}

// grepComparePaths orders paths as a tree listing does: '/' sorts before
// every other byte, so a directory's contents stay together.
func grepComparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		return int(ca) - int(cb)
	}
	return len(a) - len(b)
}
