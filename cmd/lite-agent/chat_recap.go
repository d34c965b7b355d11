package main

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/lite-agent/lite-agent/internal/termsafe"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/provider"
)

// recapMessages bounds the earlier conversation shown when a session is
// continued or resumed: the last this many messages, the rest counted.
const recapMessages = 40

// recap is the earlier conversation of the session being continued or
// resumed, as the screen showed it (the person's prompts, the agent's
// text, one line per tool call and whether it failed), so that
// --continue and --resume do not open on an empty screen. Nil when there
// is no session or no transcript to read (the session then starts as
// usual, and its first query says what is wrong with the transcript).
func (m *chatModel) recap() tea.Cmd {
	if m.app.sessionID == "" {
		return nil
	}
	path, err := kernel.SessionPath(m.app.stateDir, m.app.sessionID)
	if err != nil {
		return nil
	}
	t, err := kernel.ReadTranscript(path)
	if err != nil {
		return m.say(styleErr("(the earlier conversation cannot be shown: " + field(err.Error(), 200) + ")"))
	}
	return m.say(recapText(t.Messages, m.width))
}

// recapText renders msgs (the last recapMessages of them) for the screen.
func recapText(msgs []provider.Message, width int) string {
	var b strings.Builder
	if n := len(msgs) - recapMessages; n > 0 {
		fmt.Fprintf(&b, "%s\n", styleDim(fmt.Sprintf("(%d earlier messages not shown)", n)))
		msgs = msgs[n:]
	}
	failed := map[string]bool{}
	for _, msg := range msgs {
		for _, blk := range msg.Content {
			if blk.Type == provider.BlockToolResult && blk.IsError {
				failed[blk.ToolUseID] = true
			}
		}
	}
	for _, msg := range msgs {
		for _, blk := range msg.Content {
			switch {
			case msg.Role == provider.RoleUser && blk.Type == provider.BlockText:
				b.WriteString(styleUser("> "+strings.ReplaceAll(termsafe.Text(blk.Text), "\n", "\n  ")) + "\n")
			case msg.Role == provider.RoleAssistant && blk.Type == provider.BlockText && strings.TrimSpace(blk.Text) != "":
				b.WriteString(renderMarkdown(blk.Text, width, lipgloss.ColorProfile()) + "\n")
			case blk.Type == provider.BlockToolUse:
				line := "  " + callSummary(blk.Name, blk.Input)
				if failed[blk.ID] {
					line += " " + styleErr("✗")
				}
				b.WriteString(styleDim(line) + "\n")
			}
		}
	}
	b.WriteString(styleDim("── earlier conversation above ──"))
	return b.String()
}
