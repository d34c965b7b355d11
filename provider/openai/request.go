package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/lite-agent/lite-agent/provider"
)

// params maps a provider.Request to the SDK's request parameters, and
// returns the encoding of its messages beside them: each conversation
// message (and the system prompt) is encoded once and then sent as those
// bytes while its content stays the same (provider.EncodedMessages).
func (m *Model) params(req *provider.Request) (p sdk.ChatCompletionNewParams, raws [][]byte, err error) {
	if req == nil {
		return p, nil, errors.New("openai: nil Request")
	}
	if req.Model == "" {
		return p, nil, errors.New("openai: Request.Model is empty")
	}
	p.Model = req.Model
	// Without include_usage the stream carries no token counts at all.
	p.StreamOptions.IncludeUsage = sdk.Bool(true)
	limit := m.opts.MaxTokens
	if req.MaxTokens > 0 {
		limit = req.MaxTokens
	}
	if limit > 0 {
		if m.opts.TokenLimitField == FieldMaxCompletionTokens {
			p.MaxCompletionTokens = sdk.Int(int64(limit))
		} else {
			p.MaxTokens = sdk.Int(int64(limit))
		}
	}
	for i, t := range req.Tools {
		tp, err := toolParam(t)
		if err != nil {
			return p, nil, fmt.Errorf("openai: tools[%d]: %w", i, err)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionToolUnionParam{OfFunction: tp})
	}
	gen := m.encoded.Begin()
	defer m.encoded.End(gen)
	var keyBuf []byte
	// add appends msg's SDK messages (one message can become several:
	// tool results are messages of their own), encoded once.
	add := func(msg *provider.Message, convert func() ([]sdk.ChatCompletionMessageParamUnion, error)) error {
		key, raw, ok := m.encoded.Get(msg, gen, &keyBuf)
		if !ok {
			msgs, err := convert()
			if err != nil {
				return err
			}
			var b []byte
			for j, mp := range msgs {
				enc, err := mp.MarshalJSON()
				if err != nil {
					return err
				}
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, enc...)
			}
			raw = b
			m.encoded.Put(key, raw, gen)
		}
		if len(raw) > 0 {
			raws = append(raws, raw)
		}
		return nil
	}
	if req.System != "" {
		sys := provider.Message{Role: "system", Content: []provider.Block{{Type: provider.BlockText, Text: req.System}}}
		if err := add(&sys, func() ([]sdk.ChatCompletionMessageParamUnion, error) {
			return []sdk.ChatCompletionMessageParamUnion{sdk.SystemMessage(req.System)}, nil
		}); err != nil {
			return p, nil, fmt.Errorf("openai: system: %w", err)
		}
	}
	for i := range req.Messages {
		msg := &req.Messages[i]
		err := add(msg, func() ([]sdk.ChatCompletionMessageParamUnion, error) {
			switch msg.Role {
			case provider.RoleUser:
				return userMessages(msg.Content)
			case provider.RoleAssistant:
				return assistantMessage(msg.Content)
			}
			return nil, fmt.Errorf("unknown role %q", msg.Role)
		})
		if err != nil {
			return p, nil, fmt.Errorf("openai: messages[%d]: %w", i, err)
		}
	}
	return p, raws, nil
}

// requestBody encodes p, whose messages' encodings are raws, as the
// request body: the SDK encodes everything but the messages, which are
// joined in as they are (provider.JoinBody). p is returned without
// messages, for the SDK's own use of the parameters.
func requestBody(p sdk.ChatCompletionNewParams, raws [][]byte) (sdk.ChatCompletionNewParams, []byte, error) {
	p.Messages = []sdk.ChatCompletionMessageParamUnion{param.Override[sdk.ChatCompletionMessageParamUnion](json.RawMessage(provider.MessagesSlot))}
	head, err := p.MarshalJSON()
	if err != nil {
		return p, nil, err
	}
	body, err := provider.JoinBody(head, raws)
	p.Messages = nil
	return p, body, err
}

// toolParam makes a function tool whose parameters are the tool's JSON
// schema.
func toolParam(t provider.ToolSpec) (*sdk.ChatCompletionFunctionToolParam, error) {
	if t.Name == "" {
		return nil, errors.New("tool has no name")
	}
	schema := bytes.TrimSpace(t.InputSchema)
	if len(schema) == 0 {
		schema = []byte(`{"type":"object","properties":{}}`)
	}
	// The SDK types parameters as a map. Its values are kept as raw JSON so
	// that they are sent back byte for byte: decoding them would turn large
	// integers into floats, and the SDK encodes a json.Number as a string.
	var fields map[string]json.RawMessage
	if !isJSONObject(schema) || json.Unmarshal(schema, &fields) != nil {
		return nil, fmt.Errorf("tool %q: input schema is not a JSON object", t.Name)
	}
	params := make(shared.FunctionParameters, len(fields))
	for k, v := range fields {
		params[k] = v
	}
	fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
	if t.Description != "" {
		fn.Description = sdk.String(t.Description)
	}
	return &sdk.ChatCompletionFunctionToolParam{Function: fn}, nil
}

// userMessages maps one provider user message, which may hold tool results
// as well as the user's own content, to API messages: a role "tool" message
// per tool_result, first, since they must directly follow the assistant
// message that made the calls, then a user message with the rest, if any.
func userMessages(blocks []provider.Block) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	var texts []string
	var parts []sdk.ChatCompletionContentPartUnionParam
	hasImage := false
	for j, b := range blocks {
		switch b.Type {
		case provider.BlockToolResult:
			text, err := toolResultText(b)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", j, err)
			}
			out = append(out, sdk.ToolMessage(text, b.ToolUseID))
		case provider.BlockText:
			if b.Text == "" {
				continue
			}
			texts = append(texts, b.Text)
			parts = append(parts, sdk.TextContentPart(b.Text))
		case provider.BlockImage:
			u, err := dataURL(b)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", j, err)
			}
			hasImage = true
			parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: u}))
		default:
			return nil, fmt.Errorf("content[%d]: block type %q cannot be in a user message", j, b.Type)
		}
	}
	switch {
	case hasImage:
		out = append(out, sdk.UserMessage(parts))
	case len(texts) > 0:
		// Text alone goes as a plain string: some servers' chat templates
		// handle only that form.
		out = append(out, sdk.UserMessage(strings.Join(texts, "\n\n")))
	}
	return out, nil
}

// toolResultText flattens a tool result to the text a tool message carries.
// The API has no is_error flag, so an error result says so in its text; it
// cannot carry images either, so each is named in their place.
func toolResultText(b provider.Block) (string, error) {
	var texts []string
	for k, c := range b.Content {
		switch c.Type {
		case provider.BlockText:
			texts = append(texts, c.Text)
		case provider.BlockImage:
			mime := c.MIMEType
			if mime == "" {
				mime = http.DetectContentType(c.Data)
			}
			texts = append(texts, fmt.Sprintf("[%s image of %d bytes omitted: tool results here can carry only text]", mime, len(c.Data)))
		default:
			return "", fmt.Errorf("content[%d]: block type %q cannot be in a tool_result", k, c.Type)
		}
	}
	text := strings.Join(texts, "\n")
	if b.IsError && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(text)), "error") {
		text = "Error: " + text
	}
	return text, nil
}

// assistantMessage maps an assistant turn: its text joined, and its tool
// calls with their arguments as text.
func assistantMessage(blocks []provider.Block) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var a sdk.ChatCompletionAssistantMessageParam
	var texts []string
	for j, b := range blocks {
		switch b.Type {
		case provider.BlockText:
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case provider.BlockToolUse:
			// Input is the model's raw text and may not be a JSON object.
			// Some servers parse the arguments of past calls to render their
			// chat template and fail on anything else, and the kernel has
			// already told the model about its bad arguments in the result,
			// so such input is sent as {}.
			args := bytes.TrimSpace(b.Input)
			if !isJSONObject(args) {
				args = []byte("{}")
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       b.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: string(args)},
				},
			})
		case provider.BlockThinking, provider.BlockRedactedThinking:
			// Another API's signed thinking (a session resumed with a
			// different provider): it means nothing here and is left out.
		default:
			return nil, fmt.Errorf("content[%d]: block type %q cannot be in an assistant message", j, b.Type)
		}
	}
	// Content may be left out only when there are tool calls.
	if len(texts) > 0 || len(a.ToolCalls) == 0 {
		a.Content.OfString = sdk.String(strings.Join(texts, "\n\n"))
	}
	return []sdk.ChatCompletionMessageParamUnion{{OfAssistant: &a}}, nil
}

// dataURL encodes an image block as a data: URL, the form image_url takes
// for inline images.
func dataURL(b provider.Block) (string, error) {
	mime := b.MIMEType
	if mime == "" {
		mime = http.DetectContentType(b.Data)
	}
	if !strings.HasPrefix(mime, "image/") {
		return "", fmt.Errorf("image block: MIME type %q is not an image type", mime)
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b.Data), nil
}

// isJSONObject reports whether b is one valid JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}
