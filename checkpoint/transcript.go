package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Conversation rewind works on the kernel's session transcript
// (<stateDir>/sessions/<id>.jsonl, see kernel/session.go) without importing
// the kernel: it is JSON lines, the first a {"type":"session"} header, then
// {"type":"message","message":{"role":…,"content":[{"type":…},…]}} records
// in conversation order and {"type":"result"} records closing each run.
//
// A user turn is a message record whose role is "user" and whose content
// has at least one "text" block: a prompt. Tool results are also role
// "user" messages, but with tool_result blocks only, so they are not user
// turns. Turns are numbered from 0 in file order; the kernel passes the
// same number as SealInfo.UserTurn when it seals the user_turn checkpoint
// taken just before it appends the prompt.

type transcriptRecord struct {
	Type    string `json:"type"`
	Message *struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
		} `json:"content"`
	} `json:"message"`
}

// userTurnOffsets returns the byte offset of the line of every user turn
// and the length of the transcript's complete lines (a torn last line is
// not counted).
func userTurnOffsets(data []byte) (offsets []int64, valid int64) {
	var off int64
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // a torn last line
		}
		line := data[:i]
		var r transcriptRecord
		if json.Unmarshal(line, &r) == nil && r.Type == "message" && r.Message != nil && r.Message.Role == "user" {
			for _, b := range r.Message.Content {
				if b.Type == "text" {
					offsets = append(offsets, off)
					break
				}
			}
		}
		off += int64(i) + 1
		data = data[i+1:]
	}
	return offsets, off
}

// UserTurns returns the number of user turns in the transcript at path: the
// index the next prompt will have.
func UserTurns(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: reading the transcript: %w", err)
	}
	offs, _ := userTurnOffsets(data)
	return len(offs), nil
}

// TranscriptTurnOffset returns the byte offset at which user turn userTurn
// begins in the transcript at path: truncating the file there removes that
// prompt and everything after it. For userTurn equal to the number of
// turns it returns the length of the transcript's complete lines. It does
// not lock the file: a kernel that holds the transcript open truncates it
// itself with this offset.
func TranscriptTurnOffset(path string, userTurn int) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: reading the transcript: %w", err)
	}
	offs, valid := userTurnOffsets(data)
	switch {
	case userTurn < 0 || userTurn > len(offs):
		return 0, fmt.Errorf("checkpoint: the transcript %s has %d user turns; there is no turn %d: %w", path, len(offs), userTurn, ErrNotFound)
	case userTurn == len(offs):
		return valid, nil
	}
	return offs[userTurn], nil
}

// TruncateTranscript rewinds a conversation: it cuts the transcript at path
// before user turn userTurn, so that the next prompt of the resumed session
// becomes turn userTurn and the model no longer sees what came after. The
// removed lines are saved first to path + ".cut-<unix nanoseconds>" (not a
// .jsonl name, so session listings skip it), whose name is returned ("" when
// nothing was cut), so that the conversation rewind can be undone by hand.
// The transcript is locked the way the kernel locks it: while a run holds
// it, the error wraps ErrSessionBusy.
func TruncateTranscript(path string, userTurn int) (saved string, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("checkpoint: no transcript at %s: %w", path, ErrNotFound)
		}
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return "", fmt.Errorf("checkpoint: transcript %s: %w (a run holds it)", path, ErrSessionBusy)
	}
	off, err := TranscriptTurnOffset(path, userTurn)
	if err != nil {
		return "", err
	}
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if off >= fi.Size() {
		return "", nil
	}
	tail := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(tail, off); err != nil {
		return "", fmt.Errorf("checkpoint: reading the transcript: %w", err)
	}
	saved = fmt.Sprintf("%s.cut-%d", path, time.Now().UnixNano())
	if err := writeFileSync(saved, tail); err != nil {
		return "", fmt.Errorf("checkpoint: saving the cut turns: %w", err)
	}
	if err := f.Truncate(off); err != nil {
		return "", fmt.Errorf("checkpoint: truncating the transcript: %w", err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("checkpoint: truncating the transcript: %w", err)
	}
	return saved, nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
