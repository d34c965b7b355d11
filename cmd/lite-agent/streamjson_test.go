package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/kernel"
)

// The stream-json output is a wire contract (docs/cli.md): these tests pin it.
// testdata/stream-json.txtar holds, for each scripted session below, the
// exact lines `lite-agent run --output-format stream-json` writes, with
// the volatile values normalised (normalizeStream). A change to the wire
// format shows as a diff here; when it is meant, regenerate with
//
//	go test ./cmd/lite-agent/ -run TestStreamJSONGolden -update
//
// and say in the commit and in kernel/doc.go what changed and why.
var update = flag.Bool("update", false, "rewrite testdata/stream-json.txtar from this run")

const goldenPath = "testdata/stream-json.txtar"

// goldenSession is one scripted run through the real CLI.
type goldenSession struct {
	name   string
	script string
	args   []string
	// files are written into the workspace before the run.
	files map[string]string
}

// goldenSessions produce every event kind the CLI can show with the
// scripted model: text, tool calls (allowed by a rule, by the default,
// denied by a hook's failure, denied headless), tool results (ok and
// error), a hook failure, checkpoints, a context compaction, a subagent's
// forwarded events and results of each ending. thinking_delta and retry
// need a provider that streams thinking or retries, custom a handler that
// emits, network the domain proxy: kernel/event_test.go round-trips those.
var goldenSessions = []goldenSession{
	{
		name: "tour",
		script: `{"turns": [
  {"text": "Looking around.", "usage": {"input_tokens": 1200, "output_tokens": 60}, "tool_calls": [
    {"id": "t1", "name": "write_file", "input": {"path": "a.txt", "content": "alpha\n"}},
    {"id": "t2", "name": "read_file", "input": {"path": "missing.txt"}},
    {"id": "t4", "name": "edit_file", "input": {"path": "a.txt", "old_string": "alpha", "new_string": "beta"}}]},
  {"text": "Asking a helper.", "usage": {"input_tokens": 5000, "output_tokens": 20},
   "tool_calls": [{"id": "t5", "name": "agent", "input": {"agent": "helper", "prompt": "read a.txt"}}]},
  {"text": "Now the shell.", "usage": {"input_tokens": 1250, "output_tokens": 12},
   "tool_calls": [{"id": "t3", "name": "bash", "input": {"command": "echo hi"}}]},
  {"text": "Done <ok> & \"quoted\".", "usage": {"input_tokens": 1300, "output_tokens": 10}}],
 "agents": {"helper": {"turns": [
  {"text": "Reading.", "usage": {"input_tokens": 70, "output_tokens": 15}, "tool_calls": [{"id": "h1", "name": "read_file", "input": {"path": "a.txt"}}]},
  {"text": "It says alpha.", "usage": {"input_tokens": 110, "output_tokens": 9}}]}}}`,
		args: []string{
			"--allowed-tools", "write_file",
			"--agents", `{"helper": {"description": "reads files", "prompt": "You read files.", "tools": ["read_file"]}}`,
			"--context-window", "8000",
		},
		files: map[string]string{
			"AGENTS.md": "Be brief.\n",
			// A PreToolUse hook that fails (exit 3): the call is denied
			// and a hook event says so.
			".lite-agent/policy.toml": "[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"bash\"\ncommand = \"echo broken >&2; exit 3\"\n",
		},
	},
	{
		name:   "model_error",
		script: `{"turns": [{"error": "the model is down"}]}`,
	},
	{
		name:   "max_turns",
		script: `{"turns": [{"text": "Once more.", "usage": {"input_tokens": 1100, "output_tokens": 18}, "tool_calls": [{"id": "t1", "name": "read_file", "input": {"path": "AGENTS.md"}}]}, {"text": "never"}]}`,
		args:   []string{"--max-turns", "1"},
		files:  map[string]string{"AGENTS.md": "x\n"},
	},
}

func TestStreamJSONGolden(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var got []txtarFile
	for _, s := range goldenSessions {
		e := newCLIEnv(t)
		for name, content := range s.files {
			p := filepath.Join(e.ws, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		args := append([]string{"run", "--script", e.script(s.script), "--output-format", "stream-json"}, s.args...)
		code, out, errOut := e.run("", append(args, "go")...)
		if strings.TrimSpace(errOut) != "" && code == 0 {
			t.Logf("%s: stderr: %s", s.name, errOut)
		}
		got = append(got, txtarFile{s.name + ".jsonl", normalizeStream(t, out, e)})
		got = append(got, txtarFile{s.name + ".exit", fmt.Sprintf("%d\n", code)})
	}
	if *update {
		if err := os.WriteFile(goldenPath, formatTxtar(goldenComment, got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	want := parseTxtar(data)
	if len(want) != len(got) {
		t.Errorf("the golden file has %d sections, the run %d: regenerate with -update if the sessions changed", len(want), len(got))
	}
	for i := range min(len(want), len(got)) {
		if want[i].name != got[i].name {
			t.Errorf("section %d: golden %s, run %s", i, want[i].name, got[i].name)
			continue
		}
		if want[i].data != got[i].data {
			t.Errorf("%s differs from %s (-update rewrites it, if the change is meant):\n%s", got[i].name, goldenPath, lineDiff(want[i].data, got[i].data))
		}
	}
}

// Every line of the golden stream decodes into a kernel.Event that encodes
// back to the same bytes: a Go consumer of stream-json (or of Query) loses
// nothing, and the encoder writes nothing the decoder does not read.
func TestStreamJSONRoundTrip(t *testing.T) {
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[kernel.EventType]bool{}
	for _, f := range parseTxtar(data) {
		if !strings.HasSuffix(f.name, ".jsonl") {
			continue
		}
		for i, line := range strings.Split(strings.TrimSuffix(f.data, "\n"), "\n") {
			var ev kernel.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Errorf("%s:%d: %v\n%s", f.name, i+1, err, line)
				continue
			}
			seen[ev.Type] = true
			var buf bytes.Buffer
			if err := json.NewEncoder(&buf).Encode(ev); err != nil { // as render writes it
				t.Errorf("%s:%d: %v", f.name, i+1, err)
				continue
			}
			if got := strings.TrimSuffix(buf.String(), "\n"); got != line {
				t.Errorf("%s:%d: the round trip changed the line:\n golden %s\n    got %s", f.name, i+1, line, got)
			}
		}
	}
	for _, typ := range []kernel.EventType{kernel.EventSessionStart, kernel.EventTextDelta, kernel.EventAssistantMessage,
		kernel.EventToolCall, kernel.EventPermission, kernel.EventToolResult, kernel.EventHook, kernel.EventCheckpoint,
		kernel.EventCompact, kernel.EventResult} {
		if !seen[typ] {
			t.Errorf("the golden stream has no %s event: a session should produce one", typ)
		}
	}
}

const goldenComment = `The stream-json contract: what lite-agent run --output-format stream-json
writes for the scripted sessions of cmd/lite-agent/streamjson_test.go, one
JSON object per line, and the exit code. Volatile values are normalised
(normalizeStream). Regenerate with: go test ./cmd/lite-agent/ -run TestStreamJSONGolden -update
`

var (
	agentIDRE  = regexp.MustCompile(`"agent_id":"([^"]*)"`)
	durationRE = regexp.MustCompile(`"duration_ms":\d+`)
	timeRE     = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"`)
)

// normalizeStream is the one place the golden stream is made repeatable.
// It replaces, in the text of the stream (so that every line stays the
// JSON the CLI wrote, and round-trips):
//   - the session id (a random UUID) with SESSION_ID;
//   - each subagent's id (its name and random hex) with AGENT_ID_n, n
//     counting from 1 in order of appearance;
//   - the workspace and state directories (temp dirs) with $WORK and
//     $STATE;
//   - duration_ms values with 0;
//   - RFC 3339 timestamps with "TIME".
//
// Nothing else varies between runs: the scripts give every turn's usage
// (the scripted model's own estimate counts the system prompt, which
// names the temp workspace), checkpoints are numbered from 0, and the
// tour's hook call (whose denial names the workspace) comes after the
// compaction, whose estimates would otherwise count the path's length.
func normalizeStream(t *testing.T, out string, e *cliEnv) string {
	t.Helper()
	var first struct {
		SessionID string `json:"session_id"`
	}
	if line, _, _ := strings.Cut(out, "\n"); json.Unmarshal([]byte(line), &first) == nil && first.SessionID != "" {
		out = strings.ReplaceAll(out, first.SessionID, "SESSION_ID")
	}
	n := 0
	for _, m := range agentIDRE.FindAllStringSubmatch(out, -1) {
		if id := m[1]; !strings.HasPrefix(id, "AGENT_ID_") {
			n++
			out = strings.ReplaceAll(out, `"`+id+`"`, fmt.Sprintf(`"AGENT_ID_%d"`, n))
		}
	}
	out = strings.ReplaceAll(out, e.ws, "$WORK")
	out = strings.ReplaceAll(out, e.state, "$STATE")
	out = durationRE.ReplaceAllString(out, `"duration_ms":0`)
	out = timeRE.ReplaceAllString(out, `"TIME"`)
	return out
}

// A txtar archive (the format of golang.org/x/tools/txtar, written here
// in a few lines rather than adding a module for a test): a comment, then
// files, each introduced by a "-- name --" line.
type txtarFile struct{ name, data string }

func formatTxtar(comment string, files []txtarFile) []byte {
	var b bytes.Buffer
	b.WriteString(comment)
	for _, f := range files {
		fmt.Fprintf(&b, "-- %s --\n%s", f.name, f.data)
		if f.data != "" && !strings.HasSuffix(f.data, "\n") {
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

func parseTxtar(data []byte) []txtarFile {
	var files []txtarFile
	cur := -1
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "-- "); ok && strings.HasSuffix(name, " --") {
			files = append(files, txtarFile{name: strings.TrimSuffix(name, " --")})
			cur = len(files) - 1
			continue
		}
		if cur >= 0 {
			files[cur].data += line
		}
	}
	return files
}

// lineDiff shows the first lines where two texts differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 5; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
