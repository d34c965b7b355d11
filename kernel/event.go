package kernel

import (
	"encoding/json"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/provider"
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
	// EventToolResult is the result the model will see for a call.
	EventToolResult EventType = "tool_result"
	// EventCustom is emitted by a tool handler through Context.Emit.
	EventCustom EventType = "custom"
	// EventCheckpoint is a sealed checkpoint (Data), or a failure to seal
	// one (Error).
	EventCheckpoint EventType = "checkpoint"
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

// Event is one item of a Query stream. Only the fields of its Type are set;
// MarshalJSON writes only those, so that stream-json stays readable.
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

	// session_start; MCPServers is each configured MCP server's status
	// (connected with its tools, or failed and why); Agents are the names
	// of the subagents the agent tool can start.
	Model      string
	Workspace  string
	Tools      []string
	Resumed    bool
	MCPServers []mcp.ServerStatus
	Agents     []string
	// Instructions are the project-instruction files loaded into the
	// system prompt (or skipped, with the reason).
	Instructions []InstructionFile

	// compact
	Compaction *Compaction

	// text_delta
	Text string

	// retry
	Attempt int

	// assistant_message
	Message *provider.Message

	// tool_call, tool_result; Name also names a custom event.
	ID      string
	Name    string
	Input   json.RawMessage
	IsError bool
	Content []tools.Content
	// EffectiveInput (tool_call) is set when a PreToolUse hook or
	// CanUseTool changed the input of an allowed call: what the tool ran
	// with, where Input is what the model asked for.
	EffectiveInput json.RawMessage

	// custom
	Data any

	// permission: Decision is "allow" or "deny"; DecidedBy is "rule",
	// "hook", "mode", "default", "can_use_tool", "approval" or "headless";
	// Rule and RuleSource name the rule, Hook the hook; Asked says whether
	// CanUseTool or a person was asked; Reason says why (for a denial, the
	// message the model sees).
	Decision   string
	DecidedBy  string
	Rule       string
	RuleSource string
	Mode       PermissionMode
	Asked      bool
	// permission, hook: the hook's name; hook: its event.
	Hook      string
	HookEvent string
	// permission: why; hook: what was done about the failure.
	Reason string

	// result (the run's total); assistant_message (its call's)
	Usage provider.Usage

	// result
	Subtype    string
	NumTurns   int
	StopReason provider.StopReason
	Result     string
	DurationMS int64
	// StructuredOutput is the final answer as JSON, validated against
	// Options.OutputFormat.
	StructuredOutput json.RawMessage

	// retry, result: what went wrong, in words.
	Error string
}

// agentTag is the part of every event's JSON that says which subagent
// emitted it; empty (and absent) for the main agent.
type agentTag struct {
	Agent           string `json:"agent,omitempty"`
	AgentID         string `json:"agent_id,omitempty"`
	ParentToolUseID string `json:"parent_tool_use_id,omitempty"`
}

// MarshalJSON encodes e with a `type` field and only the fields of its type.
func (e Event) MarshalJSON() ([]byte, error) {
	tag := agentTag{e.Agent, e.AgentID, e.ParentToolUseID}
	switch e.Type {
	case EventSessionStart:
		return json.Marshal(struct {
			Type         EventType          `json:"type"`
			SessionID    string             `json:"session_id"`
			Model        string             `json:"model"`
			Workspace    string             `json:"workspace"`
			Tools        []string           `json:"tools"`
			Resumed      bool               `json:"resumed,omitempty"`
			MCPServers   []mcp.ServerStatus `json:"mcp_servers,omitempty"`
			Agents       []string           `json:"agents,omitempty"`
			Instructions []InstructionFile  `json:"instructions,omitempty"`
		}{e.Type, e.SessionID, e.Model, e.Workspace, nonNil(e.Tools), e.Resumed, e.MCPServers, e.Agents, e.Instructions})
	case EventThinkingDelta:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			Thinking string `json:"thinking"`
		}{e.Type, e.SessionID, tag, e.Text})
	case EventCompact:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			*Compaction
		}{e.Type, e.SessionID, tag, e.Compaction})
	case EventTextDelta:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			Text string `json:"text"`
		}{e.Type, e.SessionID, tag, e.Text})
	case EventRetry:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			Attempt int    `json:"attempt"`
			Error   string `json:"error"`
		}{e.Type, e.SessionID, tag, e.Attempt, e.Error})
	case EventAssistantMessage:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			Message *provider.Message `json:"message"`
			// The usage of the call that produced the message.
			Usage provider.Usage `json:"usage"`
		}{e.Type, e.SessionID, tag, e.Message, e.Usage})
	case EventToolCall:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			ID             string          `json:"id"`
			Name           string          `json:"name"`
			Input          json.RawMessage `json:"input"`
			EffectiveInput json.RawMessage `json:"effective_input,omitempty"`
		}{e.Type, e.SessionID, tag, e.ID, e.Name, rawOrString(e.Input), e.EffectiveInput})
	case EventToolResult:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			ID      string          `json:"id"`
			Name    string          `json:"name"`
			IsError bool            `json:"is_error"`
			Content []tools.Content `json:"content"`
		}{e.Type, e.SessionID, tag, e.ID, e.Name, e.IsError, nonNil(e.Content)})
	case EventPermission:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			ID         string         `json:"id"`
			Name       string         `json:"name"`
			Decision   string         `json:"decision"`
			DecidedBy  string         `json:"by"`
			Rule       string         `json:"rule,omitempty"`
			RuleSource string         `json:"rule_source,omitempty"`
			Hook       string         `json:"hook,omitempty"`
			Mode       PermissionMode `json:"mode"`
			Asked      bool           `json:"asked,omitempty"`
			Reason     string         `json:"reason"`
		}{e.Type, e.SessionID, tag, e.ID, e.Name, e.Decision, e.DecidedBy, e.Rule, e.RuleSource, e.Hook, e.Mode, e.Asked, e.Reason})
	case EventHook:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			ID        string `json:"id,omitempty"`
			Name      string `json:"name,omitempty"`
			Hook      string `json:"hook"`
			HookEvent string `json:"hook_event"`
			Error     string `json:"error"`
			Outcome   string `json:"outcome"`
		}{e.Type, e.SessionID, tag, e.ID, e.Name, e.Hook, e.HookEvent, e.Error, e.Reason})
	case EventCustom:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			ID   string `json:"id,omitempty"`
			Name string `json:"name"`
			Data any    `json:"data"`
		}{e.Type, e.SessionID, tag, e.ID, e.Name, e.Data})
	case EventCheckpoint:
		return json.Marshal(struct {
			Type      EventType `json:"type"`
			SessionID string    `json:"session_id"`
			agentTag
			Checkpoint any    `json:"checkpoint,omitempty"`
			Error      string `json:"error,omitempty"`
		}{e.Type, e.SessionID, tag, e.Data, e.Error})
	case EventResult:
		return json.Marshal(struct {
			Type             EventType           `json:"type"`
			SessionID        string              `json:"session_id"`
			Subtype          string              `json:"subtype"`
			IsError          bool                `json:"is_error"`
			NumTurns         int                 `json:"num_turns"`
			Usage            provider.Usage      `json:"usage"`
			StopReason       provider.StopReason `json:"stop_reason,omitempty"`
			Result           string              `json:"result"`
			StructuredOutput json.RawMessage     `json:"structured_output,omitempty"`
			DurationMS       int64               `json:"duration_ms"`
			Error            string              `json:"error,omitempty"`
		}{e.Type, e.SessionID, e.Subtype, e.IsError, e.NumTurns, e.Usage, e.StopReason, e.Result, e.StructuredOutput, e.DurationMS, e.Error})
	}
	type plain Event
	return json.Marshal(plain(e))
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
