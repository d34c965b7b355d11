package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

// searchIn is the second seed's inputSchema, line for line:
//
//	query: z.string().describe('Search keywords'),
//	maxResults: z.number().int().min(1).max(10).optional().describe(...),
//	source: z.enum(['docs', 'tickets', 'wiki']).default('docs').describe(...),
//
// plus the rest of the seed's table (.default(5), string lengths, regex).
type searchIn struct {
	Query      string   `json:"query" jsonschema:"Search keywords" min:"1" max:"200"`
	MaxResults int      `json:"maxResults,omitempty" min:"1" max:"10" jsonschema:"Maximum number of snippets to return"`
	Source     string   `json:"source,omitempty" enum:"docs,tickets,wiki" default:"docs" jsonschema:"Where to search"`
	Limit      int      `json:"limit,omitempty" default:"5"`
	OrderID    string   `json:"orderId,omitempty" pattern:"^O-[0-9]+$"`
	Tags       []string `json:"tags,omitempty" max:"3"`
	Exact      *bool    `json:"exact,omitempty" default:"false"`
}

func TestSchemaTagsAgainstTheValidator(t *testing.T) {
	var got searchIn
	tool := Must(New("search_tagged", "search", func(_ *Context, in searchIn) (string, error) { got = in; return "ok", nil }, nil))

	// Defaults are applied before the handler runs.
	if r := tool.Call(nil, json.RawMessage(`{"query": "refund"}`)); r.IsError {
		t.Fatalf("valid input refused: %s", r.TextOf())
	}
	if got.Source != "docs" || got.Limit != 5 || got.MaxResults != 0 || got.Exact == nil || *got.Exact {
		t.Errorf("defaults not applied: %+v", got)
	}
	// Each constraint refuses what it should, naming the field, and the
	// handler does not run.
	bad := []struct{ input, field string }{
		{`{"query": "x", "maxResults": 0}`, "maxResults"},
		{`{"query": "x", "maxResults": 11}`, "maxResults"},
		{`{"query": "x", "maxResults": 2.5}`, "maxResults"},
		{`{"query": "x", "source": "email"}`, "source"},
		{`{"query": ""}`, "query"},
		{`{"query": "` + strings.Repeat("a", 201) + `"}`, "query"},
		{`{"query": "x", "orderId": "1001"}`, "orderId"},
		{`{"query": "x", "tags": ["a", "b", "c", "d"]}`, "tags"},
		{`{}`, "query"},
		{`{"query": "x", "colour": "red"}`, "colour"}, // unknown keys are refused
	}
	for _, b := range bad {
		got = searchIn{}
		r := tool.Call(nil, json.RawMessage(b.input))
		if !r.IsError || !strings.Contains(r.TextOf(), b.field) {
			t.Errorf("%s: %v %q, want an error naming %s", b.input, r.IsError, r.TextOf(), b.field)
		}
		if got.Query != "" {
			t.Errorf("%s: the handler ran", b.input)
		}
	}
	if r := tool.Call(nil, json.RawMessage(`{"query": "x", "maxResults": 10, "source": "wiki", "orderId": "O-1001"}`)); r.IsError {
		t.Errorf("valid input refused: %s", r.TextOf())
	}
	// The schema the model sees carries the constraints.
	schema := string(tool.InputSchemaJSON())
	for _, want := range []string{`"default":"docs"`, `"enum":["docs","tickets","wiki"]`, `"minimum":1`, `"maximum":10`, `"pattern":"^O-[0-9]+$"`, `"maxItems":3`, `"minLength":1`} {
		if !strings.Contains(schema, want) {
			t.Errorf("schema lacks %s: %s", want, schema)
		}
	}
	if strings.Contains(schema, `"required":["query","source"`) {
		t.Errorf("a field with a default is required: %s", schema)
	}
}

func TestBadSchemaTagsFailAtNew(t *testing.T) {
	type boolMin struct {
		B bool `json:"b" min:"1"`
	}
	type badDefault struct {
		N int `json:"n,omitempty" default:"five"`
	}
	type outsideEnum struct {
		S string `json:"s,omitempty" enum:"a,b" default:"c"`
	}
	type badPattern struct {
		S string `json:"s" pattern:"("`
	}
	type defaultOutOfRange struct {
		N int `json:"n,omitempty" min:"1" max:"10" default:"50"`
	}
	cases := []struct {
		err  error
		want string
	}{
		{err2(New("t_boolmin", "d", func(*Context, boolMin) (string, error) { return "", nil }, nil)), "field B"},
		{err2(New("t_baddefault", "d", func(*Context, badDefault) (string, error) { return "", nil }, nil)), `default "five"`},
		{err2(New("t_enum", "d", func(*Context, outsideEnum) (string, error) { return "", nil }, nil)), "invalid input schema"},
		{err2(New("t_pattern", "d", func(*Context, badPattern) (string, error) { return "", nil }, nil)), "pattern"},
		{err2(New("t_range", "d", func(*Context, defaultOutOfRange) (string, error) { return "", nil }, nil)), "invalid input schema"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%v, want %q", c.err, c.want)
		}
	}
}

func err2(_ *Tool, err error) error { return err }
