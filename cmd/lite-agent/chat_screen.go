package main

import (
	"strings"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// The screen has two parts (chat.go): the scrollback, printed once above
// the program's view, and the view, drawn again at every frame. Three
// things keep both intact, at any width:
//
//   - Every line is wrapped here to the terminal's width, at word
//     boundaries, before it reaches the terminal. A printed line wider
//     than the terminal would be wrapped by the terminal instead, and
//     Bubble Tea erases the rest of a row only after a line shorter than
//     the width: the wrapped part lands on the rows of the old view and
//     leaves pieces of it behind. A view line wider than the terminal is
//     cut by the renderer.
//   - Printing is ordered. Bubble Tea runs each command in a goroutine of
//     its own, so two tea.Println returned by two updates (a tool's result,
//     then the model's answer) may print in either order. What is to be
//     printed waits in the outbox, and one batch is in flight at a time:
//     the next goes out when printedMsg says the last one was handed to
//     the renderer.
//   - A change of width redraws the screen. A terminal that narrows
//     reflows the rows already written (tmux, VTE, kitty, iTerm2 and
//     Windows Terminal do), the view's rows with them, and the renderer,
//     which moves the cursor up as many rows as it wrote to redraw the
//     view, leaves the reflowed copies behind: duplicate input and status
//     lines. So the screen is cleared and the end of the conversation is
//     printed again, wrapped at the new width, above the view.

// outItem is one entry of the outbox: text to print (render lays it out
// for a width: at the width of the moment it is printed, and again at
// the new width when a redraw prints it again), a command to run in order
// with the prints (tea.Quit after the last words), or a redraw.
type outItem struct {
	render func(width int) string
	cmd    tea.Cmd
	redraw bool
}

// printedMsg says that the batch in flight was handed to the renderer.
type printedMsg struct{}

// maxPrinted bounds the log of printed text kept to redraw the screen
// after a resize (only the end that fits the screen is printed again).
const maxPrinted = 300

// say queues text (one or more lines) for the scrollback, wrapped.
func (m *chatModel) say(text string) tea.Cmd {
	return m.sayFor(func(width int) string { return wrapText(text, width) })
}

// sayFor queues for the scrollback what render lays out for a width.
func (m *chatModel) sayFor(render func(width int) string) tea.Cmd {
	m.outbox = append(m.outbox, outItem{render: render})
	return m.pump()
}

// then queues cmd to run once everything queued before it is printed.
func (m *chatModel) then(cmd tea.Cmd) tea.Cmd {
	m.outbox = append(m.outbox, outItem{cmd: cmd})
	return m.pump()
}

// redraw queues a redraw of the screen at the current width; a redraw
// already waiting with nothing after it serves (a resize by dragging
// sends many sizes).
func (m *chatModel) redraw() tea.Cmd {
	if n := len(m.outbox); n > 0 && m.outbox[n-1].redraw {
		return nil
	}
	m.outbox = append(m.outbox, outItem{redraw: true})
	return m.pump()
}

// pump sends what waits in the outbox as one ordered batch, unless a
// batch is in flight. Text is wrapped at the width of the moment it goes
// out, and logged for a later redraw.
func (m *chatModel) pump() tea.Cmd {
	if m.printing || len(m.outbox) == 0 {
		return nil
	}
	batch := make([]tea.Cmd, 0, len(m.outbox)+1)
	for _, it := range m.outbox {
		switch {
		case it.redraw:
			batch = append(batch, tea.ClearScreen)
			if s := m.reprint(); s != "" {
				batch = append(batch, tea.Println(s))
			}
		case it.cmd != nil:
			batch = append(batch, it.cmd)
		default:
			m.printed = append(m.printed, it.render)
			if n := len(m.printed); n > maxPrinted {
				m.printed = append(m.printed[:0:0], m.printed[n-maxPrinted:]...)
			}
			batch = append(batch, tea.Println(it.render(m.width)))
		}
	}
	m.outbox = nil
	m.printing = true
	batch = append(batch, func() tea.Msg { return printedMsg{} })
	return tea.Sequence(batch...)
}

// reprint is the end of the printed log that fits above the view,
// wrapped at the current width.
func (m *chatModel) reprint() string {
	room := m.height - strings.Count(m.View(), "\n") - 1
	if m.height <= 0 {
		room = 20
	}
	var rows []string
	for i := len(m.printed) - 1; i >= 0 && len(rows) < room; i-- {
		block := strings.Split(m.printed[i](m.width), "\n")
		rows = append(block, rows...)
	}
	if len(rows) > room {
		rows = rows[len(rows)-room:]
	}
	return strings.Join(rows, "\n")
}

// wrapText wraps each line of s (which may hold SGR styling) to width
// cells at word boundaries (a word longer than the line is broken), and
// indents the continuation rows under the line's text: past its leading
// spaces, and past a leading bullet ("● ", "└ ", "> ", "│ "). Tabs become
// spaces, so that the widths counted are the widths shown.
func wrapText(s string, width int) string {
	if width <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = wrapLine(strings.ReplaceAll(l, "\t", "    "), width, "")
	}
	return strings.Join(lines, "\n")
}

// bullets are the line starts past which continuation rows are indented.
var bullets = []string{"● ", "└ ", "> ", "│ ", "✗ ", "✓ ", "- ", "* ", "? ", "⏹ "}

// wrapLine wraps one line; breakpoints are extra characters to break at
// (a space always is).
func wrapLine(l string, width int, breakpoints string) string {
	if ansi.StringWidth(l) <= width {
		return l
	}
	plain := ansi.Strip(l)
	rest := strings.TrimLeft(plain, " ")
	indent := len(plain) - len(rest)
	for _, b := range bullets {
		if strings.HasPrefix(rest, b) {
			indent += ansi.StringWidth(b)
			break
		}
	}
	if indent > width/2 {
		indent = 0
	}
	// The indent and the bullet stay on the first row; the rest is
	// wrapped to what is left of a row after them.
	prefix, l := splitCells(l, indent)
	// ansi.Wrap also breaks after every hyphen, which cuts flags, paths
	// and ids ("--", "continue"): hyphens are hidden from it as U+2011
	// (non-breaking hyphen, as wide), unless the line holds one already.
	hidden := !strings.ContainsRune(l, '\u2011')
	if hidden {
		l = strings.ReplaceAll(l, "-", "\u2011")
	}
	wrapped := ansi.Wrap(l, width-indent, breakpoints)
	if hidden {
		wrapped = strings.ReplaceAll(wrapped, "\u2011", "-")
	}
	rows := strings.Split(wrapped, "\n")
	pad := strings.Repeat(" ", indent)
	rows[0] = prefix + rows[0]
	for i := 1; i < len(rows); i++ {
		rows[i] = pad + rows[i]
	}
	return strings.Join(rows, "\n")
}

// splitCells splits l after its first n cells; escape sequences among
// them stay in the first part.
func splitCells(l string, n int) (string, string) {
	i, w := 0, 0
	for i < len(l) && w < n {
		if l[i] == '\x1b' {
			// An SGR sequence (the only kind this text holds): ESC [ … m.
			j := i + 1
			if j < len(l) && l[j] == '[' {
				j++
				for j < len(l) && (l[j] < 0x40 || l[j] > 0x7e) {
					j++
				}
				j++
			}
			i = min(j, len(l))
			continue
		}
		_, size := utf8.DecodeRuneInString(l[i:])
		w += ansi.StringWidth(l[i : i+size])
		i += size
	}
	return l[:i], l[i:]
}

// hardWrap breaks each line of s at exactly width cells, keeping every
// space (a diff's indentation is part of it): a row that fills the width
// goes on in the next row.
func hardWrap(s string, width int) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.ReplaceAll(l, "\t", "    ")
		if width <= 0 || ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		out = append(out, strings.Split(ansi.Hardwrap(l, width, true), "\n")...)
	}
	return out
}

// rowsOf is how many rows s takes on the screen (its lines wrapped).
func rowsOf(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(s, "\n") + 1
}

// lastRows is the last n rows of s.
func lastRows(s string, n int) string {
	rows := strings.Split(s, "\n")
	if len(rows) > n {
		rows = rows[len(rows)-n:]
	}
	return strings.Join(rows, "\n")
}
