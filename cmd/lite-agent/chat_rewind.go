package main

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/internal/termsafe"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/provider"
)

// /rewind in the interactive mode. A person thinks of where to go back to
// as a prompt they typed, so the picker lists the session's prompts, each
// with the files its turn changed (+added −removed lines); going back to
// one rewinds to the checkpoint taken just before it (files and
// conversation, or what /rewind files|conversation says) and puts the
// prompt back in the input, to edit and send again. c switches to the
// checkpoints themselves (every tool call's), and back.

// promptTurn is one prompt of the session, as the picker lists it.
type promptTurn struct {
	turn       int    // the user turn, from 0
	checkpoint int    // the checkpoint sealed just before it
	prompt     string // as typed (without the files @path attached)
	files      map[string][2]int
	binary     map[string]bool // changed, with no line counts
}

// sessionPrompts are the prompts of the session's conversation as it is
// now (a conversation rewind cut the later ones), with the checkpoint
// before each and the files each turn changed.
func sessionPrompts(stateDir, sessionID string) ([]promptTurn, error) {
	cps, err := checkpoint.List(stateDir, sessionID)
	if err != nil {
		return nil, err
	}
	path, err := kernel.SessionPath(stateDir, sessionID)
	if err != nil {
		return nil, err
	}
	t, err := kernel.ReadTranscript(path)
	if err != nil {
		return nil, err
	}
	// The prompts: user messages with text (tool results are user
	// messages without), the rule the checkpoint store counts turns by.
	var prompts []string
	for _, msg := range t.Messages {
		if msg.Role != provider.RoleUser {
			continue
		}
		for _, b := range msg.Content {
			if b.Type == provider.BlockText {
				text, _, _ := strings.Cut(b.Text, "\n\n<attached-file ")
				prompts = append(prompts, text)
				break
			}
		}
	}
	// The checkpoints in order: a turn's start opens it (again, after a
	// rewind cut the conversation back to it, dropping the turns after);
	// its tool calls' changes add up under it.
	var turns []promptTurn
	for _, c := range cps {
		if !c.Sealed {
			continue
		}
		switch {
		case c.Reason == checkpoint.ReasonUserTurn || c.Reason == "session_start" && len(turns) == 0:
			turn := c.UserTurn
			if c.Reason == "session_start" {
				turn = 0
			}
			for len(turns) > 0 && turns[len(turns)-1].turn >= turn {
				turns = turns[:len(turns)-1]
			}
			turns = append(turns, promptTurn{turn: turn, checkpoint: c.Number, files: map[string][2]int{}, binary: map[string]bool{}})
		case c.Reason == checkpoint.ReasonToolCall && len(turns) > 0 && turns[len(turns)-1].turn == c.UserTurn:
			last := &turns[len(turns)-1]
			for _, f := range c.Files {
				if !f.Lines {
					last.binary[f.Path] = true
					continue
				}
				n := last.files[f.Path]
				last.files[f.Path] = [2]int{n[0] + f.Added, n[1] + f.Removed}
			}
		}
	}
	out := turns[:0]
	for _, pt := range turns {
		if pt.turn < len(prompts) {
			pt.prompt = prompts[pt.turn]
			out = append(out, pt)
		}
	}
	return out, nil
}

// changedFiles is a turn's changes in a few words: "a.txt +1 −1, b.go +4".
func (pt promptTurn) changedFiles() string {
	var paths []string
	for p := range pt.files {
		paths = append(paths, p)
	}
	for p := range pt.binary {
		if _, ok := pt.files[p]; !ok {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return "no file changed"
	}
	sort.Strings(paths)
	parts := make([]string, len(paths))
	for i, p := range paths {
		parts[i] = esc(p)
		if n, ok := pt.files[p]; ok {
			if n[0] > 0 {
				parts[i] += fmt.Sprintf(" +%d", n[0])
			}
			if n[1] > 0 {
				parts[i] += fmt.Sprintf(" −%d", n[1])
			}
		}
	}
	return strings.Join(parts, ", ")
}

// promptPicker lists the session's prompts, the newest under the cursor.
func promptPicker(app *chatApp, what string) (*picker, error) {
	turns, err := sessionPrompts(app.stateDir, app.sessionID)
	if err != nil {
		return nil, err
	}
	p := &picker{title: "rewind to before which prompt? (" + what + "; ↑/↓, Enter; d: the diff; c: the checkpoints; Esc)"}
	byValue := map[string]promptTurn{}
	for _, pt := range turns {
		v := strconv.Itoa(pt.checkpoint)
		byValue[v] = pt
		p.labels = append(p.labels, fmt.Sprintf("%s  %s", field(oneLine(pt.prompt, 60), 240), styleDim("("+pt.changedFiles()+")")))
		p.values = append(p.values, v)
	}
	p.at = max(0, len(p.values)-1)
	p.preview = rewindPreview(app)
	p.pick = func(m *chatModel, v string) tea.Cmd {
		pt := byValue[v]
		return m.rewind(v, what, fmt.Sprintf("to before %q", oneLine(pt.prompt, 40)), pt.prompt)
	}
	p.otherKey, p.other = "c", func() (*picker, error) { return checkpointPicker(app, what) }
	return p, nil
}

// checkpointPicker lists the session's checkpoints, each with its cause
// and the files it changed.
func checkpointPicker(app *chatApp, what string) (*picker, error) {
	cps, err := checkpoint.List(app.stateDir, app.sessionID)
	if err != nil {
		return nil, err
	}
	p := &picker{title: "rewind to which checkpoint? (" + what + "; ↑/↓, Enter; d: the diff; c: the prompts; Esc)"}
	p.preview = rewindPreview(app)
	for _, c := range cps {
		if !c.Sealed {
			continue
		}
		changed := make([]string, 0, len(c.Files))
		for _, ch := range c.Files {
			changed = append(changed, ch.Path)
		}
		p.labels = append(p.labels, fmt.Sprintf("%3d  %s  %s", c.Number, esc(cause(c)), field(strings.Join(changed, " "), 200)))
		p.values = append(p.values, strconv.Itoa(c.Number))
	}
	p.pick = func(m *chatModel, n string) tea.Cmd { return m.rewind(n, what, "to checkpoint "+n, "") }
	p.otherKey, p.other = "c", func() (*picker, error) { return promptPicker(app, what) }
	return p, nil
}

// rewindPreview is the rewind command's dry run for a picker's d: the
// diff of what going back to a checkpoint would change in the files,
// changing nothing.
func rewindPreview(app *chatApp) func(m *chatModel, n string) string {
	return func(m *chatModel, n string) string {
		var out, errb bytes.Buffer
		err := cmdRewind([]string{app.sessionID, "--to", n, "--files-only", "--dry-run", "--state-dir", app.stateDir}, &out, &errb)
		text := colorDiff(out.String(), m.width, m.previewRows(), "") + wrapText(styleDim(strings.TrimRight(errb.String(), "\n")), m.width)
		if err != nil {
			text += "\n" + wrapText(styleErr(termsafe.Text(err.Error())), m.width)
		}
		return text
	}
}

// rewind runs the rewind command's implementation (checkpoint.go) for
// this session and says what it did in one line (and what it could not
// restore, when anything); where names the target for the person. When
// the conversation went back to before a prompt, prompt returns to the
// input.
func (m *chatModel) rewind(n, what, where, prompt string) tea.Cmd {
	args := []string{m.app.sessionID, "--to", n, "--state-dir", m.app.stateDir}
	switch what {
	case "files":
		args = append(args, "--files-only")
	case "conversation":
		args = append(args, "--conversation-only")
	}
	var out, errb bytes.Buffer
	done, err := rewindCmd(args, &out, &errb)
	var lines []string
	// What the command could not restore (kept, skipped, conflicts) is
	// said; its own report (checkpoint numbers, where the cut turns are
	// kept, how to resume from a shell) is the command line's business.
	if t := strings.TrimRight(errb.String(), "\n"); t != "" {
		lines = append(lines, t)
	}
	if err != nil {
		lines = append(lines, styleErr("rewind: "+termsafe.Text(err.Error())))
	}
	var did []string
	switch {
	case done.filesCheckpoint >= 0:
		did = append(did, plural(done.paths, "file")+" restored")
	case err == nil && what != "conversation":
		did = append(did, "no file needed restoring")
	}
	if done.saved != "" {
		did = append(did, "the conversation goes back too")
	}
	if len(did) > 0 {
		u := &undoRewind{sessionID: m.app.sessionID, rewound: done, to: n}
		if done.saved != "" {
			// The transcript's size right after the cut: the undo puts
			// the turns back only onto this very transcript.
			fi, serr := os.Stat(done.transcript)
			if serr != nil {
				done.saved = ""
			} else {
				u.size = fi.Size()
			}
		}
		m.undo = u
		line := "rewound " + esc(where) + ": " + strings.Join(did, "; ") + " (/undo takes it back)"
		lines = append([]string{line}, lines...)
		if done.saved != "" && prompt != "" {
			m.input.SetValue(prompt)
			m.input.CursorEnd()
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "nothing to rewind: the conversation is already there")
	}
	return m.say(strings.Join(lines, "\n"))
}

// plural is "1 file", "2 files".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
