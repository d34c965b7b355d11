package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/lite-agent/lite-agent/kernel"
)

// TestPrintsStayInOrder: what the screen prints from many updates reaches
// the terminal in the order the updates printed it, and the exit comes
// after the last of it. Bubble Tea runs each command in a goroutine of
// its own, so a tea.Println per update (as before) printed a tool's
// result and the model's next answer in either order.
func TestPrintsStayInOrder(t *testing.T) {
	for range 3 {
		m := newChatModel(&chatApp{stateDir: t.TempDir()}, false)
		var out bytes.Buffer
		p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(&out))
		go func() {
			for i := range 60 {
				p.Send(printMsg(fmt.Sprintf("line-%02d", i)))
			}
			p.Send(tea.KeyMsg{Type: tea.KeyCtrlD})
		}()
		if _, err := p.Run(); err != nil {
			t.Fatal(err)
		}
		got := regexp.MustCompile(`line-\d\d`).FindAllString(ansi.Strip(out.String()), -1)
		if len(got) != 60 {
			t.Fatalf("%d lines printed, want 60: %q", len(got), got)
		}
		for i, l := range got {
			if want := fmt.Sprintf("line-%02d", i); l != want {
				t.Fatalf("printed out of order: %q at %d, want %s: %q", l, i, want, got)
			}
		}
	}
}

// TestWrapText: lines are wrapped at spaces to the width, never at a
// hyphen inside a word (a flag, a path, an id), continuation rows
// indented under the text past a bullet; styled text is measured without
// its escape sequences; a word longer than the row is broken.
func TestWrapText(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"continue with: lite-agent --continue", 20, "continue with:\nlite-agent\n--continue"},
		{"  ● bash go test ./... ./more/packages", 24, "  ● bash go test ./...\n    ./more/packages"},
		{"\x1b[2mdim words that wrap\x1b[0m", 10, "\x1b[2mdim words\nthat wrap\x1b[0m"},
		{"abcdefghijklmnop", 8, "abcdefgh\nijklmnop"},
		{"fits", 4, "fits"},
		{"a\tb", 3, "a\nb"},
	} {
		got := wrapText(c.in, c.width)
		if ansi.Strip(got) != ansi.Strip(c.want) {
			t.Errorf("wrapText(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
		for _, row := range strings.Split(got, "\n") {
			if w := ansi.StringWidth(row); w > c.width {
				t.Errorf("wrapText(%q, %d): a row of %d cells: %q", c.in, c.width, w, row)
			}
		}
	}
}

// TestDiffRowsKeepTheSign: a long diff line is broken at the width (its
// end shows, where it was cut with "…"), and every row of it carries the
// line's sign.
func TestDiffRowsKeepTheSign(t *testing.T) {
	d := "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+" + strings.Repeat("n", 25) + "END\n"
	got := ansi.Strip(colorDiff(d, 10, -1, ""))
	want := "--- a/x\n+++ b/x\n@@ -1 +1 @\n@\n-old\n+nnnnnnnnn\n+nnnnnnnnn\n+nnnnnnnEN\n+D\n"
	if got != want {
		t.Errorf("colorDiff:\n%s\nwant\n%s", got, want)
	}
	cut := ansi.Strip(colorDiff(d, 10, 4, "d: all"))
	if !strings.HasSuffix(cut, "… 3 more diff line(s) (d: all)\n") || strings.Count(cut, "\n") != 4 {
		t.Errorf("cut to 4 rows:\n%s", cut)
	}
}

// TestCommandMenu: "/" lists the commands, letters filter them, ↓ moves,
// Tab completes the chosen one, Enter completes a half-typed command and
// leaves a whole one to be sent.
func TestCommandMenu(t *testing.T) {
	m := newChatModel(&chatApp{stateDir: t.TempDir()}, false)
	m.width = 80
	m.input.SetValue("/")
	if menu := m.commandMenu(); !strings.Contains(menu, "› /agents") || !strings.Contains(menu, "/checkpoints") {
		t.Errorf("the menu for /:\n%s", menu)
	}
	m.input.SetValue("/re")
	if got := m.menuMatches(); strings.Join(got, " ") != "/resume /rewind" {
		t.Errorf("matches of /re: %v", got)
	}
	m.menuKey("down")
	m.menuKey("tab")
	if v := m.input.Value(); v != "/rewind " {
		t.Errorf("after ↓ Tab the input is %q", v)
	}
	if m.commandMenu() != "" {
		t.Error("the menu stays open once the command is complete")
	}
	m.input.SetValue("/mo")
	if !m.menuKey("enter") || m.input.Value() != "/mode " {
		t.Errorf("Enter on /mo: %q", m.input.Value())
	}
	m.input.SetValue("/mode")
	if m.menuKey("enter") {
		t.Error("Enter on a whole command did not leave it to be sent")
	}
}

// TestAttachedLines: read_file's note where it stopped gives the lines
// attached and the file's; without a note, the lines are counted.
func TestAttachedLines(t *testing.T) {
	for _, c := range []struct {
		text         string
		shown, total int
	}{
		{"     1\ta\n     2\tb", 2, 2},
		{"     1\ta\n\n(Showing lines 1-2000 of 3000. To continue, call read_file with offset=2001.)", 2000, 3000},
		{"     1\ta\n\n(Output stopped after line 812 of 900 to stay under 256 KiB. To continue…)", 812, 900},
	} {
		if s, n := attachedLines(c.text); s != c.shown || n != c.total {
			t.Errorf("attachedLines(%q) = %d, %d; want %d, %d", c.text, s, n, c.shown, c.total)
		}
	}
}

// TestApprovalWholeDiff: a diff taller than the screen is cut to fit,
// saying how to see the rest; d prints it whole above the question, which
// stays open.
func TestApprovalWholeDiff(t *testing.T) {
	ws := t.TempDir()
	var content strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&content, "line %d\n", i)
	}
	in, _ := json.Marshal(map[string]any{"path": "new.txt", "content": content.String()})
	m := newChatModel(&chatApp{stateDir: t.TempDir(), f: runFlags{workspace: ws}}, false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.approval = &approvalMsg{name: "write_file", input: in, info: kernel.ToolUseInfo{Reason: "write_file changes the workspace"}, reply: make(chan kernel.PermissionResult, 1)}
	v := m.View()
	if !strings.Contains(v, "more diff line(s) (d: the whole diff, above)") || strings.Contains(v, "+line 40") {
		t.Fatalf("the diff is not cut to the screen:\n%s", v)
	}
	if m.approvalKey(keyRunes("d")) == nil || len(m.printed) == 0 {
		t.Fatal("d printed nothing")
	}
	if whole := m.printed[len(m.printed)-1](80); !strings.Contains(whole, "+line 1\n") || !strings.Contains(whole, "+line 40") {
		t.Errorf("d printed:\n%s", whole)
	}
	if m.approval == nil {
		t.Error("d closed the question")
	}
}
