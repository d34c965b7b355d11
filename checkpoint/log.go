package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
)

// The session log: <stateDir>/checkpoints/sessions/<id>.jsonl, one JSON
// object per line, appended with one write(2) per batch so that a crash
// leaves whole lines and at most one torn last line (ignored on reading and
// cut off before the next append). Record types ("t"):
//
//	session     the header: format version, session id, workspace, time;
//	            "base" is the earliest checkpoint still kept after gc
//	pre         the pre-image of one path in the open checkpoint "cp",
//	            written before RecordSnapshot returns — it is what makes
//	            an interrupted (never sealed) checkpoint rewindable
//	post        what an in-process writer reported writing to a path of
//	            the open checkpoint "cp" (RecordWrite): the agent's
//	            post-image, for a recovery; no state: forget the report
//	reset       the open checkpoint "cp" was sealed with nothing changed:
//	            forget its pre and post records
//	seal        checkpoint "cp" is complete: reason, tool call, user turn,
//	            and for every changed path its pre-image, post-image and
//	            changed-line counts; the paths not covered ("ignored")
//	ext         a change made outside the agent to a tracked path, noticed
//	            after checkpoint "cp" was sealed (state: what was seen)
//	incomplete  external-change tracking missed events after checkpoint
//	            "cp" (fsnotify overflow), with the reason
//
// A seal record carries everything needed to rewind past it, so readers
// ignore the pre records of sealed checkpoints. Objects referenced by a
// record are always written before the record.

// logVersion 2: names that are not valid UTF-8 are stored as
// {"b64": ...} (see exactName); "post" records. Version 1 logs are read
// unchanged.
const logVersion = 2

type record struct {
	T    string    `json:"t"`
	CP   int       `json:"cp"`
	Time time.Time `json:"time,omitzero"`

	// session header
	Version   int    `json:"v,omitempty"`
	Session   string `json:"session,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Base      int    `json:"base,omitempty"`

	// pre, post, ext (byte-exact: see exactName)
	Path  exactName `json:"path,omitempty"`
	State *pstate   `json:"state,omitempty"`
	// pre: a directory recorded without its contents (a rewind's record)
	Shallow bool `json:"shallow,omitempty"`

	// seal
	Reason   string        `json:"reason,omitempty"`
	ToolID   string        `json:"tool_id,omitempty"`
	Tool     string        `json:"tool,omitempty"`
	Turn     *int          `json:"turn,omitempty"`
	RewindTo *int          `json:"rewind_to,omitempty"`
	Entries  []entry       `json:"entries,omitempty"`
	Ignored  []IgnoredPath `json:"ignored,omitempty"`
	// Pruned: gc removed the entries of this checkpoint (it is still
	// listed and is a rewind target, but nothing before it is).
	Pruned bool `json:"pruned,omitempty"`

	// incomplete, and notes on a recovered seal
	Detail string `json:"detail,omitempty"`
}

// entry is one changed path of a sealed checkpoint.
type entry struct {
	Path exactName `json:"p"`
	Pre  pstate    `json:"pre"`
	Post pstate    `json:"post"`
	// Lines says Added and Removed are known (both sides text, small
	// enough to diff).
	Lines   bool `json:"lines,omitempty"`
	Added   int  `json:"add,omitempty"`
	Removed int  `json:"del,omitempty"`
}

// IgnoredPath is a path that a checkpoint does not cover, and why.
type IgnoredPath struct {
	Path   string `json:"path"`
	Reason string `json:"why"`
}

// history is a session log read back.
type history struct {
	path   string
	header record
	// seals[n] is the seal record of checkpoint n, nil when checkpoint n
	// has no record (an implicit checkpoint 0, or removed by gc).
	seals     []*record
	last      int  // the highest sealed checkpoint (0 when none)
	sealedAny bool // some seal record exists
	// tail holds the pre records of the open checkpoint tailCP, never
	// sealed (the session is running, or it crashed).
	tail   []record
	tailCP int
	// tailPost holds the post records (RecordWrite) of unsealed
	// checkpoints, in order; only those of tailCP count.
	tailPost []record
	// after[n] holds the ext and incomplete records noted after
	// checkpoint n was sealed.
	after    map[int][]record
	torn     bool
	validLen int64
}

func (h *history) seal(n int) *record {
	if n >= 0 && n < len(h.seals) {
		return h.seals[n]
	}
	return nil
}

// ErrNotFound is wrapped by errors about a session or checkpoint that does
// not exist.
var ErrNotFound = errors.New("not found")

// The length is checked apart: a counted repetition such as {1,128}
// compiles to that many copies (~0.6 ms at every program start).
var sessionIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func checkSessionID(id string) error {
	if len(id) > 128 || !sessionIDRE.MatchString(id) {
		return fmt.Errorf("checkpoint: invalid session id %q: use letters, digits, '-' and '_'", id)
	}
	return nil
}

func ckptDir(stateDir string) string { return filepath.Join(stateDir, "checkpoints") }

func logPath(stateDir, id string) string {
	return filepath.Join(ckptDir(stateDir), "sessions", id+".jsonl")
}

// readHistory parses a session log. A torn last line is ignored (and
// reported through torn/validLen); a bad line anywhere else is corruption.
func readHistory(path string) (*history, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("checkpoint: no checkpoints recorded for session %s: %w", sessionOfPath(path), ErrNotFound)
		}
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return parseHistory(path, data)
}

func sessionOfPath(path string) string {
	b := filepath.Base(path)
	return b[:len(b)-len(filepath.Ext(b))]
}

// prefixCP reads N from a line that starts with prefix followed by N and a
// comma or brace: the records are written by json.Marshal of record, so
// "t" and "cp" always come first.
func prefixCP(line []byte, prefix string) (int, bool) {
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0, false
	}
	n, i := 0, len(prefix)
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
		n = n*10 + int(line[i]-'0')
		if n > 1<<30 {
			return 0, false
		}
	}
	if i == len(prefix) || i == len(line) || (line[i] != ',' && line[i] != '}') {
		return 0, false
	}
	return n, true
}

func parseHistory(path string, data []byte) (*history, error) {
	h := &history{path: path, after: map[int][]record{}, validLen: int64(len(data))}
	// The pre records of sealed checkpoints are most of a long log and are
	// not needed (the seal record repeats them): find the highest sealed
	// checkpoint first, and skip those without decoding them.
	maxSealed := -1
	for rest := data; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		if n, ok := prefixCP(rest[:i], `{"t":"seal","cp":`); ok && n > maxSealed {
			maxSealed = n
		}
		rest = rest[i+1:]
	}
	offset := int64(0)
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line := data
		next := bytes.IndexByte(data, '\n')
		complete := next >= 0
		if complete {
			line, data = data[:next], data[next+1:]
		} else {
			data = nil
		}
		start := offset
		offset += int64(len(line)) + 1
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if n, ok := prefixCP(line, `{"t":"pre","cp":`); ok && complete && n <= maxSealed {
			continue
		}
		if n, ok := prefixCP(line, `{"t":"post","cp":`); ok && complete && n <= maxSealed {
			continue
		}
		var r record
		if err := json.Unmarshal(line, &r); err != nil || !complete {
			// Each batch of records is one write ending in "\n": only
			// the last line can be torn.
			if len(data) == 0 {
				h.torn = true
				h.validLen = start
				break
			}
			return nil, fmt.Errorf("checkpoint: session log %s: line %d is corrupt: %v", path, lineNo, err)
		}
		switch r.T {
		case "session":
			if h.header.T == "" {
				h.header = r
			}
		case "pre":
			if r.State == nil || r.Path == "" {
				return nil, fmt.Errorf("checkpoint: session log %s: line %d: pre record without a path or state", path, lineNo)
			}
			if h.sealedAny && r.CP <= h.last {
				continue // belongs to a sealed checkpoint
			}
			if len(h.tail) > 0 && r.CP != h.tailCP {
				h.tail = nil
			}
			h.tail = append(h.tail, r)
			h.tailCP = r.CP
		case "post":
			if r.Path == "" {
				return nil, fmt.Errorf("checkpoint: session log %s: line %d: post record without a path", path, lineNo)
			}
			if h.sealedAny && r.CP <= h.last {
				continue
			}
			h.tailPost = append(h.tailPost, r)
		case "reset":
			if r.CP == h.tailCP {
				h.tail = nil
			}
			// The next checkpoint reuses the number: these posts are not
			// its.
			h.tailPost = dropPosts(h.tailPost, r.CP)
		case "seal":
			for len(h.seals) <= r.CP {
				h.seals = append(h.seals, nil)
			}
			rr := r
			h.seals[r.CP] = &rr
			if !h.sealedAny || r.CP > h.last {
				h.last = r.CP
			}
			h.sealedAny = true
			if r.CP == h.tailCP {
				h.tail = nil
			}
			h.tailPost = dropPosts(h.tailPost, r.CP)
		case "ext", "incomplete":
			h.after[r.CP] = append(h.after[r.CP], r)
		}
	}
	if h.header.T != "session" {
		return nil, fmt.Errorf("checkpoint: session log %s has no header", path)
	}
	if h.header.Version > logVersion {
		return nil, fmt.Errorf("checkpoint: session log %s has format version %d; this lite-agent reads up to %d", path, h.header.Version, logVersion)
	}
	for len(h.seals) <= h.last {
		h.seals = append(h.seals, nil)
	}
	return h, nil
}

// dropPosts removes the post records of checkpoints up to cp.
func dropPosts(posts []record, cp int) []record {
	kept := posts[:0]
	for _, p := range posts {
		if p.CP > cp {
			kept = append(kept, p)
		}
	}
	return kept
}

// logFile appends to a session log it holds an exclusive lock on.
type logFile struct {
	f    *os.File
	path string
}

// ErrSessionBusy is wrapped by errors about a session that another
// recorder or rewind is using.
var ErrSessionBusy = errors.New("session is in use")

// openLogFile opens (or creates) a session log and locks it: exclusively
// for writing, shared for reading. A torn tail (validLen >= 0) is cut off
// under the lock before anything is appended.
func openLogFile(path string, create, write bool) (*logFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	flags := os.O_RDONLY
	if write {
		flags = os.O_RDWR | os.O_APPEND
	}
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("checkpoint: no checkpoints recorded for session %s: %w", sessionOfPath(path), ErrNotFound)
		}
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	how := syscall.LOCK_SH
	if write {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("checkpoint: session %s: %w (a running agent or another rewind holds it)", sessionOfPath(path), ErrSessionBusy)
	}
	return &logFile{f: f, path: path}, nil
}

func (l *logFile) truncate(n int64) error {
	if err := l.f.Truncate(n); err != nil {
		return fmt.Errorf("checkpoint: removing the torn tail of %s: %w", l.path, err)
	}
	return nil
}

// append writes records as one write(2).
func (l *logFile) append(recs ...record) error {
	var buf bytes.Buffer
	for i := range recs {
		b, err := json.Marshal(&recs[i])
		if err != nil {
			return fmt.Errorf("checkpoint: encoding a record: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if _, err := l.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("checkpoint: writing %s: %w", l.path, err)
	}
	return nil
}

func (l *logFile) sync() error {
	if err := fdatasync(l.f); err != nil {
		return fmt.Errorf("checkpoint: syncing %s: %w", l.path, err)
	}
	return nil
}

// syncCreated makes a log just created durable: its content, its name in
// sessions/, and that directory's own names up to the state directory.
func (l *logFile) syncCreated() error {
	if err := l.sync(); err != nil {
		return err
	}
	return syncDirs(filepath.Dir(l.path), 3)
}

func (l *logFile) close() error { return l.f.Close() }

// storeLock is the store-wide lock: recorders, rewinds and verify hold it
// shared; gc holds it exclusively, so that it never removes an object a
// running session is about to refer to.
func lockStore(stateDir string, exclusive, wait bool) (*os.File, error) {
	dir := ckptDir(stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if !wait {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("checkpoint: the store %s is in use: %w", dir, ErrStoreBusy)
	}
	return f, nil
}

// ErrStoreBusy is wrapped by gc's error when a session is recording.
var ErrStoreBusy = errors.New("a session is recording (gc runs when no session is active)")
