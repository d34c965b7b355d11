package provider

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"
)

// Role is who spoke a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType names the kind of a content block in a message.
type BlockType string

const (
	BlockText       BlockType = "text"
	BlockImage      BlockType = "image"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
	// BlockThinking is the model's extended thinking (Text) with the
	// Signature the API needs to accept it back: within a tool loop it
	// must be returned unmodified, in place.
	BlockThinking BlockType = "thinking"
	// BlockRedactedThinking is thinking the API encrypted; Signature holds
	// its opaque data, returned as is.
	BlockRedactedThinking BlockType = "redacted_thinking"
	// BlockServerToolUse is a call of a tool the API runs itself
	// (web_search): ID, Name, Input. The kernel does not run it.
	BlockServerToolUse BlockType = "server_tool_use"
	// BlockWebSearchResult is the API's result of a server web_search
	// call (ToolUseID); Raw is its content exactly as the API sent it, so
	// that it can be sent back unchanged (it carries encrypted fields).
	BlockWebSearchResult BlockType = "web_search_tool_result"
)

// Block is one content block of a message, in a provider-neutral form close
// to the Anthropic Messages wire format. Only the fields of its Type are set.
type Block struct {
	Type BlockType `json:"type"`

	// text
	Text string `json:"text,omitempty"`

	// image: base64-free raw bytes; providers encode them as their wire needs.
	MIMEType string `json:"mime_type,omitempty"`
	Data     []byte `json:"data,omitempty"`

	// tool_use. Input is the model's raw argument text: it is kept as sent,
	// even when it is not valid JSON, so the kernel can tell the model what
	// was wrong with it instead of the provider dropping it.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	// tool_result
	ToolUseID string  `json:"tool_use_id,omitempty"`
	Content   []Block `json:"content,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`

	// thinking: the signature; redacted_thinking: the opaque data.
	Signature string `json:"signature,omitempty"`
	// web_search_tool_result: the content as the API sent it.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Message is one turn of the conversation.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// Text returns the concatenated text blocks of m.
func (m *Message) Text() string {
	var s string
	for _, b := range m.Content {
		if b.Type == BlockText {
			s += b.Text
		}
	}
	return s
}

// ToolUses returns the tool_use blocks of m in order.
func (m *Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// ToolSpec is what a model is told about one tool: its wire schema only.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Request is one model call.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
	// ThinkingBudget turns on extended thinking with this many tokens
	// (at least 1024, less than MaxTokens); zero means off. Providers
	// without thinking ignore it.
	ThinkingBudget int
	// WebSearch offers the provider's own web search tool, when it has
	// one; nil means none. The kernel sets it only when the session's
	// network policy allows it.
	WebSearch *WebSearch
	// Agent names the subagent making the call ("" for the main agent).
	// Providers that talk to an API ignore it; the scripted model uses it
	// to pick the subagent's script.
	Agent string
}

// WebSearch configures a server-side web search tool.
type WebSearch struct {
	// AllowedDomains restricts the results to these domains; empty means
	// any domain.
	AllowedDomains []string
	// MaxUses bounds the searches of one request; zero means the API's
	// default.
	MaxUses int
}

// StopReason says why the model stopped.
type StopReason string

const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopSequence  StopReason = "stop_sequence"
	StopRefusal   StopReason = "refusal"
	// StopPauseTurn: the API paused a long server-tool turn; sending the
	// conversation back as it is lets it continue.
	StopPauseTurn StopReason = "pause_turn"
)

// Usage counts tokens of one call or, summed, of a session. InputTokens
// are the uncached input; the whole prompt of one call is InputTokens +
// CacheCreationInputTokens + CacheReadInputTokens (see ContextTokens).
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// ContextTokens is the size of the prompt of the call u counts: what the
// model read, cached or not.
func (u Usage) ContextTokens() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
	u.CacheReadInputTokens += o.CacheReadInputTokens
}

// ChunkType names the kind of a streamed Chunk.
type ChunkType string

const (
	// ChunkTextDelta carries a piece of assistant text as it arrives.
	ChunkTextDelta ChunkType = "text_delta"
	// ChunkThinkingDelta carries a piece of extended thinking (Text).
	ChunkThinkingDelta ChunkType = "thinking_delta"
	// ChunkRetry says the provider is retrying the call: any text deltas
	// already streamed for this call are void and will be streamed again.
	ChunkRetry ChunkType = "retry"
	// ChunkMessage is the last chunk of a successful call: the whole
	// assistant message, why it stopped, and its usage.
	ChunkMessage ChunkType = "message"
)

// Chunk is one item of a model's stream.
type Chunk struct {
	Type ChunkType

	Text string // ChunkTextDelta, ChunkThinkingDelta

	// ChunkRetry: Attempt is the number of the request about to be sent
	// (2 for the first retry) out of MaxAttempts, after a wait of Wait;
	// Err is why.
	Attempt     int
	MaxAttempts int
	Wait        time.Duration
	Err         error

	// ChunkMessage
	Message    *Message
	StopReason StopReason
	Usage      Usage
}

// Model streams one assistant turn. The sequence yields text deltas, maybe
// retries, and ends with exactly one ChunkMessage — or with a non-nil error,
// after which nothing follows. Implementations stop as soon as yield
// returns false and honour ctx cancellation.
type Model interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// ErrPromptTooLong is wrapped by a provider's error when the API refused a
// request because its prompt does not fit the model's context window; the
// kernel then compacts the conversation and tries once more.
var ErrPromptTooLong = errors.New("the prompt is too long for the model's context window")

// ErrNoMessage is returned by Collect when a stream ended without a message.
var ErrNoMessage = errors.New("provider: stream ended without a final message")

// Collect drains a stream and returns its final chunk. It is a convenience
// for callers that do not need deltas (tests, subagents).
func Collect(seq iter.Seq2[Chunk, error]) (Chunk, error) {
	for c, err := range seq {
		if err != nil {
			return Chunk{}, err
		}
		if c.Type == ChunkMessage {
			return c, nil
		}
	}
	return Chunk{}, ErrNoMessage
}
