package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"reflect"
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
//
// A script can carry a tool input of many megabytes, and Parse holds it
// once: data is decoded in place (json.Unmarshal, not a Decoder, which
// would copy it into a buffer first), the tool inputs are kept as slices
// of data rather than copies (scriptSpans), and unknown fields are found
// by one walk over data (checkFields).
func Parse(data []byte) (*Model, error) {
	var raw scriptSpans
	err := checkFields(data, reflect.TypeFor[Script]())
	if err == nil {
		err = json.Unmarshal(data, &raw)
	}
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			if strings.Contains(se.Error(), "after top-level value") {
				return nil, fmt.Errorf("scripted: unexpected data after the script object")
			}
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
	if raw.Turns == nil {
		return nil, fmt.Errorf("scripted: the script has no \"turns\" array")
	}
	s := Script{Turns: raw.Turns.turns()}
	if raw.Agents != nil {
		s.Agents = map[string]AgentScript{}
		for name, a := range raw.Agents {
			s.Agents[name] = AgentScript{Turns: a.Turns.turns()}
		}
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

// The script as Parse decodes it: Script, with each tool input a span.
type (
	scriptSpans struct {
		Turns  turnsSpans `json:"turns"`
		Agents map[string]struct {
			Turns turnsSpans `json:"turns"`
		} `json:"agents"`
	}
	turnsSpans []struct {
		Text      string          `json:"text"`
		ToolCalls []toolCallSpans `json:"tool_calls"`
		Error     string          `json:"error"`
		Usage     *provider.Usage `json:"usage"`
	}
	toolCallSpans struct {
		ID       string  `json:"id"`
		Name     string  `json:"name"`
		Input    span    `json:"input"`
		RawInput *string `json:"raw_input"`
	}
)

func (ts turnsSpans) turns() []Turn {
	out := make([]Turn, len(ts))
	for i, t := range ts {
		out[i] = Turn{Text: t.Text, Error: t.Error, Usage: t.Usage}
		for _, c := range t.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Input: json.RawMessage(c.Input), RawInput: c.RawInput})
		}
	}
	return out
}

// span is a value's JSON text as a slice of the data json.Unmarshal was
// given, not a copy: Unmarshal hands an Unmarshaler a slice of its input
// (a Decoder would hand one of its reused buffer: spans are only ever
// decoded by Parse, with json.Unmarshal, from data it keeps). A script is
// never changed after it is parsed, so sharing its bytes is safe.
type span []byte

func (s *span) UnmarshalJSON(b []byte) error { *s = b; return nil }

// checkFields reports the first object member in data that the type t has
// no field for, as json.Decoder.DisallowUnknownFields would ("json:
// unknown field \"txt\"", and where it is), in one pass over data.
// Members are matched to fields as encoding/json matches them (the tag's
// name, else the field's, up to case). Anything else wrong with data is
// left to json.Unmarshal, which reports it with its position.
func checkFields(data []byte, t reflect.Type) error {
	w := walker{data: data}
	return w.value(t, "")
}

type walker struct {
	data []byte
	i    int
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func (w *walker) space() {
	for w.i < len(w.data) && strings.IndexByte(" \t\r\n", w.data[w.i]) >= 0 {
		w.i++
	}
}

// str moves past a string and returns its text (escapes undone only for
// keys, which are short).
func (w *walker) str(decode bool) (string, bool) {
	start := w.i
	w.i++
	for w.i < len(w.data) {
		j := bytes.IndexAny(w.data[w.i:], `"\\`)
		if j < 0 {
			w.i = len(w.data)
			return "", false
		}
		w.i += j
		if w.data[w.i] == '\\' {
			w.i += 2
			continue
		}
		w.i++
		if !decode {
			return "", true
		}
		var k string
		if json.Unmarshal(w.data[start:w.i], &k) != nil {
			return "", false
		}
		return k, true
	}
	return "", false
}

// value walks one value that should fit t (nil: anything).
func (w *walker) value(t reflect.Type, where string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		t = nil
	}
	w.space()
	if w.i >= len(w.data) {
		return nil
	}
	switch w.data[w.i] {
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			fields = map[string]reflect.Type{}
			for f := range t.Fields() {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "-" || !f.IsExported() {
					continue
				}
				if name == "" {
					name = f.Name
				}
				fields[strings.ToLower(name)] = f.Type
			}
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		w.i++
		for {
			w.space()
			if w.i >= len(w.data) || w.data[w.i] == '}' {
				w.i++
				return nil
			}
			if w.data[w.i] == ',' {
				w.i++
				continue
			}
			if w.data[w.i] != '"' {
				return nil // a syntax error: json.Unmarshal says where
			}
			k, ok := w.str(true)
			if !ok {
				return nil
			}
			w.space()
			if w.i >= len(w.data) || w.data[w.i] != ':' {
				return nil
			}
			w.i++
			ft, sub := elem, fmt.Sprintf("%s[%q]", where, k)
			if fields != nil {
				var known bool
				if ft, known = fields[strings.ToLower(k)]; !known {
					if where != "" {
						return fmt.Errorf("json: unknown field %q in %s", k, where)
					}
					return fmt.Errorf("json: unknown field %q", k)
				}
				sub = k
				if where != "" {
					sub = where + "." + k
				}
			}
			if err := w.value(ft, sub); err != nil {
				return err
			}
		}
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		w.i++
		for n := 0; ; {
			w.space()
			if w.i >= len(w.data) || w.data[w.i] == ']' {
				w.i++
				return nil
			}
			if w.data[w.i] == ',' {
				w.i++
				n++
				continue
			}
			start := w.i
			if err := w.value(elem, fmt.Sprintf("%s[%d]", where, n)); err != nil {
				return err
			}
			if w.i == start {
				return nil
			}
		}
	case '"':
		w.str(false)
	default:
		// A number or a literal: up to the next delimiter.
		start := w.i
		for w.i < len(w.data) && strings.IndexByte(",]} \t\r\n", w.data[w.i]) < 0 {
			w.i++
		}
		if w.i == start {
			w.i++ // a stray delimiter: move on; Unmarshal reports it
		}
	}
	return nil
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
