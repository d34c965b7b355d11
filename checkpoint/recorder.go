package checkpoint

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Options configure a Recorder. The zero value (or nil) gives the defaults.
type Options struct {
	// IgnoreFiles are the per-directory ignore files read, gitignore
	// syntax. nil means DefaultIgnoreFiles; an empty non-nil slice reads
	// none.
	IgnoreFiles []string
	// Ignore adds gitignore-style patterns, relative to the workspace root;
	// they win over the ignore files.
	Ignore []string
	// MaxFileSize is the size from which a file's content is not stored:
	// the path is named as not covered, and a rewind leaves it alone. Zero
	// means DefaultMaxFileSize; negative means no cap.
	MaxFileSize int64
	// SyncEachSnapshot fsyncs every pre-image (object and record) before
	// RecordSnapshot returns. Without it pre-images survive a crash of
	// the process (they are written before RecordSnapshot returns) and are
	// made durable against power loss at the next Seal.
	SyncEachSnapshot bool
	// MaxStoreSize caps the whole store (every session's checkpoints) in
	// bytes; see cap.go for how. Zero means DefaultMaxStoreSize; negative
	// means no cap.
	MaxStoreSize int64
	// OnStoreCap, if set, is told when the cap removes history or is
	// passed: a message for the person.
	OnStoreCap func(msg string)
	// Writers, if set, are the session's processes that may change the
	// workspace while a checkpoint is sealed (background tasks, MCP
	// servers): each seal pauses them, and carries the files they still
	// hold open for writing into the next checkpoint (see "Writers that
	// outlive a checkpoint" in doc.go). sandbox.Writers implements it.
	Writers Writers
}

// Writers are processes that may change the workspace at any time,
// between tool calls included. Pause holds them still for a seal and
// returns the files (absolute paths in the workspace) that they may
// still write through a descriptor or a mapping opened earlier; paused is
// false when they could not all be stopped, so that those files may be
// written while they are read. Nothing of theirs changes the workspace
// until resume is called.
type Writers interface {
	Pause() (held []string, paused bool, resume func())
}

// DefaultMaxFileSize is the default Options.MaxFileSize: 64 MiB.
const DefaultMaxFileSize = 64 << 20

// DefaultIgnoreFiles are the ignore files read by default.
var DefaultIgnoreFiles = []string{".gitignore", ".lite-agent-ignore"}

// Why a checkpoint was sealed.
const (
	// ReasonUserTurn: the state in which user turn SealInfo.UserTurn
	// begins. Always recorded, even with no change, so that every user
	// turn is a rewind target.
	ReasonUserTurn = "user_turn"
	// ReasonToolCall: the changes of one tool call.
	ReasonToolCall = "tool_call"
	// ReasonRewind: a rewind (recorded so that it can be undone).
	ReasonRewind = "rewind"
	// ReasonExternal: changes recorded outside a tool call (a background
	// task, a capturer between calls, changes still open when an
	// in-session rewind starts).
	ReasonExternal = "external"
	// ReasonSessionEnd: changes still open when the Recorder was closed.
	ReasonSessionEnd = "session_end"
	// ReasonRecovered: changes of a checkpoint that was never sealed
	// (the process was killed), sealed when the session was next opened.
	ReasonRecovered = "recovered"
)

// SealInfo says why a checkpoint is sealed.
type SealInfo struct {
	// Reason is one of the Reason constants.
	Reason string
	// ToolCallID and ToolName name the tool call whose changes these are
	// (ReasonToolCall).
	ToolCallID string
	ToolName   string
	// UserTurn is the index (from 0) of the user turn: the turn that
	// begins in this state (ReasonUserTurn) or the turn the tool call
	// belongs to. -1 when unknown.
	UserTurn int
}

// Pre-images kept in memory until the seal, to count changed lines: files
// up to keepSmall bytes, at most keepBudget bytes per checkpoint (the rest
// are read back from the store).
const (
	keepSmall  = 256 << 10
	keepBudget = 16 << 20
)

// ErrClosed is returned by the methods of a closed Recorder.
var ErrClosed = errors.New("checkpoint: recorder is closed")

type mode int

const (
	modeRecord mode = iota // Open: create or continue a session
	modeRewind             // package-level Rewind: an existing session
	modeDryRun             // a dry run: an existing session, writes nothing
)

// Recorder records the pre-images of one session's changes into
// checkpoints. It is safe for concurrent use: RecordSnapshot may be called
// from any goroutine (edit tools, a capturer watching a sandboxed process,
// the watcher) while a tool runs.
type Recorder struct {
	stateDir  string
	id        string
	workspace string
	opts      Options
	mode      mode
	root      *os.Root
	st        *store
	log       *logFile
	storeLock *os.File
	storeCap  capState
	ign       *ignorer

	// barrier: captures and NoteExternal hold it shared for their whole
	// duration; Seal, Rewind and Close hold it exclusively, so that a
	// checkpoint is never sealed halfway through a capture.
	barrier sync.RWMutex

	mu       sync.Mutex // guards what follows
	closed   bool
	h        *history
	touched  map[string]*touch
	order    []string
	ignored  map[string]string // not covered in the open checkpoint: name -> why
	inflight map[string]*flight
	known    map[string]pstate // the last known state of every tracked path
	// knownSorted is known's paths in order, for NoteExternal's look
	// beneath a directory; rebuilt when known has gained paths (none is
	// ever removed, so its length says whether it is current).
	knownSorted []string
	wrotePre    bool // pre records exist for the open checkpoint
	keptBytes   int  // bytes of touch.preData in the open checkpoint
	// reported are the touched paths with a reported post-image
	// (touch.wrote): what forgetWrites looks through for every
	// announced change, so the set and not every touched path.
	reported map[string]struct{}
	// foreign: paths of the open checkpoint that a process other than
	// the agent's command changed during the call (RecordForeignChange),
	// with what the sandbox said about the writer.
	foreign map[string]string
	// peers is the workspace's journal of announced changes, shared with
	// the other sessions recording there (peers.go); peersFrom is where
	// the open checkpoint began in it (-1: nothing announced yet).
	peers     *os.File
	peersFrom int64
	recovered *record // dry run: the in-memory seal of a crashed tail

	watchMu sync.Mutex
	watch   *watcher
}

// touch is a path recorded in the open checkpoint.
type touch struct {
	pre pstate
	// preData is the pre-image's content when small, kept to count
	// changed lines at the seal without reading the store back.
	preData []byte
	// shallow: a directory recorded without its contents (a rewind's own
	// record). Every other directory is recorded with its whole subtree.
	shallow bool
	// wrote is the post-image an in-process writer reported (RecordWrite):
	// what the agent itself wrote. At the seal a file that differs from it
	// was changed by someone else during the call. nil when nothing was
	// reported, or when a later change was announced (RecordSnapshot of
	// the path again, or of a directory above it) that may have changed
	// it since.
	wrote *pstate
}

// flight is a capture in progress: concurrent callers for the same path
// wait for it.
type flight struct {
	done chan struct{}
	err  error
}

// Open opens the recorder of session sessionID in workspace, creating the
// session's checkpoint log under stateDir/checkpoints or continuing it (a
// resumed session continues its numbering). A checkpoint left unsealed by
// a crash is sealed first, with reason "recovered". stateDir must be
// outside the workspace. The session is locked until Close.
func Open(stateDir, sessionID, workspace string, opts *Options) (*Recorder, error) {
	return open(stateDir, sessionID, workspace, opts, modeRecord)
}

func open(stateDir, sessionID, workspace string, opts *Options, m mode) (_ *Recorder, err error) {
	if err := checkSessionID(sessionID); err != nil {
		return nil, err
	}
	if stateDir == "" {
		return nil, errors.New("checkpoint: no state directory")
	}
	stateDir, err = filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	r := &Recorder{stateDir: stateDir, id: sessionID, mode: m,
		touched: map[string]*touch{}, reported: map[string]struct{}{}, ignored: map[string]string{}, inflight: map[string]*flight{}, known: map[string]pstate{},
		foreign: map[string]string{}, peersFrom: -1}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.IgnoreFiles == nil {
		r.opts.IgnoreFiles = DefaultIgnoreFiles
	}
	if r.opts.MaxFileSize == 0 {
		r.opts.MaxFileSize = DefaultMaxFileSize
	}
	if m == modeRecord {
		if r.workspace, err = realDir(workspace); err != nil {
			return nil, err
		}
		if err := checkOutside(stateDir, r.workspace); err != nil {
			return nil, err
		}
	}
	if m == modeRecord {
		r.capAtOpen()
	}
	if r.storeLock, err = lockStore(stateDir, false, true); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	lp := logPath(stateDir, sessionID)
	if r.log, err = openLogFile(lp, m == modeRecord, m != modeDryRun); err != nil {
		return nil, err
	}
	fi, err := r.log.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if fi.Size() == 0 {
		if m != modeRecord {
			return nil, fmt.Errorf("checkpoint: no checkpoints recorded for session %s: %w", sessionID, ErrNotFound)
		}
		hdr := record{T: "session", Version: logVersion, Session: sessionID, Workspace: r.workspace, Time: nowFunc().UTC()}
		if err := r.log.append(hdr); err != nil {
			return nil, err
		}
		if err := r.log.syncCreated(); err != nil {
			return nil, err
		}
		r.h = &history{path: lp, header: hdr, seals: []*record{nil}, after: map[int][]record{}}
	} else {
		if r.h, err = readHistory(lp); err != nil {
			return nil, err
		}
		if m == modeRecord && r.h.header.Workspace != r.workspace {
			return nil, fmt.Errorf("checkpoint: session %s belongs to workspace %s, not %s", sessionID, r.h.header.Workspace, r.workspace)
		}
		if m != modeRecord {
			r.workspace = r.h.header.Workspace
			if _, err := os.Stat(r.workspace); err != nil {
				return nil, fmt.Errorf("checkpoint: the workspace of session %s: %w", sessionID, err)
			}
		}
		if r.h.torn && m != modeDryRun {
			if err := r.log.truncate(r.h.validLen); err != nil {
				return nil, err
			}
		}
	}
	if r.root, err = os.OpenRoot(r.workspace); err != nil {
		return nil, fmt.Errorf("checkpoint: opening the workspace: %w", err)
	}
	if m != modeDryRun {
		// A rewind announces what it overwrites too (peers.go).
		if r.peers, err = openPeers(stateDir, r.workspace); err != nil {
			return nil, err
		}
	}
	r.st = newStore(filepath.Join(ckptDir(stateDir), "objects"))
	if m == modeRecord {
		r.st.ceiling = r.capCeiling
	}
	r.ign = newIgnorer(r.workspace, r.opts.IgnoreFiles, r.opts.Ignore, storeObject(r.st))
	r.ign.replay(r.h) // a continued session: what existed at its start
	r.known, r.knownSorted = knownStates(r.h), nil
	if len(r.h.tail) > 0 {
		if err := r.recoverTail(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func realDir(ws string) (string, error) {
	if ws == "" {
		return "", errors.New("checkpoint: no workspace")
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", fmt.Errorf("checkpoint: workspace %s: %w", ws, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("checkpoint: workspace %s: %w", ws, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("checkpoint: workspace %s: %w", ws, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("checkpoint: workspace %s is not a directory", ws)
	}
	return real, nil
}

// checkOutside refuses a state directory inside the workspace: anything the
// agent runs could then rewrite the history it is judged by.
func checkOutside(stateDir, workspace string) error {
	if paths.Within(paths.Real(stateDir), workspace) {
		return fmt.Errorf("checkpoint: the state directory %s is inside the workspace %s; it must be outside, so that nothing the agent runs can rewrite the checkpoints", stateDir, workspace)
	}
	return nil
}

// knownStates returns the last known state of every path the session has
// recorded: its post-image, or a later external observation.
func knownStates(h *history) map[string]pstate {
	known := map[string]pstate{}
	for n := 0; n <= h.last; n++ {
		if s := h.seal(n); s != nil {
			for _, e := range s.Entries {
				known[string(e.Path)] = e.Post
			}
		}
		for _, x := range h.after[n] {
			if x.T == "ext" && x.State != nil {
				known[string(x.Path)] = *x.State
			}
		}
	}
	return known
}

// recoverTail seals the pre records of a checkpoint that was never sealed
// (the process died), with the current state as post-image. In a dry run
// the seal is kept in memory only.
func (r *Recorder) recoverTail() error {
	var missing []string
	for _, pr := range r.h.tail {
		if _, ok := r.touched[string(pr.Path)]; ok {
			continue
		}
		st := *pr.State
		// A pre-image whose object did not reach the store (possible
		// only after a power loss) cannot be restored: keep the path,
		// marked unrecorded, so that it is reported, not guessed.
		if st.Kind == KindFile && !st.Unrecorded {
			h, err := parseHash(st.Hash)
			if err == nil {
				err = r.st.verifyObject(h)
			}
			if err != nil {
				missing = append(missing, string(pr.Path))
				st = pstate{Kind: KindFile, Mode: st.Mode, Size: st.Size, Unrecorded: true, MTime: -1}
			}
		}
		r.touched[string(pr.Path)] = &touch{pre: st, shallow: pr.Shallow}
		r.order = append(r.order, string(pr.Path))
	}
	// What the agent reported writing before it died (RecordWrite): those
	// post-images are proven; the others are not (see sealLocked).
	for _, pr := range r.h.tailPost {
		t := r.touched[string(pr.Path)]
		if pr.CP != r.h.tailCP || t == nil {
			continue
		}
		if pr.State != nil {
			r.reported[string(pr.Path)] = struct{}{}
		} else {
			delete(r.reported, string(pr.Path))
		}
		t.wrote = pr.State
	}
	r.wrotePre = true
	if r.mode != modeDryRun {
		r.removeRewindTemps(r.order)
	}
	detail := fmt.Sprintf("the session stopped before checkpoint %d was sealed; its post-images were taken when it was recovered", r.h.tailCP)
	if len(missing) > 0 {
		detail += fmt.Sprintf("; the pre-images of %s were lost", strings.Join(missing, ", "))
	}
	_, err := r.sealLocked(SealInfo{Reason: ReasonRecovered, UserTurn: -1}, detail, nil, nil)
	return err
}

// removeRewindTemps removes the temporary files a rewind killed half-way
// left beside the paths it was restoring (named by tmpName, so nothing
// else can match).
func (r *Recorder) removeRewindTemps(paths []string) {
	byDir := map[string][]string{}
	for _, p := range paths {
		byDir[path.Dir(p)] = append(byDir[path.Dir(p)], "."+path.Base(p)+rewindTempMark)
	}
	for dir, prefixes := range byDir {
		d, err := r.root.Open(dir)
		if err != nil {
			continue
		}
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, n := range names {
			for _, pre := range prefixes {
				if strings.HasPrefix(n, pre) && len(n) == len(pre)+12 {
					r.root.Remove(path.Join(dir, n))
				}
			}
		}
	}
}

// openNumber is the number the open checkpoint will get.
func (r *Recorder) openNumber() int {
	if r.h.sealedAny {
		return r.h.last + 1
	}
	return 1
}

// RecordSnapshot records the pre-image of path (workspace-relative, or
// absolute inside the workspace) into the open checkpoint, the first time
// the path is touched in it. The caller changes the path after this
// returns; when it returns an error, the change must not be made.
//
// A directory is recorded with its whole subtree (a rename or removal of
// the directory changes everything below it); a symlink is recorded as a
// link, and its target too when that is inside the workspace (writing
// through the link changes the target). Ignored paths are not recorded
// but named in the checkpoint. It implements tools.SnapshotRecorder.
func (r *Recorder) RecordSnapshot(p string) error {
	rel, look, ok := plainLook(r.workspace, p)
	link := look.link
	if !ok {
		var err error
		if rel, err = relPath(r.workspace, p); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		fi, err := r.root.Lstat(rel)
		link = err == nil && fi.Mode()&fs.ModeSymlink != 0
	}
	rels := []string{rel}
	if link {
		// Writing through a link changes its target: record the target
		// too when it is inside the workspace (even when the link itself
		// was recorded already).
		if real, err := filepath.EvalSymlinks(filepath.Join(r.workspace, rel)); err == nil {
			if t, ok := paths.Rel(r.workspace, real); ok && t != "." {
				rels = append(rels, filepath.ToSlash(t))
			}
		}
	}
	r.barrier.RLock()
	defer r.barrier.RUnlock()
	if r.isClosed() {
		return ErrClosed
	}
	// Other sessions in this workspace learn of the change before it
	// happens (peers.go): announced even when the path is recorded
	// already, since each call may be another write.
	r.announcePeers(rels)
	co := captureOpts{}
	if look.seen {
		co.look = &look
	}
	if err := r.captureWith(rels, co); err != nil {
		return err
	}
	return r.forgetWrites(rels)
}

// forgetWrites drops the reported post-images of rels and of everything
// recorded below them: a change is announced that may alter them after
// what the agent reported, so the state at the seal decides again. The
// log says so too, so that a recovery does not hold the agent to a
// post-image it has since changed.
func (r *Recorder) forgetWrites(rels []string) error {
	r.mu.Lock()
	var recs []record
	if len(r.reported) > 0 {
		cp := r.openNumber()
		for p := range r.reported {
			for _, rel := range rels {
				if paths.Within(p, rel) {
					r.touched[p].wrote = nil
					delete(r.reported, p)
					recs = append(recs, record{T: "post", CP: cp, Path: exactName(p)})
					break
				}
			}
		}
	}
	r.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	return r.log.append(recs...)
}

// RecordWrite tells the recorder what an in-process writer (the edit
// tools, through tools.WriteRecorder) has just written to path, which it
// recorded with RecordSnapshot before writing: content is the file's whole
// new content. It is the path's post-image in the open checkpoint — what
// the agent wrote, however the file looks at the seal. When the file at
// the seal differs from it, someone else (the user, another session)
// wrote it during the call: the seal keeps the agent's post-image and
// records the other writer's version as an external change, so that a
// rewind across it reports a conflict instead of discarding that edit.
// Without RecordWrite the seal takes the file as it finds it.
//
// A path not recorded in the open checkpoint (ignored, or never passed to
// RecordSnapshot) and a file over the size cap are left to the seal.
func (r *Recorder) RecordWrite(p string, content []byte) error {
	rel, err := relPath(r.workspace, p)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// Written through a symlink: the content went to its target.
	if fi, err := r.root.Lstat(rel); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(filepath.Join(r.workspace, rel))
		if err != nil {
			return nil
		}
		t, ok := paths.Rel(r.workspace, real)
		if !ok || t == "." {
			return nil
		}
		rel = filepath.ToSlash(t)
	}
	if r.opts.MaxFileSize >= 0 && int64(len(content)) > r.opts.MaxFileSize {
		return nil
	}
	r.barrier.RLock()
	defer r.barrier.RUnlock()
	if r.isClosed() {
		return ErrClosed
	}
	if r.mode != modeRecord {
		return nil
	}
	post := pstate{Kind: KindFile, Size: int64(len(content)), Hash: Hash(sha256.Sum256(content)).String()}
	// The mode is not in what the writer reports: it is read right after
	// the write (an existing file keeps its mode; a new one gets the
	// writer's under the umask).
	fi, err := r.root.Lstat(rel)
	r.mu.Lock()
	t := r.touched[rel]
	switch {
	case t == nil:
		r.mu.Unlock()
		return nil
	case err == nil && fi.Mode().IsRegular():
		post.Mode = unixMode(fi.Mode())
	case t.pre.Kind == KindFile:
		post.Mode = t.pre.Mode
	default:
		post.Mode = 0o644
	}
	r.mu.Unlock()
	return r.setWrote(map[string]pstate{rel: post})
}

// setWrote sets the reported post-images of touched paths and logs them,
// so that a checkpoint recovered after a crash knows what the agent wrote
// too.
func (r *Recorder) setWrote(states map[string]pstate) error {
	r.mu.Lock()
	cp := r.openNumber()
	var recs []record
	for p, st := range states {
		t := r.touched[p]
		if t == nil {
			continue
		}
		r.reported[p] = struct{}{}
		t.wrote = &st
		recs = append(recs, record{T: "post", CP: cp, Path: exactName(p), State: &st})
	}
	r.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	return r.log.append(recs...)
}

// RecordForeignChange tells the recorder that a process other than the
// agent's command — the user, another session — changed path while the
// command was running (sandbox.Command.ForeignChange, wired through
// tools.ForeignChangeRecorder); why names the writer. The path's state at
// the seal then cannot be proven to be the agent's: unless the agent
// reported what it wrote (RecordWrite), the seal records it as an external
// change, so that a rewind across it reports a conflict naming the path,
// and a forced rewind keeps that version in its own checkpoint. It lasts
// until the seal: a later announcement does not void it (the other
// writer's bytes may still be there).
func (r *Recorder) RecordForeignChange(p, why string) {
	rel, err := relPath(r.workspace, p)
	if err != nil {
		return
	}
	r.barrier.RLock()
	defer r.barrier.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.mode != modeRecord {
		return
	}
	if _, ok := r.foreign[rel]; !ok {
		r.foreign[rel] = why
	}
}

func (r *Recorder) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

type captured struct {
	path    string
	state   pstate
	data    []byte
	shallow bool
	f       *flight
}

// captureOpts tune a capture. RecordSnapshot uses the zero value; a rewind
// records exactly the paths it overwrites, whatever the rules say.
type captureOpts struct {
	shallow  bool // directories without their contents, symlinks without targets
	noIgnore bool // record ignored paths too, and files over the size cap
	// carry: the paths are carried into a checkpoint just opened, whether
	// they will change or not: one the rules ignore is left out, and none
	// is named as not covered (a checkpoint where it does change says so)
	carry bool
	// read holds states (and small contents) the caller has just read, so
	// that they are not read twice.
	read map[string]readResult
	// look, if set, is what the caller has just seen of one path's last
	// component (RecordSnapshot's plainLook): its lstat is not taken again.
	look *lookHint
}

// lookHint is what an lstat of rel said: absent, or there and whether a
// directory or a symlink. seen false: nothing was learnt.
type lookHint struct {
	rel                       string
	seen, absent, isDir, link bool
}

type readResult struct {
	state pstate
	data  []byte
	// stored: the content is in the store already (data may be nil).
	stored bool
}

// captureWith records the pre-images of rels (and, unless shallow, of
// everything below the directories among them) as one batch: objects
// first, then one write of the pre records. Callers hold the barrier.
func (r *Recorder) captureWith(rels []string, co captureOpts) error {
	shallow := co.shallow
	dirs := map[string]bool{}
	maxSize := r.opts.MaxFileSize
	if co.noIgnore {
		maxSize = -1
	}
	var batch []captured
	var waits []*flight
	var walkErr error
	var visit func(rel string)
	visit = func(rel string) {
		if walkErr != nil {
			return
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			walkErr = ErrClosed
			return
		}
		if _, ok := r.touched[rel]; ok {
			r.mu.Unlock()
			return
		}
		if f := r.inflight[rel]; f != nil {
			r.mu.Unlock()
			waits = append(waits, f)
			return
		}
		// Decided now, with the flight registered under the same lock: a
		// directory above recorded before this point was walked without
		// seeing rel (or rel would be touched or in flight), so rel did
		// not exist then. One recorded after this point deferred rel to
		// this flight, and says nothing of it: asking later would take
		// an existing file for a new one, and a rewind would delete it.
		createdSince := r.ancestorTouchedLocked(rel)
		f := &flight{done: make(chan struct{})}
		r.inflight[rel] = f
		r.mu.Unlock()

		release := func() {
			r.mu.Lock()
			delete(r.inflight, rel)
			r.mu.Unlock()
			close(f.done)
		}
		var isDir bool
		var err error
		if l := co.look; l != nil && l.rel == rel {
			isDir = l.isDir
			if l.absent {
				err = fs.ErrNotExist
			}
		} else {
			var fi fs.FileInfo
			fi, err = r.root.Lstat(rel)
			isDir = err == nil && fi.IsDir()
		}
		// Ignore rules skip only what the session creates (ignore.go).
		if name, why, skip := r.ign.skip(rel, isDir, absent(err) || createdSince); skip && !co.noIgnore {
			release()
			if !co.carry {
				r.noteIgnored(name, why)
			}
			return
		}
		var st pstate
		var data []byte
		rr, known := co.read[rel]
		known = known && !rr.state.Unrecorded && (rr.state.Kind != KindFile || rr.data != nil || rr.state.Size == 0 || rr.stored)
		if createdSince {
			// A directory above was recorded in this checkpoint, with
			// everything then below it: this path was not there when
			// the checkpoint began (it was created, or moved in, since).
			st = pstate{Kind: KindAbsent}
		} else if absent(err) && !known {
			// Just looked at: nothing there (what readState would find,
			// without looking again). A creation's pre-image.
			st = pstate{Kind: KindAbsent}
		} else if known {
			st, data = rr.state, rr.data
			if st.Kind == KindFile && !rr.stored {
				if _, err := r.st.put(data); err != nil {
					release()
					walkErr = fmt.Errorf("checkpoint: recording %s: %w", rel, err)
					return
				}
			}
		} else if st, data, err = readState(r.root, rel, r.st, maxSize, dirs); err != nil {
			release()
			walkErr = fmt.Errorf("checkpoint: recording %s: %w", rel, err)
			return
		}
		switch {
		case co.carry:
		case st.Unrecorded:
			r.noteIgnored(rel, fmt.Sprintf("larger than the %d-byte size cap", r.opts.MaxFileSize))
		case st.Kind == KindOther:
			r.noteIgnored(rel, "not a regular file, directory or symlink")
		}
		if len(data) > keepSmall {
			data = nil
		}
		batch = append(batch, captured{path: rel, state: st, data: data, shallow: shallow, f: f})
		if st.Kind == KindDir && !shallow {
			d, err := r.root.Open(rel)
			if err != nil {
				walkErr = fmt.Errorf("checkpoint: recording %s: %w", rel, err)
				return
			}
			names, err := d.Readdirnames(-1)
			d.Close()
			if err != nil {
				walkErr = fmt.Errorf("checkpoint: recording %s: %w", rel, err)
				return
			}
			sort.Strings(names)
			for _, n := range names {
				visit(rel + "/" + n)
			}
		}
	}
	for _, rel := range rels {
		visit(rel)
	}

	if walkErr == nil && len(batch) > 0 {
		walkErr = r.commitPre(batch)
	}
	r.mu.Lock()
	for _, c := range batch {
		delete(r.inflight, c.path)
		if walkErr == nil {
			if r.keptBytes+len(c.data) > keepBudget {
				c.data = nil
			}
			r.keptBytes += len(c.data)
			r.touched[c.path] = &touch{pre: c.state, preData: c.data, shallow: c.shallow}
			r.ign.record(c.path, c.state)
			r.order = append(r.order, c.path)
		} else {
			c.f.err = walkErr
		}
	}
	r.mu.Unlock()
	for _, c := range batch {
		close(c.f.done)
	}
	if walkErr != nil {
		return walkErr
	}
	for _, f := range waits {
		<-f.done
		if f.err != nil {
			return f.err
		}
	}
	return nil
}

// commitPre writes the pre records of a batch (and an ext record for every
// path found changed since its last known state: an edit made outside the
// agent that the watcher had not reported yet).
func (r *Recorder) commitPre(batch []captured) error {
	r.mu.Lock()
	cp := r.openNumber()
	after := r.h.last
	now := nowFunc().UTC()
	var recs, exts []record
	for _, c := range batch {
		if k, ok := r.known[c.path]; ok && !k.same(c.state) {
			st := c.state
			exts = append(exts, record{T: "ext", CP: after, Time: now, Path: exactName(c.path), State: &st, Detail: "noticed when the agent recorded it"})
		}
	}
	r.mu.Unlock()
	recs = append(recs, exts...)
	for _, c := range batch {
		st := c.state
		rec := record{T: "pre", CP: cp, Path: exactName(c.path), State: &st}
		rec.Shallow = c.shallow
		recs = append(recs, rec)
	}
	if r.mode == modeDryRun {
		return errors.New("checkpoint: a dry run records nothing")
	}
	if r.opts.SyncEachSnapshot {
		if err := r.st.sync(); err != nil {
			return err
		}
	}
	crashPoint("pre")
	if err := r.log.append(recs...); err != nil {
		return err
	}
	if r.opts.SyncEachSnapshot {
		if err := r.log.sync(); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.wrotePre = true
	for _, x := range exts {
		r.h.after[x.CP] = append(r.h.after[x.CP], x)
		r.known[string(x.Path)] = *x.State
	}
	r.mu.Unlock()
	return nil
}

// ancestorTouchedLocked reports whether a directory above rel was
// recorded, with its subtree, in the open checkpoint (r.mu held).
func (r *Recorder) ancestorTouchedLocked(rel string) bool {
	for i := len(rel) - 1; i > 0; i-- {
		if rel[i] == '/' {
			if t, ok := r.touched[rel[:i]]; ok && !t.shallow {
				return true
			}
		}
	}
	return false
}

func (r *Recorder) noteIgnored(name, why string) {
	r.mu.Lock()
	if _, ok := r.ignored[name]; !ok {
		r.ignored[name] = why
	}
	r.mu.Unlock()
}

// Seal closes the open checkpoint and returns it. For every path touched
// since the previous seal it records the post-image (type, mode, content
// hash as it is now) beside the pre-image, so that a later rewind can tell
// whether someone changed the path after the agent; paths whose state did
// not change are dropped. With nothing changed, Seal records nothing and
// returns nil, nil — except for ReasonUserTurn, which is always recorded so
// that every user turn is a rewind target.
func (r *Recorder) Seal(info SealInfo) (*Checkpoint, error) {
	switch info.Reason {
	case ReasonUserTurn, ReasonToolCall, ReasonExternal:
	case ReasonRewind, ReasonRecovered, ReasonSessionEnd:
		return nil, fmt.Errorf("checkpoint: Seal: reason %q is reserved for the recorder itself", info.Reason)
	default:
		return nil, fmt.Errorf("checkpoint: Seal: unknown reason %q (use user_turn, tool_call or external)", info.Reason)
	}
	held, resume := r.pauseWriters()
	defer resume()
	r.barrier.Lock()
	defer r.barrier.Unlock()
	if r.isClosed() {
		return nil, ErrClosed
	}
	defer r.checkCapAfterSeal()
	return r.sealLocked(info, "", nil, held)
}

// heldFiles are the workspace files the session's writers may still
// write (Writers.Pause), workspace-relative, and whether the writers
// were all stopped while they were read.
type heldFiles struct {
	rels   []string
	paused bool
}

// pauseWriters pauses the session's writers for a seal (Options.Writers).
// The caller calls resume after releasing the barrier, never before
// taking it: a writer's captured call, which the pause waits for, takes
// the barrier.
func (r *Recorder) pauseWriters() (*heldFiles, func()) {
	if r.opts.Writers == nil || r.mode != modeRecord {
		return nil, func() {}
	}
	abs, paused, resume := r.opts.Writers.Pause()
	h := &heldFiles{paused: paused}
	for _, p := range abs {
		if rel, err := relPath(r.workspace, p); err == nil {
			h.rels = append(h.rels, rel)
		}
	}
	return h, resume
}

// sealLocked seals the open checkpoint. Callers hold the barrier
// exclusively. rewindTo is set for a rewind's own checkpoint. held (nil:
// none) are the files the session's writers may still write: each is
// carried into the next checkpoint (carry).
func (r *Recorder) sealLocked(info SealInfo, detail string, rewindTo *int, held *heldFiles) (*Checkpoint, error) {
	carried := map[string]readResult{}
	cp, err := r.sealOpen(info, detail, rewindTo, held, carried)
	if err != nil || held == nil || len(held.rels) == 0 {
		return cp, err
	}
	crashPoint("carry")
	if err := r.carry(held.rels, carried); err != nil {
		return cp, err
	}
	return cp, nil
}

// carry records the pre-images of held files in the checkpoint just
// opened: a writer may write them without another captured call. A file
// the seal has just read takes that very state (read holds it, its
// content already stored): the sealed checkpoint's post-image and the
// next one's pre-image are one read, so that rewinding to the sealed
// checkpoint and undoing the next one give the same file. Callers hold
// the barrier exclusively, with the writers paused.
func (r *Recorder) carry(rels []string, read map[string]readResult) error {
	r.announcePeers(rels)
	if err := r.captureWith(rels, captureOpts{read: read, carry: true}); err != nil {
		return fmt.Errorf("checkpoint: recording the files still held open for writing: %w", err)
	}
	return nil
}

// sealOpen is sealLocked's seal proper. For the files in held that the
// open checkpoint touched, it stores the content it reads for the
// post-image and leaves that read in carried.
func (r *Recorder) sealOpen(info SealInfo, detail string, rewindTo *int, held *heldFiles, carried map[string]readResult) (*Checkpoint, error) {
	if len(r.touched) == 0 && len(r.ignored) == 0 && info.Reason != ReasonUserTurn {
		return nil, nil
	}
	number := r.openNumber()
	isHeld := map[string]bool{}
	if held != nil {
		for _, p := range held.rels {
			isHeld[p] = true
		}
		if !held.paused && len(held.rels) > 0 {
			note := fmt.Sprintf("%d file(s) held open for writing by a process that could not be paused were read while it ran (%s): their state at this checkpoint may mix writes made during the seal",
				len(held.rels), strings.Join(held.rels[:min(3, len(held.rels))], ", "))
			if detail != "" {
				detail += "; "
			}
			detail += note
		}
	}

	// Everything now below a recorded directory that was not recorded did
	// not exist when the directory was recorded (a recorded directory is
	// recorded with its whole subtree): its pre-image is "absent".
	ordered := append([]string(nil), r.order...)
	sort.Strings(ordered)
	var walked []string
	for _, p := range ordered {
		t := r.touched[p]
		if t.shallow {
			continue
		}
		if len(walked) > 0 && paths.Within(p, walked[len(walked)-1]) {
			continue
		}
		fi, err := r.root.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		walked = append(walked, p)
		if err := r.discover(p); err != nil {
			return nil, err
		}
	}

	// Paths another session announced while this checkpoint was open
	// are not proven to be this session's, like a foreign write.
	for p, why := range r.peerChanges() {
		if _, ok := r.foreign[p]; !ok {
			r.foreign[p] = why
		}
	}
	var entries []entry
	var exts []record // other writers' versions of paths the agent changed
	post := map[string]pstate{}
	dirs := map[string]bool{}
	for _, p := range r.order {
		t := r.touched[p]
		var store *store
		if isHeld[p] && r.mode != modeDryRun {
			store = r.st // the next checkpoint's pre-image (carry)
		}
		now, data, err := readState(r.root, p, store, r.opts.MaxFileSize, dirs)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: sealing: reading %s: %w", p, err)
		}
		if store != nil {
			carried[p] = readResult{state: now, data: data, stored: true}
		}
		post[p] = now
		// What the agent left: what it reported writing, or else the
		// path as it is now — except when that cannot be the agent's.
		// Only content can be lost to a rewind: a path now absent comes
		// back, and a directory keeps what the agent did not create.
		agent, doubt := now, ""
		content := (now.Kind == KindFile || now.Kind == KindSymlink) && !t.pre.same(now)
		switch {
		case content && t.wrote != nil && !t.wrote.same(now):
			// Someone else wrote the file after the agent did (the
			// user, another session): the agent's post-image is what
			// it wrote, and the other version is an external change.
			agent, data = *t.wrote, nil
			doubt = "it differs from what the agent wrote: changed by someone else during the tool call"
			if info.Reason == ReasonRecovered {
				// Or the agent's own write, torn by the crash.
				doubt = "the session stopped during a tool call; it differs from what the agent reported writing, so it cannot be proven to be the agent's"
			}
		case content && t.wrote == nil && r.foreign[p] != "":
			// The sandbox saw another process write the path while
			// the command ran (RecordForeignChange): what is there
			// cannot be proven to be the agent's, exactly as after a
			// crash — the same external record, the same conflict.
			doubt = "changed by someone else during the tool call: " + r.foreign[p]
		case content && t.wrote == nil && info.Reason == ReasonRecovered:
			// The process died during the call; since then anyone may
			// have written the path, and nothing says what the agent
			// wrote. A rewind must not discard it unasked.
			doubt = "the session stopped during a tool call and this content cannot be proven to be the agent's"
		}
		if doubt != "" {
			st := now
			if now.Kind == KindFile && !now.Unrecorded && r.mode != modeDryRun {
				// Keep the other writer's version, as NoteExternal does:
				// a forced rewind can then still be undone.
				if stored, _, err := readState(r.root, p, r.st, r.opts.MaxFileSize, nil); err == nil {
					st = stored
				}
			}
			post[p] = st
			exts = append(exts, record{T: "ext", Time: nowFunc().UTC(), Path: exactName(p), State: &st, Detail: doubt})
		}
		if t.pre.same(agent) {
			continue
		}
		now = agent
		if now.Kind == KindDir && !t.shallow {
			if name, why, ign := r.ign.skip(p, true, t.pre.Kind == KindAbsent); ign {
				r.ignored[name] = why
				continue
			}
		}
		if now.Unrecorded {
			r.ignored[p] = fmt.Sprintf("larger than the %d-byte size cap", r.opts.MaxFileSize)
		}
		e := entry{Path: exactName(p), Pre: t.pre, Post: now}
		r.countLines(&e, t.preData, data)
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })

	var recs []record
	if r.wrotePre && (len(entries) == 0 && len(r.ignored) == 0) {
		// The open checkpoint's pre records describe nothing that
		// changed: tell readers to forget them.
		recs = append(recs, record{T: "reset", CP: number})
	}
	if len(entries) == 0 && len(r.ignored) == 0 && info.Reason != ReasonUserTurn {
		if len(recs) > 0 && r.mode != modeDryRun {
			if err := r.log.append(recs...); err != nil {
				return nil, err
			}
		}
		r.finishSeal(post)
		return nil, nil
	}
	if !r.h.sealedAny && len(entries) == 0 && len(r.ignored) == 0 {
		// The first user turn of a session, before any change: this is
		// checkpoint 0 itself.
		number = 0
	}
	turn := info.UserTurn
	rec := record{T: "seal", CP: number, Time: nowFunc().UTC(), Reason: info.Reason, ToolID: info.ToolCallID, Tool: info.ToolName,
		Turn: &turn, RewindTo: rewindTo, Entries: entries, Detail: detail}
	for name, why := range r.ignored {
		rec.Ignored = append(rec.Ignored, IgnoredPath{Path: name, Reason: why})
	}
	sort.Slice(rec.Ignored, func(i, j int) bool { return rec.Ignored[i].Path < rec.Ignored[j].Path })
	recs = append(recs, rec)
	// The other writers' versions, noticed after this checkpoint: a
	// rewind past it meets them as conflicts.
	for i := range exts {
		exts[i].CP = number
	}
	recs = append(recs, exts...)

	if r.mode == modeDryRun {
		r.recovered = &rec
	} else {
		// Objects before the record that refers to them; the record
		// durable before Seal returns.
		if err := r.st.sync(); err != nil {
			return nil, err
		}
		crashPoint("seal")
		if err := r.log.append(recs...); err != nil {
			return nil, err
		}
		if err := r.log.sync(); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	for len(r.h.seals) <= number {
		r.h.seals = append(r.h.seals, nil)
	}
	r.h.seals[number] = &rec
	r.h.after[number] = append(r.h.after[number], exts...)
	if number > r.h.last || !r.h.sealedAny {
		r.h.last = number
	}
	r.h.sealedAny = true
	r.h.tail = nil
	r.mu.Unlock()
	r.finishSeal(post)
	cp := checkpointOf(r.h, number)
	return &cp, nil
}

// finishSeal resets the open checkpoint and updates the known states.
func (r *Recorder) finishSeal(post map[string]pstate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, s := range post {
		r.known[p] = s
	}
	r.touched = map[string]*touch{}
	r.order = nil
	r.ignored = map[string]string{}
	r.foreign = map[string]string{}
	r.peersFrom = -1
	r.wrotePre = false
	r.keptBytes = 0
	r.reported = map[string]struct{}{}
}

// discover adds, with pre-image "absent", every path below dir that is not
// recorded in the open checkpoint.
func (r *Recorder) discover(dir string) error {
	d, err := r.root.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: sealing: %w", err)
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("checkpoint: sealing: %w", err)
	}
	for _, e := range ents {
		p := dir + "/" + e.Name()
		isDir := e.IsDir()
		_, recorded := r.touched[p]
		if name, why, ign := r.ign.skip(p, isDir, !recorded); ign && !recorded {
			r.ignored[name] = why
			continue
		}
		if !recorded {
			r.touched[p] = &touch{pre: pstate{Kind: KindAbsent}}
			r.order = append(r.order, p)
		}
		if isDir {
			if err := r.discover(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// countLines fills the changed-line counts of e when both sides are text
// small enough to diff. post is the current content (nil when too large).
func (r *Recorder) countLines(e *entry, pre, post []byte) {
	if e.Pre.Kind != KindFile && e.Post.Kind != KindFile {
		return
	}
	switch {
	case e.Pre.Kind == KindFile && pre != nil:
	case e.Pre.Kind == KindFile && !e.Pre.Unrecorded && e.Pre.Size <= keepForDiff:
		h, err := parseHash(e.Pre.Hash)
		if err != nil {
			return
		}
		if pre, err = r.st.get(h); err != nil {
			return
		}
	case e.Pre.Kind != KindFile:
		pre = []byte{}
	default:
		return
	}
	switch {
	case e.Post.Kind == KindFile && post != nil:
	case e.Post.Kind != KindFile:
		post = []byte{}
	default:
		return
	}
	if isBinary(pre) || isBinary(post) {
		return
	}
	e.Added, e.Removed = diffCounts(pre, post)
	e.Lines = true
}

// NoteExternal records changes noticed outside the agent (the watcher
// calls it; so may a capturer that sees another program's writes). For
// every path given — and, for a directory, every tracked path below it —
// that the session has recorded before and that is not being recorded in
// the open checkpoint, the current state is compared with the last known
// one; a difference is recorded as an external change (with the content,
// so that nothing the user wrote is lost even to a forced rewind). A
// rewind that would undo the agent's changes across such a change reports
// it as a conflict. Paths touched in the open checkpoint are the agent's:
// events carry no process id, so a path the agent recorded in the open
// checkpoint is taken to be changed by the agent.
func (r *Recorder) NoteExternal(changed []string) {
	r.barrier.RLock()
	defer r.barrier.RUnlock()
	if r.isClosed() || r.mode != modeRecord {
		return
	}
	rels := make([]string, 0, len(changed))
	for _, p := range changed {
		if rel, ok := plainRel(r.workspace, p); ok {
			rels = append(rels, rel)
		} else if rel, err := relPath(r.workspace, p); err == nil {
			rels = append(rels, rel)
		}
	}
	type cand struct {
		path  string
		known pstate
	}
	var cands []cand
	seen := map[string]bool{}
	r.mu.Lock()
	add := func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		k, ok := r.known[p]
		if !ok {
			return
		}
		if _, busy := r.touched[p]; busy {
			return
		}
		if _, busy := r.inflight[p]; busy {
			return
		}
		cands = append(cands, cand{p, k})
	}
	// A directory moved or removed takes tracked paths below it along,
	// with no event of their own: check those too.
	if len(r.knownSorted) != len(r.known) {
		r.knownSorted = r.knownSorted[:0]
		for p := range r.known {
			r.knownSorted = append(r.knownSorted, p)
		}
		sort.Strings(r.knownSorted)
	}
	tracked := r.knownSorted
	for _, rel := range rels {
		add(rel)
		// The paths beneath rel sort together, from rel+"/" on.
		for i := sort.SearchStrings(tracked, rel+"/"); i < len(tracked) && paths.Beneath(tracked[i], rel); i++ {
			add(tracked[i])
		}
	}
	r.mu.Unlock()
	sort.Slice(cands, func(i, j int) bool { return cands[i].path < cands[j].path })

	var recs []record
	for _, c := range cands {
		now, _, err := readState(r.root, c.path, nil, r.opts.MaxFileSize, nil)
		if err != nil || c.known.same(now) {
			continue
		}
		if now.Kind == KindFile && !now.Unrecorded {
			// Keep the user's version: a forced rewind can then still
			// be undone.
			if stored, _, err := readState(r.root, c.path, r.st, r.opts.MaxFileSize, nil); err == nil {
				now = stored
			}
		}
		st := now
		recs = append(recs, record{T: "ext", Time: nowFunc().UTC(), Path: exactName(c.path), State: &st})
	}
	if len(recs) == 0 {
		return
	}
	r.mu.Lock()
	kept := recs[:0]
	for _, x := range recs {
		// Drop what changed hands meanwhile (recorded by the agent, or
		// already noted).
		if _, busy := r.touched[string(x.Path)]; busy {
			continue
		}
		if _, busy := r.inflight[string(x.Path)]; busy {
			continue
		}
		if r.known[string(x.Path)].same(*x.State) {
			continue
		}
		x.CP = r.h.last
		kept = append(kept, x)
	}
	r.mu.Unlock()
	if len(kept) == 0 {
		return
	}
	if err := r.st.sync(); err != nil {
		return
	}
	if err := r.log.append(kept...); err != nil {
		return
	}
	r.mu.Lock()
	for _, x := range kept {
		r.h.after[x.CP] = append(r.h.after[x.CP], x)
		r.known[string(x.Path)] = *x.State
	}
	r.mu.Unlock()
}

// noteIncomplete records that external-change tracking missed events.
func (r *Recorder) noteIncomplete(why string) {
	r.barrier.RLock()
	defer r.barrier.RUnlock()
	if r.isClosed() || r.mode != modeRecord {
		return
	}
	r.mu.Lock()
	rec := record{T: "incomplete", CP: r.h.last, Time: nowFunc().UTC(), Detail: why}
	r.mu.Unlock()
	if err := r.log.append(rec); err != nil {
		return
	}
	r.mu.Lock()
	r.h.after[rec.CP] = append(r.h.after[rec.CP], rec)
	r.mu.Unlock()
}

// trackedPaths returns every path the session has recorded.
func (r *Recorder) trackedPaths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.known))
	for p := range r.known {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Checkpoints lists the session's checkpoints, as List does.
func (r *Recorder) Checkpoints() []Checkpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return listHistory(r.h)
}

// Current returns the number of the last sealed checkpoint (0 before any).
func (r *Recorder) Current() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h.last
}

// SessionID returns the session's id; Workspace its workspace (a real,
// absolute path).
func (r *Recorder) SessionID() string { return r.id }
func (r *Recorder) Workspace() string { return r.workspace }

// Close stops the watcher, seals the changes still open (reason
// "session_end") and releases the session.
func (r *Recorder) Close() error {
	r.stopWatch()
	r.barrier.Lock()
	defer r.barrier.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	var err error
	if r.mode == modeRecord && len(r.touched) > 0 {
		_, err = r.sealLocked(SealInfo{Reason: ReasonSessionEnd, UserTurn: -1}, "", nil, nil)
	}
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	if e := r.release(); err == nil {
		err = e
	}
	return err
}

func (r *Recorder) release() error {
	var err error
	if r.st != nil {
		err = r.st.close()
	}
	if r.log != nil {
		if e := r.log.close(); err == nil {
			err = e
		}
	}
	if r.root != nil {
		r.root.Close()
	}
	if r.peers != nil {
		r.peers.Close()
	}
	if r.storeLock != nil {
		r.storeLock.Close()
	}
	return err
}

// Watch starts the fsnotify watcher of the workspace: it returns once every
// directory is watched and reports, until ctx is done or the Recorder is
// closed, the changes made outside the agent to the paths the session has
// recorded (see NoteExternal). Calling it twice is an error.
func (r *Recorder) Watch(ctx context.Context) error {
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	if r.watch != nil {
		return errors.New("checkpoint: Watch was already called")
	}
	if r.isClosed() {
		return ErrClosed
	}
	w, err := startWatcher(ctx, r)
	if err != nil {
		return err
	}
	r.watch = w
	return nil
}

func (r *Recorder) stopWatch() {
	r.watchMu.Lock()
	w := r.watch
	r.watchMu.Unlock()
	if w != nil {
		w.stop()
	}
}

// crashPoint marks a moment at which the crash tests kill the process
// (objects written, the record that refers to them not yet). It does
// nothing unless a test set crashHook.
func crashPoint(where string) {
	if crashHook != nil {
		crashHook(where)
	}
}

var crashHook func(where string)
