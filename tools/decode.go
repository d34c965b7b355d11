package tools

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// decodeInput decodes a call's input as json.Unmarshal into an any does —
// the same value, the same error — but builds each string of the top-level
// object with one allocation. encoding/json unescapes a string into a
// buffer and then copies it into the string: for a 50 MB write_file
// content with line breaks, 100 MB at once, on top of the input itself.
// Nested objects and arrays, and anything not plainly valid, are left to
// json.Unmarshal.
func decodeInput(b []byte) (any, error) {
	var v any
	if !json.Valid(b) {
		err := json.Unmarshal(b, &v)
		return nil, err
	}
	i := skipSpace(b, 0)
	if b[i] != '{' {
		err := json.Unmarshal(b, &v)
		return v, err
	}
	obj := map[string]any{}
	i++
	for {
		i = skipSpace(b, i)
		switch b[i] {
		case '}':
			return obj, nil
		case ',':
			i++
			continue
		}
		end := stringEnd(b, i)
		key, ok := unquoteJSON(b[i:end])
		if !ok {
			err := json.Unmarshal(b, &v)
			return v, err
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // ':'
		var x any
		switch c := b[i]; {
		case c == '"':
			end = stringEnd(b, i)
			s, ok := unquoteJSON(b[i:end])
			if !ok {
				err := json.Unmarshal(b, &v)
				return v, err
			}
			x = s
		case c == '{' || c == '[':
			end = compositeEnd(b, i)
			if err := json.Unmarshal(b[i:end], &x); err != nil {
				err = json.Unmarshal(b, &v)
				return v, err
			}
		case c == 't':
			x, end = true, i+4
		case c == 'f':
			x, end = false, i+5
		case c == 'n':
			x, end = nil, i+4
		default: // a number
			end = i
			for end < len(b) && bytes.IndexByte([]byte("+-.0123456789eE"), b[end]) >= 0 {
				end++
			}
			f, err := strconv.ParseFloat(string(b[i:end]), 64)
			if err != nil {
				err := json.Unmarshal(b, &v) // its error for a number out of range
				return v, err
			}
			x = f
		}
		obj[key] = x
		i = end
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd is the index just past the string that starts at b[i] (valid
// JSON).
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); {
		j := bytes.IndexAny(b[i:], `"\`)
		if j < 0 {
			return len(b)
		}
		i += j
		if b[i] == '\\' {
			i += 2
			continue
		}
		return i + 1
	}
	return len(b)
}

// compositeEnd is the index just past the object or array that starts at
// b[i] (valid JSON).
func compositeEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return len(b)
}

// unquoteJSON is encoding/json's unquote (decode.go, BSD licence, the Go
// authors) with one change: the unescaped bytes become the string without
// a second copy.
func unquoteJSON(s []byte) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	s = s[1 : len(s)-1]
	r := 0
	for r < len(s) {
		c := s[r]
		if c == '\\' || c == '"' || c < ' ' {
			break
		}
		rr, size := utf8.DecodeRune(s[r:])
		if rr == utf8.RuneError && size == 1 {
			break
		}
		r += size
	}
	if r == len(s) {
		return string(s), true
	}
	b := make([]byte, len(s)+2*utf8.UTFMax)
	w := copy(b, s[0:r])
	for r < len(s) {
		if w >= len(b)-2*utf8.UTFMax {
			nb := make([]byte, (len(b)+utf8.UTFMax)*2)
			copy(nb, b[0:w])
			b = nb
		}
		switch c := s[r]; {
		case c == '\\':
			r++
			if r >= len(s) {
				return "", false
			}
			switch s[r] {
			default:
				return "", false
			case '"', '\\', '/', '\'':
				b[w] = s[r]
				r++
				w++
			case 'b':
				b[w] = '\b'
				r++
				w++
			case 'f':
				b[w] = '\f'
				r++
				w++
			case 'n':
				b[w] = '\n'
				r++
				w++
			case 'r':
				b[w] = '\r'
				r++
				w++
			case 't':
				b[w] = '\t'
				r++
				w++
			case 'u':
				r--
				rr := getu4(s[r:])
				if rr < 0 {
					return "", false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						r += 6
						w += utf8.EncodeRune(b[w:], dec)
						break
					}
					rr = unicode.ReplacementChar
				}
				w += utf8.EncodeRune(b[w:], rr)
			}
		case c == '"', c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			b[w] = c
			r++
			w++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			w += utf8.EncodeRune(b[w:], rr)
		}
	}
	// b is not used again: the string takes its bytes.
	return unsafe.String(unsafe.SliceData(b), w), true
}

func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
