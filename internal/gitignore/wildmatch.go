package gitignore

// This file is a port of git's wildmatch.c (git 2.39), the matcher behind
// every gitignore pattern, with WM_PATHNAME on and case folding off. It
// works on bytes, as git does: '?' matches one byte, not one rune, so a
// pattern means here exactly what it means to git. The abort codes are
// git's: they cut the backtracking short once a '*' can no longer help,
// which keeps the match polynomial instead of exponential.

const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarStar = -2
)

// isGlobSpecial reports the bytes that start a wildcard in git
// (sane_ctype's GIT_GLOB_SPECIAL).
func isGlobSpecial(c byte) bool {
	return c == '*' || c == '?' || c == '[' || c == '\\'
}

// simpleLength is git's simple_length: the length of the literal prefix of
// p, before the first wildcard byte.
func simpleLength(p string) int {
	for i := 0; i < len(p); i++ {
		if isGlobSpecial(p[i]) {
			return i
		}
	}
	return len(p)
}

// wildmatch reports whether text matches pattern, '/' being special ('*',
// '?' and classes never match it; only "**" between slashes crosses it).
func wildmatch(pattern, text string) bool {
	return dowild(pattern, 0, text, 0) == wmMatch
}

func dowild(p string, pi int, text string, ti int) int {
	for ; pi < len(p); pi, ti = pi+1, ti+1 {
		pch := p[pi]
		if ti >= len(text) && pch != '*' {
			return wmAbortAll
		}
		var tch byte
		if ti < len(text) {
			tch = text[ti]
		}
		switch pch {
		case '\\':
			// A literal match with the next byte; a trailing backslash
			// matches nothing (git compares with the terminating NUL).
			pi++
			if pi >= len(p) || tch != p[pi] {
				return wmNoMatch
			}
		case '?':
			if tch == '/' {
				return wmNoMatch
			}
		case '*':
			matchSlash := false
			pi++
			if pi < len(p) && p[pi] == '*' {
				prev := pi - 2 // the byte before the first '*'
				for pi < len(p) && p[pi] == '*' {
					pi++
				}
				// "**" is special only as a whole path segment.
				if (prev < 0 || p[prev] == '/') &&
					(pi == len(p) || p[pi] == '/' || (p[pi] == '\\' && pi+1 < len(p) && p[pi+1] == '/')) {
					// "x/**/y" also matches "x/y".
					if pi < len(p) && p[pi] == '/' && dowild(p, pi+1, text, ti) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				}
			}
			if pi == len(p) {
				// A trailing "**" matches everything; a trailing "*"
				// only what has no more slashes.
				if !matchSlash && indexByte(text, ti, '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			}
			if !matchSlash && p[pi] == '/' {
				// One '*' then a slash: skip to the next slash of text,
				// which the loop then matches with the pattern's.
				slash := indexByte(text, ti, '/')
				if slash < 0 {
					return wmNoMatch
				}
				ti = slash
				continue
			}
			for {
				if ti >= len(text) {
					break
				}
				if !isGlobSpecial(p[pi]) {
					// A literal follows: skip ahead to its next
					// occurrence (not past a slash unless "**").
					for ti < len(text) && (matchSlash || text[ti] != '/') && text[ti] != p[pi] {
						ti++
					}
					if ti >= len(text) || text[ti] != p[pi] {
						return wmNoMatch
					}
				}
				tch = text[ti]
				if m := dowild(p, pi, text, ti); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && tch == '/' {
					return wmAbortToStarStar
				}
				ti++
			}
			return wmAbortAll
		case '[':
			pi++
			if pi >= len(p) {
				return wmAbortAll
			}
			// "[!...]" and "[^...]" are negated classes.
			negated := p[pi] == '!' || p[pi] == '^'
			if negated {
				pi++
			}
			var prevCh byte
			matched := false
			for {
				if pi >= len(p) {
					return wmAbortAll
				}
				pc := p[pi]
				switch {
				case pc == '\\':
					pi++
					if pi >= len(p) {
						return wmAbortAll
					}
					pc = p[pi]
					if tch == pc {
						matched = true
					}
				case pc == '-' && prevCh != 0 && pi+1 < len(p) && p[pi+1] != ']':
					pi++
					pc = p[pi]
					if pc == '\\' {
						pi++
						if pi >= len(p) {
							return wmAbortAll
						}
						pc = p[pi]
					}
					if tch <= pc && tch >= prevCh {
						matched = true
					}
					pc = 0 // a range cannot start another range
				case pc == '[' && pi+1 < len(p) && p[pi+1] == ':':
					s := pi + 2
					e := s
					for e < len(p) && p[e] != ']' {
						e++
					}
					if e >= len(p) {
						return wmAbortAll
					}
					if e-s-1 < 0 || p[e-1] != ':' {
						// No ":]": an ordinary '['.
						pc = '['
						if tch == pc {
							matched = true
						}
						break
					}
					pi = e
					ok, valid := posixClass(p[s:e-1], tch)
					if !valid {
						return wmAbortAll
					}
					if ok {
						matched = true
					}
					pc = 0
				default:
					if tch == pc {
						matched = true
					}
				}
				prevCh = pc
				pi++
				if pi >= len(p) {
					return wmAbortAll
				}
				if p[pi] == ']' {
					break
				}
			}
			if matched == negated || tch == '/' {
				return wmNoMatch
			}
		default:
			if tch != pch {
				return wmNoMatch
			}
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

func indexByte(s string, from int, c byte) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// posixClass matches c against "[:name:]" as git's sane ctype does (ASCII
// only). valid is false for an unknown class name, which git treats as a
// malformed pattern that matches nothing.
func posixClass(name string, c byte) (ok, valid bool) {
	upper := c >= 'A' && c <= 'Z'
	lower := c >= 'a' && c <= 'z'
	digit := c >= '0' && c <= '9'
	print := c >= 0x20 && c <= 0x7e
	space := c == ' ' || c == '\t' || c == '\n' || c == '\r'
	alnum := upper || lower || digit
	switch name {
	case "alnum":
		return alnum, true
	case "alpha":
		return upper || lower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return print && c != ' ', true
	case "lower":
		return lower, true
	case "print":
		return print, true
	case "punct":
		return print && c != ' ' && !alnum, true
	case "space":
		return space, true
	case "upper":
		return upper, true
	case "xdigit":
		return digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'), true
	}
	return false, false
}
