package builtin

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names in tool output.
//
// A Linux file name is any bytes but '/' and NUL. Listed as they are, a
// name with a newline reads as two entries, and a byte that is not UTF-8
// becomes U+FFFD when the result is encoded as JSON for the model, so two
// names can look alike and neither can be named back. glob and list_dir
// therefore show such a name component as a double-quoted Go string
// literal ("line\nbreak.txt", "\xff.dat"), and every file tool reads a
// path component written that way (unquotePath) as the name it stands
// for, so that what a listing shows can be given back as it is.
//
// A component is quoted when it is not valid UTF-8, contains a control
// character (C0, DEL, C1) or a line or paragraph separator, or starts
// with a double quote — the last so that a name that itself looks quoted
// ("\"x\"") is never taken for the quoted form of another.

// needsQuoting reports whether the name component c is shown quoted.
func needsQuoting(c string) bool {
	if strings.HasPrefix(c, `"`) || !utf8.ValidString(c) {
		return true
	}
	for _, r := range c {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}

// quoteName is the name component c as a listing shows it.
func quoteName(c string) string {
	if needsQuoting(c) {
		return strconv.Quote(c)
	}
	return c
}

// quotePath is the slash-separated path p as a listing shows it: each
// component that needs it quoted on its own ("src/\"\\xff.dat\"" for a
// name 0xff ".dat" in src).
func quotePath(p string) string {
	if !strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r >= 0x7f || r == '"' }) {
		return p // the common case, without splitting
	}
	parts := strings.Split(p, "/")
	for i, c := range parts {
		parts[i] = quoteName(c)
	}
	return strings.Join(parts, "/")
}

// unquotePath is the path a model wrote, with quoted components (as
// quotePath writes them) turned back into the names they stand for. A
// whole path written as one literal ("\"src/a\\nb\"") is accepted too. A
// component in quotes that is not a valid literal is taken as it is.
func unquotePath(p string) string {
	if !strings.Contains(p, `"`) {
		return p
	}
	if isQuoted(p) {
		if s, err := strconv.Unquote(p); err == nil {
			return s
		}
	}
	parts := strings.Split(p, "/")
	for i, c := range parts {
		if isQuoted(c) {
			if s, err := strconv.Unquote(c); err == nil && !strings.Contains(s, "/") {
				parts[i] = s
			}
		}
	}
	return strings.Join(parts, "/")
}

func isQuoted(s string) bool { return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' }
