package checkpoint

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// File names are bytes. Linux allows any byte but '/' and NUL in a name,
// and a name need not be valid UTF-8 — but a JSON string is text:
// encoding/json turns every invalid byte into U+FFFD, so "a\xff" and
// "a\xfe" would both be logged as "a\uFFFD", one pre-image would be lost
// and a rewind would create a third name that never existed. The log
// therefore keeps every name (paths, symlink targets) in a form that
// round-trips byte for byte:
//
//   - a valid UTF-8 name is a JSON string, as in format version 1, so the
//     log stays readable and old logs load unchanged;
//   - any other name is an object {"b64": "<standard base64 of the bytes>"}.
//
// The two forms are different JSON types, so no name can be mistaken for
// another. A reader of format version 1 would reject the object form,
// which is why logs are written as version 2.

// exactName is a name the log stores byte-exact.
type exactName string

type nameBytes struct {
	B64 *string `json:"b64"`
}

func (n exactName) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(n)) {
		return json.Marshal(string(n))
	}
	b := base64.StdEncoding.EncodeToString([]byte(n))
	return json.Marshal(nameBytes{B64: &b})
}

func (n *exactName) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '{' {
		var o nameBytes
		if err := json.Unmarshal(data, &o); err != nil {
			return err
		}
		if o.B64 == nil {
			return errors.New(`a name object without "b64"`)
		}
		raw, err := base64.StdEncoding.DecodeString(*o.B64)
		if err != nil {
			return errors.New("a name in base64 that does not decode: " + err.Error())
		}
		*n = exactName(raw)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*n = exactName(s)
	return nil
}

// MarshalJSON writes the path of an ignored path byte-exact (see
// exactName): IgnoredPath is part of the session log, and JSON output of
// it must not merge two names either.
func (p IgnoredPath) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Path   exactName `json:"path"`
		Reason string    `json:"why"`
	}{exactName(p.Path), p.Reason})
}

func (p *IgnoredPath) UnmarshalJSON(data []byte) error {
	var v struct {
		Path   exactName `json:"path"`
		Reason string    `json:"why"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	p.Path, p.Reason = string(v.Path), v.Reason
	return nil
}

// The public types that carry a path encode it the same way, so that JSON
// output (`lite-agent checkpoints --json`, the checkpoint events of
// stream-json) never merges two names either. Valid UTF-8 paths encode as
// before.

func (c FileChange) MarshalJSON() ([]byte, error) {
	type plain FileChange
	return json.Marshal(struct {
		Path exactName `json:"path"`
		plain
	}{exactName(c.Path), plain(c)})
}

func (c *FileChange) UnmarshalJSON(data []byte) error {
	type plain FileChange
	v := struct {
		Path exactName `json:"path"`
		*plain
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	c.Path = string(v.Path)
	return nil
}

func (c ExternalChange) MarshalJSON() ([]byte, error) {
	type plain ExternalChange
	return json.Marshal(struct {
		Path exactName `json:"path"`
		plain
	}{exactName(c.Path), plain(c)})
}

func (c *ExternalChange) UnmarshalJSON(data []byte) error {
	type plain ExternalChange
	v := struct {
		Path exactName `json:"path"`
		*plain
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	c.Path = string(v.Path)
	return nil
}

func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change
	return json.Marshal(struct {
		Path exactName `json:"path"`
		plain
	}{exactName(c.Path), plain(c)})
}

func (c *Change) UnmarshalJSON(data []byte) error {
	type plain Change
	v := struct {
		Path exactName `json:"path"`
		*plain
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	c.Path = string(v.Path)
	return nil
}

func (c Conflict) MarshalJSON() ([]byte, error) {
	type plain Conflict
	return json.Marshal(struct {
		Path exactName `json:"path"`
		plain
	}{exactName(c.Path), plain(c)})
}

func (c *Conflict) UnmarshalJSON(data []byte) error {
	type plain Conflict
	v := struct {
		Path exactName `json:"path"`
		*plain
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	c.Path = string(v.Path)
	return nil
}
