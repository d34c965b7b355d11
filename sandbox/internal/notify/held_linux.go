package notify

import (
	"os"
	"sort"
	"strconv"
	"sync"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Held descriptors: why a checkpoint must know them, and how it does.
//
// Capture records a file's pre-image when a process opens it for writing,
// in the checkpoint open at that moment. Every write made later through
// that open file description — write(2) on the descriptor or on a copy of
// it (dup, fork, SCM_RIGHTS), or a store through a shared writable mapping
// made from it, even after every descriptor was closed — changes the file
// without another notification. A command the agent waits for ends
// before its checkpoint is sealed, so all of its writes land in the
// checkpoint that recorded the open. A background task or a stdio MCP
// server does not: a file it opened before a seal and writes after it
// would change in the next checkpoint with no pre-image there — not
// rewound, and taken by the checkpoint's watcher for the person's edit.
//
// So the capture keeps a registry of the regular files its command opened
// for writing (O_WRONLY or O_RDWR) that have a name in the workspace,
// shared by every command of a session (HeldFiles): an O_PATH descriptor
// of each inode, which pins neither the file's content nor its write
// access. At each seal the session asks Files for the files that some
// writable description still reaches, and records each one's state as
// the sealed checkpoint's post-image and, from the same read, as the next
// checkpoint's pre-image (checkpoint's "carry").
//
// The registry is complete: every writable description of a workspace
// file a confined process holds was made by an emulated open (openat2
// answers ENOSYS, io_uring is refused, a reopen through /proc/self/fd is
// itself a captured open), except one opened with O_TMPFILE, which has no
// name until a captured linkat gives it one — and that link registers it
// too. A description passed to another command of the session (a unix
// socket in the workspace) is the same description, in the same registry.
//
// A file is dropped once no writable open file description of its inode
// exists anywhere: the kernel counts them (i_writecount, which a shared
// writable mapping keeps up after its descriptor is closed, as does a
// descriptor in flight in an SCM_RIGHTS message), and a read lease
// (F_SETLEASE F_RDLCK) is granted only when that count is zero
// (fs/locks.c, check_conflicting_open). Where a lease cannot be asked
// (another owner's file without CAP_LEASE, a file system without leases)
// the file is kept: it costs a read per seal, never a missed write.
//
// Bounded: past maxHeldFiles files still open for writing, a further
// write-open is refused with EMFILE rather than allowed unaccounted for.

// maxHeldFiles bounds the registry: O_PATH descriptors the supervisor
// keeps. A tree rarely holds more than a few files open for writing at
// once; files closed are dropped before a refusal.
const maxHeldFiles = 4096

// HeldFiles is the registry of the workspace files the commands of one
// session opened for writing (see above). It is safe for concurrent use.
type HeldFiles struct {
	mu     sync.Mutex
	files  map[[2]uint64]*heldFile
	limit  int
	closed bool // Close was called: nothing more is kept
}

// heldFile is one inode opened for writing.
type heldFile struct {
	fd        int // O_PATH
	dev, ino  uint64
	workspace string   // the workspace of the capture that registered it
	names     []string // its workspace names when registered
}

// NewHeldFiles returns an empty registry.
func NewHeldFiles() *HeldFiles {
	limit := maxHeldFiles
	if TestHooks.HeldFilesLimit != 0 {
		limit = TestHooks.HeldFilesLimit
	}
	return &HeldFiles{files: map[[2]uint64]*heldFile{}, limit: limit}
}

// room makes room for one more file, dropping those no longer open for
// writing; EMFILE when the registry is still full.
func (h *HeldFiles) room() unix.Errno {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.files) < h.limit {
		return 0
	}
	h.pruneLocked()
	if len(h.files) < h.limit {
		return 0
	}
	return unix.EMFILE
}

// add registers fd's inode (st), a regular file just opened for writing
// (or named, for an O_TMPFILE file), with its workspace names, before
// the process gets the descriptor. The caller asked for room first
// (before making the change), under its capture's lock: another
// command's capture may have taken that room since, so add goes past the
// bound by at most one file per running command rather than refuse a
// change already made. It fails only when the file cannot be kept (no
// O_PATH descriptor): the descriptor must then not be handed out.
func (h *HeldFiles) add(fd int, st unix.Stat_t, workspace string, names []string) unix.Errno {
	if h == nil || st.Mode&unix.S_IFMT != unix.S_IFREG || len(names) == 0 {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0 // the session is over: nothing accounts for it any more
	}
	key := [2]uint64{st.Dev, st.Ino}
	if f, ok := h.files[key]; ok {
		for _, n := range names {
			if !containsString(f.names, n) {
				f.names = append(f.names, n)
			}
		}
		return 0
	}
	pin, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return unix.EPERM // it could not be accounted for: not handed out
	}
	h.files[key] = &heldFile{fd: pin, dev: st.Dev, ino: st.Ino, workspace: workspace,
		names: append([]string(nil), names...)}
	return 0
}

// Files returns the workspace names (canonical, sorted) of the files that
// a writable open file description still reaches, dropping the others.
// The caller stops the session's captures first (Capture.Quiesce), so
// that no file is being opened meanwhile. running says whether any
// command of the session still runs: with none, no description of
// theirs is left, and every file is dropped without asking.
func (h *HeldFiles) Files(running bool) []string {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !running {
		h.closeLocked()
		return nil
	}
	h.pruneLocked()
	var out []string
	for _, f := range h.files {
		for _, n := range f.currentNames() {
			if !containsString(out, n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Len is how many files the registry holds, pruned or not.
func (h *HeldFiles) Len() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.files)
}

// Close releases the registry's descriptors.
func (h *HeldFiles) Close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked()
	h.closed = true
}

func (h *HeldFiles) closeLocked() {
	for k, f := range h.files {
		unix.Close(f.fd)
		delete(h.files, k)
	}
}

// pruneLocked drops the files that no writable description reaches.
func (h *HeldFiles) pruneLocked() {
	for k, f := range h.files {
		if !openForWriting(f.fd) {
			unix.Close(f.fd)
			delete(h.files, k)
		}
	}
}

// openForWriting reports whether some open file description of pin's
// inode may write it: a read lease is refused (EAGAIN) exactly when one
// exists. Any other failure says nothing, and counts as yes.
func openForWriting(pin int) bool {
	var st unix.Stat_t
	if unix.Fstat(pin, &st) == nil && st.Nlink == 0 {
		// Removed: no name a rewind could restore. Only an O_TMPFILE file
		// can be named again, by a captured linkat, which registers it
		// again.
		return false
	}
	// O_NONBLOCK: an open that would have to break another holder's lease
	// fails (EWOULDBLOCK) instead of waiting for it.
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pin), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK); err != nil {
		return true
	}
	// The lease is given back at once; a writer's open that came in
	// between waited for it (or, opened O_NONBLOCK, got EWOULDBLOCK) only
	// for these two calls.
	unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	return false
}

// currentNames are f's names in its workspace now: the one the kernel
// gives its descriptor, the names it was registered with that still lead
// to it, and, for a file with more links than those, every name a walk of
// the workspace finds (HardLinkNames: links made since, by any name).
func (f *heldFile) currentNames() []string {
	var st unix.Stat_t
	if unix.Fstat(f.fd, &st) != nil || st.Nlink == 0 {
		return nil // removed: no name to restore
	}
	same := func(p string) bool {
		var s unix.Stat_t
		return unix.Lstat(p, &s) == nil && s.Dev == f.dev && s.Ino == f.ino
	}
	var out []string
	add := func(p string) {
		if paths.Within(p, f.workspace) && p != f.workspace && !containsString(out, p) {
			out = append(out, p)
		}
	}
	if p, ok := fdPath(f.fd); ok {
		add(p)
	}
	for _, n := range f.names {
		if same(n) {
			add(n)
		}
	}
	if uint64(len(out)) < uint64(st.Nlink) {
		fsys := inodeFS{FS: os.DirFS(f.workspace), path: "/proc/self/fd/" + strconv.Itoa(f.fd)}
		if rel, err := HardLinkNames(fsys, inodeName); err == nil {
			for _, r := range rel {
				if p := f.workspace + "/" + r; same(p) {
					add(p)
				}
			}
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

var (
	quietNrOnce sync.Once
	quietNr     map[int32]bool
)

// QuietCall reports whether a thread blocked in system call nr (state D)
// changes nothing until the session's captures are released
// (Capture.Quiesce): a captured call waits for its answer, which a
// quiesced capture does not give, and a clone, clone3 or vfork waits for
// its vfork child, which is stopped with the rest of the tree.
func QuietCall(nr int32) bool {
	quietNrOnce.Do(func() {
		quietNr = map[int32]bool{}
		for n := range captureNumbers() {
			quietNr[n] = true
		}
		for _, name := range []string{"clone", "clone3", "vfork"} {
			if n, err := seccomp.GetSyscallFromName(name); err == nil {
				quietNr[int32(n)] = true
			}
		}
	})
	return quietNr[nr]
}
