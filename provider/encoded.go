package provider

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"sync"
)

// EncodedMessages keeps the wire encoding of the messages a Model has
// sent, by content, between its calls.
//
// Every request to a hosted model carries the whole conversation, and the
// vendors' SDKs encode their parameters by reflection: over a long session
// encoding the history on every call took most of a turn, and a turn grew
// with the conversation (3 ms at the start, 20–35 ms at 2,000 turns). The
// history does not change from one call to the next, so a provider keeps
// each message's encoding here and sends those bytes again (JoinBody). A
// message is looked up by a 128-bit hash of its content, computed on every
// call — a pass over its bytes, far cheaper than encoding them — so that a
// message changed in place is never sent with a stale encoding.
//
// It is safe for concurrent use; encodings no call has used for 64 calls
// are dropped.
type EncodedMessages struct {
	mu    sync.Mutex
	seeds [2]maphash.Seed
	gen   uint64
	m     map[MessageKey]encodedMessage
	// encodes counts the encodings added, for tests.
	encodes int
}

// MessageKey identifies a message's content.
type MessageKey [2]uint64

type encodedMessage struct {
	raw []byte
	gen uint64 // the call that last used it
}

// keepCalls is how many calls an unused encoding survives: enough for a
// subagent's calls on the same Model between two calls of its parent.
const keepCalls = 64

// NewEncodedMessages returns an empty cache.
func NewEncodedMessages() *EncodedMessages {
	return &EncodedMessages{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, m: map[MessageKey]encodedMessage{}}
}

// Begin starts encoding one request; pass what it returns to Get, Put
// and End.
func (c *EncodedMessages) Begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	return c.gen
}

// End drops the encodings that no call has used for a while.
func (c *EncodedMessages) End(gen uint64) {
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

// Get returns m's key and its encoding, if one was Put. buf is scratch
// space the caller keeps across the messages of a request.
func (c *EncodedMessages) Get(m *Message, gen uint64, buf *[]byte) (MessageKey, []byte, bool) {
	b := append((*buf)[:0], m.Role...)
	b = appendBlocks(b, m.Content)
	*buf = b
	key := MessageKey{maphash.Bytes(c.seeds[0], b), maphash.Bytes(c.seeds[1], b)}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if ok {
		e.gen = gen
		c.m[key] = e
	}
	return key, e.raw, ok
}

// Put keeps raw as the encoding of the message of key.
func (c *EncodedMessages) Put(key MessageKey, raw []byte, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.encodes++
	c.m[key] = encodedMessage{raw: raw, gen: gen}
}

// Encodes is how many encodings were Put: a test's count of the messages
// encoded rather than found.
func (c *EncodedMessages) Encodes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.encodes
}

// appendBlocks lays out blocks, every field of Block, each with its length
// so that no two different blocks give the same bytes
// (TestMessageKeyCoversEveryField keeps this list whole).
func appendBlocks(b []byte, blocks []Block) []byte {
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

// MessagesSlot stands for a request's messages while the rest of it is
// encoded (JoinBody): a JSON string that no text encodes to, since inside
// a JSON string a NUL is always escaped and a quote always is too.
var MessagesSlot = []byte(fmt.Sprintf(`"\u0000lite-agent-messages:%x"`, maphash.Bytes(maphash.MakeSeed(), nil)))

// JoinBody makes a request body from head — the request encoded with a
// messages list that holds only MessagesSlot — and the messages'
// encodings, joined in the slot's place as they are.
func JoinBody(head []byte, raws [][]byte) ([]byte, error) {
	at := bytes.Index(head, MessagesSlot)
	if at < 0 {
		return nil, fmt.Errorf("the messages' place is missing from the encoded request")
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
	return append(body, head[at+len(MessagesSlot):]...), nil
}
