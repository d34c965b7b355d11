package checkpoint

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// RewindOptions configure a rewind. Which of files and conversation to
// rewind is the caller's business: Rewind only ever restores files.
type RewindOptions struct {
	// Force rewinds even over conflicts: paths changed outside the agent
	// since it last touched them are overwritten (their content is kept
	// in the rewind's own checkpoint, so even that can be undone). It
	// never deletes a file the agent did not touch.
	Force bool
	// DryRun computes everything, writes nothing, and returns the
	// unified diff of what would change in RewindReport.Diff.
	DryRun bool
	// Paths restricts the rewind to these paths (workspace-relative or
	// absolute; a directory means everything recorded below it). Empty
	// means every path.
	Paths []string
}

// RewindReport says what a rewind did (or, in a dry run, would do).
type RewindReport struct {
	// To is the checkpoint rewound to.
	To int `json:"to"`
	// Checkpoint is the checkpoint that records this rewind (rewind to
	// Checkpoint-1 to undo it), or -1 when nothing was recorded: a dry
	// run, a refused rewind, or nothing to change.
	Checkpoint int `json:"checkpoint"`
	// UserTurn is the user turn that begins at checkpoint To (for a
	// conversation rewind: truncate the transcript before it), or -1
	// when To is not at the start of a user turn.
	UserTurn int `json:"user_turn"`
	// Changes are the paths changed, in the order of their paths.
	Changes []Change `json:"changes,omitempty"`
	// Conflicts are paths changed outside the agent since it touched
	// them. Without Force, any conflict refuses the whole rewind.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Kept are directories left in place (instead of removed) because
	// they hold files the agent did not create.
	Kept []string `json:"kept,omitempty"`
	// Skipped are paths that could not be restored, and why.
	Skipped []IgnoredPath `json:"skipped,omitempty"`
	// Diff is the unified diff of the changes (dry run only).
	Diff string `json:"diff,omitempty"`
}

// Change is one path a rewind changes.
type Change struct {
	Path string `json:"path"`
	// Action is "create", "delete", "modify", "mode" or "replace".
	Action string `json:"action"`
	From   Kind   `json:"from"`
	To     Kind   `json:"to"`
}

// Conflict is a path that a rewind would change although someone other
// than the agent changed it since the agent last did.
type Conflict struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// ErrConflict is wrapped by the error of a rewind refused because of
// conflicts (listed in the report).
var ErrConflict = errors.New("checkpoint: paths were changed outside the agent")

// Rewind restores the workspace of session sessionID to its state at
// checkpoint to: every path the agent changed after that checkpoint gets
// back its content, mode bits or symlink target; paths created after it
// are removed (a directory only when nothing the agent did not create is
// left in it) and paths deleted after it come back. Paths the agent did not
// touch are never touched.
//
// Before writing anything it checks every path against what the agent
// left (the post-image of its last checkpoint, and the external changes
// recorded since): a difference is a conflict, and any conflict refuses the
// whole rewind unless opts.Force. Every object is re-hashed before it is
// restored; a corrupt one fails the rewind before anything is written. The
// rewind is itself recorded as a new checkpoint (with the pre-images of
// what it overwrites), so rewinding to the checkpoint before it undoes it.
//
// The session must not be in use by a running Recorder (ErrSessionBusy);
// inside a session use Recorder.Rewind.
func Rewind(stateDir, sessionID string, to int, opts RewindOptions) (*RewindReport, error) {
	m := modeRewind
	if opts.DryRun {
		m = modeDryRun
	}
	r, err := open(stateDir, sessionID, "", nil, m)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	r.barrier.Lock()
	defer r.barrier.Unlock()
	return r.rewindLocked(to, opts, nil)
}

// Rewind rewinds this session (see the package-level Rewind). Changes
// still open are sealed first (reason "external"), so that they are
// undone too.
func (r *Recorder) Rewind(to int, opts RewindOptions) (*RewindReport, error) {
	// The session's writers hold still while files are compared and
	// restored; those still held open are carried past both seals.
	var held *heldFiles
	resume := func() {}
	if !opts.DryRun {
		held, resume = r.pauseWriters()
	}
	defer resume()
	r.barrier.Lock()
	defer r.barrier.Unlock()
	if r.isClosed() {
		return nil, ErrClosed
	}
	if !opts.DryRun && len(r.touched) > 0 {
		if _, err := r.sealLocked(SealInfo{Reason: ReasonExternal, UserTurn: -1}, "changes still open when a rewind started", nil, held); err != nil {
			return nil, err
		}
	}
	return r.rewindLocked(to, opts, held)
}

// pathPlan is what a rewind does to one path.
type pathPlan struct {
	path      string
	target    pstate // the state at the checkpoint rewound to
	expect    pstate // the state the agent (or a noticed change) left
	cur       pstate
	curData   []byte
	conflicts []string
	action    string
	kept      bool
	skip      string
	data      []byte // the target content, verified, when small
}

// rewindLocked rewinds; held are the files the session's writers still
// hold open (nil outside a session), carried past the rewind's own seal.
func (r *Recorder) rewindLocked(to int, opts RewindOptions, held *heldFiles) (*RewindReport, error) {
	h := r.h
	base := h.header.Base
	if to < base || to > h.last || (to > 0 && h.seal(to) == nil) {
		if to < base && to >= 0 {
			return nil, fmt.Errorf("checkpoint: checkpoint %d of session %s was removed by gc; the earliest left is %d: %w", to, r.id, base, ErrNotFound)
		}
		return nil, fmt.Errorf("checkpoint: session %s has no checkpoint %d (it has %d to %d): %w", r.id, to, base, h.last, ErrNotFound)
	}
	rep := &RewindReport{To: to, Checkpoint: -1, UserTurn: userTurnAt(h, to)}

	// Follow every path changed after `to`, checkpoint by checkpoint.
	plans := map[string]*pathPlan{}
	for n := to + 1; n <= h.last; n++ {
		if s := h.seal(n); s != nil {
			for _, e := range s.Entries {
				pp := plans[string(e.Path)]
				if pp == nil {
					pp = &pathPlan{path: string(e.Path), target: e.Pre, expect: e.Pre}
					plans[string(e.Path)] = pp
				}
				if !compatible(pp.expect, e.Pre) {
					pp.conflicts = append(pp.conflicts, fmt.Sprintf("changed outside the agent before checkpoint %d (the agent left %s, then found %s)", n, pp.expect, e.Pre))
				}
				pp.expect = e.Post
			}
		}
		for _, x := range h.after[n] {
			if pp := plans[string(x.Path)]; pp != nil && x.T == "ext" {
				why := fmt.Sprintf("changed outside the agent after checkpoint %d (noticed %s)", n, x.Time.Local().Format("2006-01-02 15:04:05"))
				if x.Detail != "" {
					why += ": " + x.Detail
				}
				pp.conflicts = append(pp.conflicts, why)
				pp.expect = *x.State
			}
		}
	}
	if len(plans) == 0 {
		return rep, nil
	}

	// Per-path restore: the chosen paths, plus the directories above them
	// that they need.
	sel, err := r.selectPaths(plans, opts.Paths)
	if err != nil {
		return rep, err
	}
	dirs := map[string]bool{}
	for _, p := range sel {
		pp := plans[p]
		pp.cur, pp.curData, err = readState(r.root, p, nil, r.opts.MaxFileSize, dirs)
		if err != nil {
			return rep, fmt.Errorf("checkpoint: rewind: reading %s: %w", p, err)
		}
		if pp.cur.same(pp.target) {
			continue // already as it was: nothing to undo, nothing lost
		}
		if !compatible(pp.expect, pp.cur) {
			pp.conflicts = append(pp.conflicts, fmt.Sprintf("changed since the agent last touched it (expected %s, found %s)", pp.expect, pp.cur))
		}
		switch {
		case pp.target.Kind == KindOther:
			pp.skip = "was a special file (pipe, socket or device), which is not restored"
		case pp.target.Kind == KindFile && pp.target.Unrecorded:
			pp.skip = "its content was not recorded (larger than the size cap)"
		}
		pp.action = actionOf(pp.cur, pp.target)
	}
	// A directory that must go but holds files the agent did not create
	// stays (target absent) or blocks the path (target file or link).
	inSel := map[string]bool{}
	for _, p := range sel {
		inSel[p] = true
	}
	for _, p := range sel {
		pp := plans[p]
		if pp.action == "" || pp.skip != "" || pp.cur.Kind != KindDir || pp.target.Kind == KindDir {
			continue
		}
		untracked, err := r.untrackedBelow(p, inSel, plans)
		if err != nil {
			return rep, err
		}
		if len(untracked) == 0 {
			continue
		}
		list := strings.Join(untracked[:min(5, len(untracked))], ", ")
		if len(untracked) > 5 {
			list += fmt.Sprintf(" and %d more", len(untracked)-5)
		}
		if pp.target.Kind == KindAbsent {
			pp.kept = true
			rep.Kept = append(rep.Kept, p)
		} else {
			pp.conflicts = append(pp.conflicts, "is now a directory holding files the agent did not create ("+list+"); they are never deleted")
			pp.skip = "a directory holding files the agent did not create is in the way"
		}
	}

	var acts []*pathPlan
	for _, p := range sel {
		pp := plans[p]
		if pp.action == "" {
			continue
		}
		for _, c := range pp.conflicts {
			rep.Conflicts = append(rep.Conflicts, Conflict{Path: p, Reason: c})
		}
		if pp.skip != "" {
			rep.Skipped = append(rep.Skipped, IgnoredPath{Path: p, Reason: pp.skip})
			continue
		}
		if pp.kept && pp.target.Kind == KindAbsent {
			continue
		}
		acts = append(acts, pp)
		rep.Changes = append(rep.Changes, Change{Path: p, Action: pp.action, From: pp.cur.Kind, To: pp.target.Kind})
	}

	// Every object is checked before anything is written.
	for _, pp := range acts {
		if pp.target.Kind != KindFile || pp.action == "mode" {
			continue
		}
		h, err := parseHash(pp.target.Hash)
		if err != nil {
			return rep, fmt.Errorf("checkpoint: rewind: %s: %w", pp.path, err)
		}
		if pp.target.Size < looseThreshold {
			pp.data, err = r.st.get(h)
		} else {
			err = r.st.verifyObject(h)
		}
		if err != nil {
			return rep, fmt.Errorf("checkpoint: rewind: cannot restore %s: %w; nothing was changed (run 'lite-agent verify')", pp.path, err)
		}
	}

	if opts.DryRun {
		rep.Diff = r.dryRunDiff(acts)
	}
	if len(rep.Conflicts) > 0 && !opts.Force {
		return rep, fmt.Errorf("%w: %d conflict(s); nothing was changed (use --force to overwrite them)", ErrConflict, len(rep.Conflicts))
	}
	if opts.DryRun || len(acts) == 0 {
		return rep, nil
	}

	// Record what the rewind overwrites, as a checkpoint of its own.
	paths := make([]string, len(acts))
	read := make(map[string]readResult, len(acts))
	for i, pp := range acts {
		paths[i] = pp.path
		read[pp.path] = readResult{state: pp.cur, data: pp.curData}
	}
	// Other sessions recording in this workspace learn that these paths
	// are about to change (peers.go), as for any other change.
	r.announcePeers(paths)
	if err := r.captureWith(paths, captureOpts{shallow: true, noIgnore: true, read: read}); err != nil {
		return rep, fmt.Errorf("checkpoint: rewind: recording the current state first: %w; nothing was changed", err)
	}
	// A rewind knows what it writes: its post-images are the targets.
	// Logged before writing, so that a rewind killed half-way is recovered
	// as the rewind's work (a path not reached yet is as it was, and so
	// no change at all).
	targets := make(map[string]pstate, len(acts))
	for _, pp := range acts {
		targets[pp.path] = pp.target
	}
	if err := r.setWrote(targets); err != nil {
		return rep, fmt.Errorf("checkpoint: rewind: %w; nothing was changed", err)
	}
	kept, applyErr := r.apply(acts)
	if applyErr != nil || len(kept) > 0 {
		// Not every path reached its target: let the seal read them.
		if err := r.forgetWrites(paths); err != nil && applyErr == nil {
			applyErr = err
		}
	}
	rep.Kept = append(rep.Kept, kept...)
	detail := ""
	if applyErr != nil {
		detail = "the rewind stopped part-way: " + applyErr.Error()
	}
	toCopy := to
	cp, err := r.sealLocked(SealInfo{Reason: ReasonRewind, UserTurn: -1}, detail, &toCopy, held)
	if err != nil && applyErr == nil {
		applyErr = err
	}
	if cp != nil {
		rep.Checkpoint = cp.Number
	}
	if applyErr != nil {
		return rep, fmt.Errorf("checkpoint: rewind to %d: %w", to, applyErr)
	}
	return rep, nil
}

// userTurnAt returns the user turn that begins at checkpoint n, or -1.
func userTurnAt(h *history, n int) int {
	s := h.seal(n)
	if s == nil {
		if n == 0 {
			return 0
		}
		return -1
	}
	if s.Reason == ReasonUserTurn && s.Turn != nil {
		return *s.Turn
	}
	return -1
}

// compatible reports whether a state the agent left and a state found
// later can be the same: equal, or one of them a file whose content was not
// recorded (too large) with the same size and mode.
func compatible(a, b pstate) bool {
	if a.same(b) {
		return true
	}
	if a.Kind == KindFile && b.Kind == KindFile && (a.Unrecorded || b.Unrecorded) {
		return a.Mode == b.Mode && a.Size == b.Size && (a.MTime == -1 || b.MTime == -1)
	}
	return false
}

func actionOf(cur, target pstate) string {
	switch {
	case cur.Kind == KindAbsent:
		return "create"
	case target.Kind == KindAbsent:
		return "delete"
	case cur.Kind != target.Kind:
		return "replace"
	case cur.Kind == KindDir:
		return "mode"
	case cur.Kind == KindFile && cur.Hash == target.Hash && !cur.Unrecorded:
		return "mode"
	}
	return "modify"
}

// selectPaths returns the sorted paths a rewind acts on.
func (r *Recorder) selectPaths(plans map[string]*pathPlan, want []string) ([]string, error) {
	var out []string
	if len(want) == 0 {
		for p := range plans {
			out = append(out, p)
		}
		sort.Strings(out)
		return out, nil
	}
	chosen := map[string]bool{}
	for _, w := range want {
		rel, err := relPath(r.workspace, w)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: rewind --path %s: %w", w, err)
		}
		n := 0
		for p := range plans {
			if paths.Within(p, rel) {
				chosen[p] = true
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("checkpoint: rewind --path %s: the agent changed nothing there after this checkpoint: %w", w, ErrNotFound)
		}
	}
	// The directories above a chosen path that the agent changed too:
	// restoring a file inside a removed directory needs the directory.
	for p := range chosen {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if pp := plans[d]; pp != nil && pp.target.Kind == KindDir {
				chosen[d] = true
			}
		}
	}
	for p := range chosen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// untrackedBelow lists what inside dir the rewind will not remove: paths
// outside the selection (never recorded, ignored, or not chosen), and
// recorded paths that existed at the checkpoint.
func (r *Recorder) untrackedBelow(dir string, inSel map[string]bool, plans map[string]*pathPlan) ([]string, error) {
	var out []string
	var walk func(d string) error
	walk = func(d string) error {
		f, err := r.root.Open(d)
		if err != nil {
			return fmt.Errorf("checkpoint: rewind: %w", err)
		}
		ents, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return fmt.Errorf("checkpoint: rewind: %w", err)
		}
		for _, e := range ents {
			p := d + "/" + e.Name()
			pp := plans[p]
			if !inSel[p] || pp == nil || pp.target.Kind != KindAbsent {
				out = append(out, p)
				continue
			}
			if e.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dir); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// applier changes the workspace for a rewind. Every path goes through
// os.Root (nothing resolves outside the workspace); the directories in
// which files are restored are opened once as roots of their own, so that
// creating and renaming a file there does not walk the whole path again.
type applier struct {
	r     *Recorder
	real  map[string]bool     // directories checked to be real directories
	roots map[string]*os.Root // directory -> a root opened on it
}

func (a *applier) close() {
	for _, rt := range a.roots {
		rt.Close()
	}
}

// dir returns a root opened on directory d ("." is the workspace).
func (a *applier) dir(d string) (*os.Root, error) {
	if d == "." {
		return a.r.root, nil
	}
	if rt := a.roots[d]; rt != nil {
		return rt, nil
	}
	rt, err := a.r.root.OpenRoot(d)
	if err != nil {
		return nil, err
	}
	a.roots[d] = rt
	return rt, nil
}

// apply changes the workspace: removals deepest first, then creations and
// contents shallowest first, then directory modes deepest first (a
// read-only directory must be filled before it is made read-only).
func (r *Recorder) apply(acts []*pathPlan) (kept []string, err error) {
	a := &applier{r: r, real: map[string]bool{}, roots: map[string]*os.Root{}}
	defer a.close()
	byDepth := append([]*pathPlan(nil), acts...)
	sort.SliceStable(byDepth, func(i, j int) bool { return depth(byDepth[i].path) > depth(byDepth[j].path) })
	for _, pp := range byDepth {
		// Same type: a file or link is renamed over, a directory keeps
		// its entries. Otherwise what is there goes first.
		if pp.cur.Kind == KindAbsent || pp.cur.Kind == pp.target.Kind {
			continue
		}
		if err := r.root.Remove(pp.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if pp.cur.Kind == KindDir && pp.target.Kind == KindAbsent {
				// Something the agent did not create appeared in it
				// meanwhile: it stays.
				kept = append(kept, pp.path)
				continue
			}
			return kept, fmt.Errorf("removing %s: %w", pp.path, err)
		}
	}
	crashPoint("rewind")
	for i := len(byDepth) - 1; i >= 0; i-- {
		pp := byDepth[i]
		switch pp.target.Kind {
		case KindDir:
			if pp.cur.Kind != KindDir {
				if err := a.ensureParent(pp.path); err != nil {
					return kept, fmt.Errorf("restoring %s: %w", pp.path, err)
				}
				if err := r.root.Mkdir(pp.path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
					return kept, fmt.Errorf("creating directory %s: %w", pp.path, err)
				}
			}
		case KindFile:
			if pp.action == "mode" {
				if err := r.root.Chmod(pp.path, goMode(pp.target.Mode)); err != nil {
					return kept, fmt.Errorf("changing the mode of %s: %w", pp.path, err)
				}
				continue
			}
			if err := a.writeFile(pp); err != nil {
				return kept, err
			}
		case KindSymlink:
			if err := a.placeSymlink(pp); err != nil {
				return kept, err
			}
		}
	}
	for _, pp := range byDepth {
		if pp.target.Kind == KindDir {
			if err := r.root.Chmod(pp.path, goMode(pp.target.Mode)); err != nil {
				return kept, fmt.Errorf("changing the mode of %s: %w", pp.path, err)
			}
		}
	}
	return kept, nil
}

// ensureParent creates the missing directories above p (a forced rewind
// of a path whose directory someone removed). Every one must be a real
// directory: writing through a symlink that someone put in place of a
// directory would change some other path.
func (a *applier) ensureParent(p string) error {
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		d := p[:i]
		if a.real[d] {
			continue
		}
		fi, err := a.r.root.Lstat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := a.r.root.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case err != nil:
			return err
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory (%s)", d, fi.Mode().Type())
		}
		a.real[d] = true
	}
	return nil
}

// rewindTempMark is in the name of every temporary file a rewind creates
// (".NAME.lite-agent-rewind-" and 12 hex digits), so that the ones a crash
// leaves are recognised and removed when the session is recovered.
const rewindTempMark = ".lite-agent-rewind-"

func tmpName(base string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf(".%s%s%x", base, rewindTempMark, b)
}

// writeFile restores a file. Over a file with no other hard link, the
// verified content is written in place (as the edit tools write: the inode,
// and so an editor's open file, stays), which costs a fraction of creating
// a file on most file systems. Otherwise — a new path, a large object
// streamed from the store, a file with other links (which must keep their
// content: they are other paths) — a temporary file beside it is written,
// verified, given its mode and renamed over the path. A crash half-way
// through a rewind leaves its own checkpoint unsealed, with the pre-image
// of every path it was changing: it is recovered like any other.
func (a *applier) writeFile(pp *pathPlan) error {
	if err := a.ensureParent(pp.path); err != nil {
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	d, err := a.dir(path.Dir(pp.path))
	if err != nil {
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	base := path.Base(pp.path)
	if pp.cur.Kind == KindFile && (pp.data != nil || pp.target.Size == 0) {
		if done, err := writeInPlace(d, base, pp.data, goMode(pp.target.Mode)); done || err != nil {
			if err != nil {
				return fmt.Errorf("restoring %s: %w", pp.path, err)
			}
			return nil
		}
	}
	tmp := tmpName(base)
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			d.Remove(tmp)
		}
	}()
	if pp.data != nil || pp.target.Size == 0 {
		if _, err := f.Write(pp.data); err != nil {
			return fmt.Errorf("restoring %s: %w", pp.path, err)
		}
	} else {
		h, err := parseHash(pp.target.Hash)
		if err != nil {
			return err
		}
		// Verified while copied: a corrupt object never reaches the path.
		if _, err := a.r.st.copyTo(h, f); err != nil {
			return fmt.Errorf("restoring %s: %w", pp.path, err)
		}
	}
	if err := f.Chmod(goMode(pp.target.Mode)); err != nil {
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	ok = true
	if err := d.Rename(tmp, base); err != nil {
		d.Remove(tmp)
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	return nil
}

// writeInPlace overwrites the regular file name in d with data and sets
// its mode. done is false, with nothing changed, when the file cannot be
// written in place (another hard link, not writable, not a regular file).
func writeInPlace(d *os.Root, name string, data []byte, mode fs.FileMode) (done bool, err error) {
	f, err := d.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return false, nil
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false, nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink != 1 {
		return false, nil
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return true, err
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return true, err
	}
	if fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != mode {
		if err := f.Chmod(mode); err != nil {
			return true, err
		}
	}
	return true, nil
}

func (a *applier) placeSymlink(pp *pathPlan) error {
	if err := a.ensureParent(pp.path); err != nil {
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	d, err := a.dir(path.Dir(pp.path))
	if err != nil {
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	base := path.Base(pp.path)
	tmp := tmpName(base)
	if err := d.Symlink(string(pp.target.Target), tmp); err != nil {
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	if err := d.Rename(tmp, base); err != nil {
		d.Remove(tmp)
		return fmt.Errorf("restoring %s: %w", pp.path, err)
	}
	return nil
}

// dryRunDiff renders the changes as a unified diff from the current state
// (a/) to the checkpoint's (b/).
func (r *Recorder) dryRunDiff(acts []*pathPlan) string {
	var w strings.Builder
	for _, pp := range acts {
		a, b := "a/"+pp.path, "b/"+pp.path
		fmt.Fprintf(&w, "diff --lite-agent %s %s\n", a, b)
		cur, tgt := pp.cur, pp.target
		switch {
		case cur.Kind == KindAbsent:
			fmt.Fprintf(&w, "new %s mode %s\n", kindWord(tgt.Kind), gitMode(tgt))
			a = "/dev/null"
		case tgt.Kind == KindAbsent:
			fmt.Fprintf(&w, "deleted %s mode %s\n", kindWord(cur.Kind), gitMode(cur))
			b = "/dev/null"
		case gitMode(cur) != gitMode(tgt):
			fmt.Fprintf(&w, "old mode %s\nnew mode %s\n", gitMode(cur), gitMode(tgt))
		}
		var ac, bc []byte
		aText, bText := true, true
		switch cur.Kind {
		case KindFile:
			if pp.curData == nil && cur.Size > 0 {
				aText = false
			}
			ac = pp.curData
		case KindSymlink:
			ac = []byte(cur.Target)
		}
		switch tgt.Kind {
		case KindFile:
			if pp.data == nil && tgt.Size > 0 {
				bText = false
			}
			bc = pp.data
		case KindSymlink:
			bc = []byte(tgt.Target)
		}
		if cur.Kind == KindFile && tgt.Kind == KindFile && cur.Hash == tgt.Hash {
			continue
		}
		if !aText || !bText {
			fmt.Fprintf(&w, "Files %s and %s differ (too large to show)\n", a, b)
			continue
		}
		if isBinary(ac) || isBinary(bc) {
			fmt.Fprintf(&w, "Binary files %s and %s differ\n", a, b)
			continue
		}
		unifiedDiff(&w, a, b, ac, bc)
	}
	return w.String()
}

func kindWord(k Kind) string {
	switch k {
	case KindDir:
		return "directory"
	case KindSymlink:
		return "symlink"
	}
	return "file"
}

// gitMode renders a state's type and permission bits the way git diff
// headers do.
func gitMode(s pstate) string {
	switch s.Kind {
	case KindDir:
		return fmt.Sprintf("040%03o", s.Mode&0o777)
	case KindSymlink:
		return "120000"
	case KindFile:
		return fmt.Sprintf("100%03o", s.Mode&0o777)
	}
	return "000000"
}
