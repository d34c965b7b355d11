package kernel

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// EventType names the kind of an Event. These strings are the `type` field
// of the stream-json output, a documented contract.
type EventType string

const (
	// EventSessionStart is first: the session id, the visible tools, the model.
	EventSessionStart EventType = "session_start"
	// EventTextDelta carries assistant text as it streams.
	EventTextDelta EventType = "text_delta"
	// EventThinkingDelta carries the model's extended thinking as it
	// streams (Options.ThinkingBudget).
	EventThinkingDelta EventType = "thinking_delta"
	// EventCompact says the context was made smaller before a model call:
	// old tool results cleared, or older turns summarised (Compaction).
	EventCompact EventType = "compact"
	// EventRetry says the provider is retrying the model call: text deltas
	// streamed since the last assistant_message are void.
	EventRetry EventType = "retry"
	// EventAssistantMessage is a whole assistant turn.
	EventAssistantMessage EventType = "assistant_message"
	// EventToolCall is a tool call the model made. It comes once the
	// permission gate has decided (and before the permission event), so
	// that it shows both the input the model gave (Input) and, when a
	// PreToolUse hook or CanUseTool rewrote it, the input the tool runs
	// with (EffectiveInput, "effective_input").
	EventToolCall EventType = "tool_call"
	// EventPermission says what the permission gate decided about a call
	// and why: which rule, hook, mode, CanUseTool or approval.
	EventPermission EventType = "permission"
	// EventHook reports a hook that failed (error, timeout, bad output)
	// and what was done about it.
	EventHook EventType = "hook"
	// EventToolOutput is what a running call wrote so far, as it comes
	// (the bash tool's command output): a live view for a person, not a
	// record (ToolOutputEvent). The tool_result carries the output the
	// model sees.
	EventToolOutput EventType = "tool_output"
	// EventToolResult is the result the model will see for a call.
	EventToolResult EventType = "tool_result"
	// EventCustom is emitted by a tool handler through Context.Emit.
	EventCustom EventType = "custom"
	// EventCheckpoint is a sealed checkpoint, or a failure to seal one.
	EventCheckpoint EventType = "checkpoint"
	// EventNetwork is a connection the sandbox's domain proxy allowed or
	// refused, or a direct connect a literal IP[:PORT] grant admitted
	// (sandbox.Policy.OnNetwork).
	EventNetwork EventType = "network"
	// EventSandbox says the sandbox could not start a command of a tool
	// call (sandbox.Policy.OnStartFailure): the person must know, not
	// only the model, and the run's result is then an error
	// (ErrSandboxStart).
	EventSandbox EventType = "sandbox"
	// EventResult is last: how the run ended.
	EventResult EventType = "result"
)

// Result subtypes.
const (
	SubtypeSuccess              = "success"
	SubtypeErrorMaxTurns        = "error_max_turns"
	SubtypeErrorDuringExecution = "error_during_execution"
	// SubtypeErrorMaxBudget: the run (with its subagents) used more tokens
	// than Options.MaxBudgetTokens.
	SubtypeErrorMaxBudget = "error_max_budget"
	// SubtypeErrorStructuredOutput: the final answer did not match
	// Options.OutputFormat, after the retries.
	SubtypeErrorStructuredOutput = "error_structured_output"
)

// Event is one item of a Query stream: what every event has (its type,
// the session, which subagent emitted it) and one payload, the pointer of
// its Type — SessionStart for session_start, ToolCall for tool_call, and
// so on; the others are nil. A payload has plain JSON tags, and an event's
// JSON (the stream-json line) is the common fields followed by its
// payload's, in one flat object: {"type":"tool_call","session_id":...,
// "id":...,"name":...,"input":...}. UnmarshalJSON reads that back.
type Event struct {
	Type      EventType
	SessionID string

	// Set on every event a subagent's loop emits (they are forwarded into
	// the parent's stream): the agent's name (its key in Options.Agents),
	// its id, unique in the session, and the id of the parent's agent tool
	// call that started it.
	Agent           string
	AgentID         string
	ParentToolUseID string

	SessionStart     *SessionStartEvent     // session_start
	TextDelta        *TextDeltaEvent        // text_delta
	ThinkingDelta    *ThinkingDeltaEvent    // thinking_delta
	Compaction       *Compaction            // compact
	Retry            *RetryEvent            // retry
	AssistantMessage *AssistantMessageEvent // assistant_message
	ToolCall         *ToolCallEvent         // tool_call
	Permission       *PermissionEvent       // permission
	Hook             *HookFailureEvent      // hook
	ToolOutput       *ToolOutputEvent       // tool_output
	ToolResult       *ToolResultEvent       // tool_result
	Custom           *CustomEvent           // custom
	Checkpoint       *CheckpointEvent       // checkpoint
	Network          *NetworkEvent          // network
	Sandbox          *SandboxEvent          // sandbox
	Result           *ResultEvent           // result
}

// SessionStartEvent is the first event: the session, its tools and model.
type SessionStartEvent struct {
	Model     string   `json:"model"`
	Workspace string   `json:"workspace"`
	Tools     []string `json:"tools"` // the visible tools; [] when none
	Resumed   bool     `json:"resumed,omitempty"`
	// MCPServers is the status of each server of the session's toolsets
	// (tools.ToolsetStatus: each configured MCP server, connected with
	// its tools, or failed and why).
	MCPServers []tools.ServerStatus `json:"mcp_servers,omitempty"`
	// Agents are the names of the subagents the agent tool can start.
	Agents []string `json:"agents,omitempty"`
	// Instructions are the project-instruction files loaded into the
	// system prompt (or skipped, with the reason).
	Instructions []InstructionFile `json:"instructions,omitempty"`
	// NotRewindable are the writable roots of the session's commands
	// outside the workspace (an --allow-write path, a [sandbox] write, a
	// toolchain's per-workspace cache), when the session records
	// checkpoints: the checkpoint store records the workspace only, so a
	// change there is never in a checkpoint and no rewind undoes it.
	// Said at the start so that the person knows before the agent writes.
	NotRewindable []string `json:"not_rewindable,omitempty"`
	// SandboxLevel is the level of the sandbox of commands ("full" or
	// "container"); SandboxLost what it does not give on this host, and
	// SandboxNotEnforced what best effort runs without
	// (sandbox.Enforcement's Lost and Missing). Said at the start, in
	// the words `lite-agent sandbox check` uses.
	SandboxLevel       sandbox.Level `json:"sandbox_level,omitempty"`
	SandboxLost        []string      `json:"sandbox_lost,omitempty"`
	SandboxNotEnforced []string      `json:"sandbox_not_enforced,omitempty"`
}

// SandboxEvent says the sandbox could not start a command.
type SandboxEvent struct {
	Error string `json:"error"`
}

// TextDeltaEvent is assistant text as it streams.
type TextDeltaEvent struct {
	Text string `json:"text"`
}

// ThinkingDeltaEvent is the model's extended thinking as it streams.
type ThinkingDeltaEvent struct {
	Thinking string `json:"thinking"`
}

// RetryEvent says the provider retries a model call, and why.
type RetryEvent struct {
	// Attempt is the number of the request about to be sent (2 for the
	// first retry) out of MaxAttempts (0: not known).
	Attempt     int `json:"attempt"`
	MaxAttempts int `json:"max_attempts,omitempty"`
	// WaitMS is how long the provider waits before it (milliseconds).
	WaitMS int64  `json:"wait_ms"`
	Error  string `json:"error"`
}

// Describe is the retry in a person's words: "retrying 2/5 in 4s: why".
func (e *RetryEvent) Describe() string {
	n := fmt.Sprint(e.Attempt)
	if e.MaxAttempts > 0 {
		n = fmt.Sprintf("%d/%d", e.Attempt, e.MaxAttempts)
	}
	wait := (time.Duration(e.WaitMS) * time.Millisecond).Round(100 * time.Millisecond)
	if e.WaitMS > 0 && wait == 0 {
		wait = time.Duration(e.WaitMS) * time.Millisecond
	}
	return fmt.Sprintf("retrying the model call %s in %v: %s", n, wait, e.Error)
}

// AssistantMessageEvent is a whole assistant turn.
type AssistantMessageEvent struct {
	Message *provider.Message `json:"message"`
	// Usage is the usage of the call that produced the message.
	Usage provider.Usage `json:"usage"`
}

// ToolCallEvent is a call the model made, once the gate has decided.
type ToolCallEvent struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Input is what the model sent: kept as a JSON string in the stream
	// when it is not valid JSON, and {} when it is empty.
	Input json.RawMessage `json:"input"`
	// EffectiveInput is set when a PreToolUse hook or CanUseTool changed
	// the input of an allowed call: what the tool ran with.
	EffectiveInput json.RawMessage `json:"effective_input,omitempty"`
}

// PermissionEvent is what the permission gate decided about a call.
type PermissionEvent struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Decision is "allow" or "deny".
	Decision string `json:"decision"`
	// DecidedBy is "rule", "hook", "mode", "default", "can_use_tool",
	// "approval" or "headless".
	DecidedBy string `json:"by"`
	// Rule and RuleSource name the rule that decided, Hook the hook.
	Rule       string         `json:"rule,omitempty"`
	RuleSource string         `json:"rule_source,omitempty"`
	Hook       string         `json:"hook,omitempty"`
	Mode       PermissionMode `json:"mode"`
	// Asked says whether CanUseTool or a person was asked.
	Asked bool `json:"asked,omitempty"`
	// Reason says why; for a denial, it is the message the model sees.
	Reason string `json:"reason"`
}

// HookFailureEvent reports a hook that failed (error, panic, timeout, bad
// output) and what was done about it.
type HookFailureEvent struct {
	// ID and Name are the tool call's, for a tool hook.
	ID    string    `json:"id,omitempty"`
	Name  string    `json:"name,omitempty"`
	Hook  string    `json:"hook"`
	Event HookEvent `json:"hook_event"`
	Error string    `json:"error"`
	// Outcome is what was done about the failure ("the call is denied:
	// ...").
	Outcome string `json:"outcome"`
}

// ToolOutputEvent is output a running call wrote since its last
// tool_output event. Events of one call come at most every 100 ms, each
// with at most 8 KiB (the latest bytes: Dropped counts the ones left out
// before them, so a fast command costs the stream little); text is cut at
// UTF-8 character boundaries, and nothing comes after the call's result.
type ToolOutputEvent struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Text    string `json:"text"`
	Dropped int64  `json:"dropped,omitempty"`
}

// ToolResultEvent is the result the model will see for a call.
type ToolResultEvent struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	IsError bool            `json:"is_error"`
	Content []tools.Content `json:"content"` // [] when empty
}

// CustomEvent is emitted by a tool handler through Context.Emit.
type CustomEvent struct {
	ID   string `json:"id,omitempty"` // the call whose handler emitted it
	Name string `json:"name"`
	// Data is what the handler emitted; decoded from JSON, it is the
	// json.RawMessage of the value, so that it encodes back unchanged.
	Data any `json:"data"`
}

// CheckpointEvent is a sealed checkpoint, or a failure to seal one.
type CheckpointEvent struct {
	// Checkpoint is the Checkpointer's description of it; decoded from
	// JSON, the json.RawMessage of the value.
	Checkpoint any    `json:"checkpoint,omitempty"`
	Error      string `json:"error,omitempty"`
}

// NetworkEvent is one connection the sandbox's domain proxy decided, or
// one connect a literal IP[:PORT] grant admitted around it (Rule
// "<grant> (direct)", BytesUp and BytesDown 0: those bytes never pass
// the proxy): sandbox.NetworkEvent with JSON tags, field for field (networkEvent
// converts one into the other, so they cannot differ).
type NetworkEvent struct {
	Host      string `json:"host"` // the name (or IP literal) asked for
	Port      int    `json:"port"`
	Decision  string `json:"decision"` // "allow" or "deny"
	Rule      string `json:"rule"`     // the grant or refusal that decided
	BytesUp   int64  `json:"bytes_up"` // client to server
	BytesDown int64  `json:"bytes_down"`
}

// ResultEvent is the last event: how the run ended.
type ResultEvent struct {
	// Subtype is SubtypeSuccess or one of the SubtypeError* values.
	Subtype  string `json:"subtype"`
	IsError  bool   `json:"is_error"`
	NumTurns int    `json:"num_turns"`
	// Usage is the whole run's, its subagents' included.
	Usage      provider.Usage      `json:"usage"`
	StopReason provider.StopReason `json:"stop_reason,omitempty"`
	Result     string              `json:"result"`
	// StructuredOutput is the final answer as JSON, validated against
	// Options.OutputFormat.
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	DurationMS       int64           `json:"duration_ms"`
	// Error says what went wrong, in words.
	Error string `json:"error,omitempty"`
}

// eventHeader is the part of every event's JSON that is not its payload.
// The agent fields are empty (and absent) for the main agent's events.
type eventHeader struct {
	Type            EventType `json:"type"`
	SessionID       string    `json:"session_id"`
	Agent           string    `json:"agent,omitempty"`
	AgentID         string    `json:"agent_id,omitempty"`
	ParentToolUseID string    `json:"parent_tool_use_id,omitempty"`
}

// payload returns the payload of e's Type (a zero one when the pointer is
// nil, so that a careless producer never breaks the stream), or nil for
// a type this package does not define. It is the one table of which
// pointer belongs to which type: MarshalJSON and UnmarshalJSON both use
// it, so they cannot disagree.
func (e *Event) payload(alloc bool) any {
	switch e.Type {
	case EventSessionStart:
		return ensure(&e.SessionStart, alloc)
	case EventTextDelta:
		return ensure(&e.TextDelta, alloc)
	case EventThinkingDelta:
		return ensure(&e.ThinkingDelta, alloc)
	case EventCompact:
		return ensure(&e.Compaction, alloc)
	case EventRetry:
		return ensure(&e.Retry, alloc)
	case EventAssistantMessage:
		return ensure(&e.AssistantMessage, alloc)
	case EventToolCall:
		return ensure(&e.ToolCall, alloc)
	case EventPermission:
		return ensure(&e.Permission, alloc)
	case EventHook:
		return ensure(&e.Hook, alloc)
	case EventToolOutput:
		return ensure(&e.ToolOutput, alloc)
	case EventToolResult:
		return ensure(&e.ToolResult, alloc)
	case EventCustom:
		return ensure(&e.Custom, alloc)
	case EventCheckpoint:
		return ensure(&e.Checkpoint, alloc)
	case EventNetwork:
		return ensure(&e.Network, alloc)
	case EventSandbox:
		return ensure(&e.Sandbox, alloc)
	case EventResult:
		return ensure(&e.Result, alloc)
	}
	return nil
}

// ensure returns *p, or (without storing it unless alloc) a new zero T
// when *p is nil.
func ensure[T any](p **T, alloc bool) *T {
	if *p != nil {
		return *p
	}
	v := new(T)
	if alloc {
		*p = v
	}
	return v
}

// MarshalJSON encodes e as one flat object: the common fields, then its
// payload's fields. An event of a type this package does not know has the
// common fields only.
func (e Event) MarshalJSON() ([]byte, error) {
	head, body, err := e.encodeParts()
	if err != nil || body == nil {
		return head, err
	}
	return joinObjects(head, body), nil
}

// WriteJSON writes e as MarshalJSON encodes it, and a newline: one line
// of a stream. It writes the common fields and the payload from their own
// encodings instead of joining them, and a large tool input from its own
// bytes (bigjson.go), so that an event carrying one is not copied again
// on its way out.
func (e Event) WriteJSON(w io.Writer) error {
	var sp splicer
	switch {
	case e.Type == EventAssistantMessage && e.AssistantMessage != nil && e.AssistantMessage.Message != nil:
		c := *e.AssistantMessage
		c.Message = sp.message(c.Message)
		e.AssistantMessage = &c
	case e.Type == EventToolCall && e.ToolCall != nil:
		c := *e.ToolCall
		c.Input = rawOrString(c.Input)
		c.Input = sp.hold(c.Input)
		if len(c.EffectiveInput) > 0 && json.Valid(c.EffectiveInput) {
			c.EffectiveInput = sp.hold(c.EffectiveInput)
		}
		e.ToolCall = &c
	}
	head, body, err := e.encodeParts()
	if err != nil {
		return err
	}
	if len(body) <= 2 { // no payload, or {}
		_, err = w.Write(append(head, '\n'))
		return err
	}
	if _, err := w.Write(head[:len(head)-1]); err != nil {
		return err
	}
	if _, err := w.Write([]byte{','}); err != nil {
		return err
	}
	return sp.write(w, append(body[1:], '\n'))
}

// encodeParts encodes the common fields and the payload (nil when e has
// none) as two objects.
func (e Event) encodeParts() (head, body []byte, err error) {
	head, err = json.Marshal(eventHeader{e.Type, e.SessionID, e.Agent, e.AgentID, e.ParentToolUseID})
	if err != nil {
		return nil, nil, err
	}
	p := e.payload(false)
	// The stream's promises that the payload types' zero values do not
	// keep: tools and content are lists, never null; a model's input is
	// JSON even when the model's was not.
	switch v := p.(type) {
	case *SessionStartEvent:
		c := *v
		c.Tools = nonNil(c.Tools)
		p = &c
	case *ToolResultEvent:
		c := *v
		c.Content = nonNil(c.Content)
		p = &c
	case *ToolCallEvent:
		c := *v
		c.Input = rawOrString(c.Input)
		p = &c
	case nil:
		return head, nil, nil
	}
	body, err = json.Marshal(p)
	if err != nil {
		return nil, nil, err
	}
	return head, body, nil
}

// joinObjects merges two encoded JSON objects into one, a's keys first.
// The payloads' keys never repeat the header's (type, session_id and the
// agent fields), so the result has no duplicate key.
func joinObjects(a, b []byte) []byte {
	if len(b) <= 2 { // {}
		return a
	}
	out := make([]byte, 0, len(a)+len(b))
	out = append(out, a[:len(a)-1]...)
	out = append(out, ',')
	return append(out, b[1:]...)
}

// UnmarshalJSON decodes an event MarshalJSON wrote: the common fields,
// then the payload of its type. A type this package does not know keeps
// its common fields and no payload. The `any` fields (a checkpoint's
// description, a custom event's data) decode as json.RawMessage, so that
// an event encodes back to the bytes it was read from.
func (e *Event) UnmarshalJSON(data []byte) error {
	var h eventHeader
	if err := json.Unmarshal(data, &h); err != nil {
		return err
	}
	*e = Event{Type: h.Type, SessionID: h.SessionID, Agent: h.Agent, AgentID: h.AgentID, ParentToolUseID: h.ParentToolUseID}
	switch e.Type {
	case EventCheckpoint:
		var w struct {
			Checkpoint json.RawMessage `json:"checkpoint"`
			Error      string          `json:"error"`
		}
		if err := json.Unmarshal(data, &w); err != nil {
			return fmt.Errorf("a %s event: %w", e.Type, err)
		}
		e.Checkpoint = &CheckpointEvent{Error: w.Error}
		if len(w.Checkpoint) > 0 && string(w.Checkpoint) != "null" {
			e.Checkpoint.Checkpoint = w.Checkpoint
		}
		return nil
	case EventCustom:
		var w struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(data, &w); err != nil {
			return fmt.Errorf("a %s event: %w", e.Type, err)
		}
		e.Custom = &CustomEvent{ID: w.ID, Name: w.Name}
		if len(w.Data) > 0 && string(w.Data) != "null" {
			e.Custom.Data = w.Data
		}
		return nil
	}
	if p := e.payload(true); p != nil {
		if err := json.Unmarshal(data, p); err != nil {
			return fmt.Errorf("a %s event: %w", e.Type, err)
		}
	}
	return nil
}

// networkEvent is the event of a connection the domain proxy decided, or
// of a direct connect (sandbox.Policy.OnNetwork); r.event adds the session and agent. The
// conversion compiles only while NetworkEvent has exactly
// sandbox.NetworkEvent's fields (tags aside), so the mirror cannot drift.
func networkEvent(n sandbox.NetworkEvent) Event {
	p := NetworkEvent(n)
	return Event{Type: EventNetwork, Network: &p}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// rawOrString keeps a model's tool input as JSON when it is valid and as a
// JSON string when it is not, so that a bad input never breaks the stream.
func rawOrString(in json.RawMessage) json.RawMessage {
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(in) {
		return in
	}
	b, _ := json.Marshal(string(in))
	return b
}
