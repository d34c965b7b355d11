package checkpoint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
)

// Ignore rules: which paths are not recorded. A path is ignored when it is
// inside a .git directory (always), or when gitignore-style rules say so:
// the per-directory ignore files named in Options.IgnoreFiles (by default
// .gitignore and .lite-agent-ignore, read in every directory from the root
// down, deeper files overriding shallower ones) and then Options.Ignore
// (patterns relative to the workspace root, which win over the files).
//
// The pattern syntax is gitignore's: "#" comments, "!" negation, a trailing
// "/" for directories only, a "/" at the start or in the middle anchoring
// the pattern to the file's directory, "*", "?", "[…]" and "**". As in git,
// a path inside an ignored directory cannot be re-included.

type ignoreRule struct {
	segs     []string
	anchored bool
	dirOnly  bool
	negate   bool
	source   string // "dir/.gitignore:3" or "option"
}

type ruleSet struct {
	base  string // directory the rules are relative to ("" for the root)
	rules []ignoreRule
}

type ignorer struct {
	root  *os.Root
	files []string
	extra *ruleSet

	mu    sync.Mutex
	cache map[string][]*ruleSet // directory -> rule sets found in it
}

func newIgnorer(root *os.Root, files, extra []string) *ignorer {
	ig := &ignorer{root: root, files: files, cache: map[string][]*ruleSet{}}
	if len(extra) > 0 {
		ig.extra = parseRules("", []byte(strings.Join(extra, "\n")), "option")
	}
	return ig
}

// parseRules parses the lines of an ignore file.
func parseRules(base string, data []byte, source string) *ruleSet {
	rs := &ruleSet{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		// Trailing spaces are ignored unless escaped.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{source: source}
		if source != "option" {
			r.source = fmt.Sprintf("%s:%d", source, n)
		} else {
			r.source = "ignore option " + line
		}
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") {
			r.anchored = true
			line = strings.TrimLeft(line, "/")
		} else if strings.Contains(line, "/") {
			r.anchored = true
		}
		// "[!…]" is gitignore's negated class; path.Match spells it "[^…]".
		line = strings.ReplaceAll(line, "[!", "[^")
		r.segs = strings.Split(line, "/")
		rs.rules = append(rs.rules, r)
	}
	return rs
}

// matchSegs matches pattern segments against path segments; "**" matches
// any number of segments, including none.
func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			if len(pat) == 1 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

func (r *ignoreRule) match(rel string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if !r.anchored {
		return matchSegs(r.segs, []string{path.Base(rel)})
	}
	return matchSegs(r.segs, strings.Split(rel, "/"))
}

// rulesIn returns the rule sets of the ignore files in directory dir ("" for
// the root), reading them once.
func (ig *ignorer) rulesIn(dir string) []*ruleSet {
	ig.mu.Lock()
	defer ig.mu.Unlock()
	if rs, ok := ig.cache[dir]; ok {
		return rs
	}
	var sets []*ruleSet
	for _, name := range ig.files {
		p := name
		if dir != "" {
			p = dir + "/" + name
		}
		data, err := readSmall(ig.root, p, 1<<20)
		if err != nil {
			continue
		}
		sets = append(sets, parseRules(dir, data, p))
	}
	ig.cache[dir] = sets
	return sets
}

func readSmall(root *os.Root, p string, limit int64) ([]byte, error) {
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, errors.New("not a small regular file")
	}
	return root.ReadFile(p)
}

// forget drops the cached rules of the directory holding rel when rel is an
// ignore file, so that a changed .gitignore applies from then on.
func (ig *ignorer) forget(rel string) {
	base := path.Base(rel)
	for _, f := range ig.files {
		if base == f {
			dir := path.Dir(rel)
			if dir == "." {
				dir = ""
			}
			ig.mu.Lock()
			delete(ig.cache, dir)
			ig.mu.Unlock()
			return
		}
	}
}

// ignored reports whether rel (a slash path relative to the workspace) is
// ignored. name is the highest ignored ancestor of rel (or rel itself),
// with a trailing "/" for a directory, and why names the rule.
func (ig *ignorer) ignored(rel string, isDir bool) (name, why string, ok bool) {
	elems := strings.Split(rel, "/")
	for i := range elems {
		prefix := strings.Join(elems[:i+1], "/")
		dir := i < len(elems)-1 || isDir
		if elems[i] == ".git" {
			return prefix + "/", "git metadata", true
		}
		ignored, src := false, ""
		// Rule sets from the root down to the prefix's own directory.
		for j := 0; j <= i; j++ {
			d := strings.Join(elems[:j], "/")
			for _, rs := range ig.rulesIn(d) {
				if m, s := rs.decide(prefix, dir); m != 0 {
					ignored, src = m > 0, s
				}
			}
		}
		if ig.extra != nil {
			if m, s := ig.extra.decide(prefix, dir); m != 0 {
				ignored, src = m > 0, s
			}
		}
		if ignored {
			if dir {
				prefix += "/"
			}
			return prefix, src, true
		}
	}
	return "", "", false
}

// decide returns +1 (ignored), -1 (re-included) or 0 (no rule matched) for
// rel by the last matching rule of rs.
func (rs *ruleSet) decide(rel string, isDir bool) (int, string) {
	sub := rel
	if rs.base != "" {
		if !strings.HasPrefix(rel, rs.base+"/") {
			return 0, ""
		}
		sub = rel[len(rs.base)+1:]
	}
	for i := len(rs.rules) - 1; i >= 0; i-- {
		r := &rs.rules[i]
		if r.match(sub, isDir) {
			if r.negate {
				return -1, r.source
			}
			return 1, r.source
		}
	}
	return 0, ""
}

// isGitPath reports whether rel is inside (or is) a .git directory.
func isGitPath(rel string) bool {
	return rel == ".git" || strings.HasPrefix(rel, ".git/") || strings.Contains(rel, "/.git/") || strings.HasSuffix(rel, "/.git")
}
