package tools

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strings"
)

// Decoding once.
//
// Validation decodes a call's input into a map (Prepare); a typed handler
// then needs it as its struct. Decoding the JSON a second time would copy
// every string once more — a 50 MB write_file content twice over, with
// encoding/json's unescaping buffer. When the struct is flat (its fields
// strings, numbers and booleans, matched by their JSON names) it is
// filled from the map instead, sharing its strings. Anything less simple
// — a nested type, a custom decoder, a value that would not convert
// exactly as encoding/json converts it — goes through json.Unmarshal as
// before, so the handler sees the same value either way.

// flatField is one field of a flat struct: where it is and its JSON name.
type flatField struct {
	index int
	name  string
	kind  reflect.Kind
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumber      = reflect.TypeFor[json.Number]()
)

// flatFields returns the fields of t by JSON name, if t is a flat struct.
func flatFields(t reflect.Type) (map[string]flatField, bool) {
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil, false
	}
	fields := map[string]flatField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, false
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",") // `json:"-,"` names the field "-"
		if strings.Contains(opts, "string") {
			return nil, false
		}
		if name == "" {
			name = f.Name
		}
		if f.Type == jsonNumber || reflect.PointerTo(f.Type).Implements(jsonUnmarshaler) || reflect.PointerTo(f.Type).Implements(textUnmarshaler) {
			return nil, false
		}
		switch k := f.Type.Kind(); k {
		case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if _, dup := fields[name]; dup {
				return nil, false
			}
			fields[name] = flatField{index: i, name: name, kind: k}
		default:
			return nil, false
		}
	}
	return fields, true
}

// assignFlat fills v from obj as json.Unmarshal of obj's encoding would,
// and reports false (v then half-filled, to be discarded) when it cannot
// be sure of that: a key that names a field only up to case, a value of
// another type, a number that does not fit the field exactly.
func assignFlat(v reflect.Value, fields map[string]flatField, obj map[string]any) bool {
	for k, x := range obj {
		f, ok := fields[k]
		if !ok {
			for name := range fields {
				if strings.EqualFold(name, k) {
					return false // encoding/json's folding rules: leave it to it
				}
			}
			continue // an unknown member: ignored, as json.Unmarshal does
		}
		if x == nil {
			continue // null leaves the zero value
		}
		fv := v.Field(f.index)
		switch f.kind {
		case reflect.String:
			s, ok := x.(string)
			if !ok {
				return false
			}
			fv.SetString(s)
		case reflect.Bool:
			b, ok := x.(bool)
			if !ok {
				return false
			}
			fv.SetBool(b)
		case reflect.Float32, reflect.Float64:
			n, ok := x.(float64)
			if !ok || fv.OverflowFloat(n) {
				return false
			}
			fv.SetFloat(n)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			// Beyond 2^53 a float64 is not the integer the JSON wrote.
			n, ok := x.(float64)
			if !ok || n != math.Trunc(n) || n <= -(1<<53) || n >= 1<<53 || fv.OverflowInt(int64(n)) {
				return false
			}
			fv.SetInt(int64(n))
		default: // unsigned
			n, ok := x.(float64)
			if !ok || n != math.Trunc(n) || n < 0 || n >= 1<<53 || fv.OverflowUint(uint64(n)) {
				return false
			}
			fv.SetUint(uint64(n))
		}
	}
	return true
}
