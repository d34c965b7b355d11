package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"strings"

	"github.com/lite-agent/lite-agent/provider"
)

// Script is the parsed script file.
type Script struct {
	Turns []Turn `json:"turns"`
	// Agents are the scripts of subagents, by agent name: a call whose
	// Request.Agent is set replays Agents[name].Turns instead of Turns.
	Agents map[string]AgentScript `json:"agents,omitempty"`
}

// AgentScript is what one subagent answers.
type AgentScript struct {
	Turns []Turn `json:"turns"`
}

// Turn is what the model answers to one call.
type Turn struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Error makes this model call fail with this message.
	Error string `json:"error,omitempty"`
	// Usage overrides the token counts reported for this call.
	Usage *provider.Usage `json:"usage,omitempty"`
}

// ToolCall is one tool call of a turn.
type ToolCall struct {
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input,omitempty"`
	// RawInput, when set, is sent as the arguments verbatim, even if it is
	// not valid JSON — to test how the loop handles a model's bad output.
	RawInput *string `json:"raw_input,omitempty"`
}

// ErrScriptExhausted is returned when a session asks for more turns than
// the script has.
var ErrScriptExhausted = errors.New("scripted model: the script has no turn left")

// Model replays a Script. It is stateless and safe for concurrent use.
type Model struct {
	script Script
}

var _ provider.Model = (*Model)(nil)

// New returns a Model replaying s, after checking it.
func New(s Script) (*Model, error) {
	if err := checkTurns("turns", s.Turns); err != nil {
		return nil, err
	}
	for name, a := range s.Agents {
		if err := checkTurns(fmt.Sprintf("agents[%q].turns", name), a.Turns); err != nil {
			return nil, err
		}
	}
	return &Model{script: s}, nil
}

func checkTurns(where string, turns []Turn) error {
	for i, t := range turns {
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return fmt.Errorf("scripted: %s[%d].tool_calls[%d]: missing \"name\"", where, i, j)
			}
			if c.RawInput != nil && len(c.Input) > 0 {
				return fmt.Errorf("scripted: %s[%d].tool_calls[%d]: give \"input\" or \"raw_input\", not both", where, i, j)
			}
		}
	}
	return nil
}

// Parse parses a script. Syntax errors name the line and column; unknown
// fields are errors, so that a typo is not silently ignored.
func Parse(data []byte) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset)
			return nil, fmt.Errorf("scripted: line %d, column %d: %v", line, col, err)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			line, col := position(data, te.Offset)
			return nil, fmt.Errorf("scripted: line %d, column %d: %s must be %v, not %s", line, col, te.Field, te.Type, te.Value)
		}
		return nil, fmt.Errorf("scripted: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("scripted: unexpected data after the script object")
	}
	if s.Turns == nil {
		return nil, fmt.Errorf("scripted: the script has no \"turns\" array")
	}
	return New(s)
}

// Load reads and parses a script file.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// Stream implements provider.Model.
func (m *Model) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Chunk, error] {
	return func(yield func(provider.Chunk, error) bool) {
		k := 0
		for _, msg := range req.Messages {
			if msg.Role == provider.RoleAssistant {
				k++
			}
		}
		turns, whose := m.script.Turns, "the script"
		if req.Agent != "" {
			a, ok := m.script.Agents[req.Agent]
			if !ok {
				yield(provider.Chunk{}, fmt.Errorf("%w: the subagent %q called the model, and the script has no \"agents\" entry for it", ErrScriptExhausted, req.Agent))
				return
			}
			turns, whose = a.Turns, fmt.Sprintf("the script of the subagent %q", req.Agent)
		}
		if k >= len(turns) {
			yield(provider.Chunk{}, fmt.Errorf("%w: %s has %d turns and the session asked for turn %d; add a turn to the script", ErrScriptExhausted, whose, len(turns), k+1))
			return
		}
		turn := turns[k]
		if err := ctx.Err(); err != nil {
			yield(provider.Chunk{}, err)
			return
		}
		if turn.Error != "" {
			yield(provider.Chunk{}, fmt.Errorf("scripted model: turn %d: %s", k+1, turn.Error))
			return
		}
		msg := &provider.Message{Role: provider.RoleAssistant}
		if turn.Text != "" {
			for _, piece := range splitDeltas(turn.Text) {
				if !yield(provider.Chunk{Type: provider.ChunkTextDelta, Text: piece}, nil) {
					return
				}
			}
			msg.Content = append(msg.Content, provider.Block{Type: provider.BlockText, Text: turn.Text})
		}
		for i, c := range turn.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("toolu_scripted_%d_%d", k+1, i+1)
			}
			input := c.Input
			if c.RawInput != nil {
				input = json.RawMessage(*c.RawInput)
			} else if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			msg.Content = append(msg.Content, provider.Block{Type: provider.BlockToolUse, ID: id, Name: c.Name, Input: input})
		}
		stop := provider.StopEndTurn
		if len(turn.ToolCalls) > 0 {
			stop = provider.StopToolUse
		}
		usage := estimateUsage(req, msg)
		if turn.Usage != nil {
			usage = *turn.Usage
		}
		yield(provider.Chunk{Type: provider.ChunkMessage, Message: msg, StopReason: stop, Usage: usage}, nil)
	}
}

// splitDeltas cuts text into at most three pieces at spaces, so that
// consumers see streaming without the script having to spell it out.
func splitDeltas(text string) []string {
	words := strings.SplitAfter(text, " ")
	if len(words) < 3 {
		return []string{text}
	}
	third := (len(words) + 2) / 3
	var out []string
	for i := 0; i < len(words); i += third {
		out = append(out, strings.Join(words[i:min(i+third, len(words))], ""))
	}
	return out
}

// estimateUsage reports deterministic token counts so that usage
// accounting can be tested offline. It is deliberately cheap (constant per
// message, about four bytes a token for the answer): re-encoding the whole
// conversation on every call would make long scripted sessions quadratic
// and the kernel benchmarks would measure the fake model, not the kernel.
func estimateUsage(req *provider.Request, out *provider.Message) provider.Usage {
	in := len(req.System)/4 + 20*len(req.Messages) + 50*len(req.Tools)
	outTokens := 0
	for _, b := range out.Content {
		outTokens += (len(b.Text)+len(b.Input))/4 + 5
	}
	return provider.Usage{InputTokens: int64(in + 1), OutputTokens: int64(outTokens + 1)}
}
