package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStructuredOutputThroughTheCLI: --output-schema makes the final answer
// JSON checked against the schema: valid at once; wrong, then corrected
// after the model is told why; wrong until the retries are spent.
func TestStructuredOutputThroughTheCLI(t *testing.T) {
	schema := filepath.Join(t.TempDir(), "schema.json")
	writeFile(t, schema, `{"type": "object", "properties": {"files": {"type": "integer"}, "summary": {"type": "string"}}, "required": ["files", "summary"]}`)
	cases := []struct {
		name, turns string
		code        int
		subtype     string
		structured  string   // structured_output as fmt prints the decoded value
		told        []string // what the corrections told the model, in order
	}{
		{"valid", `{"text": "{\"files\": 2, \"summary\": \"two files\"}"}`,
			0, "success", "map[files:2 summary:two files]", nil},
		{"invalid then corrected", `{"text": "There are two files."}, {"text": "{\"files\": \"two\", \"summary\": \"s\"}"}, {"text": "{\"files\": 2, \"summary\": \"fixed\"}"}`,
			0, "success", "map[files:2 summary:fixed]", []string{"not valid JSON", "field files"}},
		{"invalid until exhausted", `{"text": "two"}, {"text": "{\"files\": 2}"}, {"text": "[]"}`,
			1, "error_structured_output", "<nil>", []string{"not valid JSON", "missing properties"}},
		// (The third answer's problem is the run's error: "not an object".)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			script := filepath.Join(t.TempDir(), "s.json")
			writeFile(t, script, `{"turns": [`+c.turns+`, {"text": "unreached"}]}`)
			evs, code, stderr := runAgent(t, ws, state, "--script", script, "--output-schema", schema, "count the files")
			if code != c.code {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			last := evs[len(evs)-1]
			answers := strings.Count(c.turns, `"text"`)
			if last["subtype"] != c.subtype || fmt.Sprint(last["structured_output"]) != c.structured || last["num_turns"] != float64(answers) {
				t.Errorf("result: %v", last)
			}
			if c.code != 0 && !strings.Contains(stderr, fmt.Sprintf("answers given: %d): the answer is JSON but not an object", answers)) {
				t.Errorf("stderr: %s", stderr)
			}
			// Each wrong answer was followed by a correction that told the
			// model what was wrong; the transcript has them in order.
			tr, err := os.ReadFile(filepath.Join(state, "sessions", evs[0]["session_id"].(string)+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			rest := string(tr)
			for _, want := range c.told {
				i := strings.Index(rest, "does not have the required format: ")
				if i < 0 || !strings.HasPrefix(rest[i:], "does not have the required format: the answer") || !strings.Contains(rest[i:i+200], want) {
					t.Fatalf("no correction saying %q in the rest of the transcript: %.400s", want, rest)
				}
				rest = rest[i+1:]
			}
			if strings.Contains(rest, "does not have the required format: ") {
				t.Errorf("more corrections than %d", len(c.told))
			}
		})
	}
}
