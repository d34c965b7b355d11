package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/builtin"
)

// outcome is what happened to one call of a run.
type outcome struct {
	perm   Event // the permission event ("" Type when the gate was not reached)
	result Event
}

// runCalls runs one assistant turn with the given calls (JSON objects with
// id, name, input) and returns the outcome of each by id, and all events.
func runCalls(t *testing.T, o Options, calls ...string) (map[string]outcome, []Event) {
	t.Helper()
	o.Model = script(t, `{"turns": [{"tool_calls": [`+strings.Join(calls, ",")+`]}, {"text": "done"}]}`)
	evs, err := collect(t, context.Background(), o)
	if err != nil && !errors.Is(err, ErrInterrupted) {
		t.Fatalf("run: %v", err)
	}
	return outcomesOf(evs, func(Event) bool { return true }), evs
}

// outcomesOf collects, by call id, the permission and result events that
// keep accepts.
func outcomesOf(evs []Event, keep func(Event) bool) map[string]outcome {
	out := map[string]outcome{}
	for _, ev := range evs {
		if !keep(ev) {
			continue
		}
		o := out[callID(ev)]
		switch ev.Type {
		case EventPermission:
			o.perm = ev
		case EventToolResult:
			o.result = ev
		default:
			continue
		}
		out[callID(ev)] = o
	}
	return out
}

func call(id, name, input string) string {
	return fmt.Sprintf(`{"id": %q, "name": %q, "input": %s}`, id, name, input)
}

func write(id, path string) string {
	return call(id, "write_file", fmt.Sprintf(`{"path": %q, "content": "x"}`, path))
}

func bash(id, cmd string) string {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return call(id, "bash", string(b))
}

// want checks a call's decision, who made it, and a fragment of what the
// model saw.
func (o outcome) want(t *testing.T, id, decision, by, text string) {
	t.Helper()
	if o.perm.Type != EventPermission {
		t.Errorf("%s: no permission event", id)
		return
	}
	if o.perm.Permission.Decision != decision || o.perm.Permission.DecidedBy != by {
		t.Errorf("%s: decision %s by %s (%s), want %s by %s", id, o.perm.Permission.Decision, o.perm.Permission.DecidedBy, o.perm.Permission.Reason, decision, by)
	}
	if got := resultText(o.result); !strings.Contains(got, text) {
		t.Errorf("%s: the model saw %q, want it to contain %q", id, got, text)
	}
	if decision == "deny" && !o.result.ToolResult.IsError {
		t.Errorf("%s: denied but the result is not an error", id)
	}
}

func TestPermissionModes(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("one\n"), 0o644)
	netTool := echoToolSec(t, "fetch_page", false, &tools.Security{Network: tools.NetworkLoopback})
	localTool := echoToolSec(t, "format_code", false, &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsWorkspace})
	roNetTool := echoToolSec(t, "lookup", true, &tools.Security{Network: tools.NetworkLoopback})
	calls := []string{
		write("w", "new.txt"),
		call("e", "edit_file", `{"path": "a.txt", "old_string": "one", "new_string": "two"}`),
		call("r", "read_file", `{"path": "a.txt"}`),
		bash("b", "true"),
		call("n", "fetch_page", `{"msg": "x"}`),
		call("l", "format_code", `{"msg": "x"}`),
		call("q", "lookup", `{"msg": "x"}`),
	}
	// q (lookup) claims readOnlyHint: a hint, not a permission — it is not
	// refused by plan mode, but nothing allows it by default either.
	type want struct{ decision, by string }
	allow := func(by string) want { return want{"allow", by} }
	deny := func(by string) want { return want{"deny", by} }
	cases := []struct {
		mode PermissionMode
		want map[string]want
	}{
		{PermissionDefault, map[string]want{"w": deny(byHeadless), "e": deny(byHeadless), "r": allow(byDefault), "b": deny(byHeadless), "n": deny(byHeadless), "l": deny(byHeadless), "q": deny(byHeadless)}},
		{PermissionAcceptEdits, map[string]want{"w": allow(byMode), "e": allow(byMode), "r": allow(byDefault), "b": deny(byHeadless), "n": deny(byHeadless), "l": deny(byHeadless), "q": deny(byHeadless)}},
		{PermissionPlan, map[string]want{"w": deny(byMode), "e": deny(byMode), "r": allow(byDefault), "b": deny(byMode), "n": deny(byMode), "l": deny(byMode), "q": deny(byHeadless)}},
		{PermissionDontAsk, map[string]want{"w": deny(byMode), "e": deny(byMode), "r": allow(byDefault), "b": deny(byMode), "n": deny(byMode), "l": deny(byMode), "q": deny(byMode)}},
		{PermissionAuto, map[string]want{"w": allow(byMode), "e": allow(byMode), "r": allow(byMode), "b": deny(byHeadless), "n": deny(byHeadless), "l": allow(byMode), "q": deny(byHeadless)}},
		{PermissionBypass, map[string]want{"w": allow(byMode), "e": allow(byMode), "r": allow(byMode), "b": allow(byMode), "n": allow(byMode), "l": allow(byMode), "q": allow(byMode)}},
	}
	for _, c := range cases {
		t.Run(string(c.mode), func(t *testing.T) {
			os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("one\n"), 0o644)
			os.Remove(filepath.Join(e.ws, "new.txt"))
			o := e.opts(nil)
			o.PermissionMode = c.mode
			o.AllowDangerouslySkipPermissions = c.mode == PermissionBypass
			o.CustomTools = []*tools.Tool{netTool, localTool, roNetTool}
			// bash would need the sandbox to run; where a mode allows it,
			// a hook stands in for the run so this test stays about the gate.
			o.Hooks = []Hook{{Event: HookPostToolUse, Matcher: "bash", Func: func(context.Context, *HookInput) (*HookOutput, error) {
				s := "ran"
				return &HookOutput{UpdatedOutput: &s}, nil
			}}}
			if c.mode == PermissionBypass {
				o.Tools = []string{"write_file", "edit_file", "read_file", "fetch_page", "format_code", "lookup", "bash"}
			}
			got, _ := runCalls(t, o, calls...)
			for id, w := range c.want {
				g := got[id]
				if g.perm.Permission.Decision != w.decision || g.perm.Permission.DecidedBy != w.by || g.perm.Permission.Mode != c.mode {
					t.Errorf("%s: %s by %s in mode %q (%s), want %s by %s", id, g.perm.Permission.Decision, g.perm.Permission.DecidedBy, g.perm.Permission.Mode, g.perm.Permission.Reason, w.decision, w.by)
				}
				if w.decision == "deny" && !strings.Contains(resultText(g.result), "permission denied") {
					t.Errorf("%s: result %q", id, resultText(g.result))
				}
			}
			_, err := os.Stat(filepath.Join(e.ws, "new.txt"))
			if wrote := err == nil; wrote != (c.want["w"].decision == "allow") {
				t.Errorf("new.txt written = %v", wrote)
			}
			if c.mode == PermissionPlan && !strings.Contains(resultText(got["w"].result), "plan mode") {
				t.Errorf("plan mode denial does not say why: %q", resultText(got["w"].result))
			}
			if c.mode == PermissionDontAsk && !strings.Contains(resultText(got["w"].result), "dontAsk") {
				t.Errorf("dontAsk denial does not say why: %q", resultText(got["w"].result))
			}
		})
	}
}

// TestAcceptEditsOnlyInsideTheWorkspace: a path that leaves the workspace
// (here through a symlink) is not a workspace edit.
func TestAcceptEditsOnlyInsideTheWorkspace(t *testing.T) {
	e := newEnv(t)
	os.Symlink(t.TempDir(), filepath.Join(e.ws, "out"))
	o := e.opts(nil)
	o.PermissionMode = PermissionAcceptEdits
	got, _ := runCalls(t, o, write("in", "sub/in.txt"), write("out", "out/x.txt"), write("up", "../x.txt"))
	got["in"].want(t, "in", "allow", byMode, "")
	got["out"].want(t, "out", "deny", byHeadless, "needs approval")
	got["up"].want(t, "up", "deny", byHeadless, "needs approval")
}

func echoToolSec(t *testing.T, name string, readOnly bool, sec *tools.Security) *tools.Tool {
	type in struct {
		Msg string `json:"msg"`
	}
	return tools.Must(tools.New(name, "echo", func(_ *tools.Context, i in) (string, error) { return "echo:" + i.Msg, nil },
		&tools.Options{Annotations: &tools.Annotations{ReadOnlyHint: readOnly}, Security: sec}))
}

// TestRuleOrder: deny beats everything, ask beats allow and the mode,
// AllowedTools pre-approves but neither hides nor beats a rule.
func TestRuleOrder(t *testing.T) {
	e := newEnv(t)
	rules := func(lines ...string) []policies.Rule {
		var out []policies.Rule
		for _, l := range lines {
			b, text, _ := strings.Cut(l, " ")
			out = append(out, policies.MustParseRule(policies.Behavior(b), text))
		}
		return out
	}
	t.Run("deny beats allow and bypass", func(t *testing.T) {
		o := e.opts(nil)
		o.Rules = rules("deny write_file(secret/**)", "allow write_file")
		o.AllowedTools = []string{"write_file"}
		o.PermissionMode, o.AllowDangerouslySkipPermissions = PermissionBypass, true
		got, evs := runCalls(t, o, write("s", "secret/k"), write("p", "public.txt"))
		got["s"].want(t, "s", "deny", byRule, `deny rule "write_file(secret/**)"`)
		if got["s"].perm.Permission.Rule != "write_file(secret/**)" {
			t.Errorf("permission event rule = %q", got["s"].perm.Permission.Rule)
		}
		got["p"].want(t, "p", "allow", byRule, "")
		if !contains(evs[0].SessionStart.Tools, "write_file") {
			t.Error("a deny rule with an argument hid the tool")
		}
	})
	t.Run("ask beats allow and bypass", func(t *testing.T) {
		o := e.opts(nil)
		o.Rules = rules("ask write_file(docs/**)")
		o.AllowedTools = []string{"write_file"}
		o.PermissionMode, o.AllowDangerouslySkipPermissions = PermissionBypass, true
		got, _ := runCalls(t, o, write("d", "docs/a.md"), write("x", "x.md"))
		got["d"].want(t, "d", "deny", byHeadless, "needs approval")
		if got["d"].perm.Permission.Rule != "write_file(docs/**)" {
			t.Errorf("the headless denial does not name the ask rule: %+v", got["d"].perm)
		}
		got["x"].want(t, "x", "allow", byRule, "")
	})
	t.Run("DisallowedTools hides whole tools, denies with arguments", func(t *testing.T) {
		o := e.opts(nil)
		o.DisallowedTools = []string{"edit_file", "write_file(*.lock)"}
		o.AllowedTools = []string{"write_file"}
		got, evs := runCalls(t, o, write("l", "go.lock"), write("ok", "a.txt"), call("e", "edit_file", `{"path": "a.txt", "old_string": "x", "new_string": "y"}`))
		if contains(evs[0].SessionStart.Tools, "edit_file") || !contains(evs[0].SessionStart.Tools, "write_file") {
			t.Errorf("visible tools = %v", evs[0].SessionStart.Tools)
		}
		got["l"].want(t, "l", "deny", byRule, "DisallowedTools")
		got["ok"].want(t, "ok", "allow", byRule, "")
		if got["e"].perm.Type != "" || !strings.Contains(resultText(got["e"].result), "no tool named") {
			t.Errorf("hidden edit_file: %+v %q", got["e"].perm, resultText(got["e"].result))
		}
	})
	t.Run("AllowedTools does not hide", func(t *testing.T) {
		o := e.opts(nil)
		o.AllowedTools = []string{"write_file"}
		_, evs := runCalls(t, o)
		if len(evs[0].SessionStart.Tools) != len(builtin.All()) {
			t.Errorf("visible tools = %v", evs[0].SessionStart.Tools)
		}
	})
	t.Run("compound bash command hiding a denied part", func(t *testing.T) {
		o := e.opts(nil)
		o.AllowedTools = []string{"bash(git status)"}
		o.DisallowedTools = []string{"bash(curl:*)"}
		got, _ := runCalls(t, o, bash("c", "git status && curl http://127.0.0.1:9/x"), bash("s", "git status; $(echo curl) x"))
		got["c"].want(t, "c", "deny", byRule, `"curl http://127.0.0.1:9/x"`)
		got["s"].want(t, "s", "deny", byHeadless, "cannot prove")
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestCanUseToolAllowAlwaysAndRewrites(t *testing.T) {
	e := newEnv(t)
	o := e.opts(nil)
	o.DisallowedTools = []string{"write_file(secret/**)"}
	var asked []ToolUseInfo
	o.CanUseTool = func(ctx context.Context, name string, input json.RawMessage, info ToolUseInfo) (PermissionResult, error) {
		asked = append(asked, info)
		switch info.ToolUseID {
		case "a1":
			return PermissionResult{Allow: true, AllowRules: info.Suggestions}, nil
		case "r":
			return PermissionResult{Allow: true, UpdatedInput: json.RawMessage(`{"path": "secret/x", "content": "y"}`)}, nil
		case "bad":
			return PermissionResult{Allow: true, AllowRules: []string{"write_file("}}, nil
		}
		return PermissionResult{Message: "no"}, nil
	}
	got, _ := runCalls(t, o, write("a1", "a.txt"), write("a2", "a.txt"), write("b", "b.txt"), write("r", "c.txt"), write("bad", "d.txt"))
	got["a1"].want(t, "a1", "allow", byCanUseTool, "")
	if !got["a1"].perm.Permission.Asked {
		t.Error("a1: permission event does not say it was asked")
	}
	got["a2"].want(t, "a2", "allow", byRule, "")
	if got["a2"].perm.Permission.RuleSource != "allowed for this session" {
		t.Errorf("a2 allowed by %+v", got["a2"].perm)
	}
	got["b"].want(t, "b", "deny", byCanUseTool, "no")
	got["r"].want(t, "r", "deny", byRule, "after CanUseTool rewrote the input")
	got["bad"].want(t, "bad", "deny", byCanUseTool, "does not parse")
	if len(asked) != 4 || asked[0].Suggestions[0] != "write_file(a.txt)" || asked[0].Mode != PermissionDefault || !strings.Contains(asked[0].Reason, "not pre-approved") {
		t.Errorf("CanUseTool saw %+v", asked)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "secret/x")); err == nil {
		t.Error("the rewrite into a denied path was written")
	}
}

func hookFunc(f func(in *HookInput) (*HookOutput, error)) HookFunc {
	return func(_ context.Context, in *HookInput) (*HookOutput, error) { return f(in) }
}

func TestPreToolUseHooks(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var seen []string
	record := func(in *HookInput) {
		mu.Lock()
		seen = append(seen, in.ToolUseID)
		mu.Unlock()
	}
	o := e.opts(nil)
	o.DisallowedTools = []string{"write_file(locked/**)"}
	o.Hooks = []Hook{
		{Event: HookPreToolUse, Matcher: "write_file", Name: "guard", Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
			record(in)
			var v struct{ Path string }
			json.Unmarshal(in.ToolInput, &v)
			switch v.Path {
			case "allow.txt":
				return &HookOutput{Decision: "allow", AdditionalContext: "checked by guard"}, nil
			case "deny.txt":
				return &HookOutput{Decision: "deny", Reason: "deny.txt is reserved"}, nil
			case "ask.txt":
				return &HookOutput{Decision: "ask", Reason: "a person must look"}, nil
			case "rewrite.txt":
				return &HookOutput{Decision: "allow", UpdatedInput: json.RawMessage(`{"path": "rewritten.txt", "content": "from hook"}`)}, nil
			case "sneak.txt":
				return &HookOutput{Decision: "allow", UpdatedInput: json.RawMessage(`{"path": "locked/x", "content": "y"}`)}, nil
			case "junk.txt":
				return &HookOutput{UpdatedInput: json.RawMessage(`{"nope": 1}`)}, nil
			case "error.txt":
				return nil, errors.New("policy server unreachable")
			case "panic.txt":
				panic("boom")
			case "weird.txt":
				return &HookOutput{Decision: "maybe"}, nil
			case "slow.txt":
				time.Sleep(2 * time.Second)
				return &HookOutput{Decision: "allow"}, nil
			}
			return nil, nil
		}), Timeout: 200 * time.Millisecond},
		// Only for bash commands that push.
		{Event: HookPreToolUse, Matcher: "bash(git push:*)", Name: "no-push", Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
			record(in)
			return &HookOutput{Decision: "deny", Reason: "pushing is done by CI"}, nil
		})},
		// Untrusted: its allow is an error, so the hook counts as failed
		// and the call is denied (see TestHookTrust for every field).
		{Event: HookPreToolUse, Matcher: "edit_file", Name: "untrusted", DenyOnly: true, Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
			return &HookOutput{Decision: "allow"}, nil
		})},
	}
	got, evs := runCalls(t, o,
		write("allow", "allow.txt"), write("deny", "deny.txt"), write("ask", "ask.txt"),
		write("rewrite", "rewrite.txt"), write("sneak", "sneak.txt"), write("junk", "junk.txt"),
		write("error", "error.txt"), write("panic", "panic.txt"), write("weird", "weird.txt"), write("slow", "slow.txt"),
		write("none", "none.txt"),
		bash("push", "git status && git push origin"), bash("nopush", "git status"),
		call("edit", "edit_file", `{"path": "allow.txt", "old_string": "x", "new_string": "y"}`),
	)
	got["allow"].want(t, "allow", "allow", byHook, "checked by guard")
	if got["allow"].perm.Permission.Hook != "guard" {
		t.Errorf("allow: hook = %q", got["allow"].perm.Hook)
	}
	got["deny"].want(t, "deny", "deny", byHook, "deny.txt is reserved")
	got["ask"].want(t, "ask", "deny", byHeadless, "a person must look")
	got["rewrite"].want(t, "rewrite", "allow", byHook, "")
	if b, _ := os.ReadFile(filepath.Join(e.ws, "rewritten.txt")); string(b) != "from hook" {
		t.Errorf("rewritten.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "rewrite.txt")); err == nil {
		t.Error("the original input ran too")
	}
	got["sneak"].want(t, "sneak", "deny", byRule, "after the PreToolUse hook guard rewrote the input")
	got["junk"].want(t, "junk", "deny", byHook, "rewrote the input into one the tool refuses")
	for _, id := range []string{"error", "panic", "weird", "slow"} {
		got[id].want(t, id, "deny", byHook, "failed")
	}
	if !strings.Contains(resultText(got["slow"].result), "timed out") || !strings.Contains(resultText(got["panic"].result), "boom") ||
		!strings.Contains(resultText(got["weird"].result), `"maybe"`) || !strings.Contains(resultText(got["error"].result), "unreachable") {
		t.Errorf("failure messages: %q / %q / %q / %q", resultText(got["slow"].result), resultText(got["panic"].result), resultText(got["weird"].result), resultText(got["error"].result))
	}
	got["none"].want(t, "none", "deny", byHeadless, "needs approval")
	got["push"].want(t, "push", "deny", byHook, "pushing is done by CI")
	got["nopush"].want(t, "nopush", "deny", byHeadless, "needs approval")
	got["edit"].want(t, "edit", "deny", byHook, "deny-only")
	// Every failure is reported as a hook event.
	failed := map[string]bool{}
	for _, ev := range byType(evs, EventHook) {
		if ev.Hook.Hook != "guard" && ev.Hook.Hook != "untrusted" || ev.Hook.Event != "PreToolUse" || ev.Hook.Error == "" || !strings.Contains(ev.Hook.Outcome, "denied") {
			t.Errorf("hook event %+v", ev)
		}
		failed[ev.Hook.ID] = true
	}
	for _, id := range []string{"junk", "error", "panic", "weird", "slow", "edit"} {
		if !failed[id] {
			t.Errorf("no hook event for %s", id)
		}
	}
	if contains(seen, "nopush") {
		t.Error("the no-push hook ran for a command without git push")
	}
	b, _ := json.Marshal(got["deny"].perm)
	if !strings.Contains(string(b), `"by":"hook"`) || !strings.Contains(string(b), `"hook":"guard"`) || !strings.Contains(string(b), `"decision":"deny"`) {
		t.Errorf("permission event JSON = %s", b)
	}
}

func TestPostToolUseHooks(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.ws, "secret.txt"), []byte("API_KEY=hunter2\n"), 0o644)
	os.WriteFile(filepath.Join(e.ws, "plain.txt"), []byte("hello\n"), 0o644)
	var failures []string
	o := e.opts(nil)
	o.Hooks = []Hook{
		{Event: HookPostToolUse, Matcher: "read_file(secret.txt)", Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
			redacted := strings.ReplaceAll(in.ToolResponse.Content[0].Text, "hunter2", "[redacted]")
			return &HookOutput{UpdatedOutput: &redacted}, nil
		})},
		{Event: HookPostToolUse, Matcher: "list_dir", Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
			return nil, errors.New("filter crashed")
		})},
		{Event: HookPostToolUseFailure, Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
			failures = append(failures, in.ToolUseID+":"+in.Reason)
			return &HookOutput{AdditionalContext: "try glob first"}, nil
		})},
	}
	got, evs := runCalls(t, o,
		call("s", "read_file", `{"path": "secret.txt"}`),
		call("p", "read_file", `{"path": "plain.txt"}`),
		call("l", "list_dir", `{"path": "."}`),
		call("m", "read_file", `{"path": "missing.txt"}`),
		call("v", "read_file", `{"limit": 3}`),
	)
	if s := resultText(got["s"].result); strings.Contains(s, "hunter2") || !strings.Contains(s, "[redacted]") {
		t.Errorf("redacted read = %q", s)
	}
	if s := resultText(got["p"].result); !strings.Contains(s, "hello") {
		t.Errorf("plain read = %q", s)
	}
	if s := resultText(got["l"].result); !got["l"].result.ToolResult.IsError || strings.Contains(s, "secret.txt") || !strings.Contains(s, "withheld") {
		t.Errorf("failed filter: %v %q", got["l"].result.ToolResult.IsError, s)
	}
	if s := resultText(got["m"].result); !strings.Contains(s, "try glob first") {
		t.Errorf("failure context: %q", s)
	}
	if len(failures) != 2 || !strings.HasPrefix(failures[0], "m:") || !strings.HasPrefix(failures[1], "v:") || !strings.Contains(failures[1], "path") {
		t.Errorf("PostToolUseFailure saw %q", failures)
	}
	if hs := byType(evs, EventHook); len(hs) != 1 || hs[0].Hook.ID != "l" || hs[0].Hook.Event != "PostToolUse" || !strings.Contains(hs[0].Hook.Outcome, "withheld") {
		t.Errorf("hook events = %+v", hs)
	}
}

func TestSessionHooks(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	var denied []string
	base := func() Options {
		o := e.opts(nil)
		o.Hooks = []Hook{
			{Event: HookSessionStart, Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
				note("start:" + in.Source)
				return &HookOutput{AdditionalContext: "the repo uses tabs"}, nil
			})},
			{Event: HookUserPromptSubmit, Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
				note("prompt:" + in.Prompt)
				if strings.Contains(in.Prompt, "password") {
					return &HookOutput{Decision: "block", Reason: "prompts must not contain secrets"}, nil
				}
				if strings.Contains(in.Prompt, "fail") {
					return nil, errors.New("hook broke")
				}
				return &HookOutput{AdditionalContext: "ticket ABC-1"}, nil
			})},
			{Event: HookPermissionDenied, Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
				denied = append(denied, in.ToolName+": "+in.Reason)
				return nil, nil
			})},
			{Event: HookStop, Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
				note("stop:" + in.Result)
				return nil, errors.New("stop hook broke")
			})},
			{Event: HookSessionEnd, Func: hookFunc(func(in *HookInput) (*HookOutput, error) {
				note("end:" + in.Reason)
				return nil, nil
			})},
		}
		return o
	}
	o := base()
	o.Model = script(t, `{"turns": [{"tool_calls": [`+write("w", "x.txt")+`]}, {"text": "done"}]}`)
	evs, err := collect(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " | "); got != "start:startup | prompt:go | stop:done | end:success" {
		t.Errorf("hooks ran: %s", got)
	}
	if len(denied) != 1 || !strings.HasPrefix(denied[0], "write_file: ") || !strings.Contains(denied[0], "needs approval") {
		t.Errorf("PermissionDenied saw %q", denied)
	}
	tr, _ := ReadTranscript(filepath.Join(e.state, "sessions", evs[0].SessionID+".jsonl"))
	if p := tr.Messages[0]; len(p.Content) != 2 || !strings.Contains(p.Content[1].Text, "the repo uses tabs") || !strings.Contains(p.Content[1].Text, "ticket ABC-1") {
		t.Errorf("prompt message = %+v", p)
	}
	hev := byType(evs, EventHook)
	if len(hev) != 1 || hev[0].Hook.Event != "Stop" || evs[len(evs)-1].Type != EventResult || evs[len(evs)-1].Result.IsError {
		t.Errorf("a failing Stop hook: hook events %+v, result %+v", hev, evs[len(evs)-1])
	}

	for _, c := range []struct{ prompt, want string }{
		{"my password is x", "prompts must not contain secrets"},
		{"please fail", "hook broke"},
	} {
		order = nil
		o := base()
		o.Prompt = c.prompt
		o.Model = script(t, `{"turns": [{"text": "should not be reached"}]}`)
		evs, err := collect(t, context.Background(), o)
		if !errors.Is(err, ErrPromptBlocked) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v", c.prompt, err)
		}
		if len(byType(evs, EventAssistantMessage)) != 0 {
			t.Errorf("%q: the model was called", c.prompt)
		}
		if got := order[len(order)-1]; got != "end:error_during_execution" {
			t.Errorf("%q: SessionEnd saw %q", c.prompt, got)
		}
	}
}

func TestApprovalHandlerAndValidationFirst(t *testing.T) {
	e := newEnv(t)
	o := e.opts(nil)
	var hookCalls int
	o.Hooks = []Hook{{Event: HookPreToolUse, Func: hookFunc(func(*HookInput) (*HookOutput, error) { hookCalls++; return nil, nil })}}
	var reqs []tools.ApprovalRequest
	o.Approval = func(ctx context.Context, req tools.ApprovalRequest) (bool, error) {
		reqs = append(reqs, req)
		return req.CallID == "yes", nil
	}
	got, _ := runCalls(t, o, write("yes", "a.txt"), write("no", "b.txt"), call("bad", "write_file", `{"path": 3}`))
	got["yes"].want(t, "yes", "allow", byApproval, "")
	got["no"].want(t, "no", "deny", byApproval, "the user denied")
	if !got["yes"].perm.Permission.Asked || len(reqs) != 2 || !strings.Contains(reqs[0].Reason, "not pre-approved") {
		t.Errorf("approval requests %+v", reqs)
	}
	// Input the schema refuses never reaches the gate: no permission
	// event, no hook, the model sees what is wrong with it.
	if got["bad"].perm.Type != "" || !strings.Contains(resultText(got["bad"].result), "invalid input") {
		t.Errorf("bad input: %+v %q", got["bad"].perm, resultText(got["bad"].result))
	}
	if hookCalls != 2 {
		t.Errorf("PreToolUse ran %d times, want 2 (not for the invalid call)", hookCalls)
	}
}

func TestHookEventsMatchPolicyFiles(t *testing.T) {
	consts := []HookEvent{HookPreToolUse, HookPostToolUse, HookPostToolUseFailure, HookUserPromptSubmit, HookStop, HookSessionStart, HookSessionEnd, HookPermissionDenied, HookPreCompact}
	names := policies.HookEvents()
	if len(names) != len(consts) {
		t.Fatalf("policies knows %d events, the kernel %d", len(names), len(consts))
	}
	for i, c := range consts {
		if string(c) != names[i] {
			t.Errorf("event %d: kernel %q, policies %q", i, c, names[i])
		}
	}
}

func TestPermissionEventJSON(t *testing.T) {
	cases := []struct {
		ev   Event
		want string
	}{
		{Event{Type: EventPermission, SessionID: "s", Permission: &PermissionEvent{ID: "t1", Name: "bash", Decision: "deny", DecidedBy: "rule", Rule: "bash(curl:*)", RuleSource: "p.toml:3", Mode: PermissionDefault, Reason: "denied by deny rule"}},
			`{"type":"permission","session_id":"s","id":"t1","name":"bash","decision":"deny","by":"rule","rule":"bash(curl:*)","rule_source":"p.toml:3","mode":"default","reason":"denied by deny rule"}`},
		{Event{Type: EventPermission, SessionID: "s", Permission: &PermissionEvent{ID: "t2", Name: "write_file", Decision: "allow", DecidedBy: "can_use_tool", Mode: PermissionAuto, Asked: true, Reason: "r"}},
			`{"type":"permission","session_id":"s","id":"t2","name":"write_file","decision":"allow","by":"can_use_tool","mode":"auto","asked":true,"reason":"r"}`},
		{Event{Type: EventHook, SessionID: "s", Hook: &HookFailureEvent{ID: "t3", Name: "bash", Hook: "guard", Event: HookPreToolUse, Error: "timed out", Outcome: "the call is denied"}},
			`{"type":"hook","session_id":"s","id":"t3","name":"bash","hook":"guard","hook_event":"PreToolUse","error":"timed out","outcome":"the call is denied"}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.ev)
		if err != nil || string(b) != c.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", c.ev.Type, b, err, c.want)
		}
	}
}
