package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakeapi"
)

// The model flags as a user runs them, against a local fake of the
// Messages API: the instructions line in text mode, dimmed thinking with
// --verbose, compact events and cache usage in stream-json, web_search
// refused under a preset without network.
func TestModelFlagsThroughTheCLI(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	e := newCLIEnv(t)
	os.WriteFile(filepath.Join(e.ws, "AGENTS.md"), []byte("Use tabs."), 0o644)
	for i := range 12 {
		os.WriteFile(filepath.Join(e.ws, fmt.Sprintf("f%02d.txt", i)), []byte(strings.Repeat(fmt.Sprintf("line of file %d\n", i), 200)), 0o644)
	}
	n := 0
	srv := fakeapi.New(0, func(r *fakeapi.Request) fakeapi.Reply {
		if strings.Contains(r.LastText(), "about to be compacted") {
			return fakeapi.Reply{Text: "SUMMARY"}
		}
		n++
		if n <= 12 {
			return fakeapi.Reply{Thinking: "I should read it.\x1b]52;c;aGk=\a", Signature: "sig", ToolName: "read_file", ToolInput: fmt.Sprintf(`{"path":"f%02d.txt"}`, n-1)}
		}
		return fakeapi.Reply{Text: "done"}
	})
	defer srv.Close()
	api := []string{"--provider", "anthropic", "--base-url", srv.URL, "--api-key", "sk-ant-test", "--model", "claude-sonnet-4-6", "--allowed-tools", "read_file", "--tools", "read_file"}

	args := append([]string{"run"}, api...)
	code, out, errOut := e.run("", append(args, "--thinking-budget", "2048", "--verbose", "--context-window", "8000", "read them")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "[project instructions: AGENTS.md (9 bytes)]") {
		t.Errorf("stderr lacks the instructions line:\n%s", errOut)
	}
	// The thinking carries an OSC 52 clipboard write: it must come out
	// dimmed and escaped, never raw.
	if !strings.Contains(errOut, "\x1b[2mI should read it.") || strings.Contains(errOut, "\x1b]52") {
		t.Errorf("stderr lacks the dimmed, escaped thinking:\n%q", errOut)
	}
	if !strings.Contains(errOut, "old tool results cleared") || strings.TrimSpace(out) != "done" {
		t.Errorf("stdout %q, stderr:\n%s", out, errOut)
	}

	n = 0
	code, out, errOut = e.run("", append(args, "--context-window", "8000", "--no-project-instructions", "--output-format", "stream-json", "read them")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`"type":"compact"`, `"kind":"clear_tool_results"`, `"tokens_before":`, `"cache_read_input_tokens":`} {
		if !strings.Contains(out, want) {
			t.Errorf("stream-json lacks %s", want)
		}
	}
	if strings.Contains(out, `"instructions"`) {
		t.Error("--no-project-instructions still listed instructions")
	}

	code, _, errOut = e.run("", append(args, "--web-search", "go.dev", "search")...)
	if code == 0 || !strings.Contains(errOut, "network tool") {
		t.Errorf("--web-search under the strict preset: exit %d, %s", code, errOut)
	}
}

// As a user would: a session compacted on the way (stream-json says so),
// then `lite-agent rewind --conversation-only` to the start of the turn
// that was compacted, and --resume: the model is sent the turns before it
// whole, without the summary.
func TestCompactedSessionRewindsThroughTheCLI(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	e := newCLIEnv(t)
	for i := range 16 {
		os.WriteFile(filepath.Join(e.ws, fmt.Sprintf("f%02d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644)
	}
	pad := strings.Repeat("Thinking aloud about the file. ", 40)
	var sent []*fakeapi.Request
	n := 0
	srv := fakeapi.New(0, func(r *fakeapi.Request) fakeapi.Reply {
		sent = append(sent, r)
		switch {
		case strings.Contains(r.LastText(), "about to be compacted"):
			return fakeapi.Reply{Text: "SUMMARY of the reads"}
		case r.LastText() == "hello" || r.LastText() == "again":
			return fakeapi.Reply{Text: "hi"}
		case n < 16:
			n++
			return fakeapi.Reply{Text: pad, ToolName: "read_file", ToolInput: fmt.Sprintf(`{"path":"f%02d.txt"}`, n-1)}
		}
		return fakeapi.Reply{Text: "all read"}
	})
	defer srv.Close()
	api := []string{"run", "--provider", "anthropic", "--base-url", srv.URL, "--api-key", "sk-ant-test", "--model", "claude-sonnet-4-6", "--allowed-tools", "read_file", "--tools", "read_file", "--context-window", "6000"}

	code, out, errOut := e.run("", append(api, "--output-format", "json", "hello")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.SessionID == "" {
		t.Fatalf("json output %q", out)
	}
	code, out, errOut = e.run("", append(api, "--resume", res.SessionID, "--output-format", "stream-json", "read them all")...)
	if code != 0 || !strings.Contains(out, `"kind":"summary"`) {
		t.Fatalf("exit %d, no summary compaction in:\n%.3000s\n%s", code, out, errOut)
	}

	code, out, errOut = e.run("", "checkpoints", res.SessionID, "--state-dir", e.state)
	if code != 0 {
		t.Fatalf("checkpoints: exit %d %s", code, errOut)
	}
	var to string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "start of user turn 1") {
			to = strings.Fields(line)[0]
		}
	}
	if to == "" {
		t.Fatalf("no checkpoint for user turn 1:\n%s", out)
	}
	if code, out, errOut = e.run("", "rewind", res.SessionID, "--to", to, "--conversation-only", "--state-dir", e.state); code != 0 {
		t.Fatalf("rewind: exit %d %s%s", code, out, errOut)
	}
	sent = nil
	if code, _, errOut = e.run("", append(api, "--resume", res.SessionID, "again")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first := sent[0]
	if len(first.Messages) != 3 || fakeapi.Decode(first.Messages[0].Content[0]).Text != "hello" || strings.Contains(string(first.Body), "SUMMARY") {
		t.Errorf("after the rewind the model is sent: %.1500s", first.Body)
	}
}
