package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Options are the optional parts of a tool definition.
type Options struct {
	// Security declares what the tool touches. Built-in tools always have
	// it; the hardened assembler refuses custom tools without it.
	Security *Security
	// Annotations are MCP-style behaviour hints. ReadOnlyHint lets the
	// kernel run the tool concurrently with other read-only calls and in
	// plan mode. It is a hint, not a permission: a custom tool still needs
	// an allow rule, a mode that allows it, a hook or CanUseTool to run
	// (only lite-agent's own read-only tools run by default).
	Annotations *Annotations
	// InputSchema replaces the schema inferred from the input type. It
	// must describe a JSON object.
	InputSchema *jsonschema.Schema
	// Timeout bounds one call; zero means the kernel's default.
	Timeout time.Duration
}

// Tool is a function the model can call, with its schema, its security
// declaration and its behaviour hints. Build one with New or NewRaw; a Tool
// is immutable and safe for concurrent calls.
type Tool struct {
	name        string
	description string
	schema      *jsonschema.Schema
	schemaJSON  json.RawMessage
	resolved    *jsonschema.Resolved
	security    *Security
	annotations Annotations
	timeout     time.Duration
	// invoke runs the handler on input that has been validated against the
	// schema and had its defaults applied.
	invoke func(ctx *Context, input []byte) (*Result, error)
	// invokeDecoded, when set, runs the handler on the value that
	// validation decoded from that input (Prepared), without decoding
	// the JSON again; ok is false when the value does not fit the
	// handler's type as simply as that, and invoke must run instead.
	invokeDecoded func(ctx *Context, obj map[string]any) (r *Result, err error, ok bool)
}

// The length is checked apart: a counted repetition such as {1,128}
// compiles to that many copies (~0.6 ms at every program start).
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// New builds a typed tool. The JSON Schema of its input is inferred from In
// (a struct: `json` tags name the fields, `jsonschema` tags describe them,
// omitempty makes a field optional, and `default`, `enum`, `min`, `max`
// and `pattern` tags constrain them — see "Schema tags" in the package
// documentation) unless opts.InputSchema is given. Input
// is validated and defaults are applied before handler runs; invalid input
// becomes an error result naming the field, and handler is not called.
//
// Out may be *Result, Result, string, Content, []Content, or any value that
// marshals to JSON (returned to the model as JSON text and kept as the
// result's Structured value). A returned error becomes an error result; a
// panic is recovered into one.
func New[In, Out any](name, description string, handler func(*Context, In) (Out, error), opts *Options) (*Tool, error) {
	if handler == nil {
		return nil, fmt.Errorf("tools.New %q: nil handler", name)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	schema := o.InputSchema
	if schema == nil {
		inferred, err := jsonschema.For[In](nil)
		if err != nil {
			return nil, fmt.Errorf("tools.New %q: inferring the input schema from %v: %w", name, reflect.TypeFor[In](), err)
		}
		// default, enum, min, max, pattern tags (schematags.go).
		if err := applySchemaTags(reflect.TypeFor[In](), inferred); err != nil {
			return nil, fmt.Errorf("tools.New %q: schema tags of %v: %w", name, reflect.TypeFor[In](), err)
		}
		schema = inferred
	}
	t, err := newTool(name, description, schema, &o)
	if err != nil {
		return nil, err
	}
	t.invoke = func(ctx *Context, input []byte) (*Result, error) {
		var in In
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, fmt.Errorf("input does not fit %v: %w", reflect.TypeFor[In](), err)
		}
		out, err := handler(ctx, in)
		if err != nil {
			return nil, err
		}
		return toResult(out)
	}
	if fields, ok := flatFields(reflect.TypeFor[In]()); ok {
		t.invokeDecoded = func(ctx *Context, obj map[string]any) (*Result, error, bool) {
			var in In
			if !assignFlat(reflect.ValueOf(&in).Elem(), fields, obj) {
				return nil, nil, false
			}
			out, err := handler(ctx, in)
			if err != nil {
				return nil, err, true
			}
			r, err := toResult(out)
			return r, err, true
		}
	}
	return t, nil
}

// NewRaw builds a tool from an explicit schema and a handler that takes the
// validated input as raw JSON. It is the constructor for tools whose shape
// is only known at run time, such as tools proxied from an MCP server.
func NewRaw(name, description string, schema *jsonschema.Schema, handler func(*Context, json.RawMessage) (*Result, error), opts *Options) (*Tool, error) {
	if handler == nil {
		return nil, fmt.Errorf("tools.NewRaw %q: nil handler", name)
	}
	if schema == nil {
		return nil, fmt.Errorf("tools.NewRaw %q: missing input schema", name)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	t, err := newTool(name, description, schema, &o)
	if err != nil {
		return nil, err
	}
	t.invoke = func(ctx *Context, input []byte) (*Result, error) {
		r, err := handler(ctx, input)
		if err == nil && r == nil {
			r = &Result{}
		}
		return r, err
	}
	return t, nil
}

// Must panics if err is not nil; for tool definitions at package level.
func Must(t *Tool, err error) *Tool {
	if err != nil {
		panic(err)
	}
	return t
}

func newTool(name, description string, schema *jsonschema.Schema, o *Options) (*Tool, error) {
	if len(name) > 64 || !toolNameRE.MatchString(name) {
		return nil, fmt.Errorf("tools.New %q: a tool name is 1-64 characters of letters, digits, '_' and '-'", name)
	}
	if description == "" {
		return nil, fmt.Errorf("tools.New %q: missing description (the model uses it to decide when to call the tool)", name)
	}
	if schema.Type != "object" {
		return nil, fmt.Errorf("tools.New %q: the input schema must describe an object, not %q", name, schema.Type)
	}
	resolved, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("tools.New %q: invalid input schema: %w", name, err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("tools.New %q: encoding the input schema: %w", name, err)
	}
	t := &Tool{
		name:        name,
		description: description,
		schema:      schema,
		schemaJSON:  raw,
		resolved:    resolved,
		timeout:     o.Timeout,
	}
	if o.Security != nil {
		if err := o.Security.Validate(); err != nil {
			return nil, fmt.Errorf("tools.New %q: %w", name, err)
		}
		s := o.Security.Normalized()
		t.security = &s
	}
	if o.Annotations != nil {
		t.annotations = *o.Annotations
	}
	return t, nil
}

// Name is the name the model calls the tool by.
func (t *Tool) Name() string { return t.name }

// Description tells the model when and why to use the tool.
func (t *Tool) Description() string { return t.description }

// InputSchema returns the JSON Schema of the tool's input. Do not modify it.
func (t *Tool) InputSchema() *jsonschema.Schema { return t.schema }

// InputSchemaJSON returns the input schema encoded as JSON.
func (t *Tool) InputSchemaJSON() json.RawMessage { return t.schemaJSON }

// Security returns the tool's declared security, or nil if it declared none.
func (t *Tool) Security() *Security {
	if t.security == nil {
		return nil
	}
	s := *t.security
	return &s
}

// Annotations returns the tool's behaviour hints.
func (t *Tool) Annotations() Annotations { return t.annotations }

// ReadOnly reports whether the tool declares that it changes nothing.
func (t *Tool) ReadOnly() bool { return t.annotations.ReadOnlyHint }

// Timeout returns the tool's own per-call deadline, zero if it has none.
func (t *Tool) Timeout() time.Duration { return t.timeout }

// ErrAbandoned is wrapped by the error a Result reports when a handler did
// not return before its call was cancelled or timed out.
var ErrAbandoned = errors.New("tool call abandoned")

// Call validates input, applies defaults, and runs the handler. It always
// returns a Result: bad input, a handler error, a panic, or a handler that
// outlives its deadline all become error results the model can act on.
// ctx may be nil in tests.
func (t *Tool) Call(ctx *Context, input json.RawMessage) *Result {
	p, errResult := t.Prepare(input)
	if errResult != nil {
		return errResult
	}
	return t.CallPrepared(ctx, p)
}

// Prepared is a call's input once validated and defaulted (Prepare): the
// JSON a rule, a hook and the handler all read, and the value decoded
// from it, which CallPrepared hands to the handler without decoding the
// JSON again.
type Prepared struct {
	json json.RawMessage
	obj  map[string]any
}

// JSON is the prepared input as JSON. Do not modify it.
func (p *Prepared) JSON() json.RawMessage { return p.json }

// Prepare validates input against the tool's schema and applies its
// defaults, as Call does before the handler runs: it returns the prepared
// input, or the error result the model would see.
func (t *Tool) Prepare(input json.RawMessage) (*Prepared, *Result) {
	out, obj, res := t.prepareInput(input)
	if res != nil {
		return nil, res
	}
	return &Prepared{json: out, obj: obj}, nil
}

// CallPrepared runs the handler on input that Prepare returned, without
// validating or decoding it again: a caller that has prepared the input
// already (the kernel does, before its permission gate) saves decoding a
// large input twice more. A typed handler whose input is a struct of
// plain fields (strings, numbers, booleans) gets the strings validation
// decoded, not copies. Everything else is as in Call.
func (t *Tool) CallPrepared(ctx *Context, p *Prepared) *Result {
	if ctx == nil {
		ctx = &Context{}
	}
	prepared := p.json
	parent := ctx.Context()
	callCtx, cancel := parent, context.CancelFunc(func() {})
	if t.timeout > 0 {
		callCtx, cancel = context.WithTimeout(parent, t.timeout)
	}
	defer cancel()
	// The handler gets its own copy of the Context so that the deadline
	// above is what it sees, without changing the caller's value.
	hctx := *ctx
	hctx.Ctx = callCtx

	type outcome struct {
		r   *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				slog.Error("tool handler panicked", "tool", t.name, "panic", v, "stack", string(debug.Stack()))
				done <- outcome{err: fmt.Errorf("the %s tool crashed (panic: %v); this is a bug in the tool, not in your input", t.name, v)}
			}
		}()
		if t.invokeDecoded != nil && p.obj != nil {
			if r, err, ok := t.invokeDecoded(&hctx, p.obj); ok {
				done <- outcome{r, err}
				return
			}
		}
		r, err := t.invoke(&hctx, prepared)
		done <- outcome{r, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			return &Result{Content: []Content{TextContent(o.err.Error())}, IsError: true}
		}
		for i := range o.r.Content {
			if err := o.r.Content[i].Validate(); err != nil {
				return Errorf("the %s tool returned a malformed result: block %d: %v", t.name, i, err)
			}
		}
		return o.r
	case <-callCtx.Done():
		// A Go function cannot be stopped from outside; the handler is left
		// to notice its cancelled context. Handlers that run in the sandbox
		// child are killed instead.
		why := "was cancelled"
		if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			why = "did not finish before its deadline"
		}
		return Errorf("the %s tool %s: %v", t.name, why, ErrAbandoned)
	}
}

// PrepareInput validates input against the tool's schema and applies its
// defaults, as Call does before the handler runs: it returns the JSON the
// handler will get, or the error result the model would see. The kernel's
// permission gate decides on this input, so that a rule, a hook and the
// handler all read the same bytes.
func (t *Tool) PrepareInput(input json.RawMessage) (json.RawMessage, *Result) {
	out, _, res := t.prepareInput(input)
	return out, res
}

// prepareInput parses input, applies schema defaults and validates it. It
// returns the JSON the handler decodes (compact, keys sorted), the value
// decoded from it, or an error result that names what is wrong. A large
// input is returned as it came (not a copy) when it needs no change: no
// default was added and every number is a plain integer — re-encoding
// turns 10.0 into 10, which an int field accepts — so that a 50 MB
// write_file is not encoded once more for nothing.
func (t *Tool) prepareInput(input json.RawMessage) ([]byte, map[string]any, *Result) {
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	v, err := decodeInput(input)
	if err != nil {
		return nil, nil, Errorf("invalid input for %s: the arguments are not valid JSON (%v); send a JSON object matching the tool's input schema", t.name, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, Errorf("invalid input for %s: the arguments must be a JSON object, got %s", t.name, jsonKind(v))
	}
	keys := countKeys(obj)
	if err := t.resolved.ApplyDefaults(&obj); err != nil {
		return nil, nil, Errorf("invalid input for %s: applying defaults: %v", t.name, err)
	}
	if err := t.resolved.Validate(obj); err != nil {
		return nil, nil, Errorf("invalid input for %s: %v", t.name, cleanValidationError(err))
	}
	if len(input) >= keepAsSentMin && countKeys(obj) == keys && plainNumbers(input) {
		return input, obj, nil
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, Errorf("invalid input for %s: %v", t.name, err)
	}
	return out, obj, nil
}

// keepAsSentMin is the input size from which prepareInput returns the
// input as sent rather than re-encoded.
const keepAsSentMin = 64 << 10

// countKeys is the number of object members in v, at any depth: defaults
// only ever add members, so an unchanged count means none was added.
func countKeys(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n += len(v)
		for _, x := range v {
			n += countKeys(x)
		}
	case []any:
		for _, x := range v {
			n += countKeys(x)
		}
	}
	return n
}

// plainNumbers reports whether every number in the valid JSON text b is
// written as an integer (no fraction, no exponent), the form encoding
// gives it back: then b decodes into the handler's types exactly as its
// re-encoding would.
func plainNumbers(b []byte) bool {
	inString, inNumber := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			// Skip to the next quote or escape at once: a large input is
			// mostly strings.
			j := bytes.IndexAny(b[i:], `"\\`)
			if j < 0 {
				return true
			}
			i += j
			if b[i] == '\\' {
				i++
			} else {
				inString = false
			}
		case c == '"':
			inString, inNumber = true, false
		case c == '-' || c >= '0' && c <= '9':
			inNumber = true
		case inNumber && (c == '.' || c == 'e' || c == 'E'):
			return false
		default:
			inNumber = false
		}
	}
	return true
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// toResult converts a typed handler's output into a Result.
func toResult(out any) (*Result, error) {
	switch v := out.(type) {
	case nil:
		return &Result{}, nil
	case *Result:
		if v == nil {
			return &Result{}, nil
		}
		return v, nil
	case Result:
		return &v, nil
	case string:
		return Text(v), nil
	case Content:
		return &Result{Content: []Content{v}}, nil
	case []Content:
		return &Result{Content: v}, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding the tool's output as JSON: %w", err)
	}
	return &Result{Content: []Content{TextContent(string(b))}, Structured: out}, nil
}
