// Package termsafe makes text that an agent controls safe to show on a
// terminal.
//
// # Why
//
// A terminal interprets some bytes instead of showing them: a carriage
// return moves the cursor back over what was shown, CSI sequences (ESC [)
// erase and overwrite lines, OSC sequences (ESC ]) set the window title or,
// with OSC 52, the user's clipboard, and C1 controls (U+0080–U+009F) do the
// same as their ESC forms on terminals that honour them. Unicode format
// characters display as nothing, or reorder what follows (the bidi
// overrides U+202A–U+202E and isolates U+2066–U+2069: "Trojan Source").
// Model text, tool input and output, file names and contents, hook reasons
// and session prompts all come from the agent, so any of them could make
// the approval prompt show `ls -la` for a command that runs something else.
//
// # The rule
//
// Every character a terminal would not display as itself is replaced by a
// visible escape, and everything else is passed unchanged:
//
//   - C0 controls and DEL: \n, \r, \t by name, the others as \xNN (so ESC
//     is \x1b, BEL \x07);
//   - C1 controls, format characters (category Cf: soft hyphen, zero-width
//     space/joiners, bidi marks, embeddings, overrides and isolates, BOM,
//     invisible operators, tag characters), and the line and paragraph
//     separators U+2028/U+2029: \uXXXX, or \UXXXXXXXX above U+FFFF;
//   - bytes that are not valid UTF-8: \xNN, byte by byte.
//
// A backslash is doubled only where it could be read as the start of an
// escape: a run of backslashes followed by a letter that starts one of
// the escapes above (x, u, U, r, and for Escape also n and t), or by a
// character shown as an escape, is shown doubled; any other backslash is
// shown as itself. So the rendering is unambiguous — a run of 2k+1
// backslashes before such a letter is k backslashes and an escape, 2k is
// k backslashes and the letter — and still reads as written where no
// escape can be meant: a regular expression's \d+\.go, a shell line's
// "a\ b" or \\ pass unchanged. Without the doubling, untrusted text could
// spoof an escape: a command holding the two characters \r (harmless to
// bash) would look the same as one holding a carriage return, and a file
// named "x\x1b" like one holding an ESC.
// Combining marks and variation selectors pass: they attach to the
// character before them and cannot move the cursor.
//
// Escape is for one-line fields (it escapes \n and \t too); Text keeps
// newlines and tabs, for multi-line output such as model text and diffs;
// Writer does what Text does for a stream written in pieces. JSON is for
// JSON text (a tool call's input): its own backslashes are JSON's escapes,
// so a character to hide is written as a JSON escape instead (\u001b)
// and no backslash is doubled.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s with every control, format and invalid byte replaced by
// a visible escape, newlines and tabs included: the result is one line.
func Escape(s string) string { return escape(s, false) }

// Text returns s escaped like Escape, except that "\n" and "\t" are kept:
// the result may span lines but cannot move the cursor back or sideways,
// change the terminal's state, or hide or reorder characters.
func Text(s string) string { return escape(s, true) }

// Safe reports whether s holds nothing a terminal would interpret or
// hide: no control, format or invalid byte. (Escape may still double a
// backslash of a safe string, where it would read as an escape.)
func Safe(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafe(r) {
			return false
		}
		i += n
	}
	return true
}

// unsafe reports whether a terminal would not display r as itself.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f: // C0 and DEL
		return true
	case r < 0x7f: // printable ASCII: the common case, decided early
		return false
	case r <= 0x9f: // C1
		return true
	case r == '\u2028', r == '\u2029': // line and paragraph separators
		return true
	}
	// Cf: soft hyphen, Arabic/Syriac format marks, U+180E, U+200B–U+200F,
	// U+202A–U+202E, U+2060–U+2064, U+2066–U+206F, U+FEFF, U+FFF9–U+FFFB,
	// tag characters U+E0001, U+E0020–U+E007F, and the rest of the
	// category as the Unicode tables of this Go release define it.
	return unicode.Is(unicode.Cf, r)
}

// escapeLetter reports whether c, after a backslash, reads as the start
// of one of the escapes that escape writes: \xNN, \uXXXX, \UXXXXXXXX,
// \r, and when lines are not kept \n and \t.
func escapeLetter(c byte, keepLines bool) bool {
	switch c {
	case 'x', 'u', 'U', 'r':
		return true
	case 'n', 't':
		return !keepLines
	}
	return false
}

// shown reports whether rune r (n bytes, invalid when r is RuneError and
// n is 1) is written as itself.
func shown(r rune, n int, keepLines bool) bool {
	if r == utf8.RuneError && n == 1 {
		return false
	}
	return !unsafe(r) || keepLines && (r == '\n' || r == '\t')
}

func escape(s string, keepLines bool) string {
	// Most text needs nothing: return it without allocating.
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !shown(r, n, keepLines) || r == '\\' && i+1 < len(s) && escapeLetter(s[i+1], keepLines) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	run := 0 // backslashes read and not yet written
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == '\\' {
			run++
			i++
			continue
		}
		if run > 0 {
			// The run is written doubled when what follows would make
			// its last backslash read as an escape.
			if !shown(r, n, keepLines) || escapeLetter(s[i], keepLines) {
				run *= 2
			}
			b.WriteString(strings.Repeat(`\`, run))
			run = 0
		}
		switch {
		case r == utf8.RuneError && n == 1:
			// An invalid byte: shown as the byte, so that two different
			// invalid names never look the same (no U+FFFD collapse).
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	// A run at the end is followed by nothing that could make it an
	// escape.
	b.WriteString(strings.Repeat(`\`, run))
	return b.String()
}

// JSON returns JSON text (valid, or valid but cut short) safe to show on
// one line: a character a terminal would interpret or hide is replaced by
// its JSON escape (\u001b, \u202e; a pair of them above U+FFFF) inside a
// string, and a newline, tab or carriage return between tokens — where it
// is only spacing — by a space; an invalid byte is \xNN, which JSON never
// holds. Backslashes are left as they are: in JSON each already starts an
// escape or is escaped itself, so the text still reads, and decodes, as
// the JSON it was. (Escape would double the backslash of every \n and
// \u of the JSON's strings.)
func JSON(s string) string {
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafe(r):
			b.WriteString(s[i : i+n])
			switch {
			case escaped:
				escaped = false
			case inString && r == '\\':
				escaped = true
			case r == '"':
				inString = !inString
			}
		case !inString && (r == '\n' || r == '\t' || r == '\r'):
			b.WriteByte(' ')
		default:
			// Inside a string (where JSON allows no raw control either),
			// or stray between tokens: the JSON escape of the character.
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
			escaped = false
		}
		i += n
	}
	return b.String()
}

// Writer escapes what is written to it as Text does, for output that
// arrives in pieces (model text streamed as deltas). A UTF-8 sequence cut
// between two writes is held back until its end arrives, so that a valid
// character split across pieces is not shown as invalid bytes; Flush
// writes what is held (escaped, as it is then incomplete).
type Writer struct {
	w       io.Writer
	pending []byte // trailing backslashes, then the start of an incomplete UTF-8 sequence (< 4 bytes)
}

// NewWriter returns a Writer that writes escaped text to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it. It reports len(p) written when the
// escaped text was written in full.
func (t *Writer) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	t.pending = nil
	// Hold back a trailing incomplete sequence: at most 3 bytes, starting
	// at a lead byte, that could still become a valid rune.
	cut := len(buf)
	for k := 1; k <= 3 && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < 0x80 {
			break // ASCII: nothing incomplete at the end
		}
		if c >= 0xc0 { // a lead byte
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	// And the backslashes before it: whether they are doubled depends on
	// what comes next (escape), which the next piece holds.
	for cut > 0 && buf[cut-1] == '\\' {
		cut--
	}
	if cut < len(buf) {
		t.pending = append([]byte(nil), buf[cut:]...)
		buf = buf[:cut]
	}
	if _, err := io.WriteString(t.w, Text(string(buf))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteString is Write for a string.
func (t *Writer) WriteString(s string) (int, error) { return t.Write([]byte(s)) }

// Flush writes the bytes held back by Write, escaped.
func (t *Writer) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	p := t.pending
	t.pending = nil
	_, err := io.WriteString(t.w, Text(string(p)))
	return err
}
