package spawn

/*
#include <stdlib.h>
#include "confine.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// A root of the sandbox's own: what a command sees at / is a skeleton of
// what the policy grants (issue 13: names-only listing of the workspace's
// parents).
//
// Why: Landlock's READ_DIR is hierarchical. Granting it on /, /tmp or
// $HOME so that a globber or `ls ..` can list the workspace's parents
// would let a command list every directory beneath them, secrets' names
// included; without it those listings fail with EACCES. So in every
// private mount namespace the sandbox makes, / becomes a read-only tmpfs
// (the skeleton, made once per Sandbox at New) holding only:
//   - the granted paths (system paths, read-only and read-write paths,
//     the workspace, the temp dir, the init's executable), each a clone of
//     that path's mounts in the namespace (recursive, so a read-write
//     root keeps its flags and every other tree stays read-only) bound at
//     its own canonical path: a directory onto an empty directory, a file
//     (or device) onto an empty file;
//   - the sandbox's /proc and /dev/pts, cloned the same way (without a
//     /proc of its own there is no skeleton: the host's cannot be bound
//     in whole), and /dev's fd, stdin, stdout, stderr links into /proc;
//   - the symlinks met on the way to a granted path (Debian's /bin, /lib,
//     /lib64 -> usr/...), recreated with the same target text, so the
//     granted name still resolves; never followed into ungranted places
//     (a symlink is recreated only where a granted path's walk met it,
//     and what it leads to is in the skeleton only if granted itself);
//   - plain empty directories between them.
// Listing /, /tmp or $HOME then shows only the names of granted things,
// and one Landlock rule (READ_DIR on the skeleton's root, by fd, made
// before any command exists) lets the command list them. Every clone is
// a mount of the one tmpfs superblock, so the rule names the root of
// every clone. Rules are hierarchical, so that READ_DIR also reaches into
// the bound trees: every directory rule of package sandbox's
// landlockRules already carries READ_DIR (RO, RW), the sandbox's /proc
// rule too; the one grant without it is the sandbox's devpts (llPty),
// which becomes listable: its entries are the numbers of this sandbox's own ptys, nothing of the
// host's. Granted files carry no directory right, which needs none.
//
// The switch (la_attach_root, rootfs_linux.c): the skeleton is stacked
// on the old /, the granted trees are bound into it, then
// pivot_root(".", ".") and umount2(".", MNT_DETACH) of the old root, as
// runc does: nothing of the host's tree stays mounted in the namespace,
// so /proc/self/root, ".." from / and every path lead only into the
// skeleton. The working directory is set after the switch (la_child's
// chdir). A root spawner thread (MountThread) switches its own root once:
// the Go code it runs afterwards opens no path (spawn works on fds and C
// memory; the cgroup joins and the namespace's identity come first).
//
// Without a private mount namespace nothing changes: the host's / stays,
// listing the parents is refused, and Enforcement's notes say so.

// Kinds of skeleton entries (la_make_root_skeleton) and of binds
// (la_attach_root).
const (
	skelDir  = 'd'
	skelFile = 'f'
	skelLink = 'l'
	skelTmp  = 'T' // the private /tmp's /tmp, /dev/shm, /var/tmp: mode 1777

	bindRO   = C.LA_BIND_RO   // a read-only grant: skipped when gone or changed
	bindRW   = C.LA_BIND_RW   // a read-write root: must be the inode recorded
	bindOwn  = C.LA_BIND_OWN  // the sandbox's /proc or /dev/pts: whatever is mounted there
	bindTmp  = C.LA_BIND_TMP  // the sandbox's private /tmp (tmpfs_linux.go)
	bindSkel = C.LA_BIND_SKEL // a directory of the skeleton itself, onto the private /tmp
)

// skelEntry is one node of the skeleton.
type skelEntry struct {
	path   string // absolute, canonical but for the last component (a link)
	kind   byte
	target string // kind skelLink: the link's text
}

// rootBind is one tree bound into the skeleton: a canonical path, and for
// host grants the identity it had when the sandbox was made.
type rootBind struct {
	path     string
	kind     int
	dev, ino uint64
	src      string // bindTmp: the private /tmp's directory cloned onto path
}

// rootPlan is a skeleton and what is bound into it.
type rootPlan struct {
	entries []skelEntry
	binds   []rootBind
	// tmp are the private /tmp's entries (paths relative to /tmp), the
	// mount points of the grants beneath it; tmpOff says why there is no
	// private /tmp ("" when there is one, or none was asked for).
	tmp    []skelEntry
	hasTmp bool
	tmpOff string
	have   map[string]byte // path -> kind, of entries
	stats  map[string]statResult
}

// errRootGranted: a granted path is / itself; a skeleton would hold
// the whole host.
var errRootGranted = errors.New("a granted path is / itself")

// add walks granted path p on the host and records what the skeleton
// needs for it: the directories and symlinks on the way, and the node the
// bind lands on. A path that does not exist is skipped (nil). kind is the
// bind's (bindRO, bindRW, bindOwn).
func (r *rootPlan) add(p string, kind int) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("granted path %q is not absolute", p)
	}
	cur := "/" // canonical: no symlink in it
	rest := strings.Split(strings.Trim(filepath.Clean(p), "/"), "/")
	if len(rest) == 1 && rest[0] == "" {
		return errRootGranted
	}
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur is canonical: its lexical parent is its parent
			continue
		}
		next := filepath.Join(cur, c)
		st, err := r.lstat(next)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return nil
			}
			return fmt.Errorf("%s: %w", next, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if hops++; hops > 40 {
				return fmt.Errorf("%s: %w", p, unix.ELOOP)
			}
			t, err := os.Readlink(next)
			if err != nil {
				return fmt.Errorf("%s: %w", next, err)
			}
			r.entry(skelEntry{path: next, kind: skelLink, target: t})
			// Go on from the link's target, as the kernel would.
			if filepath.IsAbs(t) {
				cur = "/"
			}
			rest = append(strings.Split(t, "/"), rest...)
			continue
		case unix.S_IFDIR:
			r.entry(skelEntry{path: next, kind: skelDir})
		default:
			if len(rest) > 0 && slices.ContainsFunc(rest, func(s string) bool { return s != "" && s != "." }) {
				return nil // a file in the middle: the path does not exist
			}
			r.entry(skelEntry{path: next, kind: skelFile})
		}
		cur = next
	}
	if cur == "/" {
		return errRootGranted
	}
	// The identity the walk saw (lstat, cached), not a second stat that
	// would follow a link swapped in meanwhile: the bind must be of the
	// inode the walk found not to be a link.
	st, err := r.lstat(cur)
	if err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	r.binds = append(r.binds, rootBind{path: cur, kind: kind, dev: st.Dev, ino: st.Ino})
	return nil
}

// lstat is unix.Lstat, once per path of a plan (the grants share most
// of their components).
func (r *rootPlan) lstat(p string) (unix.Stat_t, error) {
	if c, ok := r.stats[p]; ok {
		return c.st, c.err
	}
	var st unix.Stat_t
	err := unix.Lstat(p, &st)
	r.stats[p] = statResult{st, err}
	return st, err
}

type statResult struct {
	st  unix.Stat_t
	err error
}

// entry records e unless its path is already there.
func (r *rootPlan) entry(e skelEntry) {
	if _, ok := r.have[e.path]; ok {
		return
	}
	r.have[e.path] = e.kind
	r.entries = append(r.entries, e)
}

// finish orders the binds parents first and drops a bind at or beneath
// another (the outer recursive clone holds it, with its own mounts'
// flags: a read-write root beneath a read-only grant keeps its writable
// mount, made in the namespace before the skeleton).
func (r *rootPlan) finish() {
	slices.SortStableFunc(r.binds, func(a, b rootBind) int { return len(a.path) - len(b.path) })
	var kept []rootBind
	for _, b := range r.binds {
		// The private /tmp and the skeleton's directories bound into
		// it hold nothing of the host's: the grants beneath them are
		// bound onto them.
		if !slices.ContainsFunc(kept, func(k rootBind) bool {
			return k.kind != bindTmp && k.kind != bindSkel && pathWithin(b.path, k.path)
		}) {
			kept = append(kept, b)
		}
	}
	r.binds = kept
}

// pathWithin reports whether p is q or beneath it (both clean, absolute):
// paths.Within. la_beneath (spawn_linux.c) is its C twin, which the guard
// of internal/paths cannot read: it differs for q "/" only, which neither
// is handed (a grant of / is errRootGranted, a read-write / needs no
// mounts: NewMounts).
func pathWithin(p, q string) bool { return paths.Within(p, q) }

// planRoot lists the skeleton of the paths the Landlock ruleset grants
// (rules: the very list BuildRuleset is given, so the skeleton is never a
// second copy of the grants), with the sandbox's own /proc, and its
// devpts if it has one (ownPty). rw are the read-write roots as la_mount_setup
// made them writable, with their identities.
func planRoot(rules []Rule, ownPty bool, rw []mountRoot, privTmp bool) (*rootPlan, error) {
	r := &rootPlan{have: map[string]byte{}, stats: map[string]statResult{}}
	for _, l := range rules {
		if paths.Within(l.Path, "/proc") {
			continue // in the sandbox's /proc, bound below
		}
		kind := bindRO
		if l.Access == RW {
			kind = bindRW
		}
		if err := r.add(l.Path, kind); err != nil {
			return nil, err
		}
	}
	// A read-write root is checked to be the inode la_mount_setup made
	// writable; one not among them (none should be) is bound read-only.
	ids := map[string]mountRoot{}
	for _, m := range rw {
		ids[m.path] = m
	}
	for i, b := range r.binds {
		if b.kind != bindRW {
			continue
		}
		if m, ok := ids[b.path]; ok {
			r.binds[i].dev, r.binds[i].ino = m.dev, m.ino
		} else {
			r.binds[i].kind = bindRO
		}
	}
	r.entry(skelEntry{path: "/proc", kind: skelDir})
	r.binds = append(r.binds, rootBind{path: "/proc", kind: bindOwn})
	if _, ok := r.have["/dev"]; ok {
		// What every /dev has and programs name (bash's <(...) is
		// /dev/fd/63; `> /dev/stderr`): links into the process's own
		// /proc, as the host's /dev has them (bwrap --dev makes the same).
		for name, t := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
			"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
			r.entry(skelEntry{path: "/dev/" + name, kind: skelLink, target: t})
		}
	}
	if ownPty {
		// /dev/ptmx as containers have it: the instance's own ptmx, the
		// one beside the sandbox's /dev/pts (a bind of the host's ptmx
		// node would look for "pts" beside the node in the host's /dev).
		r.entry(skelEntry{path: "/dev", kind: skelDir})
		r.entry(skelEntry{path: "/dev/pts", kind: skelDir})
		if _, ok := r.have["/dev/ptmx"]; !ok {
			r.entry(skelEntry{path: "/dev/ptmx", kind: skelLink, target: "pts/ptmx"})
		}
		r.binds = append(r.binds, rootBind{path: "/dev/pts", kind: bindOwn})
	}
	if privTmp {
		r.planTmp()
	}
	r.finish()
	// The skeleton is made by each entry's full path (la_rskel_fn): no
	// entry may lie beneath anything but a directory entry.
	for _, e := range r.entries {
		if d := filepath.Dir(e.path); d != "/" && r.have[d] != skelDir {
			return nil, fmt.Errorf("internal: skeleton entry %s is not beneath a directory", e.path)
		}
	}
	for _, b := range r.binds {
		if k := r.have[b.path]; k != skelDir && k != skelFile {
			return nil, fmt.Errorf("internal: bind target %s is not in the skeleton", b.path)
		}
	}
	return r, nil
}

// planTmp binds the private /tmp onto the skeleton's /tmp, or says why
// not (r.tmpOff). What the skeleton holds directly in /tmp becomes an
// entry of the private /tmp, a mount point: a grant there is bound onto
// it, a directory on the way to deeper grants gets the skeleton's own
// read-only directory bound onto it (bindSkel), so that no directory of
// the writable /tmp lies on a grant's path but the mount points
// themselves, which no command can move or remove (tmpfs_linux.go).
func (r *rootPlan) planTmp() {
	switch k, ok := r.have["/tmp"]; {
	case ok && k != skelDir:
		r.tmpOff = "/tmp is not a directory on this machine"
		return
	case slices.ContainsFunc(r.binds, func(b rootBind) bool { return pathWithin("/tmp", b.path) }):
		r.tmpOff = "/tmp itself is granted"
		return
	}
	targets := map[string]bool{}
	for _, b := range r.binds {
		targets[b.path] = true
	}
	r.tmp = append(r.tmp, skelEntry{path: "/tmp", kind: skelTmp})
	for _, e := range r.entries {
		name, ok := paths.Rel("/tmp", e.path)
		if !ok || name == "." || strings.Contains(name, "/") {
			continue
		}
		r.tmp = append(r.tmp, skelEntry{path: "/tmp/" + name, kind: e.kind, target: e.target})
		if e.kind == skelDir && !targets[e.path] {
			r.binds = append(r.binds, rootBind{path: e.path, kind: bindSkel})
		}
	}
	r.entry(skelEntry{path: "/tmp", kind: skelDir})
	r.binds = append(r.binds, rootBind{path: "/tmp", kind: bindTmp, src: tmpDirs["/tmp"]})
	r.hasTmp = true
	// /dev/shm, /var/tmp and /run, the other places programs write
	// whatever TMPDIR says (POSIX shared memory and semaphores: glibc's
	// shm_open and sem_open, Python's multiprocessing; tools that keep
	// larger temporary files in /var/tmp; lock and pid files in /run,
	// which starts empty, as a container's does: the host's holds its
	// services' sockets): directories of the same tmpfs, so one bound
	// covers them all. Where a grant lies beneath one (a resolv.conf
	// linked into /run), or its parent is not a directory of the
	// skeleton, it is left as it is.
	for _, p := range []string{"/dev/shm", "/var/tmp", "/run"} {
		parent := filepath.Dir(p)
		if k, ok := r.have[parent]; ok && k != skelDir {
			continue
		}
		if _, ok := r.have[p]; ok || slices.ContainsFunc(r.binds, func(b rootBind) bool { return pathWithin(b.path, p) || pathWithin(p, b.path) }) {
			continue
		}
		if parent != "/" {
			r.entry(skelEntry{path: parent, kind: skelDir})
		}
		r.entry(skelEntry{path: p, kind: skelDir})
		r.tmp = append(r.tmp, skelEntry{path: "/" + tmpDirs[p], kind: skelTmp})
		r.binds = append(r.binds, rootBind{path: p, kind: bindTmp, src: tmpDirs[p]})
	}
}

// tmpDirs are the directories of the private tmpfs (relative to its
// root) bound at each path: the tmpfs's root itself is mounted nowhere,
// so none of them shows the others.
var tmpDirs = map[string]string{"/tmp": "tmp", "/dev/shm": "shm", "/var/tmp": "var-tmp", "/run": "run"}

// TmpfsPaths are the paths the private tmpfs is mounted on (tmpDirs),
// sorted.
func TmpfsPaths() []string {
	return slices.Sorted(maps.Keys(tmpDirs))
}

// AddRoot gives m's namespaces (m: the sandbox's mounts, nil with
// MountNone) a root of granted paths (see the top of this file), or says
// why not ("" when it did). rules are the very list BuildRuleset is
// given, so the skeleton is never a second copy of the grants; it needs
// the sandbox's /proc (AddProc) and, if the sandbox has one, its devpts
// (AddDevpts) first.
//
// tmpBytes > 0 asks for a private /tmp of at most that many bytes in it
// (tmpfs_linux.go); tmpOff says why there is none ("" when there is, or
// none was asked for). Without a root there is no private /tmp either.
func (m *Mounts) AddRoot(u User, ns MountMode, rules []Rule, tmpBytes int64) (off, tmpOff string) {
	switch {
	case ns == MountNone || m == nil:
		return "no private mount namespace to make one in", "no private mount namespace to make one in"
	case m.procSkeleton() < 0:
		// /proc/self/fd and the /dev links into it are what shells
		// and runtimes use; the host's /proc cannot be bound in whole
		// (every process's directory would be listable).
		return "no /proc of the sandbox's own to put in it", "no root skeleton of the sandbox's own to mount it in"
	}
	plan, err := planRoot(rules, m.devpts() >= 0, m.roots, tmpBytes > 0)
	if err != nil {
		return err.Error(), "no root skeleton of the sandbox's own to mount it in"
	}
	if plan.hasTmp {
		tfd, err := makeTmp(u, tmpBytes, plan.tmp)
		if err != nil {
			// The root goes on without it: /tmp then stays as the
			// skeleton has it, read-only.
			plan, err = planRoot(rules, m.devpts() >= 0, m.roots, false)
			if err != nil {
				return err.Error(), err.Error()
			}
			tmpOff = "making it: " + err.Error()
		} else {
			m.setTmp(tfd)
		}
	} else {
		tmpOff = plan.tmpOff
	}
	fd, err := makeRootSkeleton(u, plan.entries)
	if err != nil {
		if m.own.tmp_fd >= 0 {
			syscall.Close(int(m.own.tmp_fd))
			m.own.tmp_fd, m.tmpDev = -1, 0
		}
		return err.Error(), "no root skeleton of the sandbox's own to mount it in"
	}
	m.setRoot(fd, plan.binds)
	return "", tmpOff
}

// makeRootSkeleton makes the detached, read-only skeleton tmpfs with
// entries (parents first), as an unprivileged user in a throwaway user
// namespace.
func makeRootSkeleton(u User, entries []skelEntry) (int, error) {
	um := C.CString(fmt.Sprintf("%d %d 1", u.UID, u.UID))
	gm := C.CString(fmt.Sprintf("%d %d 1", u.GID, u.GID))
	defer C.free(unsafe.Pointer(um))
	defer C.free(unsafe.Pointer(gm))
	n := len(entries)
	ce := (*C.struct_la_skel_entry)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(C.struct_la_skel_entry{}))))
	defer C.free(unsafe.Pointer(ce))
	arr := unsafe.Slice(ce, n+1)
	for i, e := range entries {
		arr[i].path = C.CString(strings.TrimPrefix(e.path, "/"))
		defer C.free(unsafe.Pointer(arr[i].path))
		arr[i].kind = C.char(e.kind)
		if e.kind == skelLink {
			arr[i].target = C.CString(e.target)
			defer C.free(unsafe.Pointer(arr[i].target))
		}
	}
	fd := int(C.la_make_root_skeleton(cbool(!u.Root), um, gm, ce, C.int(n)))
	if fd < 0 {
		return -1, fmt.Errorf("making the root skeleton: %w", syscall.Errno(-fd))
	}
	return fd, nil
}

// addRootRule lets commands list the skeleton's directories: READ_DIR on
// its root, by fd (see the top of this file for why this grants nothing
// new inside the bound trees).
func addRootRule(rulesetFD int, handled uint64, skel int) error {
	return addFDRule(rulesetFD, handled, skel, Rule{"/ (the sandbox's root skeleton)", llReadDir})
}

// RootSkeleton is the sandbox's root skeleton, or -1.
func (c *Mounts) RootSkeleton() int {
	if c == nil {
		return -1
	}
	return int(c.own.root_skel_fd)
}

// setRoot hands c the root skeleton and the trees bound into it.
func (c *Mounts) setRoot(skel int, binds []rootBind) {
	c.own.root_skel_fd = C.int(skel)
	var st unix.Stat_t
	if unix.Fstat(skel, &st) == nil {
		c.rootDev = st.Dev
	}
	if len(binds) == 0 {
		return
	}
	arr := (*C.struct_la_root_bind)(C.calloc(C.size_t(len(binds)), C.size_t(unsafe.Sizeof(C.struct_la_root_bind{}))))
	cb := unsafe.Slice(arr, len(binds))
	for i := range cb {
		e := &cb[i]
		e.path = C.CString(binds[i].path)
		e.kind = C.int(binds[i].kind)
		e.dev, e.ino = C.uint64_t(binds[i].dev), C.uint64_t(binds[i].ino)
		if binds[i].src != "" {
			e.src = C.CString(binds[i].src)
		}
		c.bindPaths = append(c.bindPaths, binds[i].path)
	}
	c.own.root_binds, c.own.n_root_binds = arr, C.int(len(binds))
}

// freeRoot releases what setRoot allocated (the fd is closed with the
// others in free).
func (c *Mounts) freeRoot() {
	o := c.own
	if n := int(o.n_root_binds); n > 0 {
		for _, b := range unsafe.Slice(o.root_binds, n) {
			C.free(unsafe.Pointer(b.path))
			C.free(unsafe.Pointer(b.src)) // nil but for the private /tmp's
		}
		C.free(unsafe.Pointer(o.root_binds))
		o.root_binds, o.n_root_binds = nil, 0
	}
}

// ExecError is the error of an execve of path that failed with errno
// (the spawn's last step, or the PID-namespace init's report of it). Under
// the sandbox's root an ENOENT may mean that a program outside the grants
// is not there at all: when the host has it, the error says so as Landlock
// would have (EACCES), with what to do. m may be nil. It stats path, so
// it runs in the caller's root, not on a spawner thread (whose root may
// be the sandbox's).
func (m *Mounts) ExecError(path string, errno syscall.Errno) *Error {
	e := &Error{Step: stepName(C.LA_STEP_EXEC), Errno: errno}
	var st unix.Stat_t
	if m.RootSkeleton() >= 0 && e.Errno == syscall.ENOENT && unix.Stat(path, &st) == nil {
		e.Step += " (" + path + " is outside the paths the sandbox grants: allow it to be read)"
		e.Errno = syscall.EACCES
	}
	return e
}

// RootDevice is the root skeleton's device, or 0 (notify.Options.RootDev).
func (c *Mounts) RootDevice() uint64 {
	if c == nil {
		return 0
	}
	return c.rootDev
}
