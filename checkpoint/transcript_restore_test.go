package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRestoreTranscriptCut: a cut put back gives the transcript byte for
// byte; a transcript that went on since is left alone.
func TestRestoreTranscriptCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	orig := `{"type":"session"}
{"type":"message","message":{"role":"user","content":[{"type":"text"}]}}
{"type":"message","message":{"role":"assistant","content":[{"type":"text"}]}}
{"type":"message","message":{"role":"user","content":[{"type":"text"}]}}
{"type":"message","message":{"role":"assistant","content":[{"type":"text"}]}}
`
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	saved, err := TruncateTranscript(path, 1)
	if err != nil || saved == "" {
		t.Fatalf("cut: %q %v", saved, err)
	}
	fi, _ := os.Stat(path)
	if err := RestoreTranscriptCut(path, saved, fi.Size()+1); !errors.Is(err, ErrTranscriptMoved) {
		t.Fatalf("a moved transcript: %v, want ErrTranscriptMoved", err)
	}
	if err := RestoreTranscriptCut(path, saved, fi.Size()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != orig {
		t.Errorf("restored transcript:\n%s\nwant:\n%s", b, orig)
	}
	if _, err := os.Stat(saved); !os.IsNotExist(err) {
		t.Errorf("the saved cut is still there: %v", err)
	}
}
