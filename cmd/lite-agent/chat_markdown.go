package main

import (
	"regexp"
	"strings"

	"github.com/charmbracelet/glamour"
	"github.com/muesli/termenv"

	"github.com/lite-agent/lite-agent/internal/termsafe"
)

// sgrRE matches the colour and style sequences (SGR) a Markdown renderer
// writes: the only escape sequences its output may hold.
var sgrRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// renderMarkdown renders a finished assistant message for the terminal.
// The text is escaped first (termsafe.Text), so a raw escape in it never
// reaches the renderer; but Markdown makes characters too — an HTML
// character reference such as &#x1b; decodes to ESC, &#x202e; to a bidi
// override — so the output is checked as well: anything in it but SGR
// sequences, newlines and tabs that termsafe would escape makes the
// message shown as escaped plain text instead. profile Ascii (NO_COLOR)
// shows the plain text: Markdown source reads well as it is.
func renderMarkdown(text string, width int, profile termenv.Profile) string {
	plain := termsafe.Text(strings.TrimRight(text, "\n"))
	if profile == termenv.Ascii || strings.TrimSpace(plain) == "" {
		return plain
	}
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle("dark"), glamour.WithWordWrap(max(20, width-4)), glamour.WithColorProfile(profile))
	if err != nil {
		return plain
	}
	out, err := r.Render(plain)
	if err != nil || !onlyStyling(out) {
		return plain
	}
	return strings.Trim(out, "\n")
}

// onlyStyling reports whether s holds nothing a terminal acts on but SGR
// sequences, newlines and tabs.
func onlyStyling(s string) bool {
	rest := sgrRE.ReplaceAllString(s, "")
	return termsafe.Safe(strings.NewReplacer("\n", "", "\t", "").Replace(rest))
}
