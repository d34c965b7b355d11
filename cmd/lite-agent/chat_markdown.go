package main

import (
	"regexp"
	"strings"

	"github.com/muesli/termenv"

	"github.com/lite-agent/lite-agent/internal/termsafe"
)

// sgrRE matches the colour and style sequences (SGR) the renderer writes:
// the only escape sequences its output may hold.
var sgrRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// The few Markdown forms a finished message is styled by. A full renderer
// (glamour) was tried and dropped: its syntax highlighter's package
// initialisation costs ~24 ms at the start of every lite-agent command,
// interactive or not, and Markdown source reads well as it is.
var (
	mdBold = regexp.MustCompile(`\*\*([^*\n]+)\*\*`)
	mdCode = regexp.MustCompile("`([^`\n]+)`")
)

const (
	sgrBold  = "\x1b[1m"
	sgrDim   = "\x1b[2m"
	sgrCyan  = "\x1b[36m"
	sgrReset = "\x1b[0m"
)

// renderMarkdown shows a finished assistant message for the terminal:
// headings and **bold** in bold, `code` and fenced code blocks in colour,
// everything else as written. The text is escaped first (termsafe.Text),
// so nothing in it can act on the terminal, and the output is checked as
// well: anything in it but SGR sequences, newlines and tabs that termsafe
// would escape makes the message shown as escaped plain text instead.
// profile Ascii (NO_COLOR) shows the plain text.
func renderMarkdown(text string, width int, profile termenv.Profile) string {
	_ = width // lines are wrapped where they are printed (chat_screen.go), at the width of that moment
	plain := termsafe.Text(strings.TrimRight(text, "\n"))
	if profile == termenv.Ascii || strings.TrimSpace(plain) == "" {
		return plain
	}
	var b strings.Builder
	inFence := false
	for i, line := range strings.Split(plain, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inFence = !inFence
			b.WriteString(sgrDim + line + sgrReset)
		case inFence:
			b.WriteString(sgrCyan + line + sgrReset)
		case strings.HasPrefix(trimmed, "#"):
			b.WriteString(sgrBold + strings.TrimSpace(strings.TrimLeft(trimmed, "#")) + sgrReset)
		default:
			line = mdBold.ReplaceAllString(line, sgrBold+"$1"+sgrReset)
			line = mdCode.ReplaceAllString(line, sgrCyan+"$1"+sgrReset)
			b.WriteString(line)
		}
	}
	out := b.String()
	if !onlyStyling(out) {
		return plain
	}
	return out
}

// onlyStyling reports whether s holds nothing a terminal acts on but SGR
// sequences, newlines and tabs.
func onlyStyling(s string) bool {
	rest := sgrRE.ReplaceAllString(s, "")
	return termsafe.Safe(strings.NewReplacer("\n", "", "\t", "").Replace(rest))
}
