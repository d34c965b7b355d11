package anthropic

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/lite-agent/lite-agent/provider"
)

// Encoded messages, kept between calls.
//
// Every request carries the whole conversation, and the SDK encodes its
// parameters by reflection: at two thousand turns, encoding the history
// took most of a turn, and a turn grew from 3 ms to 20 ms and more. The
// history does not change from one call to the next (the kernel sends the
// same messages again, and only the newest carries the moving cache
// breakpoint), so each message's encoding is kept, by a hash of its
// content, and sent again as it is (param.Override). A message is hashed
// on every call — a pass over its bytes, far cheaper than encoding them —
// so that a message changed in place is never sent with a stale encoding.

// encodedCache maps a message's content hash to its encoding.
type encodedCache struct {
	mu    sync.Mutex
	seeds [2]maphash.Seed
	gen   uint64
	m     map[[2]uint64]encoded
	// encodes counts the messages encoded (not found here), for tests.
	encodes int
}

type encoded struct {
	raw json.RawMessage
	gen uint64 // the call that last used it
}

// keepCalls is how many calls an unused encoding survives: enough for
// a subagent's calls on the same Model between two calls of its parent.
const keepCalls = 64

func newEncodedCache() *encodedCache {
	return &encodedCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, m: map[[2]uint64]encoded{}}
}

// begin starts a call and returns its generation.
func (c *encodedCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	return c.gen
}

// end drops the encodings no call has used for keepCalls calls.
func (c *encodedCache) end(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen <= keepCalls {
		return
	}
	for k, e := range c.m {
		if e.gen < gen-keepCalls {
			delete(c.m, k)
		}
	}
}

func (c *encodedCache) get(key [2]uint64, gen uint64) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if ok {
		e.gen = gen
		c.m[key] = e
	}
	return e.raw, ok
}

func (c *encodedCache) put(key [2]uint64, raw json.RawMessage, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.encodes++
	c.m[key] = encoded{raw: raw, gen: gen}
}

// key is a 128-bit hash of everything in m that its encoding depends on:
// the message is laid out in buf (reused), then hashed twice.
func (c *encodedCache) key(m *provider.Message, buf *[]byte) [2]uint64 {
	b := append((*buf)[:0], m.Role...)
	b = appendBlocks(b, m.Content)
	*buf = b
	return [2]uint64{maphash.Bytes(c.seeds[0], b), maphash.Bytes(c.seeds[1], b)}
}

// appendBlocks lays out blocks, every field of provider.Block, each with
// its length so that no two different blocks give the same bytes
// (TestMessageKeyCoversEveryField keeps this list whole).
func appendBlocks(b []byte, blocks []provider.Block) []byte {
	n := func(v int) { b = binary.LittleEndian.AppendUint64(b, uint64(v)) }
	s := func(v string) { n(len(v)); b = append(b, v...) }
	raw := func(v []byte) { n(len(v)); b = append(b, v...) }
	n(len(blocks))
	for i := range blocks {
		x := &blocks[i]
		s(string(x.Type))
		s(x.Text)
		s(x.MIMEType)
		raw(x.Data)
		s(x.ID)
		s(x.Name)
		raw(x.Input)
		s(x.ToolUseID)
		b = appendBlocks(b, x.Content)
		if x.IsError {
			n(1)
		} else {
			n(0)
		}
		s(x.Signature)
		raw(x.Raw)
	}
	return b
}

// messagesSlot stands for the messages while the rest of a request is
// encoded: a JSON string no text can contain unescaped (NUL is always
// escaped inside a string, and its quotes are bare).
var messagesSlot = []byte(`"\u0000lite-agent-messages:` + fmt.Sprintf("%x", maphash.Bytes(maphash.MakeSeed(), nil)) + `"`)

// requestBody encodes p — whose messages' encodings are raws — as the
// request body: the SDK encodes everything but the messages, and the
// messages are joined in from raws as they are, instead of the SDK
// re-reading (compacting) each of them on every call. It returns p with
// the messages left out, for the SDK's own use of the parameters.
func requestBody(p sdk.MessageNewParams, raws [][]byte) (sdk.MessageNewParams, []byte, error) {
	p.Messages = []sdk.MessageParam{param.Override[sdk.MessageParam](json.RawMessage(messagesSlot))}
	head, err := p.MarshalJSON()
	if err != nil {
		return p, nil, err
	}
	at := bytes.Index(head, messagesSlot)
	if at < 0 {
		return p, nil, fmt.Errorf("the messages' place is missing from the encoded request")
	}
	size := len(head) + len(raws)
	for _, r := range raws {
		size += len(r)
	}
	body := make([]byte, 0, size)
	body = append(body, head[:at]...)
	for i, r := range raws {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, r...)
	}
	body = append(body, head[at+len(messagesSlot):]...)
	p.Messages = nil
	return p, body, nil
}
