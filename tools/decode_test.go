package tools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// decodeInput is json.Unmarshal into an any: the same value, and an error
// exactly when Unmarshal has one, with the same text.
func FuzzDecodeInput(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":"b"}`, ` { "path" : "x\ny\t\"q\"\\", "n": -1.5e3, "b": true, "z": null, "f": false } `,
		`{"u":"\u00e9\ud83d\ude00\ud800x","bad":"\xff\xfe"}`, `{"o":{"k":[1,{"x":"y"}]},"a":[]}`,
		`{"a":1,"a":2}`, `[1,2]`, `"s"`, `12`, `{"a":1e400}`, `{"a"}`, ``, `{"a":"b"`, "{\"c\":\"\x01\"}",
		`{"k\u0000":"v"}`, `{"e":"\/\b\f\r\'"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want any
		wantErr := json.Unmarshal(b, &want)
		got, err := decodeInput(b)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("decodeInput(%q): error %v, json.Unmarshal %v", b, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeInput(%q) = %#v, json.Unmarshal %#v", b, got, want)
		}
	})
}

// A large escaped string is decoded with one allocation of its size, not
// two (the unescaping buffer and the string).
func TestDecodeInputAllocatesOnce(t *testing.T) {
	content := strings.Repeat("a line of text\n", 1<<16) // 960 KiB
	input, _ := json.Marshal(map[string]string{"path": "f", "content": content})
	got, err := decodeInput(input)
	if err != nil || got.(map[string]any)["content"] != content {
		t.Fatal("decoded content differs")
	}
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = decodeInput(input)
		}
	})
	bytesPerRun := res.AllocedBytesPerOp()
	if bytesPerRun > int64(len(content))*11/10 {
		t.Errorf("decoding a %d-byte content allocated %d bytes, want about its size once", len(content), bytesPerRun)
	}
	var v any
	res = testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_ = json.Unmarshal(input, &v)
		}
	})
	t.Logf("decodeInput: %d bytes per decode; json.Unmarshal: %d", bytesPerRun, res.AllocedBytesPerOp())
}

type flatInput struct {
	Path    string  `json:"path"`
	Content string  `json:"content"`
	Limit   int     `json:"limit,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
	Force   bool    `json:"force,omitempty"`
	Small   uint8   `json:"small,omitempty"`
	NoTag   string  `json:",omitempty"`
	skipped string  // unexported: never filled
}

// A flat struct filled from the decoded map is what json.Unmarshal of the
// prepared JSON gives, or assignFlat declines and the JSON is decoded.
func TestAssignFlatMatchesUnmarshal(t *testing.T) {
	fields, ok := flatFields(reflect.TypeFor[flatInput]())
	if !ok {
		t.Fatal("flatInput is flat")
	}
	for _, in := range []string{
		`{"path":"a","content":"b\nc","limit":3,"ratio":0.5,"force":true,"small":7,"NoTag":"x"}`,
		`{"path":null,"limit":2.0}`, `{"limit":2.5}`, `{"small":300}`, `{"small":-1}`, `{"PATH":"folded"}`,
		`{"notag":"folded"}`, `{"unknown":1,"path":"p"}`, `{"limit":"3"}`, `{"force":1}`, `{"limit":1e300}`,
		`{"limit":9007199254740993}`, `{"skipped":"x"}`, `{"-":"dash","Hidden":"no"}`,
	} {
		obj, err := decodeInput([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		// What the handler decoded before: the map re-encoded. (An input
		// kept as sent has only plain integers, which decode alike.)
		prepared, _ := json.Marshal(obj)
		var want flatInput
		wantErr := json.Unmarshal(prepared, &want)
		var got flatInput
		if !assignFlat(reflect.ValueOf(&got).Elem(), fields, obj.(map[string]any)) {
			continue // declined: the JSON is decoded instead
		}
		if wantErr != nil || got != want || got.skipped != "" {
			t.Errorf("%s: assignFlat %+v, json.Unmarshal %+v (%v)", in, got, want, wantErr)
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[struct{ A []string }](), reflect.TypeFor[struct{ flatInput }](),
		reflect.TypeFor[struct {
			T json.Number `json:"t"`
		}](), reflect.TypeFor[struct {
			N int `json:"n,string"`
		}]()} {
		if _, ok := flatFields(typ); ok {
			t.Errorf("%v is taken as flat", typ)
		}
	}
}

// A large input is prepared once: Prepare returns the input as sent (no
// re-encoding when nothing changes), and the handler's string is the one
// validation decoded, not a copy.
func TestLargeInputDecodedOnce(t *testing.T) {
	var seen string
	tool := Must(New("w", "write", func(ctx *Context, in flatInput) (string, error) {
		seen = in.Content
		return "ok", nil
	}, nil))
	content := strings.Repeat("x\n", 1<<16)
	input, _ := json.Marshal(map[string]any{"path": "p", "content": content, "limit": 3})
	p, bad := tool.Prepare(input)
	if bad != nil {
		t.Fatal(bad.TextOf())
	}
	if &p.JSON()[0] != &input[0] {
		t.Error("a large input that needs no change was re-encoded")
	}
	if r := tool.CallPrepared(nil, p); r.IsError {
		t.Fatal(r.TextOf())
	}
	if seen != content || unsafe.StringData(seen) != unsafe.StringData(p.obj["content"].(string)) {
		t.Error("the handler got a copy of the decoded content")
	}
	// A fraction in a large input is re-encoded, so that an int field
	// takes 3.0 as encoding/json takes 3.
	frac, _ := json.Marshal(map[string]any{"path": "p", "content": content})
	frac = append(frac[:len(frac)-1], []byte(`,"limit":3.0}`)...)
	p, bad = tool.Prepare(frac)
	if bad != nil {
		t.Fatal(bad.TextOf())
	}
	if &p.JSON()[0] == &frac[0] || !strings.Contains(string(p.JSON()), `"limit":3,`) {
		t.Errorf("an input with 3.0 was not re-encoded")
	}
	if r := tool.Call(nil, frac); r.IsError {
		t.Fatal(r.TextOf())
	}
}
