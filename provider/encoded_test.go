package provider

import (
	"reflect"
	"testing"
)

// Every field of Block is part of a message's key: two messages that
// differ only in it are never taken for one another.
func TestMessageKeyCoversEveryField(t *testing.T) {
	c := NewEncodedMessages()
	var buf []byte
	key := func(m Message) MessageKey {
		k, _, _ := c.Get(&m, 1, &buf)
		return k
	}
	k0 := key(Message{Role: RoleUser, Content: []Block{{}}})
	bt := reflect.TypeFor[Block]()
	for i := range bt.NumField() {
		f := bt.Field(i)
		m := Message{Role: RoleUser, Content: []Block{{}}}
		v := reflect.ValueOf(&m.Content[0]).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				v.SetBytes([]byte("x"))
			} else {
				v.Set(reflect.ValueOf([]Block{{Text: "x"}}))
			}
		default:
			t.Fatalf("Block.%s is a %v: add it to appendBlocks and here", f.Name, v.Kind())
		}
		if key(m) == k0 {
			t.Errorf("Block.%s is not part of a message's key (appendBlocks)", f.Name)
		}
	}
	if key(Message{Role: RoleAssistant, Content: []Block{{}}}) == k0 {
		t.Error("the role is not part of a message's key")
	}
	// Lengths separate the fields: moving a byte from one to the next
	// changes the key.
	if key(Message{Content: []Block{{Text: "ab", ID: "c"}}}) == key(Message{Content: []Block{{Text: "a", ID: "bc"}}}) {
		t.Error("fields run into one another in the key")
	}
}

// Encodings kept are found again by content, and dropped once no call has
// used them for a while.
func TestEncodedMessagesKeepAndDrop(t *testing.T) {
	c := NewEncodedMessages()
	var buf []byte
	m := Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}}
	gen := c.Begin()
	k, _, ok := c.Get(&m, gen, &buf)
	if ok {
		t.Fatal("found before it was kept")
	}
	c.Put(k, []byte(`{"x":1}`), gen)
	c.End(gen)
	same := Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}}
	if _, raw, ok := c.Get(&same, c.Begin(), &buf); !ok || string(raw) != `{"x":1}` {
		t.Fatalf("an equal message was not found: %q %v", raw, ok)
	}
	for range keepCalls + 2 {
		c.End(c.Begin())
	}
	if _, _, ok := c.Get(&m, c.Begin(), &buf); ok {
		t.Error("an encoding unused for many calls was kept")
	}
}

func TestJoinBody(t *testing.T) {
	head := append(append([]byte(`{"model":"m","messages":[`), MessagesSlot...), []byte(`],"stream":true}`)...)
	body, err := JoinBody(head, [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)})
	if err != nil || string(body) != `{"model":"m","messages":[{"a":1},{"b":2}],"stream":true}` {
		t.Fatalf("%s %v", body, err)
	}
	if _, err := JoinBody([]byte(`{}`), nil); err == nil {
		t.Error("a head without the slot was accepted")
	}
}
