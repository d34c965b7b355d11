package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func answerSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"type": "object",
	  "properties": {"answer": {"type": "string"}, "confidence": {"type": "integer", "default": 3}},
	  "required": ["answer"]}`), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// TestStructuredOutput: the final answer is checked against the schema;
// the model is told what is wrong and asked again, a bounded number of
// times.
func TestStructuredOutput(t *testing.T) {
	cases := []struct {
		name       string
		turns      string
		retries    int
		subtype    string
		structured string
		told       []string // what the corrections told the model
	}{
		{"valid at once, in a code fence", `{"text": "` + "```json\\n{\\\"answer\\\": \\\"yes\\\"}\\n```" + `"}`, 0,
			SubtypeSuccess, `{"answer":"yes","confidence":3}`, nil},
		{"invalid, then corrected", `{"text": "Sure! The answer is yes."}, {"text": "{\"answer\": 42}"}, {"text": "{\"answer\": \"yes\", \"confidence\": 5}"}`, 0,
			SubtypeSuccess, `{"answer":"yes","confidence":5}`, []string{"not valid JSON", "field answer"}},
		{"invalid until the retries are spent", `{"text": "yes"}, {"text": "{}"}`, 1,
			SubtypeErrorStructuredOutput, "", []string{"not valid JSON"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			m := &recordingModel{Model: script(t, `{"turns": [`+c.turns+`, {"text": "unreached"}]}`)}
			o := e.opts(m)
			o.SystemPrompt = "Be brief."
			o.OutputFormat = &OutputFormat{Schema: answerSchema(t), MaxRetries: c.retries}
			stops := 0
			o.Hooks = []Hook{{Event: HookStop, Func: hookFunc(func(*HookInput) (*HookOutput, error) { stops++; return nil, nil })}}
			evs, err := collect(t, context.Background(), o)
			res := evs[len(evs)-1]
			if res.Result.Subtype != c.subtype || string(res.Result.StructuredOutput) != c.structured {
				t.Fatalf("result %s %s (%v)", res.Result.Subtype, res.Result.StructuredOutput, err)
			}
			if c.subtype == SubtypeSuccess {
				if err != nil || stops != 1 {
					t.Errorf("err %v, Stop hooks %d", err, stops)
				}
				b, _ := json.Marshal(res)
				if !strings.Contains(string(b), `"structured_output":`+c.structured) {
					t.Errorf("result JSON %s", b)
				}
			} else if !errors.Is(err, ErrStructuredOutput) || !strings.Contains(res.Result.Error, "(answers given: 2): the answer does not match the schema: required: missing properties: [\"answer\"]") || stops != 0 {
				t.Errorf("err %v, result error %q, Stop hooks %d", err, res.Result.Error, stops)
			}
			reqs := m.requests("")
			if len(reqs) != len(c.told)+1 || !strings.HasPrefix(reqs[0].System, "Be brief.\n\n") || !strings.Contains(reqs[0].System, `"required": [`) {
				t.Fatalf("%d requests; system prompt %q", len(reqs), reqs[0].System)
			}
			for i, want := range c.told {
				msgs := reqs[i+1].Messages
				if got := msgs[len(msgs)-1].Text(); !strings.Contains(got, want) || !strings.Contains(got, "Answer again") {
					t.Errorf("correction %d: %q, want it to say %q", i+1, got, want)
				}
			}
			// Each correction is a user turn in the transcript.
			tr, _ := ReadTranscript(filepath.Join(e.state, "sessions", evs[0].SessionID+".jsonl"))
			if got := userTurns(tr.Messages); got != len(c.told)+1 {
				t.Errorf("%d user turns in the transcript, want %d", got, len(c.told)+1)
			}
		})
	}
}

func TestOutputFormatMustDescribeAnObject(t *testing.T) {
	e := newEnv(t)
	o := e.opts(script(t, `{"turns": [{"text": "[]"}]}`))
	o.OutputFormat = &OutputFormat{Schema: &jsonschema.Schema{Type: "array"}}
	if _, err := collect(t, context.Background(), o); err == nil || !strings.Contains(err.Error(), `must describe a JSON object`) {
		t.Errorf("err = %v", err)
	}
}
