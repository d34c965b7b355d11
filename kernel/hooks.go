package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/tools"
)

// HookEvent names the point of a session a hook runs at.
type HookEvent string

const (
	// HookPreToolUse runs after the deny rules and before the other
	// permission layers, for calls its Matcher matches. It may deny, ask,
	// allow, rewrite the input, and add context the model sees with the
	// result.
	HookPreToolUse HookEvent = "PreToolUse"
	// HookPostToolUse runs after a call succeeded; it may replace the
	// output the model sees and add context.
	HookPostToolUse HookEvent = "PostToolUse"
	// HookPostToolUseFailure runs after a call failed (an error result,
	// including input the schema refused); it may add context.
	HookPostToolUseFailure HookEvent = "PostToolUseFailure"
	// HookUserPromptSubmit runs before the prompt is sent; it may block
	// it (the run ends with an error) or add context to it.
	HookUserPromptSubmit HookEvent = "UserPromptSubmit"
	// HookStop runs when the model answered without calling a tool and
	// the run is about to end successfully (a notification).
	HookStop HookEvent = "Stop"
	// HookSessionStart runs when a session starts or resumes; it may add
	// context to the prompt.
	HookSessionStart HookEvent = "SessionStart"
	// HookSessionEnd runs when the run ends (a notification).
	HookSessionEnd HookEvent = "SessionEnd"
	// HookPermissionDenied runs after the gate denied a call (a
	// notification; Reason is the message the model sees).
	HookPermissionDenied HookEvent = "PermissionDenied"
	// HookPreCompact runs before the conversation is summarised to fit
	// the context window (a notification; Source is the trigger: "auto",
	// "prompt_too_long" or "manual").
	HookPreCompact HookEvent = "PreCompact"
)

// DefaultHookTimeout bounds a hook that sets no Timeout.
const DefaultHookTimeout = policies.DefaultHookTimeout

// Hook is a Go function the kernel calls at one point of a session.
//
// A hook that returns an error, panics, returns an output its event does
// not understand, or outlives its Timeout has failed. A failure is
// reported as a hook event, and then — fail closed, never allow:
//
//   - PreToolUse: the call is denied;
//   - PostToolUse: the output is withheld from the model (an error result
//     says why), since the hook may have been a filter;
//   - UserPromptSubmit: the prompt is blocked and the run ends;
//   - the notifications (PostToolUseFailure, Stop, SessionStart,
//     SessionEnd, PermissionDenied) grant nothing, so their failure only
//     is reported.
type Hook struct {
	Event HookEvent
	// Matcher selects the calls of tool events (PreToolUse, PostToolUse,
	// PostToolUseFailure, PermissionDenied) with a rule pattern: "bash",
	// "mcp__orders__*", "bash(git push:*)", "write_file(src/**)". It
	// matches like a deny rule (any part of a compound command; a call it
	// might match counts). "" matches every tool. Other events take none.
	Matcher string
	// Name identifies the hook in events and messages; "" uses "#N", the
	// hook's place among its event's hooks ("the PreToolUse hook #1").
	Name string
	// Timeout bounds one run; zero means DefaultHookTimeout.
	Timeout time.Duration
	// DenyOnly is the trust level of hooks from sources not trusted to
	// loosen the policy (the workspace's policy file under strict): such
	// a hook may deny, ask, block a prompt and add context, and an output
	// with an allow, an updated_input or an updated_output makes it a
	// failed hook (see "Hook trust" in the package documentation).
	DenyOnly bool
	// Func is the hook.
	Func HookFunc
}

// HookFunc is a hook's body.
type HookFunc func(ctx context.Context, in *HookInput) (*HookOutput, error)

// HookInput is what a hook is told. External command hooks receive it as
// JSON on stdin.
type HookInput struct {
	Event          HookEvent      `json:"hook_event_name"`
	SessionID      string         `json:"session_id"`
	Workspace      string         `json:"cwd"`
	PermissionMode PermissionMode `json:"permission_mode"`
	// Agent and AgentID name the subagent in which a tool event happens
	// (empty for the main agent): hooks fire inside subagents too.
	Agent   string `json:"agent,omitempty"`
	AgentID string `json:"agent_id,omitempty"`
	// Tool events.
	ToolName  string          `json:"tool_name,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	// PostToolUse and PostToolUseFailure: what the model would see.
	ToolResponse *ToolResponse `json:"tool_response,omitempty"`
	// UserPromptSubmit: the prompt.
	Prompt string `json:"prompt,omitempty"`
	// SessionStart: "startup" or "resume"; PreCompact: the trigger.
	Source string `json:"source,omitempty"`
	// PermissionDenied: the message the model sees; SessionEnd: how the
	// run ended (a result subtype); PostToolUseFailure: the error text.
	Reason string `json:"reason,omitempty"`
	// Stop: the final answer.
	Result string `json:"result,omitempty"`
}

// ToolResponse is a tool's result as a hook sees it.
type ToolResponse struct {
	IsError bool            `json:"is_error"`
	Content []tools.Content `json:"content"`
}

// HookOutput is a hook's answer; nil or the zero value means no opinion.
// External command hooks print it as JSON on stdout.
type HookOutput struct {
	// Decision: PreToolUse "allow", "deny" or "ask"; UserPromptSubmit
	// "block". Other events take none.
	Decision string `json:"decision,omitempty"`
	// Reason is shown to the model with a deny (and to a person with an
	// ask); with a block, it is the run's error.
	Reason string `json:"reason,omitempty"`
	// UpdatedInput (PreToolUse) replaces the call's input; it is validated
	// and checked against the deny rules again.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// UpdatedOutput (PostToolUse) replaces the text the model sees of the
	// result.
	UpdatedOutput *string `json:"updated_output,omitempty"`
	// AdditionalContext is added for the model: to the tool result (tool
	// events), or to the prompt (UserPromptSubmit, SessionStart).
	AdditionalContext string `json:"additional_context,omitempty"`
}

// compiledHook is a hook with its matcher bound to the workspace.
type compiledHook struct {
	Hook
	matcher *policies.Matcher
}

// hookSet holds a session's hooks by event.
type hookSet struct {
	byEvent map[HookEvent][]*compiledHook
}

func isToolEvent(e HookEvent) bool {
	switch e {
	case HookPreToolUse, HookPostToolUse, HookPostToolUseFailure, HookPermissionDenied:
		return true
	}
	return false
}

func compileHooks(hooks []Hook, workspace string) (*hookSet, error) {
	hs := &hookSet{byEvent: map[HookEvent][]*compiledHook{}}
	known := map[HookEvent]bool{}
	for _, e := range policies.HookEvents() {
		known[HookEvent(e)] = true
	}
	for i, h := range hooks {
		if !known[h.Event] {
			return nil, fmt.Errorf("kernel: Hooks[%d]: unknown event %q (%s)", i, h.Event, strings.Join(policies.HookEvents(), ", "))
		}
		if h.Func == nil {
			return nil, fmt.Errorf("kernel: Hooks[%d] (%s): Func is nil", i, h.Event)
		}
		if h.Matcher != "" && !isToolEvent(h.Event) {
			return nil, fmt.Errorf("kernel: Hooks[%d]: a Matcher only applies to tool events, not %s", i, h.Event)
		}
		m, err := policies.NewMatcher(h.Matcher, workspace)
		if err != nil {
			return nil, fmt.Errorf("kernel: Hooks[%d] (%s): matcher: %w", i, h.Event, err)
		}
		if h.Name == "" {
			// Messages say "the PreToolUse hook #1": the event is theirs.
			h.Name = fmt.Sprintf("#%d", len(hs.byEvent[h.Event])+1)
		}
		if h.Timeout <= 0 {
			h.Timeout = DefaultHookTimeout
		}
		hs.byEvent[h.Event] = append(hs.byEvent[h.Event], &compiledHook{Hook: h, matcher: m})
	}
	return hs, nil
}

// matching returns the hooks of an event that apply to a tool call (all
// of them for an event without a tool).
func (hs *hookSet) matching(e HookEvent, tool string, input json.RawMessage) []*compiledHook {
	if hs == nil {
		return nil
	}
	all := hs.byEvent[e]
	if tool == "" {
		return all
	}
	var out []*compiledHook
	for _, h := range all {
		if h.matcher.Match(tool, input) {
			out = append(out, h)
		}
	}
	return out
}

// errHookTimeout is wrapped by the error of a hook that outlived its
// timeout.
var errHookTimeout = errors.New("timed out")

// run calls one hook with its timeout, recovering a panic, and checks
// that its decision is one its event understands.
func (h *compiledHook) run(ctx context.Context, in *HookInput) (*HookOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	type outcome struct {
		out *HookOutput
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				slog.Error("hook panicked", "hook", h.Name, "panic", v, "stack", string(debug.Stack()))
				done <- outcome{err: fmt.Errorf("panic: %v", v)}
			}
		}()
		out, err := h.Func(ctx, in)
		done <- outcome{out, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w after %v", errHookTimeout, h.Timeout)
		}
		return nil, ctx.Err()
	}
	if o.err != nil {
		return nil, o.err
	}
	if o.out == nil {
		return &HookOutput{}, nil
	}
	switch d := o.out.Decision; {
	case d == "":
	case h.Event == HookPreToolUse && (d == "allow" || d == "deny" || d == "ask"):
	case h.Event == HookUserPromptSubmit && d == "block":
	default:
		return nil, fmt.Errorf("decision %q means nothing for a %s hook", d, h.Event)
	}
	if len(o.out.UpdatedInput) > 0 && h.Event != HookPreToolUse {
		return nil, fmt.Errorf("updated_input means nothing for a %s hook", h.Event)
	}
	if o.out.UpdatedOutput != nil && h.Event != HookPostToolUse {
		return nil, fmt.Errorf("updated_output means nothing for a %s hook", h.Event)
	}
	if o.out.AdditionalContext != "" && (h.Event == HookStop || h.Event == HookSessionEnd || h.Event == HookPermissionDenied) {
		// Nothing the model reads follows these events: context would be
		// dropped, and a dropped field must not pass for a delivered one.
		return nil, fmt.Errorf("additional_context means nothing for a %s hook: the model reads nothing after it", h.Event)
	}
	if err := h.permits(o.out); err != nil {
		return nil, err
	}
	return o.out, nil
}

// permits checks an output against the hook's trust level (see "Hook
// trust" in the package documentation): a deny-only hook may tighten —
// deny, ask, block, add labelled context — but every field that would
// loosen the policy or change what was approved is an error, so the
// hook counts as failed (fail closed) instead of being silently obeyed
// or silently ignored. This is the one place the table is enforced.
func (h *compiledHook) permits(out *HookOutput) error {
	if !h.DenyOnly {
		return nil
	}
	const why = "this hook is deny-only (it comes from a policy file the preset does not trust to loosen the policy, such as the workspace's under strict)"
	switch {
	case out.Decision == "allow":
		// An allow would skip the ask rules, the mode and the person.
		return fmt.Errorf("decision \"allow\": %s, and a deny-only hook may deny or ask, never allow", why)
	case len(out.UpdatedInput) > 0:
		// A rewrite would make the tool run something nobody approved:
		// an auto-approved write_file turned into a backdoor.
		return fmt.Errorf("updated_input: %s, and a deny-only hook may not rewrite what the tool runs", why)
	case out.UpdatedOutput != nil:
		// A replaced output would lie to the model about what happened
		// ("3 tests failed" shown as "all passed").
		return fmt.Errorf("updated_output: %s, and a deny-only hook may not replace what the tool returned", why)
	}
	return nil
}

// hookFailure is the hook event reporting a failed hook.
func hookFailure(h *compiledHook, call *tools.Call, err error, outcome string) Event {
	f := &HookFailureEvent{Hook: h.Name, Event: h.Event, Error: err.Error(), Outcome: outcome}
	if call != nil {
		f.ID, f.Name = call.ID, call.Name
	}
	return Event{Type: EventHook, Hook: f}
}

// preResult is what the PreToolUse hooks of one call said together.
type preResult struct {
	decision string // "deny", "ask", "allow" or ""
	hook     string // the hook that decided
	reason   string
	input    json.RawMessage // the last rewrite, if any
	rewrote  string          // the hook that rewrote it
	context  []string
	failed   bool
}

// runPre runs the PreToolUse hooks matching a call, in order. Rewrites
// chain (each hook sees the input the previous one left). The first deny
// or failure ends the chain; otherwise ask beats allow.
func runPre(ctx context.Context, hooks []*compiledHook, base HookInput, call tools.Call, t *tools.Tool, report func(Event)) preResult {
	var res preResult
	input := call.Input
	for _, h := range hooks {
		in := base
		in.Event, in.ToolName, in.ToolUseID, in.ToolInput = HookPreToolUse, t.Name(), call.ID, input
		out, err := h.run(ctx, &in)
		if err != nil {
			report(hookFailure(h, &call, err, "the call is denied: a PreToolUse hook that fails denies"))
			return preResult{decision: "deny", hook: h.Name, failed: true,
				reason: fmt.Sprintf("the PreToolUse hook %s failed (%v), and a call a failing hook guards is denied", h.Name, err)}
		}
		if out.AdditionalContext != "" {
			res.context = append(res.context, fmt.Sprintf("[%s] %s", h.Name, out.AdditionalContext))
		}
		if len(out.UpdatedInput) > 0 {
			prepared, bad := t.PrepareInput(out.UpdatedInput)
			if bad != nil {
				err := fmt.Errorf("its updated_input does not fit the tool: %s", bad.TextOf())
				report(hookFailure(h, &call, err, "the call is denied"))
				return preResult{decision: "deny", hook: h.Name, failed: true,
					reason: fmt.Sprintf("the PreToolUse hook %s rewrote the input into one the tool refuses: %s", h.Name, bad.TextOf())}
			}
			input, res.input, res.rewrote = prepared, prepared, h.Name
		}
		switch out.Decision {
		case "deny":
			msg := out.Reason
			if msg == "" {
				msg = fmt.Sprintf("the PreToolUse hook %s denied this call", h.Name)
			}
			return preResult{decision: "deny", hook: h.Name, reason: msg, context: res.context}
		case "ask":
			if res.decision != "ask" {
				res.decision, res.hook, res.reason = "ask", h.Name, out.Reason
			}
		case "allow":
			// A deny-only hook's allow never gets here: run refuses it.
			if res.decision == "" {
				res.decision, res.hook, res.reason = "allow", h.Name, out.Reason
			}
		}
	}
	return res
}

// post runs the PostToolUse or PostToolUseFailure hooks of a call and
// returns the result the model will see.
func (hs *hookSet) post(ctx context.Context, base HookInput, call tools.Call, res *tools.Result, report func(Event)) *tools.Result {
	event := HookPostToolUse
	if res.IsError {
		event = HookPostToolUseFailure
	}
	hooks := hs.matching(event, call.Name, call.Input)
	if len(hooks) == 0 {
		return res
	}
	var extra []string
	for _, h := range hooks {
		in := base
		in.Event, in.ToolName, in.ToolUseID, in.ToolInput = event, call.Name, call.ID, call.Input
		in.ToolResponse = &ToolResponse{IsError: res.IsError, Content: nonNil(res.Content)}
		if res.IsError {
			in.Reason = res.TextOf()
		}
		out, err := h.run(ctx, &in)
		if err != nil {
			if event == HookPostToolUse {
				report(hookFailure(h, &call, err, "the output is withheld from the model"))
				return tools.Errorf("the output of this call is withheld: the PostToolUse hook %s failed (%v), and output a failing hook guards is not shown", h.Name, err)
			}
			report(hookFailure(h, &call, err, "reported only (a notification hook)"))
			continue
		}
		if out.UpdatedOutput != nil {
			res = &tools.Result{Content: []tools.Content{tools.TextContent(*out.UpdatedOutput)}, IsError: res.IsError}
		}
		if out.AdditionalContext != "" {
			extra = append(extra, fmt.Sprintf("[%s] %s", h.Name, out.AdditionalContext))
		}
	}
	return withContext(res, extra)
}

// notify runs the hooks of a notification event; failures are reported.
func (hs *hookSet) notify(ctx context.Context, in HookInput, call *tools.Call, report func(Event)) []string {
	tool := ""
	var input json.RawMessage
	if call != nil {
		tool, input = call.Name, call.Input
	}
	var extra []string
	for _, h := range hs.matching(in.Event, tool, input) {
		hin := in
		out, err := h.run(ctx, &hin)
		if err != nil {
			report(hookFailure(h, call, err, "reported only (a notification hook)"))
			continue
		}
		if out.AdditionalContext != "" {
			extra = append(extra, fmt.Sprintf("[%s] %s", h.Name, out.AdditionalContext))
		}
	}
	return extra
}

// promptSubmit runs the UserPromptSubmit hooks: a block or a failure
// blocks the prompt (err), context is returned.
func (hs *hookSet) promptSubmit(ctx context.Context, in HookInput, report func(Event)) ([]string, error) {
	var extra []string
	for _, h := range hs.matching(HookUserPromptSubmit, "", nil) {
		hin := in
		out, err := h.run(ctx, &hin)
		if err != nil {
			report(hookFailure(h, nil, err, "the prompt is blocked: a UserPromptSubmit hook that fails blocks"))
			return nil, fmt.Errorf("%w: the UserPromptSubmit hook %s failed: %v", ErrPromptBlocked, h.Name, err)
		}
		if out.Decision == "block" {
			why := out.Reason
			if why == "" {
				why = "no reason given"
			}
			return nil, fmt.Errorf("%w by the UserPromptSubmit hook %s: %s", ErrPromptBlocked, h.Name, why)
		}
		if out.AdditionalContext != "" {
			extra = append(extra, fmt.Sprintf("[%s] %s", h.Name, out.AdditionalContext))
		}
	}
	return extra, nil
}

// ErrPromptBlocked is wrapped by the error of a run whose prompt a
// UserPromptSubmit hook blocked.
var ErrPromptBlocked = errors.New("the prompt was blocked")

// withContext appends hook context to a result as text blocks.
func withContext(res *tools.Result, extra []string) *tools.Result {
	if len(extra) == 0 {
		return res
	}
	c := *res
	c.Content = append(append([]tools.Content(nil), res.Content...), tools.TextContent("Additional context from hooks:\n"+strings.Join(extra, "\n")))
	return &c
}
