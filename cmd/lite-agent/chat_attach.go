package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/tools/builtin"
)

// Bounds of what @path attaches to one prompt: lines per file (read_file's
// own limit applies too) and bytes in all, so that a prompt naming a huge
// file or many files does not fill the model's context.
const (
	attachMaxLines = 2000
	attachMaxBytes = 256 << 10
)

// attachFiles reads each @path word of prompt that names a file of the
// workspace, through read_file's rules (builtin.ReadForPrompt: beneath the
// workspace, no more privilege than a command; the session's deny rules
// for read_file first), and returns the prompt with the files' contents
// after it, and one line for the person per @word: attached, or why not.
// A word that names no file (an e-mail address, @here) is left as text
// and not mentioned.
func (a *chatApp) attachFiles(ctx context.Context, prompt string) (string, []string) {
	var paths []string
	for _, w := range strings.Fields(prompt) {
		p, ok := strings.CutPrefix(w, "@")
		p = strings.TrimRight(p, ",.;:!?)")
		if ok && p != "" && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return prompt, nil
	}
	rules, rulesErr := a.readRules()
	var notes []string
	var b strings.Builder
	b.WriteString(prompt)
	total := 0
	for _, p := range paths {
		if !a.namesWorkspaceFile(p) {
			continue
		}
		if rulesErr != nil {
			notes = append(notes, fmt.Sprintf("@%s not attached: the session's rules could not be read: %v", p, rulesErr))
			continue
		}
		if v := rules.Decide("read_file", builtin.ReadFileInput(p)); v.Behavior == policies.Deny {
			notes = append(notes, fmt.Sprintf("@%s not attached: %s", p, v.Reason))
			continue
		}
		text, err := builtin.ReadForPrompt(ctx, a.f.workspace, p, attachMaxLines)
		if err != nil {
			notes = append(notes, fmt.Sprintf("@%s not attached: %v", p, err))
			continue
		}
		if total+len(text) > attachMaxBytes {
			notes = append(notes, fmt.Sprintf("@%s not attached: the prompt's attachments would pass %d KiB; ask the agent to read it", p, attachMaxBytes>>10))
			continue
		}
		total += len(text)
		fmt.Fprintf(&b, "\n\n<attached-file path=%q>\n%s\n</attached-file>", p, text)
		if shown, total := attachedLines(text); total > shown {
			notes = append(notes, fmt.Sprintf("attached @%s: its first %d of %d lines (the agent can read the rest)", p, shown, total))
		} else {
			notes = append(notes, fmt.Sprintf("attached @%s (%d lines)", p, shown))
		}
	}
	return b.String(), notes
}

// readNoteRE is read_file's note where it stopped before the end of a
// file (tools/builtin/files.go): the last line shown and the file's
// lines.
var readNoteRE = regexp.MustCompile(`\n\n\((?:Showing lines \d+-(\d+) of (\d+)|Output stopped after line (\d+) of (\d+))[ .]`)

// attachedLines is how many lines of a file read_file's text holds, and
// how many the file has.
func attachedLines(text string) (shown, total int) {
	if m := readNoteRE.FindStringSubmatch(text); m != nil {
		a, b := m[1], m[2]
		if a == "" {
			a, b = m[3], m[4]
		}
		shown, _ = strconv.Atoi(a)
		total, _ = strconv.Atoi(b)
		return shown, total
	}
	n := strings.Count(strings.TrimRight(text, "\n"), "\n") + 1
	return n, n
}

// namesWorkspaceFile reports whether p (as typed after @) is an existing
// regular file inside the workspace; what it is not is left as text.
func (a *chatApp) namesWorkspaceFile(p string) bool {
	matches := workspaceFiles(a.f.workspace, p, 1)
	return len(matches) == 1 && matches[0] == strings.TrimPrefix(p, "./")
}

// readRules are the session's permission rules (the policy's and the
// --disallowed-tools deny rules) compiled, for read_file's deny rules.
// Without them nothing is attached (fail closed).
func (a *chatApp) readRules() (*policies.Ruleset, error) {
	if a.agent == nil {
		return nil, fmt.Errorf("no agent yet")
	}
	rules := slices.Clone(a.agent.Policy().Rules)
	for _, d := range commaList(a.f.disallowedTools) {
		r, err := policies.ParseRule(policies.Deny, d)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return policies.Compile(rules, a.f.workspace)
}
