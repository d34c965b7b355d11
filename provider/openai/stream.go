package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/lite-agent/lite-agent/provider"
)

// maxToolIndex bounds the tool-call index a chunk may name, so that a broken
// server cannot make us track an absurd number of calls.
const maxToolIndex = 10000

// accumulator builds the assistant message from stream chunks. Tool-call
// arguments are kept as the raw text of the fragments, unparsed, so that
// malformed JSON reaches the kernel as the model sent it.
type accumulator struct {
	text     strings.Builder
	refusal  bool
	calls    []*toolCall         // in order of first appearance
	byIndex  map[int64]*toolCall // by the index the server gave
	finish   string              // the raw finish_reason
	finished bool
	usage    provider.Usage
	chunks   int // chunks decoded
}

type toolCall struct {
	id, name string
	args     strings.Builder
}

// add applies one chunk and returns the text to stream. Only choice 0 is
// read: n is never set, so a server has no reason to send others.
func (a *accumulator) add(ch *sdk.ChatCompletionChunk) (delta string, err error) {
	a.chunks++
	if ch.JSON.Usage.Valid() {
		a.usage = usageOf(&ch.Usage)
	}
	for i := range ch.Choices {
		c := &ch.Choices[i]
		if c.Index != 0 {
			continue
		}
		d := &c.Delta
		// A refusal is text the user should see; it also sets the stop
		// reason. Reasoning fields that some servers add (reasoning_content,
		// reasoning) are not part of the answer and are skipped.
		for _, s := range []string{d.Content, d.Refusal} {
			a.text.WriteString(s)
			delta += s
		}
		if d.Refusal != "" {
			a.refusal = true
		}
		for j := range d.ToolCalls {
			if err := a.addToolCall(&d.ToolCalls[j]); err != nil {
				return "", err
			}
		}
		if c.FinishReason != "" {
			a.finish, a.finished = c.FinishReason, true
		}
	}
	return delta, nil
}

// addToolCall appends one tool-call fragment to the call it belongs to. The
// id and name come in the first fragment of a call and the arguments in
// pieces after it; the index says which call a fragment continues.
func (a *accumulator) addToolCall(tc *sdk.ChatCompletionChunkChoiceDeltaToolCall) error {
	raw := tc.JSON.Index.Raw()
	if (raw == "" || raw == "null") && tc.ID == "" && tc.Function.Name == "" && tc.Function.Arguments == "" {
		return nil // an empty fragment ([null], {}): nothing to add, nowhere to add it
	}
	var call *toolCall
	switch {
	case tc.JSON.Index.Valid():
		if tc.Index < 0 || tc.Index >= maxToolIndex {
			return fmt.Errorf("tool call index %d out of range", tc.Index)
		}
		if a.byIndex == nil {
			a.byIndex = map[int64]*toolCall{}
		}
		call = a.byIndex[tc.Index]
		if call == nil {
			call = &toolCall{}
			a.byIndex[tc.Index] = call
			a.calls = append(a.calls, call)
		}
	case raw != "" && raw != "null":
		return fmt.Errorf("tool call index %s is not an integer", raw)
	default:
		// Some servers leave the index out. Then a fragment with a new id
		// starts a call and any other continues the last one.
		n := len(a.calls)
		if n == 0 || (tc.ID != "" && a.calls[n-1].id != "" && tc.ID != a.calls[n-1].id) {
			a.calls = append(a.calls, &toolCall{})
		}
		call = a.calls[len(a.calls)-1]
	}
	if call.id == "" {
		call.id = tc.ID
	}
	// The name normally comes whole in the first fragment; append like the
	// SDKs do in case a server splits it, but not a repeat of the whole name,
	// which some servers send with every fragment.
	if n := tc.Function.Name; n != "" && n != call.name {
		call.name += n
	}
	call.args.WriteString(tc.Function.Arguments)
	return nil
}

// message returns the text, then the tool calls in the order they began.
// Empty arguments become "{}", as a call without parameters is sent that way
// by some servers.
func (a *accumulator) message() *provider.Message {
	msg := &provider.Message{Role: provider.RoleAssistant, Content: []provider.Block{}}
	if a.text.Len() > 0 {
		msg.Content = append(msg.Content, provider.Block{Type: provider.BlockText, Text: a.text.String()})
	}
	for _, c := range a.calls {
		args := c.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		msg.Content = append(msg.Content, provider.Block{
			Type: provider.BlockToolUse, ID: c.id, Name: c.name, Input: json.RawMessage(args),
		})
	}
	return msg
}

// stopReason maps finish_reason. Servers that answer "stop" to a turn with
// tool calls (several local ones do) get tool_use, which is what the turn
// is; an unknown reason is judged the same way.
func (a *accumulator) stopReason() provider.StopReason {
	switch a.finish {
	case "length":
		return provider.StopMaxTokens
	case "content_filter":
		return provider.StopRefusal
	case "tool_calls", "function_call":
		return provider.StopToolUse
	}
	switch {
	case len(a.calls) > 0:
		return provider.StopToolUse
	case a.refusal:
		return provider.StopRefusal
	}
	return provider.StopEndTurn
}

// usageOf maps the API's counts to provider.Usage, whose InputTokens are
// the uncached input as in Anthropic's API: prompt_tokens includes
// cached_tokens, so they are moved to CacheReadInputTokens and the sum is
// still prompt_tokens.
func usageOf(u *sdk.CompletionUsage) provider.Usage {
	cached := min(max(u.PromptTokensDetails.CachedTokens, 0), max(u.PromptTokens, 0))
	return provider.Usage{
		InputTokens:          max(u.PromptTokens, 0) - cached,
		OutputTokens:         u.CompletionTokens,
		CacheReadInputTokens: cached,
	}
}
