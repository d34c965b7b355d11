package kernel

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/lite-agent/lite-agent/provider"
)

// Large tool inputs on their way to the transcript and the event stream.
//
// A tool input can be many megabytes (a write_file of a whole generated
// file). json.Marshal would copy it into its encoder's buffer, which grows
// by doubling and is then kept in encoding/json's pool, and return one
// more copy: three or four times the input, for each of the transcript
// record and the two events that carry it. Instead, an input from
// spliceMin bytes up is stood in for by a short placeholder while the
// record or event around it is encoded, and is written from its own bytes
// in the placeholder's place (splicer).
//
// The bytes written are the input's JSON text as the model sent it: valid
// JSON (storable and rawOrString see to that), compacted first only when
// it spans lines, which would break a JSONL line. Unlike json.Marshal,
// they are not HTML-escaped ("<" stays "<"): the same value to any
// reader of JSON.

// spliceMin is the size from which an input is written from its own bytes.
const spliceMin = 64 << 10

// spliceNonce makes the placeholders of this process unguessable, so that
// no text a model sends can be taken for one.
var spliceNonce = func() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// splicer collects the large inputs of one record or event.
type splicer struct {
	raws []json.RawMessage
}

// hold returns raw, or a placeholder for it when it is large. raw must be
// valid JSON.
func (s *splicer) hold(raw json.RawMessage) json.RawMessage {
	if len(raw) < spliceMin {
		return raw
	}
	s.raws = append(s.raws, raw)
	return s.placeholder(len(s.raws) - 1)
}

func (s *splicer) placeholder(i int) json.RawMessage {
	// A JSON string json.Marshal writes back as it is (\u0000 stays an
	// escape), and that no JSON text of a model can contain unescaped.
	return json.RawMessage(fmt.Sprintf(`"\u0000splice:%s:%d"`, spliceNonce, i))
}

// message returns m with its large tool_use inputs held, sharing
// everything else; m itself is not changed.
func (s *splicer) message(m *provider.Message) *provider.Message {
	var c *provider.Message
	for i, b := range m.Content {
		if b.Type != provider.BlockToolUse || len(b.Input) < spliceMin || !json.Valid(b.Input) {
			continue
		}
		if c == nil {
			c = &provider.Message{Role: m.Role, Content: append([]provider.Block(nil), m.Content...)}
		}
		c.Content[i].Input = s.hold(b.Input)
	}
	if c == nil {
		return m
	}
	return c
}

// write writes encoded (an encoding of what held the inputs) to w with
// each placeholder replaced by its input.
func (s *splicer) write(w io.Writer, encoded []byte) error {
	rest := encoded
	for i, raw := range s.raws {
		ph := s.placeholder(i)
		at := bytes.Index(rest, ph)
		if at < 0 {
			return fmt.Errorf("kernel: encoding a large input: its placeholder is missing")
		}
		if _, err := w.Write(rest[:at]); err != nil {
			return err
		}
		if bytes.ContainsAny(raw, "\r\n") {
			var buf bytes.Buffer
			if err := json.Compact(&buf, raw); err != nil {
				return err
			}
			raw = buf.Bytes()
		}
		if _, err := w.Write(raw); err != nil {
			return err
		}
		rest = rest[at+len(ph):]
	}
	_, err := w.Write(rest)
	return err
}
