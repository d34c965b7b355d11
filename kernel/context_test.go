package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/internal/fakeapi"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
)

// fakeModel is the Anthropic provider talking to a local fake API.
func fakeModel(t *testing.T, srv *fakeapi.Server) provider.Model {
	t.Helper()
	m, err := anthropic.New(&anthropic.Options{APIKey: "sk-ant-test", BaseURL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// isSummaryRequest recognises the compaction request.
func isSummaryRequest(r *fakeapi.Request) bool {
	return strings.Contains(r.LastText(), "about to be compacted")
}

// reader answers as a model working through files f000.txt… one call at a
// time, then finishing; the compaction request gets a summary. extra pads
// each answer's text.
func reader(n int, extra string) func(*fakeapi.Request) fakeapi.Reply {
	next := 0
	return func(r *fakeapi.Request) fakeapi.Reply {
		if isSummaryRequest(r) {
			return fakeapi.Reply{Text: fmt.Sprintf("SUMMARY: the files up to f%03d.txt were read.", next-1)}
		}
		if next >= n {
			return fakeapi.Reply{Text: "All files read."}
		}
		next++
		return fakeapi.Reply{Text: "Reading the next file." + extra, ToolName: "read_file", ToolInput: fmt.Sprintf(`{"path":"f%03d.txt"}`, next-1)}
	}
}

func writeFiles(t *testing.T, dir string, n, size int) {
	t.Helper()
	for i := range n {
		line := fmt.Sprintf("file %d: the quick brown fox jumps over the lazy dog\n", i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(strings.Repeat(line, size/len(line)+1)[:size]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (e env) fakeOpts(t *testing.T, srv *fakeapi.Server, prompt string) Options {
	o := e.opts(fakeModel(t, srv))
	o.Prompt, o.ModelName, o.Tools = prompt, "claude-sonnet-4-6", []string{"read_file"}
	o.AllowedTools = []string{"read_file"}
	return o
}

// A session whose reads add up to several times the window finishes: old
// tool results are cleared ahead of the window, every request fits, the
// newest results are intact, and the cleared ones say how to get them back.
func TestLongSessionCrossesTheWindow(t *testing.T) {
	e := newEnv(t)
	const files, window = 40, 12_000
	writeFiles(t, e.ws, files, 4000)
	srv := fakeapi.New(window, reader(files, ""))
	defer srv.Close()
	o := e.fakeOpts(t, srv, "Read every file.")
	o.ContextWindow = window
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	res := byType(evs, EventResult)[0]
	if res.Result.Subtype != SubtypeSuccess || res.Result.Result != "All files read." {
		t.Fatalf("result %+v", res)
	}
	u := srv.Usage()
	if u.TooLong != 0 || u.MaxPrompt > window {
		t.Errorf("a request passed the window: %d refused, largest %d tokens", u.TooLong, u.MaxPrompt)
	}
	if got := len(byType(evs, EventToolResult)); got != files {
		t.Errorf("%d tool results, want %d", got, files)
	}
	compacts := byType(evs, EventCompact)
	t.Logf("%d requests, %d compact events, largest prompt %d tokens; input %d, cache writes %d, reads %d", u.Requests, len(compacts), u.MaxPrompt, u.Input, u.CacheWrites, u.CacheReads)
	if len(compacts) == 0 {
		t.Fatal("no compact event")
	}
	c := compacts[0].Compaction
	if c.Kind != "clear_tool_results" || c.ClearedToolResults == 0 || c.TokensAfter >= c.TokensBefore {
		t.Errorf("compact event %+v", c)
	}
	// The last request: the newest results verbatim, an old one a note.
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	body := string(last.Body)
	if !strings.Contains(body, "file 39: the quick") || !strings.Contains(body, `result cleared to save context: this was the output of read_file {\"path\":\"f000.txt\"}`) {
		t.Errorf("last request lacks the newest result or the note for the first:\n%.2000s", body)
	}
	// Usage with cache counts reaches every assistant_message and the result.
	if res.Result.Usage.CacheReadInputTokens == 0 || res.Result.Usage.CacheCreationInputTokens == 0 {
		t.Errorf("result usage %+v lacks cache counts", res.Result.Usage)
	}
	if res.Result.Usage.CacheReadInputTokens != u.CacheReads || res.Result.Usage.CacheCreationInputTokens != u.CacheWrites || res.Result.Usage.InputTokens != u.Input {
		t.Errorf("result usage %+v, the API reported %+v", res.Result.Usage, u)
	}
	am := byType(evs, EventAssistantMessage)
	if am[len(am)-1].AssistantMessage.Usage.CacheReadInputTokens == 0 {
		t.Errorf("assistant_message usage %+v", am[len(am)-1].AssistantMessage.Usage)
	}
	if u.Breakpoints > 4 {
		t.Errorf("%d breakpoints in a request", u.Breakpoints)
	}
	// Caching works: after the first request most input is a cache read.
	if u.CacheReads < 5*u.Input {
		t.Errorf("cache reads %d, uncached input %d: the prefix is not being reused", u.CacheReads, u.Input)
	}
}

// When clearing is not enough (the conversation itself is large), the
// older turns are summarised; the session resumes after the boundary, and
// rewinding to a turn before it restores the messages as they were.
func TestCompactionSummarisesResumesAndRewinds(t *testing.T) {
	e := newEnv(t)
	const files, window = 20, 8_000
	writeFiles(t, e.ws, files, 100)
	pad := " " + strings.Repeat("Thinking aloud about the file. ", 50)
	var preCompact []string
	srv := fakeapi.New(window, func(r *fakeapi.Request) fakeapi.Reply {
		return fakeapi.Reply{Text: "Hello."}
	})
	defer srv.Close()

	// Turn 0: a short exchange.
	o := e.fakeOpts(t, srv, "hello")
	o.ContextWindow, o.SessionID = window, "compacted"
	if _, err := collect(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	// Turn 1: a long one, compacted on the way.
	srv2 := fakeapi.New(window, reader(files, pad))
	defer srv2.Close()
	o = e.fakeOpts(t, srv2, "Read every file.")
	o.ContextWindow, o.Resume = window, "compacted"
	o.Hooks = []Hook{{Event: HookPreCompact, Func: func(_ context.Context, in *HookInput) (*HookOutput, error) {
		preCompact = append(preCompact, in.Source)
		return nil, nil
	}}}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var summary *Compaction
	for _, ev := range byType(evs, EventCompact) {
		if ev.Compaction.Kind == "summary" {
			summary = ev.Compaction
		}
	}
	if summary == nil || summary.Error != "" || summary.SummarizedMessages == 0 || summary.TokensAfter >= summary.TokensBefore {
		t.Fatalf("no summary compaction: %+v", byType(evs, EventCompact))
	}
	if len(preCompact) == 0 || preCompact[0] != "auto" {
		t.Errorf("PreCompact hooks ran with %v", preCompact)
	}
	if u := srv2.Usage(); u.TooLong != 0 || byType(evs, EventResult)[0].Result.Subtype != SubtypeSuccess {
		t.Fatalf("the session did not finish within the window: %+v", u)
	}
	// The requests after the summary start with it, and the summary
	// request itself reused the cached prefix.
	reqs := srv2.Requests()
	last := reqs[len(reqs)-1]
	first := fakeapi.Decode(last.Messages[0].Content[0])
	if !strings.Contains(first.Text, "SUMMARY:") || strings.Contains(string(last.Body), "hello") {
		t.Errorf("after compaction the request starts with %q", first.Text)
	}

	// Resume: the next run is sent the summary and the recent turns.
	srv3 := fakeapi.New(window, func(*fakeapi.Request) fakeapi.Reply { return fakeapi.Reply{Text: "ok"} })
	defer srv3.Close()
	o = e.fakeOpts(t, srv3, "what next?")
	o.ContextWindow, o.Resume = window, "compacted"
	if _, err := collect(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	r3 := srv3.Requests()[0]
	if !strings.Contains(fakeapi.Decode(r3.Messages[0].Content[0]).Text, "SUMMARY:") || r3.LastText() != "what next?" {
		t.Errorf("resumed request: last text %q, %d messages, body ends %s", r3.LastText(), len(r3.Messages), r3.Body[max(0, len(r3.Body)-700):])
	}
	// The transcript still holds every message.
	path, _ := SessionPath(e.state, "compacted")
	tr, err := ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := userTurns(tr.Messages); n != 3 || tr.Context.Cut == 0 {
		t.Errorf("transcript: %d user turns, cut %d", n, tr.Context.Cut)
	}

	// On demand (/compact): Compact summarises the session now.
	srv4 := fakeapi.New(window, reader(0, ""))
	defer srv4.Close()
	o = e.fakeOpts(t, srv4, "")
	o.ContextWindow, o.Resume = window, "compacted"
	info, err := Compact(context.Background(), o)
	if err != nil || info == nil || info.Trigger != "manual" {
		t.Fatalf("Compact = %+v, %v", info, err)
	}

	// Rewind the conversation to the start of turn 1, before the
	// boundaries: the messages are those of turn 0, whole, no summary.
	if _, err := checkpoint.TruncateTranscript(path, 1); err != nil {
		t.Fatal(err)
	}
	srv5 := fakeapi.New(window, func(*fakeapi.Request) fakeapi.Reply { return fakeapi.Reply{Text: "ok"} })
	defer srv5.Close()
	o = e.fakeOpts(t, srv5, "again")
	o.ContextWindow, o.Resume = window, "compacted"
	if _, err := collect(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	r5 := srv5.Requests()[0]
	if len(r5.Messages) != 3 || fakeapi.Decode(r5.Messages[0].Content[0]).Text != "hello" || strings.Contains(string(r5.Body), "SUMMARY") {
		t.Errorf("after the rewind the request is: %.1500s", r5.Body)
	}
}

// A model whose window the kernel does not know: the provider's 400
// "prompt is too long" makes the kernel compact and retry, once per
// refusal, and the session finishes.
func TestPromptTooLongCompactsAndRetries(t *testing.T) {
	e := newEnv(t)
	const files = 12
	writeFiles(t, e.ws, files, 3000)
	srv := fakeapi.New(6_000, reader(files, ""))
	defer srv.Close()
	o := e.fakeOpts(t, srv, "Read every file.")
	o.ModelName = "some-unknown-model"
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Usage().TooLong == 0 {
		t.Fatal("the fake never refused a request: the test proves nothing")
	}
	var triggered bool
	for _, ev := range byType(evs, EventCompact) {
		triggered = triggered || ev.Compaction.Trigger == "prompt_too_long"
	}
	if !triggered || byType(evs, EventResult)[0].Result.Subtype != SubtypeSuccess {
		t.Errorf("compact events %+v", byType(evs, EventCompact))
	}
}

// A turn cut off by max_tokens in the middle of a tool call never runs
// the truncated input: the model is told, and goes on.
func TestMaxTokensMidCallIsNotRun(t *testing.T) {
	e := newEnv(t)
	n := 0
	srv := fakeapi.New(0, func(r *fakeapi.Request) fakeapi.Reply {
		n++
		if n == 1 {
			return fakeapi.Reply{Text: "Writing it.", ToolName: "write_file", ToolInput: `{"path":"out.txt","content":"half of`, Stop: "max_tokens"}
		}
		return fakeapi.Reply{Text: "Noted."}
	})
	defer srv.Close()
	o := e.fakeOpts(t, srv, "write out.txt")
	o.Tools, o.AllowedTools = nil, []string{"write_file"}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(byType(evs, EventToolCall)) != 0 {
		t.Error("the truncated call was run")
	}
	if _, err := os.Stat(filepath.Join(e.ws, "out.txt")); err == nil {
		t.Error("out.txt was written from a truncated call")
	}
	second := srv.Requests()[1]
	if !strings.Contains(second.LastText(), "was cut off and was NOT run") || strings.Contains(string(second.Body), "tool_use") {
		t.Errorf("second request: %.1500s", second.Body)
	}
}

// Thinking: the budget is sent, thinking streams as thinking_delta events,
// and the signed block goes back within the tool loop.
func TestThinkingKeptInTheToolLoop(t *testing.T) {
	e := newEnv(t)
	writeFiles(t, e.ws, 1, 100)
	n := 0
	srv := fakeapi.New(0, func(r *fakeapi.Request) fakeapi.Reply {
		n++
		if n == 1 {
			return fakeapi.Reply{Thinking: "I should read it.", Signature: "sig-abc", ToolName: "read_file", ToolInput: `{"path":"f000.txt"}`}
		}
		return fakeapi.Reply{Text: "Done."}
	})
	defer srv.Close()
	o := e.fakeOpts(t, srv, "read f000.txt")
	o.ThinkingBudget = 2048
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	td := byType(evs, EventThinkingDelta)
	if len(td) != 1 || td[0].ThinkingDelta.Thinking != "I should read it." {
		t.Errorf("thinking deltas %+v", td)
	}
	b, _ := json.Marshal(td[0])
	if !strings.Contains(string(b), `"type":"thinking_delta"`) || !strings.Contains(string(b), `"thinking":"I should read it."`) {
		t.Errorf("thinking_delta JSON %s", b)
	}
	reqs := srv.Requests()
	if !strings.Contains(string(reqs[0].Thinking), `"budget_tokens":2048`) {
		t.Errorf("thinking param %s", reqs[0].Thinking)
	}
	a := fakeapi.Decode(reqs[1].Messages[1].Content[0])
	if a.Type != "thinking" || a.Signature != "sig-abc" || a.Thinking != "I should read it." {
		t.Errorf("the thinking block did not go back: %+v", a)
	}
	if _, err := collect(t, context.Background(), Options{Agent: Agent{Model: o.Model, Workspace: e.ws, StateDir: e.state, ThinkingBudget: 10}, Prompt: "x"}); err == nil {
		t.Error("a thinking budget below 1024 was accepted")
	}
}

// A subagent's calls are cached like the main agent's: its own system
// prompt carries a breakpoint, so does its newest message, never more
// than four.
func TestSubagentRequestsCarryBreakpoints(t *testing.T) {
	e := newEnv(t)
	writeFiles(t, e.ws, 1, 100)
	srv := fakeapi.New(0, func(r *fakeapi.Request) fakeapi.Reply {
		sys := systemOf(t, r)
		isSub := strings.HasPrefix(sys, "You read files for the main agent.")
		switch {
		case isSub && len(r.Messages) == 1:
			return fakeapi.Reply{ToolName: "read_file", ToolInput: `{"path":"f000.txt"}`}
		case isSub:
			return fakeapi.Reply{Text: "f000 is about a fox."}
		case len(r.Messages) == 1:
			return fakeapi.Reply{ToolName: AgentTool, ToolInput: `{"agent":"reader","prompt":"read f000.txt"}`}
		}
		return fakeapi.Reply{Text: "done"}
	})
	defer srv.Close()
	o := e.fakeOpts(t, srv, "delegate")
	o.Tools = nil
	o.AllowedTools = []string{"read_file", AgentTool}
	o.Agents = map[string]AgentDefinition{"reader": {Description: "reads", Prompt: "You read files for the main agent.", Tools: []string{"read_file"}}}
	if _, err := collect(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	sub := 0
	for _, r := range srv.Requests() {
		if !strings.HasPrefix(systemOf(t, r), "You read files for the main agent.") {
			continue
		}
		sub++
		if r.Breakpoints != 2 || !strings.Contains(string(r.System[0]), "cache_control") {
			t.Errorf("subagent request with %d breakpoints: %.600s", r.Breakpoints, r.Body)
		}
	}
	if sub != 2 {
		t.Fatalf("%d subagent requests, want 2", sub)
	}
}
