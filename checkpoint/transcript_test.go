package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A transcript as kernel/session.go writes it: two runs of a session, the
// first with a tool call (whose result is a role-user message that is not a
// user turn), then a torn line from a crash.
const transcript = `{"type":"session","session_id":"s","workspace":"/w","created":"2026-01-01T00:00:00Z","prompt":"first"}
{"type":"message","message":{"role":"user","content":[{"type":"text","text":"first"}]}}
{"type":"message","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"write_file","input":{}}]}}
{"type":"message","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}]}]}}
{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}
{"type":"result","subtype":"success"}
{"type":"message","message":{"role":"user","content":[{"type":"text","text":"second"}]}}
{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}
{"type":"result","subtype":"success"}
{"type":"message","message":{"role":"user","content":[{"type":"te`

func TestTruncateTranscript(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	os.WriteFile(p, []byte(transcript), 0o600)
	if n, err := UserTurns(p); err != nil || n != 2 {
		t.Fatalf("user turns: %d, %v; want 2 (tool results are not user turns)", n, err)
	}
	off, err := TranscriptTurnOffset(p, 1)
	if err != nil || !strings.HasPrefix(transcript[off:], `{"type":"message","message":{"role":"user","content":[{"type":"text","text":"second"}]}}`) {
		t.Fatalf("offset of turn 1: %d, %v", off, err)
	}
	if _, err := TranscriptTurnOffset(p, 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("turn 3: %v", err)
	}

	// A run holds the transcript: refused.
	f, _ := os.Open(p)
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	if _, err := TruncateTranscript(p, 1); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("truncating a transcript in use: %v", err)
	}
	f.Close()

	saved, err := TruncateTranscript(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != transcript[:off] {
		t.Fatalf("after truncating at turn 1:\n%s", got)
	}
	cut, _ := os.ReadFile(saved)
	if string(cut) != transcript[off:] || !strings.Contains(saved, ".jsonl.cut-") {
		t.Fatalf("saved %s: %q", saved, cut)
	}
	// Back to before the first prompt: only the header is left.
	if _, err := TruncateTranscript(p, 0); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(p)
	if n := strings.Count(string(got), "\n"); n != 1 || !strings.Contains(string(got), `"type":"session"`) {
		t.Fatalf("after truncating at turn 0: %q", got)
	}
	if saved, err := TruncateTranscript(p, 0); err != nil || saved != "" {
		t.Fatalf("nothing left to cut: %q, %v", saved, err)
	}
}
