package notify

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Repositories in private roots.
//
// The .git rule (names.go) keeps a command from making a repository the
// person's own git would later find — a directory git discovers from the
// person's working directory, whose hooks and config (core.fsmonitor,
// run by every `git status` a shell prompt makes) run with all of the
// person's rights. Test suites make repositories all the time (a Go test
// runs `git init` in t.TempDir(), pytest in tmp_path), in temporary
// directories the person never runs git in. So the rule does not hold in
// the private roots:
//
//   - the sandbox's private /tmp (and what else lives on its tmpfs): it
//     is mounted only in the sandbox's own namespaces, so no path of the
//     host's leads into it;
//   - the sandbox's TMPDIR (CaptureOptions.Private): a host directory,
//     emptied when each command ends and removed with the sandbox.
//
// A repository there is harmless as long as nothing of it can reach a
// place the person runs git in, which every path outside the private
// roots is taken to be (the workspace, a --allow-write directory, a
// toolchain's cache). Git finds a repository by a name (.git, or HEAD
// beside objects/ and refs/), through the directories of the path it
// walks up from, following symbolic links on the way. So:
//
//  1. Names: outside the private roots the .git rule holds as before: no
//     .git or HEAD is made and nothing in a .git changes. A repository
//     copied out file by file (mv across file systems, cp -r, tar) makes
//     those names, and is refused (movedOut is the copy's only shortcut).
//  2. Directories: a directory renamed out of a private root might hold
//     a repository at any depth: the rename fails with EXDEV, what a
//     rename between file systems answers, and mv, tar or a package
//     manager falls back to copying it (1). Renaming one out of the
//     private /tmp is EXDEV anyway (another file system).
//  3. Symbolic links: a link outside the private roots whose target
//     leads into one would let the person's `cd link; git status` find a
//     repository there. A link made (symlink, or renamed or hard-linked
//     into place) outside them is resolved when it is made, as the
//     host's path walk would resolve it from where it lies, and refused
//     (EPERM) when any step of that walk is in a private root of any
//     sandbox (leadsPrivate). A relative link with ".." changes what it
//     leads to when a directory holding it moves to another parent, so
//     such a move of a directory holding one fails with EXDEV too (the
//     copy makes each link again, judged by this rule); past a bound on
//     the entries looked at, such a move fails with EXDEV as well.
//
// What stays: the .git rule in the workspace and every other writable
// root, and the rules of existing repositories (gitguard's read-only
// binds). With GitWritable nothing here applies.

// inPrivate reports whether t lies in a private root: on the sandbox's
// private /tmp, or beneath a path CaptureOptions.Private admits.
func (c *Capture) inPrivate(t *target) bool {
	if c.onTmp(t) {
		return true
	}
	return t.path != "" && c.private != nil && c.private(t.path)
}

// movedOut is the rule of a rename or hard link (link) from o to t, and
// of its other half with RENAME_EXCHANGE (exchange): what arrives outside
// the private roots must bring no repository with it (rules 2 and 3 at
// the top of this file). It answers 0, EXDEV or EPERM, recording a
// refusal.
func (c *Capture) movedOut(o, t *target, link, exchange bool) unix.Errno {
	if c.gitWritable {
		return 0
	}
	if e := c.arrives(o, t, link); e != 0 || !exchange {
		return e
	}
	return c.arrives(t, o, link)
}

// arrives judges the entry src names arriving at dst's name.
func (c *Capture) arrives(src, dst *target, link bool) unix.Errno {
	if c.inPrivate(dst) || (src.dir < 0 && src.fd >= 0) {
		return 0 // into a private root; or an open file linked by descriptor (never a directory or a link)
	}
	st, err := src.stat()
	if err != nil {
		return 0 // the call fails on its own
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if link {
			return 0 // the kernel refuses to link a directory
		}
		if c.inPrivate(src) {
			return c.refused(RuleGit, src, unix.EXDEV) // rule 2: it may hold a repository
		}
		if filepath.Dir(src.path) != filepath.Dir(dst.path) && climbingLinks(src) {
			return c.refused(RuleGit, src, unix.EXDEV) // rule 3: its relative links would lead elsewhere
		}
	case unix.S_IFLNK:
		text, err := readlinkat(src.dir, src.base())
		if err != nil {
			return 0
		}
		if c.leadsPrivate(text, filepath.Dir(dst.path)) {
			return c.refused(RuleGit, dst, unix.EPERM) // rule 3
		}
	}
	return 0
}

// symlinkOut is rule 3 for symlink(2): a link with content text made at
// t.
func (c *Capture) symlinkOut(t *target, text string) unix.Errno {
	if c.gitWritable || c.inPrivate(t) || t.path == "" {
		return 0
	}
	if c.leadsPrivate(text, filepath.Dir(t.path)) {
		return c.refused(RuleGit, t, unix.EPERM)
	}
	return 0
}

// leadsPrivate reports whether a symbolic link with content text in the
// host directory dir leads, at any step of the path walk the host's
// kernel would make, into a private root (c.private), following the
// links it meets on the host as they are now. A part of the path that
// does not exist yet is taken as written (when it is made, a link there
// is judged by this rule, a directory leads where its name says).
func (c *Capture) leadsPrivate(text, dir string) bool {
	if c.private == nil {
		return false
	}
	cur := dir
	if strings.HasPrefix(text, "/") {
		cur = "/"
	}
	rest := strings.Split(text, "/")
	missing := false // a component was not there: the rest is walked as written
	for hops := 0; len(rest) > 0; {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur has no link in it: its parent is lexical
			if c.private(cur) {
				return true
			}
			continue
		}
		next := filepath.Join(cur, part)
		if c.private(next) {
			return true
		}
		var st unix.Stat_t
		if missing || unix.Lstat(next, &st) != nil {
			missing = true
			cur = next
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if hops++; hops > 40 {
				return true // a loop: refused rather than followed for ever
			}
			t, err := readlinkat(unix.AT_FDCWD, next)
			if err != nil {
				return true
			}
			if strings.HasPrefix(t, "/") {
				cur = "/"
			}
			rest = append(strings.Split(t, "/"), rest...)
			continue
		}
		cur = next
	}
	return false
}

// climbMax bounds climbingLinks' look at a moved directory: past it the
// move is refused (EXDEV: copied instead) rather than walked on.
const climbMax = 20000

// climbingLinks reports whether the directory t names holds, at any
// depth, a symbolic link whose content has a ".." component — one whose
// target depends on where the directory lies — or more than climbMax
// entries.
func climbingLinks(t *target) bool {
	fd, err := unix.Openat(t.dir, t.base(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // not a directory we can open: the rename fails on its own, or is of an empty name
	}
	seen := 0
	return walkClimbing(fd, &seen)
}

// walkClimbing is climbingLinks' walk of the directory open at fd, which
// it closes.
func walkClimbing(fd int, seen *int) bool {
	defer unix.Close(fd)
	names, err := dirNames(fd)
	if err != nil {
		return true // unreadable: cannot tell, so the move is copied
	}
	for _, n := range names {
		if *seen++; *seen > climbMax {
			return true
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if text, err := readlinkat(fd, n); err != nil || hasDotDot(text) {
				return true
			}
		case unix.S_IFDIR:
			sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return true
			}
			if walkClimbing(sub, seen) {
				return true
			}
		}
	}
	return false
}

// hasDotDot reports whether a link's content has a ".." component.
func hasDotDot(text string) bool {
	for _, p := range strings.Split(text, "/") {
		if p == ".." {
			return true
		}
	}
	return false
}

// dirNames lists the directory open at fd (but . and ..).
func dirNames(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
