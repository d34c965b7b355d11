package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
)

// recordingModel remembers every request it is sent.
type recordingModel struct {
	provider.Model
	mu   sync.Mutex
	reqs []provider.Request
}

func (m *recordingModel) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Chunk, error] {
	m.mu.Lock()
	c := *req
	c.Messages = slices.Clone(req.Messages)
	m.reqs = append(m.reqs, c)
	m.mu.Unlock()
	return m.Model.Stream(ctx, req)
}

// requests returns the requests made by one agent ("" for the main one).
func (m *recordingModel) requests(agent string) []provider.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []provider.Request
	for _, r := range m.reqs {
		if r.Agent == agent {
			out = append(out, r)
		}
	}
	return out
}

func specNames(specs []provider.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// agentCall is a call of the agent tool.
func agentCall(id, agent, prompt string) string {
	b, _ := json.Marshal(map[string]string{"agent": agent, "prompt": prompt})
	return call(id, AgentTool, string(b))
}

// subagentOutcomes returns the outcomes of a subagent's calls by id, and
// checks that each of its events carries its name and the parent call.
func subagentOutcomes(t *testing.T, evs []Event, agent, parentCall string) map[string]outcome {
	t.Helper()
	for _, ev := range evs {
		if ev.AgentID != "" && (ev.Agent != agent || ev.ParentToolUseID != parentCall || !strings.HasPrefix(ev.AgentID, agent+"-")) {
			t.Errorf("%s event of a subagent tagged %q %q %q, want %q and parent call %q", ev.Type, ev.Agent, ev.AgentID, ev.ParentToolUseID, agent, parentCall)
		}
	}
	return outcomesOf(evs, func(ev Event) bool { return ev.AgentID != "" })
}

// mainOutcomes returns the outcomes of the main agent's calls by id.
func mainOutcomes(evs []Event) map[string]outcome {
	return outcomesOf(evs, func(ev Event) bool { return ev.AgentID == "" })
}

// TestSubagentHasItsOwnContextAndOnlyItsTools: a subagent sees its own
// prompt and conversation, only the tools its definition names, and its
// final text is the agent call's result; its events are forwarded, tagged.
func TestSubagentHasItsOwnContextAndOnlyItsTools(t *testing.T) {
	e := newEnv(t)
	m := &recordingModel{Model: script(t, `{
	  "turns": [
	    {"tool_calls": [`+agentCall("a1", "researcher", "find the answer")+`]},
	    {"text": "The researcher says: found it."}],
	  "agents": {"researcher": {"turns": [
	    {"text": "Looking.", "tool_calls": [
	      {"id": "b1", "name": "bash", "input": {"command": "touch hacked"}},
	      {"id": "w1", "name": "write_file", "input": {"path": "notes.txt", "content": "answer: 42"}}]},
	    {"text": "Found it: 42."}]}}}`)}
	o := e.opts(m)
	o.SystemPrompt = "You lead."
	o.AllowedTools = []string{"write_file"}
	o.Agents = map[string]AgentDefinition{
		"researcher": {Description: "Researches things.", Prompt: "You research.", Tools: []string{"read_file", "grep", "write_file"}, Model: "small-model"},
	}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(evs[0].SessionStart.Tools, AgentTool) || !slices.Equal(evs[0].SessionStart.Agents, []string{"researcher"}) {
		t.Errorf("session_start: tools %v, agents %v", evs[0].SessionStart.Tools, evs[0].SessionStart.Agents)
	}
	sub := subagentOutcomes(t, evs, "researcher", "a1")
	if r := sub["b1"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), `no tool named "bash"`) {
		t.Errorf("bash in a subagent whose definition omits it: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "hacked")); err == nil {
		t.Error("bash ran")
	}
	// The parent's allow rule applies inside the subagent.
	sub["w1"].want(t, "w1", "allow", byRule, "")
	if b, _ := os.ReadFile(filepath.Join(e.ws, "notes.txt")); string(b) != "answer: 42" {
		t.Errorf("notes.txt = %q", b)
	}
	main := mainOutcomes(evs)
	if r := main["a1"].result; r.ToolResult.IsError || resultText(r) != "Found it: 42." || r.AgentID != "" {
		t.Errorf("the agent call's result: %+v", r)
	}
	subReqs := m.requests("researcher")
	if len(subReqs) != 2 {
		t.Fatalf("the subagent made %d model calls", len(subReqs))
	}
	first := subReqs[0]
	if first.System != "You research." || first.Model != "small-model" || len(first.Messages) != 1 || first.Messages[0].Text() != "find the answer" {
		t.Errorf("the subagent's first request: system %q, model %q, messages %+v", first.System, first.Model, first.Messages)
	}
	if got := specNames(first.Tools); !slices.Equal(got, []string{"read_file", "write_file", "grep"}) {
		t.Errorf("the subagent's tools: %v", got)
	}
	mainReqs := m.requests("")
	if len(mainReqs) != 2 || mainReqs[1].System != "You lead." || len(mainReqs[1].Messages) != 3 {
		t.Fatalf("main requests: %+v", mainReqs)
	}
	// The main transcript holds the main conversation; the subagent's is
	// kept beside it, not in it.
	tr, err := ReadTranscript(filepath.Join(e.state, "sessions", evs[0].SessionID+".jsonl"))
	if err != nil || len(tr.Messages) != 4 {
		t.Fatalf("transcript: %v, %d messages", err, len(tr.Messages))
	}
	raw, _ := os.ReadFile(filepath.Join(e.state, "sessions", evs[0].SessionID+".jsonl"))
	if n := strings.Count(string(raw), `"type":"agent_message","message"`); n != 4 {
		t.Errorf("%d agent_message records, want 4 (prompt, two answers, one result message)", n)
	}
	// Forwarded events say who emitted them in their JSON too.
	for _, ev := range evs {
		if ev.Type == EventToolResult && ev.ToolResult.ID == "w1" {
			b, _ := json.Marshal(ev)
			if !strings.Contains(string(b), `"agent":"researcher","agent_id":"`+ev.AgentID+`","parent_tool_use_id":"a1","id":"w1"`) {
				t.Errorf("JSON of a subagent's event: %s", b)
			}
		}
	}
}

// TestSubagentIsGuardedLikeItsParent: deny rules, hooks, CanUseTool (told
// which agent asks), the sandbox and change capture apply inside a
// subagent as in the main agent.
func TestSubagentIsGuardedLikeItsParent(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(t.TempDir(), "escaped.txt")
	m := script(t, `{
	  "turns": [
	    {"tool_calls": [`+agentCall("a1", "builder", "build it")+`]},
	    {"text": "built"}],
	  "agents": {"builder": {"turns": [
	    {"tool_calls": [
	      `+bash("b1", "echo made > made.txt")+`,
	      `+bash("b2", "curl -s http://example.com")+`,
	      `+write("w1", "hooked.txt")+`,
	      `+bash("b3", "echo out > "+outside)+`]},
	    {"text": "done"}]}}}`)
	o := e.opts(m)
	o.DisallowedTools = []string{"bash(curl:*)"}
	snaps := &snapshotLog{}
	o.Snapshots = snaps
	var hookAgents []string
	o.Hooks = []Hook{{Event: HookPreToolUse, Matcher: "write_file", Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
		hookAgents = append(hookAgents, in.Agent+"/"+in.AgentID)
		return &HookOutput{Decision: "deny", Reason: "subagents do not write files"}, nil
	})}}
	var asked []ToolUseInfo
	o.CanUseTool = func(_ context.Context, name string, _ json.RawMessage, info ToolUseInfo) (PermissionResult, error) {
		asked = append(asked, info)
		return PermissionResult{Allow: true}, nil
	}
	o.Agents = map[string]AgentDefinition{"builder": {Description: "Builds.", Prompt: "You build."}}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sub := subagentOutcomes(t, evs, "builder", "a1")
	agentID := sub["b1"].perm.AgentID
	sub["b1"].want(t, "b1", "allow", byCanUseTool, "")
	sub["b2"].want(t, "b2", "deny", byRule, "bash(curl:*)")
	sub["w1"].want(t, "w1", "deny", byHook, "subagents do not write files")
	if !slices.Equal(hookAgents, []string{"builder/" + agentID}) {
		t.Errorf("the hook was told %v, want builder/%s", hookAgents, agentID)
	}
	if len(asked) != 2 || asked[0].Agent != "builder" || asked[0].AgentID != agentID || asked[0].ToolUseID != "b1" {
		t.Errorf("CanUseTool was told %+v", asked)
	}
	// The sandbox confines the subagent's commands...
	if r := sub["b3"].result; !r.ToolResult.IsError {
		t.Errorf("a write outside the workspace from a subagent's bash: %+v", r)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the subagent's bash wrote outside the workspace")
	}
	// ...and what they change is recorded for checkpoints.
	if b, _ := os.ReadFile(filepath.Join(e.ws, "made.txt")); string(b) != "made\n" || !slices.Contains(snaps.paths, "made.txt") {
		t.Errorf("made.txt = %q; pre-images recorded: %v", b, snaps.paths)
	}
}

// TestSubagentNeverWidens: a tool the main agent cannot see is not given to
// a subagent that names it, and a plan-mode session keeps its subagents in
// plan mode whatever their definition says.
func TestSubagentNeverWidens(t *testing.T) {
	e := newEnv(t)
	m := &recordingModel{Model: script(t, `{
	  "turns": [{"tool_calls": [`+agentCall("a1", "editor", "edit")+`]}, {"text": "ok"}],
	  "agents": {"editor": {"turns": [
	    {"tool_calls": [`+bash("b1", "true")+`, `+write("w1", "x.txt")+`]},
	    {"text": "could not"}]}}}`)}
	o := e.opts(m)
	o.Tools = []string{AgentTool, "read_file", "write_file"}
	o.PermissionMode = PermissionPlan
	o.Agents = map[string]AgentDefinition{"editor": {Description: "Edits.", Prompt: "You edit.", Tools: []string{"bash", "write_file", "read_file"}, PermissionMode: PermissionAcceptEdits}}
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	main := mainOutcomes(evs)
	main["a1"].want(t, "a1", "allow", byDefault, "could not")
	if got := specNames(m.requests("editor")[0].Tools); !slices.Equal(got, []string{"read_file", "write_file"}) {
		t.Errorf("the subagent's tools: %v", got)
	}
	sub := subagentOutcomes(t, evs, "editor", "a1")
	if r := sub["b1"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), `no tool named "bash"`) {
		t.Errorf("bash: %+v", r)
	}
	sub["w1"].want(t, "w1", "deny", byMode, "plan mode")
	if sub["w1"].perm.Permission.Mode != PermissionPlan {
		t.Errorf("the subagent's mode: %s", sub["w1"].perm.Permission.Mode)
	}
}

// TestBudgetSpentInASubagentEndsTheRun: the subagent's tokens count
// against the run's budget; once it is spent nothing more runs — not the
// subagent's calls, not the parent's — and the run ends with
// error_max_budget, every call answered in the transcript.
func TestBudgetSpentInASubagentEndsTheRun(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{
	  "turns": [
	    {"tool_calls": [`+agentCall("a1", "spender", "spend")+`, `+write("w1", "after.txt")+`], "usage": {"input_tokens": 100, "output_tokens": 10}},
	    {"text": "unreached"}],
	  "agents": {"spender": {"turns": [
	    {"tool_calls": [{"id": "r1", "name": "list_dir", "input": {}}], "usage": {"input_tokens": 700, "output_tokens": 300}},
	    {"text": "unreached"}]}}}`)
	o := e.opts(m)
	o.MaxBudgetTokens = 1000
	o.AllowedTools = []string{"write_file"}
	o.Agents = map[string]AgentDefinition{"spender": {Description: "Spends.", Prompt: "You spend."}}
	evs, err := collect(t, context.Background(), o)
	if !errors.Is(err, ErrMaxBudget) {
		t.Fatalf("err = %v, want ErrMaxBudget", err)
	}
	res := evs[len(evs)-1]
	if res.Result.Subtype != SubtypeErrorMaxBudget || !res.Result.IsError || res.Result.Usage.InputTokens != 800 || res.Result.Usage.OutputTokens != 310 || res.Result.NumTurns != 1 {
		t.Errorf("result: %+v", res)
	}
	sub := subagentOutcomes(t, evs, "spender", "a1")
	if r := sub["r1"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), "not run: exceeded the token budget: 1110 tokens used, the budget is 1000") {
		t.Errorf("the subagent's call after the budget was spent: %+v", r)
	}
	main := mainOutcomes(evs)
	if r := main["a1"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), "did not finish") {
		t.Errorf("the agent call: %+v", r)
	}
	if r := main["w1"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), "not run") {
		t.Errorf("the parent's call after the budget was spent: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "after.txt")); err == nil {
		t.Error("a call ran after the budget was spent")
	}
	tr, _ := ReadTranscript(filepath.Join(e.state, "sessions", evs[0].SessionID+".jsonl"))
	if last := tr.Messages[len(tr.Messages)-1]; last.Role != provider.RoleUser || len(last.Content) != 2 {
		t.Errorf("the transcript ends with %+v, want the answers to both calls", last)
	}

	// The main agent alone: the answer that crosses the budget is kept,
	// and the run still ends with error_max_budget.
	o = e.opts(script(t, `{"turns": [{"text": "a long answer", "usage": {"input_tokens": 50, "output_tokens": 60}}]}`))
	o.MaxBudgetTokens = 100
	evs, err = collect(t, context.Background(), o)
	if res := evs[len(evs)-1]; !errors.Is(err, ErrMaxBudget) || res.Result.Subtype != SubtypeErrorMaxBudget || res.Result.Result != "a long answer" {
		t.Errorf("result %+v, err %v", res, err)
	}
}

// TestSubagentInterruptStopsTheRun: CanUseTool's interrupt inside a
// subagent ends the whole run, as it would in the main agent.
func TestSubagentInterruptStopsTheRun(t *testing.T) {
	e := newEnv(t)
	m := script(t, `{
	  "turns": [{"tool_calls": [`+agentCall("a1", "w", "write")+`, `+write("w2", "b.txt")+`]}, {"text": "unreached"}],
	  "agents": {"w": {"turns": [{"tool_calls": [`+write("w1", "a.txt")+`]}, {"text": "unreached"}]}}}`)
	o := e.opts(m)
	o.CanUseTool = func(context.Context, string, json.RawMessage, ToolUseInfo) (PermissionResult, error) {
		return PermissionResult{Message: "stop", Interrupt: true}, nil
	}
	o.Agents = map[string]AgentDefinition{"w": {Description: "Writes.", Prompt: "You write."}}
	evs, err := collect(t, context.Background(), o)
	if !errors.Is(err, ErrInterrupted) || evs[len(evs)-1].Result.Subtype != SubtypeErrorDuringExecution {
		t.Fatalf("err %v, result %+v", err, evs[len(evs)-1])
	}
	main := mainOutcomes(evs)
	if r := main["w2"].result; !r.ToolResult.IsError || !strings.Contains(resultText(r), "not run") {
		t.Errorf("the parent's next call: %+v", r)
	}
}

func TestBadAgentDefinitions(t *testing.T) {
	e := newEnv(t)
	ok := AgentDefinition{Description: "d", Prompt: "p"}
	with := func(f func(*AgentDefinition)) AgentDefinition { d := ok; f(&d); return d }
	cases := []struct {
		name   string
		agents map[string]AgentDefinition
		want   string
	}{
		{"bad name", map[string]AgentDefinition{"a b": ok}, "an agent name is"},
		{"no description", map[string]AgentDefinition{"a": with(func(d *AgentDefinition) { d.Description = "" })}, "Description is empty"},
		{"no prompt", map[string]AgentDefinition{"a": with(func(d *AgentDefinition) { d.Prompt = " " })}, "Prompt is empty"},
		{"unknown tool", map[string]AgentDefinition{"a": with(func(d *AgentDefinition) { d.Tools = []string{"teleport"} })}, `Agents["a"].Tools names "teleport"`},
		{"bad mode", map[string]AgentDefinition{"a": with(func(d *AgentDefinition) { d.PermissionMode = "yollo" })}, "unknown permission mode"},
		{"bypass without opt-in", map[string]AgentDefinition{"a": with(func(d *AgentDefinition) { d.PermissionMode = PermissionBypass })}, "needs AllowDangerouslySkipPermissions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := e.opts(script(t, `{"turns": [{"text": "hi"}]}`))
			o.Agents = c.agents
			_, err := collect(t, context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}
