package main

// The flags of what the model is told and how its context is managed:
// --append-system-prompt, --no-project-instructions, --context-window,
// --thinking-budget, --web-search; and how their events show in text
// output.

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/internal/termsafe"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/provider"
)

type modelFlagValues struct {
	appendSystemPrompt    string
	noProjectInstructions bool
	contextWindow         int
	thinkingBudget        int
	webSearch             string
}

func modelFlags(fs *flag.FlagSet, f *modelFlagValues) {
	fs.StringVar(&f.appendSystemPrompt, "append-system-prompt", "", "text added after the system prompt (the default one or --system-prompt's)")
	fs.BoolVar(&f.noProjectInstructions, "no-project-instructions", false, "do not add AGENTS.md / CLAUDE.md (repository root down to the workspace) and "+displayPath(kernel.UserInstructionsPath())+" to the system prompt")
	fs.IntVar(&f.contextWindow, "context-window", 0, "the model's context window in tokens (0: the model family's; old tool results are cleared and older turns summarised ahead of it)")
	fs.IntVar(&f.thinkingBudget, "thinking-budget", 0, "turn on extended thinking with N tokens per answer (at least 1024; 0: off)")
	fs.StringVar(&f.webSearch, "web-search", "", "offer the API's server-side web_search tool, limited to these comma-separated domains (\"*\" for any); needs a preset whose network is unrestricted")
}

func displayPath(p string) string {
	if p == "" {
		return "$XDG_CONFIG_HOME/lite-agent/AGENTS.md"
	}
	return p
}

func applyModelFlags(f *modelFlagValues, cfg *local.Config) {
	cfg.AppendSystemPrompt = f.appendSystemPrompt
	cfg.NoProjectInstructions = f.noProjectInstructions
	cfg.ContextWindow = f.contextWindow
	cfg.ThinkingBudget = f.thinkingBudget
	if f.webSearch != "" {
		ws := &provider.WebSearch{}
		if f.webSearch != "*" {
			ws.AllowedDomains = commaList(f.webSearch)
		}
		cfg.WebSearch = ws
	}
}

// renderModelEvent shows, in text output: the project instructions loaded
// (one line on stderr), thinking (dimmed, with --verbose) and context
// compaction (one line).
func renderModelEvent(ev kernel.Event, verbose bool, out *bufio.Writer, stderr io.Writer) {
	switch ev.Type {
	case kernel.EventSessionStart:
		if len(ev.SessionStart.Instructions) == 0 {
			return
		}
		var parts []string
		for _, f := range ev.SessionStart.Instructions {
			if f.Error != "" {
				parts = append(parts, fmt.Sprintf("%s skipped (%s)", f.Path, f.Error))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s (%d bytes)", shortPath(f.Path, ev.SessionStart.Workspace), f.Bytes))
		}
		fmt.Fprintf(stderr, "[project instructions: %s]\n", strings.Join(parts, ", "))
	case kernel.EventThinkingDelta:
		if verbose {
			out.Flush()
			fmt.Fprintf(stderr, "\x1b[2m%s\x1b[0m", termsafe.Text(ev.ThinkingDelta.Thinking)) // only our own dim escape reaches the terminal
		}
	case kernel.EventCompact:
		c := ev.Compaction
		out.Flush()
		switch {
		case c.Error != "":
			fmt.Fprintf(stderr, "\n[compacting the context failed: %s]\n", c.Error)
		case c.Kind == "summary":
			fmt.Fprintf(stderr, "\n[context compacted: %d older messages summarised, %d kept; ~%d → ~%d tokens]\n", c.SummarizedMessages, c.KeptMessages, c.TokensBefore, c.TokensAfter)
		default:
			if verbose {
				fmt.Fprintf(stderr, "\n[context: %d old tool results cleared; ~%d → ~%d tokens]\n", c.ClearedToolResults, c.TokensBefore, c.TokensAfter)
			}
		}
	}
}

func shortPath(p, ws string) string {
	if rel, ok := paths.Rel(ws, p); ok {
		return rel
	}
	return p
}
