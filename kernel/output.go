package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/tools"
)

// outputCheck holds Options.OutputFormat, compiled.
//
// The schema is checked the way tool input is (tools.NewRaw's validation,
// with the same messages naming the field, and defaults applied), so it
// must describe a JSON object — as the structured-output modes of model
// APIs require too.
type outputCheck struct {
	schema    []byte
	validator *tools.Tool
	retries   int
}

// outputToolName names the validator in its messages, which are cut off.
const outputToolName = "final_answer"

func newOutputCheck(f *OutputFormat) (*outputCheck, error) {
	if f == nil {
		return nil, nil
	}
	if f.Schema == nil {
		return nil, errors.New("kernel: OutputFormat.Schema is nil")
	}
	if f.Schema.Type != "object" {
		return nil, fmt.Errorf("kernel: OutputFormat.Schema must describe a JSON object (\"type\": \"object\"), not %q", f.Schema.Type)
	}
	v, err := tools.NewRaw(outputToolName, "validates the final answer", f.Schema,
		func(*tools.Context, json.RawMessage) (*tools.Result, error) {
			return nil, errors.New("the output schema's validator is not a tool to call")
		}, nil)
	if err != nil {
		return nil, fmt.Errorf("kernel: OutputFormat.Schema: %w", err)
	}
	schema, err := json.MarshalIndent(f.Schema, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("kernel: OutputFormat.Schema: %w", err)
	}
	c := &outputCheck{schema: schema, validator: v, retries: f.MaxRetries}
	switch {
	case c.retries == 0:
		c.retries = DefaultOutputRetries
	case c.retries < 0:
		c.retries = 0
	}
	return c, nil
}

// instruct adds what the model must do to the system prompt.
func (c *outputCheck) instruct(system string) string {
	return strings.TrimSpace(system + "\n\nYour final answer (the message in which you call no tool) must be a single JSON object that matches this JSON Schema, with nothing before or after it:\n" + string(c.schema))
}

// check parses and validates a final answer. It returns the answer as
// compact JSON with the schema's defaults applied, or what is wrong with
// it, in words for the model. A Markdown code fence around the JSON is
// tolerated.
func (c *outputCheck) check(text string) (json.RawMessage, string) {
	body := unfence(strings.TrimSpace(text))
	if body == "" {
		return nil, "the answer is empty, and it must be a JSON object"
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return nil, fmt.Sprintf("the answer is not valid JSON (%v)", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Sprintf("the answer is JSON but not an object (%.40s), and it must be a JSON object", body)
	}
	prepared, bad := c.validator.PrepareInput(json.RawMessage(body))
	if bad != nil {
		why := strings.TrimPrefix(bad.TextOf(), "invalid input for "+outputToolName+": ")
		return nil, "the answer does not match the schema: " + why
	}
	var out bytes.Buffer
	if err := json.Compact(&out, prepared); err != nil {
		return nil, fmt.Sprintf("the answer is not valid JSON (%v)", err)
	}
	return out.Bytes(), ""
}

// unfence removes a Markdown code fence (```json ... ```) around s.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(s, "```"), "```")
	if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(inner[:nl], "{[\"") {
		inner = inner[nl+1:] // the info string ("json")
	}
	return strings.TrimSpace(inner)
}

// correction is the message that tells the model what was wrong with its
// final answer and asks again.
func correction(problem string) provider.Message {
	return provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText,
		Text: "Your final answer does not have the required format: " + problem + ". Answer again with only a JSON object that matches the JSON Schema in the system prompt."}}}
}
