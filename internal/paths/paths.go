// Package paths answers the path questions that security checks ask, once:
// is this path inside that root, what is it relative to the root, what is
// the real path of a path that may not exist yet, and is this name a
// repository's ".git". Every package asks them through here, so that one
// rule holds everywhere (a lexical "starts with .." test takes a file named
// "..foo" for outside; filepath.Abs removes ".." before symlinks are
// followed, unlike the kernel; ".git" had two case rules).
//
// Within, Beneath and Rel are lexical: they compare cleaned paths as text
// (WithinClean skips the cleaning, for loops over paths known clean).
// When a symlink could lead out of the root, resolve first: Real for a
// path that may not exist yet, Resolve for one that must, with a say over
// each symlink on the way.
//
// TestNoAdHocContainment (guard_test.go) fails on a hand-written answer
// anywhere else in the module: a filepath.Rel result compared with "..",
// a HasPrefix(p, root+"/"), a comparison with ".git".
package paths

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Within reports whether p is root or beneath it. Both are cleaned first;
// a relative path is never within an absolute root, nor the reverse.
func Within(p, root string) bool { return WithinClean(clean(p), clean(root)) }

// WithinClean is Within for paths already clean (filepath.Clean(x) == x,
// as the results of Clean, Real and the kernel's own paths are), for the
// loops that ask it of every rule or every captured call: it compares
// the text as it is, and an unclean path gets a wrong answer.
func WithinClean(p, root string) bool {
	if filepath.IsAbs(p) != filepath.IsAbs(root) {
		return false
	}
	if p == root {
		return true
	}
	if root == "/" {
		return true // p is absolute, and every absolute path is beneath /
	}
	if root == "." {
		return filepath.IsLocal(p)
	}
	return len(p) > len(root) && p[len(root)] == '/' && p[:len(root)] == root
}

// Beneath reports whether p is strictly beneath root (not root itself).
func Beneath(p, root string) bool {
	return Within(p, root) && clean(p) != clean(root)
}

// Rel returns p relative to root ("." for root itself) and true, or "" and
// false when p is not within root (see Within).
func Rel(root, p string) (string, bool) {
	if !Within(p, root) {
		return "", false
	}
	p, root = clean(p), clean(root)
	switch {
	case p == root:
		return ".", true
	case root == "/":
		return p[1:], true
	case root == ".":
		return p, true
	}
	return p[len(root)+1:], true
}

// clean is filepath.Clean, without its cost for a path that is clean
// already (as most are: the checks run on every rule and every captured
// call, and Clean takes a hundred times as long as the comparison).
func clean(p string) string {
	if isClean(p) {
		return p
	}
	return filepath.Clean(p)
}

// isClean reports whether filepath.Clean(p) == p: not empty, no empty,
// "." or ".." component (but leading ".." of a relative path), no
// trailing slash (but "/" itself); "." alone is clean. It looks only at
// the dots and doubled slashes (searched for, not walked to).
func isClean(p string) bool {
	switch {
	case p == "":
		return false
	case len(p) > 1 && p[len(p)-1] == '/', strings.Contains(p, "//"):
		return false
	}
	for i := 0; ; i++ {
		j := strings.IndexByte(p[i:], '.')
		if j < 0 {
			return true
		}
		i += j
		if i > 0 && p[i-1] != '/' {
			continue // a dot inside a name
		}
		end := i + 1
		if end < len(p) && p[end] == '.' {
			end++
		}
		if end < len(p) && p[end] != '/' {
			continue // a name that starts with dots
		}
		if end == i+1 {
			return p == "." // a "." component
		}
		// A ".." component: clean only in a relative path's leading run.
		if !leadingDotDots(p[:i]) {
			return false
		}
		i = end - 1
	}
}

// leadingDotDots reports whether s is "" or a run of "../".
func leadingDotDots(s string) bool {
	for ; s != ""; s = s[3:] {
		if len(s) < 3 || s[:3] != "../" {
			return false
		}
	}
	return true
}

// maxSymlinks bounds the links followed in one path, as the kernel does.
const maxSymlinks = 40

// Real resolves p as the kernel would, component by component (a symlink
// is followed before a ".." after it applies to its target's parent), and
// tolerates components that do not exist yet: the first missing component
// ends the resolution (nothing beyond it can be a symlink) and the rest is
// cleaned onto it. A relative p is taken from the working directory.
func Real(p string) string {
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return filepath.Clean(p)
		}
		return RealFrom(Real(wd), p)
	}
	return RealFrom("/", p)
}

// RealFrom resolves rest (relative, or absolute to restart at /) from dir,
// a real directory, as Real does.
func RealFrom(dir, rest string) string {
	real, _ := resolve(nil, dir, rest, false, nil)
	return real
}

// Walker is Real with a memory: each component it looks up (lstat, and
// readlink of a link) is asked of the file system once for the Walker's
// life, so that resolving many paths that share their directories (a
// policy made from a PATH of links into one install) costs a lookup per
// distinct component, not per path. It answers from the moment of each
// first lookup: use one for one decision, never across. Not for
// concurrent use. The zero Walker is ready.
type Walker struct {
	seen map[string]walked
}

type walked struct {
	fi     fs.FileInfo
	err    error
	target string // a link's, read on the first resolution through it
	terr   error
	read   bool
}

// Real is paths.Real through w's memory.
func (w *Walker) Real(p string) string {
	if !filepath.IsAbs(p) {
		return Real(p)
	}
	real, _ := resolve(w, "/", p, false, nil)
	return real
}

// Lstat is os.Lstat through w's memory.
func (w *Walker) Lstat(p string) (fs.FileInfo, error) {
	e := w.lookup(p)
	return e.fi, e.err
}

func (w *Walker) lookup(p string) walked {
	if e, ok := w.seen[p]; ok {
		return e
	}
	if w.seen == nil {
		w.seen = map[string]walked{}
	}
	fi, err := os.Lstat(p)
	e := walked{fi: fi, err: err}
	w.seen[p] = e
	return e
}

func (w *Walker) readlink(p string) (string, error) {
	e := w.lookup(p)
	if !e.read {
		e.target, e.terr = os.Readlink(p)
		e.read = true
		w.seen[p] = e
	}
	return e.target, e.terr
}

// lstat and readlink are the file system's, or w's memory of it.
func (w *Walker) lstat(p string) (fs.FileInfo, error) {
	if w == nil {
		return os.Lstat(p)
	}
	return w.Lstat(p)
}

func (w *Walker) readlinkOf(p string) (string, error) {
	if w == nil {
		return os.Readlink(p)
	}
	return w.readlink(p)
}

// ErrLinkRefused is wrapped by Resolve's error when its follow function
// refused a symlink on the way.
var ErrLinkRefused = errors.New("symlink not followed")

// Resolve is Real for a path that must exist, with a say over symlinks:
// before following one it calls follow with the link's own real path (its
// directory resolved), and when follow returns false it stops with an
// error wrapping ErrLinkRefused. A component that does not exist is an
// error satisfying errors.Is(err, fs.ErrNotExist), also when a ".." comes
// after it (the kernel does not pass there either); more than 40 links is
// ELOOP, as in the kernel. A nil follow follows every link. A relative p
// is taken from the working directory.
func Resolve(p string, follow func(link string) bool) (string, error) {
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		// The working directory is where the process is, not a path it
		// walks: its links are not the follow function's to judge.
		dir, err := resolve(nil, "/", wd, true, nil)
		if err != nil {
			return "", err
		}
		return resolve(nil, dir, p, true, follow)
	}
	return resolve(nil, "/", p, true, follow)
}

// resolve walks rest from dest, a real directory, as the kernel does,
// looking components up through w (nil: the file system directly).
// Lenient (strict false), a component that cannot be looked up ends the
// walk with the rest cleaned onto it; strict, it is an error, and so is a
// link follow refuses.
func resolve(w *Walker, dest, rest string, strict bool, follow func(string) bool) (string, error) {
	if filepath.IsAbs(rest) {
		dest = "/"
	}
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
		fi, err := w.lstat(next)
		if err != nil {
			if strict {
				return "", err
			}
			return filepath.Clean(next + "/" + rest), nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			dest = next
			continue
		}
		if follow != nil && !follow(next) {
			return "", &fs.PathError{Op: "resolve", Path: next, Err: ErrLinkRefused}
		}
		links++
		target, err := w.readlinkOf(next)
		if err == nil && links > maxSymlinks {
			err = &fs.PathError{Op: "resolve", Path: next, Err: syscall.ELOOP}
		}
		if err != nil {
			if strict {
				return "", err
			}
			return filepath.Clean(next + "/" + rest), nil
		}
		if filepath.IsAbs(target) {
			dest = "/"
		}
		rest = target + "/" + rest
	}
	return dest, nil
}

// IsGitName reports whether name, one path component (trailing slashes
// allowed), is ".git" in any case: on a case-insensitive directory (ext4
// casefold, a mounted FAT or NTFS tree) ".GIT" is the same entry, so every
// check that skips or guards repositories treats them alike.
func IsGitName(name string) bool {
	return strings.EqualFold(strings.TrimRight(name, "/"), ".git")
}

// HasGitComponent reports whether any component of p is a git name
// (IsGitName).
func HasGitComponent(p string) bool {
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if IsGitName(c) {
			return true
		}
	}
	return false
}
