package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The command menu: while the input is a single word that starts with
// "/", the commands it begins are listed under the input with what each
// does. ↑/↓ choose, Tab completes the chosen one (Enter too, when what is
// typed is not a command yet: a half-typed command never runs by
// accident); Enter on a whole command runs it, as typed.

// menuRows bounds the commands the menu shows at once.
const menuRows = 8

// menuMatches are the commands beginning with the input, when it is one
// "/" word; nil otherwise.
func (m *chatModel) menuMatches() []string {
	v := m.input.Value()
	if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \t\n") {
		return nil
	}
	var out []string
	for n := range slashCommands {
		if strings.HasPrefix(n, v) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// menuChoice is the command the menu's cursor is on.
func (m *chatModel) menuChoice(matches []string) string {
	if m.menuFor != m.input.Value() {
		// The input changed since the cursor moved: the first match.
		m.menuAt, m.menuFor = 0, m.input.Value()
	}
	return matches[min(m.menuAt, len(matches)-1)]
}

// commandMenu is the menu's rows, "" when it is closed.
func (m *chatModel) commandMenu() string {
	matches := m.menuMatches()
	if len(matches) == 0 {
		return ""
	}
	chosen := m.menuChoice(matches)
	at := slices.Index(matches, chosen)
	from := max(0, min(at-menuRows/2, len(matches)-menuRows))
	var rows []string
	for i := from; i < len(matches) && i < from+menuRows; i++ {
		cur := "  "
		if i == at {
			cur = "› "
		}
		// One row each, cut with "…": the menu is a list to choose from;
		// /help shows the whole text.
		row := ansi.Truncate(fmt.Sprintf("%s%-13s %s", cur, matches[i], slashCommands[matches[i]]), m.width, "…")
		if i != at {
			row = styleDim(row)
		}
		rows = append(rows, row)
	}
	if n := len(matches); n > menuRows {
		rows = append(rows, styleDim(fmt.Sprintf("  (%d commands; ↑/↓ for more)", n)))
	}
	rows = append(rows, styleDim(ansi.Truncate("  Tab completes · ↑/↓ choose · Enter runs a whole command", m.width, "…")))
	return strings.Join(rows, "\n")
}

// menuKey handles a key while the menu is open; false leaves it to the
// input.
func (m *chatModel) menuKey(key string) bool {
	matches := m.menuMatches()
	if len(matches) == 0 {
		return false
	}
	chosen := m.menuChoice(matches)
	at := slices.Index(matches, chosen)
	switch key {
	case "up":
		m.menuAt = (at + len(matches) - 1) % len(matches)
	case "down":
		m.menuAt = (at + 1) % len(matches)
	case "tab":
		m.input.SetValue(chosen + " ")
		m.input.CursorEnd()
	case "enter":
		if _, whole := slashCommands[m.input.Value()]; whole {
			return false // sent as typed
		}
		m.input.SetValue(chosen + " ")
		m.input.CursorEnd()
	default:
		return false
	}
	return true
}
