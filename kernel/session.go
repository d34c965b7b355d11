package kernel

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lite-agent/lite-agent/provider"
)

// DefaultStateDir returns $XDG_STATE_HOME/lite-agent, or
// ~/.local/state/lite-agent when XDG_STATE_HOME is unset.
func DefaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "lite-agent"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the state directory: %w (set XDG_STATE_HOME)", err)
	}
	return filepath.Join(home, ".local", "state", "lite-agent"), nil
}

// Record is one line of a session transcript (JSONL). The first record is
// the header (type "session"); then "message" records in conversation
// order, "agent_message" records of subagents' conversations among them;
// a "result" record closes each run.
type Record struct {
	Type string `json:"type"`
	// session header
	SessionID string    `json:"session_id,omitempty"`
	Workspace string    `json:"workspace,omitempty"`
	Model     string    `json:"model,omitempty"`
	Created   time.Time `json:"created,omitzero"`
	Prompt    string    `json:"prompt,omitempty"`
	// message; agent_message (a subagent's, with its name and id; not part
	// of the conversation a resumed session reloads)
	Message *provider.Message `json:"message,omitempty"`
	Agent   string            `json:"agent,omitempty"`
	AgentID string            `json:"agent_id,omitempty"`
	// compact (a context edit, see context.go): Subtype "clear" lists the
	// tool results Cleared (by tool_use id); Subtype "summary" is a
	// compaction boundary — the messages before index Cut are replaced, in
	// what the model is sent, by Summary. The messages themselves stay in
	// the transcript, so a rewind to before the boundary (which cuts this
	// record off) restores them as they were.
	Cleared      []string `json:"cleared,omitempty"`
	Summary      string   `json:"summary,omitempty"`
	Cut          int      `json:"cut,omitempty"`
	TokensBefore int64    `json:"tokens_before,omitempty"`
	TokensAfter  int64    `json:"tokens_after,omitempty"`
	// result
	Subtype string         `json:"subtype,omitempty"`
	Usage   provider.Usage `json:"usage,omitzero"`
	Error   string         `json:"error,omitempty"`
	Time    time.Time      `json:"time,omitzero"`
}

// Transcript is a session read back from disk.
type Transcript struct {
	Header   Record
	Messages []provider.Message
	// Context is the state of the context edits recorded after the
	// messages: what the model is sent instead of the whole history.
	Context ContextEdits
	// Torn is true when the last line was incomplete (a crash mid-write)
	// and was ignored.
	Torn bool
	// ValidLen is the length of the file up to the end of its last complete
	// line; a resumed session truncates a torn tail to it before appending.
	ValidLen int64
}

// The length is checked apart: a counted repetition such as {1,128}
// compiles to that many copies (~0.6 ms at every program start).
var sessionIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// SessionPath returns the transcript file of session id under stateDir.
func SessionPath(stateDir, id string) (string, error) {
	if len(id) > 128 || !sessionIDRE.MatchString(id) {
		return "", fmt.Errorf("invalid session id %q: use letters, digits, '-' and '_'", id)
	}
	return filepath.Join(stateDir, "sessions", id+".jsonl"), nil
}

// newSessionID returns a random UUID (version 4).
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// ReadTranscript reads a session transcript. A torn last line (a crash in
// the middle of a write) is ignored and reported through Transcript.Torn; a
// bad line anywhere else is corruption and an error naming the line.
func ReadTranscript(path string) (*Transcript, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no session transcript at %s", path)
		}
		return nil, err
	}
	t := &Transcript{ValidLen: int64(len(data))}
	lines := bytes.Split(data, []byte("\n"))
	offset := int64(0)
	for i, line := range lines {
		lineStart := offset
		offset += int64(len(line)) + 1
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			// Each record is written with one write(2) ending in "\n":
			// only the very last one can be torn.
			if i == len(lines)-1 {
				t.Torn = true
				t.ValidLen = lineStart
				break
			}
			return nil, fmt.Errorf("session transcript %s: line %d is corrupt: %v", path, i+1, err)
		}
		switch r.Type {
		case "session":
			if t.Header.Type == "" {
				t.Header = r
			}
		case "message":
			if r.Message == nil {
				return nil, fmt.Errorf("session transcript %s: line %d: message record without a message", path, i+1)
			}
			t.Messages = append(t.Messages, *r.Message)
		case "compact":
			switch r.Subtype {
			case "clear":
				t.Context.Cleared = append(t.Context.Cleared, r.Cleared...)
			case "summary":
				t.Context.Summary, t.Context.Cut = r.Summary, r.Cut
			}
		}
	}
	if t.Header.Type == "" {
		return nil, fmt.Errorf("session transcript %s has no session header", path)
	}
	return t, nil
}

// sessionFile appends records to a transcript. Each record is one write(2)
// on an O_APPEND file, so a crash leaves complete lines (at most the last
// one torn, which ReadTranscript ignores). The file is flock'ed for the
// whole run so that two processes cannot interleave one session.
type sessionFile struct {
	f    *os.File
	path string
}

// openSessionFile opens a transcript for appending. When validLen >= 0 the
// file is first cut to that length (a torn tail left by a crash), under the
// lock, so that new records never follow a partial line.
func openSessionFile(path string, create bool, validLen int64) (*sessionFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the session directory: %w", err)
	}
	flags := os.O_WRONLY | os.O_APPEND
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("session %s already exists; resume it instead", strings.TrimSuffix(filepath.Base(path), ".jsonl"))
		}
		return nil, fmt.Errorf("opening the session transcript: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("session %s is in use by another process", strings.TrimSuffix(filepath.Base(path), ".jsonl"))
	}
	if validLen >= 0 {
		if err := f.Truncate(validLen); err != nil {
			f.Close()
			return nil, fmt.Errorf("removing the torn tail of the session transcript: %w", err)
		}
	}
	return &sessionFile{f: f, path: path}, nil
}

func (s *sessionFile) append(r Record) error {
	var sp splicer
	if r.Message != nil {
		r.Message = sp.message(r.Message)
	}
	if len(sp.raws) == 0 {
		// The encoder writes the record and its newline in one Write
		// from its own buffer.
		w := recordWriter{f: s.f}
		if err := json.NewEncoder(&w).Encode(r); err != nil {
			if w.err != nil {
				return fmt.Errorf("writing the session transcript %s: %w", s.path, w.err)
			}
			return fmt.Errorf("encoding a transcript record: %w", err)
		}
		return nil
	}
	// A record with large inputs is written in pieces (bigjson.go). A
	// crash between them leaves a torn last line, as a crash during one
	// write can; a write that fails is undone, so that the next record
	// does not follow a partial one.
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding a transcript record: %w", err)
	}
	fi, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("writing the session transcript %s: %w", s.path, err)
	}
	if err := sp.write(s.f, append(b, '\n')); err != nil {
		if terr := s.f.Truncate(fi.Size()); terr != nil {
			return fmt.Errorf("writing the session transcript %s: %w (and removing the partial record: %v)", s.path, err, terr)
		}
		return fmt.Errorf("writing the session transcript %s: %w", s.path, err)
	}
	return nil
}

// recordWriter passes the encoder's one write to the file and keeps the
// file's error apart from an encoding error.
type recordWriter struct {
	f   *os.File
	err error
}

func (w *recordWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	w.err = err
	return n, err
}

// close syncs and closes the transcript. Records are not fsync'ed one by
// one: the page cache survives a process crash, and a sync per record would
// cost more than the rest of a turn.
func (s *sessionFile) close() error {
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// repairMessages makes a loaded conversation valid to send again: every
// tool_use of the last assistant message needs a tool_result, and a run
// that crashed mid-call left none. Missing results are added as errors so
// that the model knows those calls did not complete.
func repairMessages(msgs []provider.Message) []provider.Message {
	if len(msgs) == 0 {
		return msgs
	}
	last := msgs[len(msgs)-1]
	if last.Role != provider.RoleAssistant {
		return msgs
	}
	uses := last.ToolUses()
	if len(uses) == 0 {
		return msgs
	}
	fix := provider.Message{Role: provider.RoleUser}
	for _, u := range uses {
		fix.Content = append(fix.Content, provider.Block{
			Type: provider.BlockToolResult, ToolUseID: u.ID, IsError: true,
			Content: []provider.Block{{Type: provider.BlockText, Text: "this tool call was interrupted before it finished; its effects, if any, are unknown"}},
		})
	}
	return append(msgs, fix)
}

// ListSessions reads the headers of every session under stateDir, newest
// first. Transcripts that cannot be read are skipped and returned in errs.
func ListSessions(stateDir string) (headers []Record, errs []error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, "sessions"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{err}
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		h, err := readHeader(filepath.Join(stateDir, "sessions", e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		headers = append(headers, h)
	}
	slices.SortFunc(headers, func(a, b Record) int { return b.Created.Compare(a.Created) })
	return headers, errs
}

func readHeader(path string) (Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil && err != io.EOF {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(line, &r); err != nil || r.Type != "session" {
		return Record{}, fmt.Errorf("%s: no session header", path)
	}
	return r, nil
}
