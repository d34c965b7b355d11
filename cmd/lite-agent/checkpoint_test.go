package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/provider"
)

// ckptSession builds a session as the kernel and its recorder leave it:
// a transcript of two user turns, and checkpoints
//
//	0 start of user turn 0
//	1 tool call write_file (t1): a.txt created
//	2 start of user turn 1
//	3 tool call edit_file (t2): a.txt edited, b.txt created
type ckptSession struct {
	t         *testing.T
	ws, state string
	id        string
}

func newCkptSession(t *testing.T) *ckptSession {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &ckptSession{t: t, ws: ws, state: t.TempDir(), id: "sess-1"}
	path, _ := kernel.SessionPath(s.state, s.id)
	os.MkdirAll(filepath.Dir(path), 0o700)
	text := func(role provider.Role, s string) *provider.Message {
		return &provider.Message{Role: role, Content: []provider.Block{{Type: provider.BlockText, Text: s}}}
	}
	recs := []kernel.Record{
		{Type: "session", SessionID: s.id, Workspace: ws, Created: time.Now().UTC(), Prompt: "write a file please"},
		{Type: "message", Message: text(provider.RoleUser, "write a file please")},
		{Type: "message", Message: &provider.Message{Role: provider.RoleAssistant, Content: []provider.Block{{Type: provider.BlockToolUse, ID: "t1", Name: "write_file", Input: json.RawMessage(`{}`)}}}},
		{Type: "message", Message: &provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockToolResult, ToolUseID: "t1", Content: []provider.Block{{Type: provider.BlockText, Text: "ok"}}}}}},
		{Type: "message", Message: text(provider.RoleAssistant, "done")},
		{Type: "result", Subtype: "success"},
		{Type: "message", Message: text(provider.RoleUser, "now edit it")},
		{Type: "message", Message: text(provider.RoleAssistant, "edited")},
		{Type: "result", Subtype: "success"},
	}
	var b strings.Builder
	for _, r := range recs {
		line, _ := json.Marshal(r)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	rec, err := checkpoint.Open(s.state, s.id, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	seal := func(info checkpoint.SealInfo) {
		t.Helper()
		if _, err := rec.Seal(info); err != nil {
			t.Fatal(err)
		}
	}
	seal(checkpoint.SealInfo{Reason: checkpoint.ReasonUserTurn, UserTurn: 0})
	must(rec.RecordSnapshot("a.txt"))
	must(os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644))
	seal(checkpoint.SealInfo{Reason: checkpoint.ReasonToolCall, ToolCallID: "t1", ToolName: "write_file", UserTurn: 0})
	seal(checkpoint.SealInfo{Reason: checkpoint.ReasonUserTurn, UserTurn: 1})
	must(rec.RecordSnapshot("a.txt"))
	must(os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\n"), 0o644))
	must(rec.RecordSnapshot(filepath.Join(ws, "b.txt")))
	must(os.WriteFile(filepath.Join(ws, "b.txt"), []byte("bee\n"), 0o644))
	seal(checkpoint.SealInfo{Reason: checkpoint.ReasonToolCall, ToolCallID: "t2", ToolName: "edit_file", UserTurn: 1})
	return s
}

func (s *ckptSession) run(args ...string) (int, string, string) {
	var out, errb strings.Builder
	code := runCLI(append(args, "--state-dir", s.state), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func (s *ckptSession) read(name string) string {
	b, err := os.ReadFile(filepath.Join(s.ws, name))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestSessionsCommand(t *testing.T) {
	s := newCkptSession(t)
	code, out, errOut := s.run("sessions")
	if code != 0 || !strings.Contains(out, "sess-1") || !strings.Contains(out, "write a file please") {
		t.Fatalf("sessions: exit %d\n%s%s", code, out, errOut)
	}
	if f := strings.Fields(strings.Split(out, "\n")[1]); len(f) < 4 || f[3] != "4" {
		t.Fatalf("sessions row %q: want 4 checkpoints", strings.Split(out, "\n")[1])
	}
	code, out, _ = s.run("sessions", "--workspace", s.ws, "--json")
	var row map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &row) != nil || row["session_id"] != "sess-1" || row["checkpoints"] != 4.0 {
		t.Fatalf("sessions --json: exit %d, %q", code, out)
	}
	if code, out, _ = s.run("sessions", "--workspace", t.TempDir()); code != 0 || strings.Contains(out, "sess-1") {
		t.Fatalf("sessions of another workspace: exit %d, %q", code, out)
	}
}

func TestCheckpointsCommand(t *testing.T) {
	s := newCkptSession(t)
	code, out, errOut := s.run("checkpoints", "sess-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"start of user turn 0",
		"tool call write_file (t1)",
		"created a.txt +1 -0",
		"start of user turn 1",
		"tool call edit_file (t2)",
		"modified a.txt +1 -0",
		"created b.txt +1 -0",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("checkpoints output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut = s.run("checkpoints", "nope"); code != 1 || !strings.Contains(errOut, "no checkpoints") {
		t.Fatalf("unknown session: exit %d, %s", code, errOut)
	}
	if code, _, _ = s.run("checkpoints"); code != 2 {
		t.Fatalf("no session: exit %d, want 2", code)
	}
}

func TestRewindCommand(t *testing.T) {
	s := newCkptSession(t)
	transcript, _ := kernel.SessionPath(s.state, "sess-1")

	// Usage errors exit 2.
	for _, args := range [][]string{
		{"rewind", "sess-1"},
		{"rewind", "--to", "1"},
		{"rewind", "sess-1", "--to", "1", "--files-only", "--conversation-only"},
		{"rewind", "sess-1", "--to", "2", "--conversation-only", "--path", "a.txt"},
		{"rewind", "sess-1", "--to", "1"}, // mid-turn: the conversation cannot go there
	} {
		if code, _, errOut := s.run(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}

	// A dry run prints the diff and changes nothing.
	code, out, errOut := s.run("rewind", "sess-1", "--to", "2", "--dry-run")
	if code != 0 || !strings.Contains(out, "-two\n") || !strings.Contains(out, "deleted file mode 100644") || !strings.Contains(out, "would cut the conversation before user turn 1") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	if s.read("a.txt") != "one\ntwo\n" {
		t.Fatal("the dry run wrote")
	}

	// The user edits a.txt after the agent: a conflict, nothing changes.
	os.WriteFile(filepath.Join(s.ws, "a.txt"), []byte("the user's\n"), 0o644)
	code, _, errOut = s.run("rewind", "sess-1", "--to", "2")
	if code != 1 || !strings.Contains(errOut, "conflict: a.txt:") || !strings.Contains(errOut, "--force") {
		t.Fatalf("conflict: exit %d, %s", code, errOut)
	}
	if s.read("a.txt") != "the user's\n" || s.read("b.txt") != "bee\n" {
		t.Fatal("a refused rewind changed files")
	}
	if n, _ := checkpoint.UserTurns(transcript); n != 2 {
		t.Fatal("a refused rewind cut the conversation")
	}

	// Per file: b.txt only, files only.
	if code, _, errOut = s.run("rewind", "sess-1", "--to", "2", "--path", "b.txt"); code != 0 {
		t.Fatalf("--path: exit %d, %s", code, errOut)
	}
	if !strings.HasPrefix(s.read("b.txt"), "<") || s.read("a.txt") != "the user's\n" {
		t.Fatalf("--path b.txt: a=%q b=%q", s.read("a.txt"), s.read("b.txt"))
	}

	// Forced: files and conversation back to the start of turn 1.
	code, out, errOut = s.run("rewind", "sess-1", "--to", "2", "--force")
	if code != 0 || !strings.Contains(out, "conversation cut before user turn 1") {
		t.Fatalf("forced rewind: exit %d\n%s%s", code, out, errOut)
	}
	if s.read("a.txt") != "one\n" {
		t.Fatalf("a.txt = %q", s.read("a.txt"))
	}
	if n, _ := checkpoint.UserTurns(transcript); n != 1 {
		t.Fatalf("%d user turns left, want 1", n)
	}
	// The rewind is undoable (files): it says how.
	i := strings.Index(out, "undo: lite-agent rewind sess-1 --to ")
	if i < 0 {
		t.Fatalf("no undo hint in %q", out)
	}
	undo := strings.Fields(out[i+len("undo: lite-agent "):])[:4]
	if code, _, errOut = s.run(append(undo, "--files-only")...); code != 0 {
		t.Fatalf("undo %v: exit %d, %s", undo, code, errOut)
	}
	if s.read("a.txt") != "the user's\n" {
		t.Fatalf("after undo a.txt = %q, want the user's edit back", s.read("a.txt"))
	}
}

func TestGCAndVerifyCommands(t *testing.T) {
	s := newCkptSession(t)
	code, out, errOut := s.run("verify")
	if code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = s.run("gc", "--max-count", "2", "--dry-run")
	if code != 0 || !strings.Contains(out, "would remove 2 checkpoint(s)") {
		t.Fatalf("gc --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = s.run("gc", "--max-count", "2", "--max-age", "30d", "--max-size", "1G")
	if code != 0 || !strings.Contains(out, "removed 2 checkpoint(s)") {
		t.Fatalf("gc: exit %d\n%s%s", code, out, errOut)
	}
	for _, bad := range [][]string{{"gc", "--max-age", "soon"}, {"gc", "--max-size", "big"}, {"verify", "extra"}} {
		if code, _, _ := s.run(bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
	// A flipped byte in the store: verify exits 1 and names the object.
	packs, _ := filepath.Glob(filepath.Join(s.state, "checkpoints", "objects", "pack", "*.pack"))
	for _, p := range packs {
		b, _ := os.ReadFile(p)
		if len(b) > 0 {
			b[len(b)-1] ^= 1
			os.WriteFile(p, b, 0o600)
		}
	}
	code, out, _ = s.run("verify")
	if code != 1 || !strings.Contains(out, "CORRUPT: object ") {
		t.Fatalf("verify of a corrupt store: exit %d\n%s", code, out)
	}
}

func TestSizeAndAgeFlags(t *testing.T) {
	for in, want := range map[string]int64{"100": 100, "2K": 2048, "500M": 500 << 20, "1.5G": 3 << 29, "2GiB": 2 << 30, "3MB": 3 << 20} {
		if got, err := parseStoreSize(in); err != nil || got != want {
			t.Errorf("parseStoreSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if d, err := parseAge("30d"); err != nil || d != 30*24*time.Hour {
		t.Errorf("30d: %v, %v", d, err)
	}
	if d, err := parseAge("90m"); err != nil || d != 90*time.Minute {
		t.Errorf("90m: %v, %v", d, err)
	}
}
