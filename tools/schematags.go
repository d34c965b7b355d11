package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema tags.
//
// jsonschema-go infers types, required fields (no omitempty) and
// descriptions (`jsonschema:"..."`), and reserves "WORD=" in its own tag.
// The constraints a zod schema states on one line get one struct tag each
// here, read after inference and written into the inferred schema — so
// the schema is still derived from the Go type and cannot drift from it:
//
//	zod                                    Go field tag
//	z.string().describe('Search keywords')  jsonschema:"Search keywords"
//	z.string().optional()                  json:"name,omitempty"
//	z.number().default(5)                  json:"n,omitempty" default:"5"
//	z.enum(['docs', 'tickets'])            enum:"docs,tickets"
//	z.number().int().min(1).max(10)        (an int field) min:"1" max:"10"
//	z.string().min(1).max(64)              (a string field) min:"1" max:"64"
//	z.array(...).min(1)                    (a slice field) min:"1"
//	z.string().regex(/^O-\d+$/)            pattern:"^O-\d+$"
//
// min and max mean what they mean in zod for the field's type: bounds of
// a number, lengths of a string, item counts of a slice. A default makes
// the field optional (as zod's .default does) and is applied before the
// handler runs; enum values and defaults are read as JSON for non-string
// fields ("5", "true") and literally for strings. A tag that does not fit
// the field (min on a bool, a default the enum excludes, a pattern that
// does not compile) is an error from New naming the field.
//
// Unknown keys: the inferred schema of a struct has additionalProperties
// false, so input with a key the struct does not have is refused with an
// error naming the key, before the handler runs (the model is told and
// can retry). Use a map field, or InputSchema, to accept open input.

// schemaTags are the tags read, in the order they are applied.
var schemaTags = []string{"default", "enum", "min", "max", "pattern"}

// applySchemaTags writes the schema tags of struct type t (and of the
// structs it contains) into s, the schema inferred for it.
func applySchemaTags(t reflect.Type, s *jsonschema.Schema) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if s.Items != nil {
			return applySchemaTags(t.Elem(), s.Items)
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := jsonName(f)
		if name == "-" {
			continue
		}
		if f.Anonymous && f.Tag.Get("json") == "" {
			// Promoted fields are properties of s itself.
			if err := applySchemaTags(f.Type, s); err != nil {
				return err
			}
			continue
		}
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		if err := applyFieldTags(f, ps); err != nil {
			return fmt.Errorf("field %s (%q): %w", f.Name, name, err)
		}
		if _, ok := f.Tag.Lookup("default"); ok {
			// A field with a default may be omitted, as with zod's .default.
			s.Required = removeString(s.Required, name)
		}
		if err := applySchemaTags(f.Type, ps); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return nil
}

// applyFieldTags applies one field's tags to its property schema.
func applyFieldTags(f reflect.StructField, ps *jsonschema.Schema) error {
	ft := f.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	isString := ft.Kind() == reflect.String
	value := func(tag, text string) (any, error) {
		if isString {
			return text, nil
		}
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return nil, fmt.Errorf("%s %q is not a JSON value for a %v field", tag, text, ft)
		}
		// The value must fit the Go field, or the handler could not get it.
		if err := json.Unmarshal([]byte(text), reflect.New(ft).Interface()); err != nil {
			return nil, fmt.Errorf("%s %q does not fit the %v field: %v", tag, text, ft, err)
		}
		return v, nil
	}
	for _, tag := range schemaTags {
		text, ok := f.Tag.Lookup(tag)
		if !ok {
			continue
		}
		switch tag {
		case "default":
			v, err := value(tag, text)
			if err != nil {
				return err
			}
			raw, _ := json.Marshal(v)
			ps.Default = raw
		case "enum":
			if text == "" {
				return fmt.Errorf("enum is empty")
			}
			ps.Enum = nil
			for _, e := range strings.Split(text, ",") {
				v, err := value(tag, e)
				if err != nil {
					return err
				}
				ps.Enum = append(ps.Enum, v)
			}
		case "min", "max":
			if err := applyBound(tag, text, ft, ps); err != nil {
				return err
			}
		case "pattern":
			if !isString {
				return fmt.Errorf("pattern applies to strings, not %v", ft)
			}
			if _, err := regexp.Compile(text); err != nil {
				return fmt.Errorf("pattern %q: %v", text, err)
			}
			ps.Pattern = text
		}
	}
	return nil
}

// applyBound reads min or max as zod does for the field's type.
func applyBound(tag, text string, ft reflect.Type, ps *jsonschema.Schema) error {
	switch ft.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("%s %q is not a number", tag, text)
		}
		if tag == "min" {
			ps.Minimum = &n
		} else {
			ps.Maximum = &n
		}
	case reflect.String, reflect.Slice, reflect.Array:
		n, err := strconv.Atoi(text)
		if err != nil || n < 0 {
			return fmt.Errorf("%s %q: a length is a non-negative integer", tag, text)
		}
		switch {
		case ft.Kind() == reflect.String && tag == "min":
			ps.MinLength = &n
		case ft.Kind() == reflect.String:
			ps.MaxLength = &n
		case tag == "min":
			ps.MinItems = &n
		default:
			ps.MaxItems = &n
		}
	default:
		return fmt.Errorf("%s applies to numbers, strings and slices, not %v", tag, ft)
	}
	return nil
}

// jsonName is the property name encoding/json (and jsonschema-go) gives f.
func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if tag == "-" {
		return "-"
	}
	if name == "" {
		return f.Name
	}
	return name
}

func removeString(xs []string, x string) []string {
	out := xs[:0:0]
	for _, s := range xs {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}
