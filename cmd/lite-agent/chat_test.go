package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/builtin"
)

func keyRunes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// TestApprovalKeys: only y and a allow; Enter and other keys do nothing;
// n denies, m denies with the message typed.
func TestApprovalKeys(t *testing.T) {
	ask := func() (*chatModel, chan kernel.PermissionResult) {
		reply := make(chan kernel.PermissionResult, 1)
		m := &chatModel{app: &chatApp{}}
		m.approval = &approvalMsg{name: "bash", input: json.RawMessage(`{"command":"ls"}`),
			info: kernel.ToolUseInfo{Suggestions: []string{"bash(ls)"}}, reply: reply}
		return m, reply
	}
	m, reply := ask()
	for _, k := range []tea.KeyMsg{{Type: tea.KeyEnter}, keyRunes("Y"), keyRunes("x"), {Type: tea.KeySpace}, keyRunes("\r")} {
		m.approvalKey(k)
		select {
		case r := <-reply:
			t.Fatalf("%q answered the approval: %+v", k.String(), r)
		default:
		}
		if m.approval == nil {
			t.Fatalf("%q closed the approval", k.String())
		}
	}
	m.approvalKey(keyRunes("y"))
	if r := <-reply; !r.Allow || len(r.AllowRules) != 0 {
		t.Errorf("y: %+v, want allow once", r)
	}

	m, reply = ask()
	m.approvalKey(keyRunes("a"))
	if r := <-reply; !r.Allow || !reflect.DeepEqual(r.AllowRules, []string{"bash(ls)"}) {
		t.Errorf("a: %+v, want allow with the suggested rule", r)
	}

	m, reply = ask()
	m.approvalKey(keyRunes("n"))
	if r := <-reply; r.Allow || r.Interrupt {
		t.Errorf("n: %+v, want a denial", r)
	}

	m, reply = ask()
	m.approvalKey(keyRunes("m"))
	for _, k := range []tea.KeyMsg{keyRunes("use"), {Type: tea.KeySpace, Runes: []rune{' '}}, keyRunes("rg")} {
		m.approvalKey(k)
	}
	m.approvalKey(tea.KeyMsg{Type: tea.KeyEnter})
	if r := <-reply; r.Allow || !strings.Contains(r.Message, "use rg") {
		t.Errorf("m: %+v, want a denial carrying the message", r)
	}
}

// TestApprovalDiffIsEscaped: the diff of an edit quotes the file, which
// the agent wrote: an escape sequence in it is shown, never sent.
func TestApprovalDiffIsEscaped(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644)
	in, _ := json.Marshal(map[string]any{"path": "a.txt", "old_string": "one\n", "new_string": "two \x1b]52;c;cHduZWQ=\x07\n"})
	got := approvalBody(ws, "edit_file", in, nil)
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("raw control characters in the approval: %q", got)
	}
	for _, want := range []string{"-one", `+two \x1b]52;c;cHduZWQ=\x07`} {
		if !strings.Contains(got, want) {
			t.Errorf("approval lacks %q:\n%s", want, got)
		}
	}
	// write_file of a new file: the whole file as added lines.
	in, _ = json.Marshal(map[string]any{"path": "new.txt", "content": "fresh\n"})
	if got := approvalBody(ws, "write_file", in, nil); !strings.Contains(got, "--- /dev/null") || !strings.Contains(got, "+fresh") {
		t.Errorf("write_file approval:\n%s", got)
	}
	// An edit the tool would refuse says so instead of showing a diff.
	in, _ = json.Marshal(map[string]any{"path": "a.txt", "old_string": "absent", "new_string": "x"})
	if got := approvalBody(ws, "edit_file", in, nil); !strings.Contains(got, "not found") {
		t.Errorf("a failing edit's approval: %s", got)
	}
}

func TestSlashSuggestion(t *testing.T) {
	for in, want := range map[string]string{"/rewnd": "/rewind", "/chek": "/checkpoints", "/hepl": "/help", "/comp": "/compact"} {
		if got := suggest(in); !strings.Contains(got, want) {
			t.Errorf("suggest(%q) = %q, want %s", in, got, want)
		}
	}
}

func TestResumeWithoutID(t *testing.T) {
	for _, c := range []struct {
		in   []string
		out  []string
		pick bool
	}{
		{[]string{"--resume"}, []string{}, true},
		{[]string{"--resume", "--model", "x"}, []string{"--model", "x"}, true},
		{[]string{"--resume", "abc"}, []string{"--resume", "abc"}, false},
		{[]string{"--", "--resume"}, []string{"--", "--resume"}, false},
	} {
		out, pick := resumeWithoutID(c.in)
		if !reflect.DeepEqual(out, c.out) || pick != c.pick {
			t.Errorf("resumeWithoutID(%q) = %q, %v; want %q, %v", c.in, out, pick, c.out, c.pick)
		}
	}
}

func TestHistoryAndCompletion(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.jsonl")
	h := appendHistory(p, nil, "first\nsecond line")
	appendHistory(p, h, "again")
	if got := loadHistory(p); !reflect.DeepEqual(got, []string{"first\nsecond line", "again"}) {
		t.Errorf("history read back: %q", got)
	}
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "src/deep"), 0o755)
	os.WriteFile(filepath.Join(ws, "src/deep/main.go"), nil, 0o644)
	os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
	os.WriteFile(filepath.Join(ws, ".git/config"), nil, 0o644)
	if got := workspaceFiles(ws, "src/d", 10); !reflect.DeepEqual(got, []string{"src/deep/", "src/deep/main.go"}) {
		t.Errorf("completion of src/d: %q", got)
	}
	if got := workspaceFiles(ws, ".g", 10); len(got) != 0 {
		t.Errorf(".git is offered: %q", got)
	}
	// ".git" in any case, the one rule (paths.IsGitName).
	os.MkdirAll(filepath.Join(ws, "sub/.GIT"), 0o755)
	os.WriteFile(filepath.Join(ws, "sub/.GIT/config"), nil, 0o644)
	if got := workspaceFiles(ws, "sub/", 10); len(got) != 0 {
		t.Errorf("sub/.GIT is offered: %q", got)
	}
}

// TestShortPath: a path in the workspace is shown relative to it — also
// one whose name begins with "..", which a HasPrefix(rel, "..") test took
// for one outside.
func TestShortPath(t *testing.T) {
	for _, c := range []struct{ p, want string }{
		{"/ws/AGENTS.md", "AGENTS.md"},
		{"/ws/..AGENTS.md", "..AGENTS.md"},
		{"/ws/sub/CLAUDE.md", "sub/CLAUDE.md"},
		{"/elsewhere/AGENTS.md", "/elsewhere/AGENTS.md"},
		{"/ws2/AGENTS.md", "/ws2/AGENTS.md"},
	} {
		if got := shortPath(c.p, "/ws"); got != c.want {
			t.Errorf("shortPath(%q, /ws) = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestApprovalAllowAlways: A asks which file; u writes the shown rule to
// the user's policy file, w to the workspace's; both allow the call with
// the rule for the session too.
func TestApprovalAllowAlways(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // w trusts the new workspace file: not in the machine's store
	ask := func(ws, preset string) (*chatModel, chan kernel.PermissionResult) {
		reply := make(chan kernel.PermissionResult, 1)
		m := &chatModel{app: &chatApp{f: runFlags{workspace: ws, preset: preset}}}
		m.approval = &approvalMsg{name: "bash", input: json.RawMessage(`{"command":"go test ./..."}`),
			info: kernel.ToolUseInfo{Suggestions: []string{"bash(go test:*)"}}, reply: reply}
		m.approvalKey(keyRunes("A"))
		m.approvalKey(tea.KeyMsg{Type: tea.KeyEnter}) // not an answer
		select {
		case r := <-reply:
			t.Fatalf("answered before the file was chosen: %+v", r)
		default:
		}
		return m, reply
	}
	// nextStartLoads: the policy a new session in ws would load.
	nextStartLoads := func(ws, preset string) error {
		p, err := policies.PresetByName(preset)
		if err != nil {
			t.Fatal(err)
		}
		_, err = policies.Load(p, ws, nil)
		return err
	}
	for _, c := range []struct{ key, preset string }{{"u", "strict"}, {"w", "standard"}} {
		ws := t.TempDir()
		file := filepath.Join(cfg, "lite-agent", "policy.toml")
		if c.key == "w" {
			file = filepath.Join(ws, ".lite-agent", "policy.toml")
		}
		m, reply := ask(ws, c.preset)
		m.approvalKey(keyRunes(c.key))
		if r := <-reply; !r.Allow || !reflect.DeepEqual(r.AllowRules, []string{"bash(go test:*)"}) {
			t.Errorf("%s: %+v", c.key, r)
		}
		if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), `allow = ["bash(go test:*)"]`) {
			t.Errorf("%s: %s holds %q (%v)", c.key, file, b, err)
		}
		if err := nextStartLoads(ws, c.preset); err != nil {
			t.Errorf("%s under %s: the next start refuses: %v", c.key, c.preset, err)
		}
	}
	if err := os.Remove(filepath.Join(cfg, "lite-agent", "policy.toml")); err != nil {
		t.Fatal(err)
	}

	// Where the next start would refuse the workspace's file with the rule
	// in it — strict never trusts it; under standard, a file that exists
	// untrusted stays untrusted — w is not offered, writes nothing, says
	// why, and leaves the question open for u or Esc.
	untrusted := t.TempDir()
	if err := os.MkdirAll(filepath.Join(untrusted, ".lite-agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	planted := "[permissions]\ndeny = [\"bash(rm:*)\"]\n"
	if err := os.WriteFile(filepath.Join(untrusted, ".lite-agent", "policy.toml"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ws, preset, why string }{
		{t.TempDir(), "strict", "strict preset never lets"},
		{untrusted, "standard", "not trusted"},
	} {
		m, reply := ask(c.ws, c.preset)
		m.width = 200
		if v := m.approvalView(0); strings.Contains(v, "[w] this workspace") || !strings.Contains(v, c.why) {
			t.Errorf("%s: the choice offers [w] or does not say why not:\n%s", c.preset, v)
		}
		m.approvalKey(keyRunes("w"))
		select {
		case r := <-reply:
			t.Fatalf("%s: w answered: %+v", c.preset, r)
		default:
		}
		if m.approval == nil || !strings.Contains(m.notice, c.why) {
			t.Errorf("%s: after w, approval %v, notice %q", c.preset, m.approval != nil, m.notice)
		}
		b, _ := os.ReadFile(filepath.Join(c.ws, ".lite-agent", "policy.toml"))
		if strings.Contains(string(b), "go test") {
			t.Errorf("%s: w wrote the rule: %q", c.preset, b)
		}
		if err := nextStartLoads(c.ws, c.preset); err != nil {
			t.Errorf("%s: the next start refuses: %v", c.preset, err)
		}
	}
}

// TestMarkdownCannotMakeControls: a message holding raw controls, or
// character references a Markdown renderer would decode, never comes out
// holding ESC, BEL or a bidi override: the text is escaped before styling
// and the styled output is checked.
func TestMarkdownCannotMakeControls(t *testing.T) {
	hostile := "see \x1b]52;c;cHduZWQ=\x07 and \u202eEVIL &#x1b; **bold**"
	got := renderMarkdown(hostile, 80, termenv.ANSI256)
	if strings.ContainsAny(sgrRE.ReplaceAllString(got, ""), "\x1b\x07\u202e") {
		t.Errorf("control characters reach the screen: %q", got)
	}
	// Ordinary Markdown is rendered (styled), the text kept.
	md := renderMarkdown("# Title\n\nsome **bold** text", 80, termenv.ANSI256)
	if !strings.Contains(md, "\x1b[") || !strings.Contains(sgrRE.ReplaceAllString(md, ""), "bold") {
		t.Errorf("markdown not rendered: %q", md)
	}
	if got := renderMarkdown("**x**", 80, termenv.Ascii); got != "**x**" {
		t.Errorf("NO_COLOR: %q, want the source", got)
	}
}

// TestApprovalShowsNetworkGrant: a command's approval names the network
// mode of the sandbox it runs in and every domain it may reach through the
// proxy (escaped: the domains may come from a workspace's files).
func TestApprovalShowsNetworkGrant(t *testing.T) {
	ws := t.TempDir()
	app := &chatApp{opts: kernel.Options{
		Confinement: kernel.Confinement{
			Sandbox: &sandbox.Policy{Workspace: ws, Network: sandbox.NetworkNone,
				AllowDomains: []string{"github.com", "*.golang.org", "evil\x1b]52;c;eA==\x07.com"}, DenyDomains: []string{"gist.github.com"}},
		},
	}}
	got := approvalBody(ws, "bash", json.RawMessage(`{"command":"go mod download"}`), app)
	for _, want := range []string{"network: none", "domains github.com, *.golang.org, evil\\x1b]52;c;eA==\\x07.com", "never gist.github.com"} {
		if !strings.Contains(got, want) {
			t.Errorf("the approval lacks %q:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("raw control characters in the approval: %q", got)
	}
	m := &chatModel{app: app, width: 200}
	app.modelName = "m"
	if s := m.statusLine(); !strings.Contains(s, "net none+3 domains") {
		t.Errorf("status line: %q", s)
	}
	// Without a domain, the mode alone.
	app.opts.Sandbox = &sandbox.Policy{Workspace: ws, Network: sandbox.NetworkLoopback}
	if got := approvalBody(ws, "bash", json.RawMessage(`{"command":"curl localhost"}`), app); !strings.Contains(got, "network: loopback\n") {
		t.Errorf("loopback: %s", got)
	}
}

// TestViewFits: at 50, 80 and 120 columns, every line of the live view —
// an edit's approval with a long diff, a bash approval with a long
// command, the running calls with a subagent's and a command's output, a
// background task, the status line, the command menu, the /rewind picker
// with a diff preview — is at most the width, and the view at most 24
// lines high (the renderer would cut a wider line, and drop the top of a
// taller view).
func TestViewFits(t *testing.T) {
	ws := t.TempDir()
	var old strings.Builder
	for i := range 40 {
		old.WriteString(strings.Repeat("word ", 30) + strconv.Itoa(i) + "\n")
	}
	os.WriteFile(filepath.Join(ws, "big.txt"), []byte(old.String()), 0o644)
	for _, width := range []int{50, 80, 120} {
		app := &chatApp{f: runFlags{workspace: ws, stateDir: t.TempDir()}, modelName: "claude-sonnet-4-5-with-a-long-model-name",
			opts: kernel.Options{Confinement: kernel.Confinement{Sandbox: &sandbox.Policy{Workspace: ws, Network: sandbox.NetworkNone, AllowDomains: []string{"goproxy.example.com", "sumdb.example.com"}}}}}
		m := newChatModel(app, false)
		m.Update(tea.WindowSizeMsg{Width: width, Height: 24})
		m.running = true
		m.calls = []runningCall{{id: "a1", line: callSummary("agent", json.RawMessage(`{"agent":"reader"}`)), start: time.Now(),
			sub: []subCall{{agent: "reader-1", line: callSummary("bash", json.RawMessage(`{"command":"`+strings.Repeat("x", 200)+`"}`)), start: time.Now()}}}}
		m.tasks = []bgTask{{id: "task-1", desc: strings.Repeat("dev server ", 20), start: time.Now()}}
		m.usage.InputTokens, m.usage.OutputTokens = 123456, 7890
		newText := strings.ReplaceAll(old.String(), "word", "WORD")
		edit, _ := json.Marshal(map[string]any{"path": "big.txt", "content": newText})
		bash, _ := json.Marshal(map[string]any{"command": strings.Repeat("echo a very long command; ", 12)})
		for _, a := range []approvalMsg{
			{name: "write_file", input: edit, info: kernel.ToolUseInfo{Reason: "write_file changes the workspace", Suggestions: []string{"write_file(big.txt)"}}},
			{name: "bash", input: bash, info: kernel.ToolUseInfo{Reason: strings.Repeat("a reason ", 20), Suggestions: []string{"bash(echo:*)"}}},
		} {
			for _, at := range []string{"", "message", "always"} {
				m.approval, m.approvalAt = &a, at
				m.calls = m.calls[:0] // an approval shows alone with the status
				m.tasks = nil
				checkFits(t, fmt.Sprintf("%d: %s/%s", width, a.name, at), m.View(), width)
			}
		}
		m.approval = nil
		m.calls = []runningCall{{id: "a1", line: "● agent reader", start: time.Now(), sub: make([]subCall, 9)},
			{id: "b1", line: "● bash go test ./...", start: time.Now(), output: strings.Repeat("ok  \tgithub.com/a/very/long/package/path/that/goes/on\t0.01s\n", 30)}}
		m.tasks = []bgTask{{id: "task-1", desc: strings.Repeat("dev server ", 20), start: time.Now()}}
		m.stream.WriteString(strings.Repeat("streaming text that goes on and on ", 40))
		checkFits(t, fmt.Sprintf("%d: running", width), m.View(), width)
		m.running, m.calls, m.tasks = false, nil, nil
		m.stream.Reset()
		m.input.SetValue("/")
		checkFits(t, fmt.Sprintf("%d: menu", width), m.View(), width)
		// The /rewind picker of a long session, with a diff preview.
		p := &picker{title: "rewind to which checkpoint? (both; ↑/↓, d: the diff, Enter, Esc)", at: 20}
		for i := range 40 {
			p.labels = append(p.labels, fmt.Sprintf("%3d  bash (b%d)  %s", i, i, strings.Repeat("file.go ", 20)))
			p.values = append(p.values, strconv.Itoa(i))
		}
		p.shown = colorDiff("--- a/big.txt\n+++ b/big.txt\n@@ -1,40 +1,40 @@\n"+strings.Repeat("-"+strings.Repeat("word ", 30)+"\n", 40), width, m.previewRows(), "") + wrapText("dry run: 1 path(s) would change; nothing was written", width)
		m.picker = p
		checkFits(t, fmt.Sprintf("%d: picker", width), m.View(), width)
	}
}

func checkFits(t *testing.T, what, view string, width int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) > 24 {
		t.Errorf("%s: %d lines, more than 24:\n%s", what, len(lines), view)
	}
	for _, l := range lines {
		if w := lipgloss.Width(l); w > width {
			t.Errorf("%s: a line of %d cells: %q", what, w, l)
		}
	}
}

// TestChatSaysWhatIsNotRewindable: chat shows, with the session's first
// line, every writable root outside the workspace that no rewind covers
// (session_start's not_rewindable), as run does on stderr; before, only
// run said it, and a chat session's person never learned it.
func TestChatSaysWhatIsNotRewindable(t *testing.T) {
	m := &chatModel{app: &chatApp{}}
	cmd := m.onEvent(kernel.Event{Type: kernel.EventSessionStart, SessionID: "s1",
		SessionStart: &kernel.SessionStartEvent{NotRewindable: []string{"/data/out", "/tmp/x\x1b[2J"}}})
	if cmd == nil {
		t.Fatal("no output for session_start")
	}
	// What went to the scrollback, laid out wide enough for no wrapping.
	var b strings.Builder
	for _, render := range m.printed {
		b.WriteString(render(1000) + "\n")
	}
	got := b.String()
	for _, want := range []string{"session s1", "/data/out is writable but outside the workspace", "no rewind undoes them", `/tmp/x\x1b[2J`} {
		if !strings.Contains(got, want) {
			t.Errorf("chat's start lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b[2J") {
		t.Errorf("a path's escape sequence reached the terminal: %q", got)
	}
}

// TestChatShowsWhatTheSandboxRefused: a command's refusal note (the bash
// tool's sandbox_refusal event) is shown under its result even when the
// output is folded — the note ends the output, which the fold cuts — and
// even when the command succeeded.
func TestChatShowsWhatTheSandboxRefused(t *testing.T) {
	m := &chatModel{app: &chatApp{}, width: 100}
	const note = "[lite-agent] the sandbox refused connect 127.0.0.1:5432: network none; --network loopback reaches it"
	long := strings.Repeat("row\n", 40) + "\n" + note
	m.onEvent(kernel.Event{Type: kernel.EventToolCall, ToolCall: &kernel.ToolCallEvent{ID: "c1", Name: "bash", Input: json.RawMessage(`{"command":"psql"}`)}})
	m.onEvent(kernel.Event{Type: kernel.EventCustom, Custom: &kernel.CustomEvent{ID: "c1", Name: builtin.SandboxRefusalEvent, Data: map[string]any{"note": note}}})
	m.onEvent(kernel.Event{Type: kernel.EventToolResult, ToolResult: &kernel.ToolResultEvent{ID: "c1", Name: "bash", Content: []tools.Content{tools.TextContent(long)}}})
	var b strings.Builder
	for _, render := range m.printed {
		b.WriteString(render(1000) + "\n")
	}
	got := b.String()
	if !strings.Contains(got, "more row(s)") {
		t.Fatalf("the output was not folded: the test proves nothing:\n%s", got)
	}
	if !strings.Contains(got, "the sandbox refused connect 127.0.0.1:5432") || !strings.Contains(got, "--network loopback") {
		t.Errorf("the refusal is not shown under the result:\n%s", got)
	}
	if len(m.refusals) != 0 {
		t.Errorf("the note was kept after its result: %v", m.refusals)
	}
	// A failed command with a short output: its status is its exit code,
	// the note is said once.
	m.printed, m.printing = nil, false // the first batch printed
	m.onEvent(kernel.Event{Type: kernel.EventToolCall, ToolCall: &kernel.ToolCallEvent{ID: "c2", Name: "bash", Input: json.RawMessage(`{"command":"psql"}`)}})
	m.onEvent(kernel.Event{Type: kernel.EventCustom, Custom: &kernel.CustomEvent{ID: "c2", Name: builtin.SandboxRefusalEvent, Data: map[string]any{"note": note}}})
	m.onEvent(kernel.Event{Type: kernel.EventToolResult, ToolResult: &kernel.ToolResultEvent{ID: "c2", Name: "bash", IsError: true,
		Content: []tools.Content{tools.TextContent("psql: error: connection refused\n\nexit code 2\n\n" + note)}}})
	b.Reset()
	for _, render := range m.printed {
		b.WriteString(render(1000) + "\n")
	}
	got = b.String()
	if strings.Count(got, "the sandbox refused") != 1 || !strings.Contains(got, "✗ exit code 2") {
		t.Errorf("a failed command's result: the note once, the exit code as its status:\n%s", got)
	}
}
