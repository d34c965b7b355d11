// Package example is what the examples share: the model they talk to and
// how they print events.
package example

import (
	"fmt"
	"io"
	"os"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/provider/scripted"
)

// Model returns the Anthropic model when ANTHROPIC_API_KEY is set (the
// model name from LITE_AGENT_MODEL, default claude-sonnet-4-6), else the
// scripted model replaying script — the example's script.json, so that it
// runs offline and its test needs no key.
func Model(script []byte) (provider.Model, string, error) {
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		m, err := anthropic.New(nil)
		if err != nil {
			return nil, "", err
		}
		name := os.Getenv("LITE_AGENT_MODEL")
		if name == "" {
			name = "claude-sonnet-4-6"
		}
		return m, name, nil
	}
	m, err := scripted.Parse(script)
	if err != nil {
		return nil, "", fmt.Errorf("the example's script.json: %w", err)
	}
	return m, "scripted", nil
}

// Print writes the events a reader of the example wants to see: tool
// calls, permission decisions, tool results, custom events and the result.
// Text deltas are written as they come.
func Print(w io.Writer, ev kernel.Event) {
	switch ev.Type {
	case kernel.EventTextDelta:
		fmt.Fprint(w, ev.TextDelta.Text)
	case kernel.EventToolCall:
		fmt.Fprintf(w, "\n[call %s %s]\n", ev.ToolCall.Name, ev.ToolCall.Input)
	case kernel.EventPermission:
		fmt.Fprintf(w, "[permission %s: %s by %s: %s]\n", ev.Permission.Name, ev.Permission.Decision, ev.Permission.DecidedBy, ev.Permission.Reason)
	case kernel.EventToolResult:
		status := "ok"
		if ev.ToolResult.IsError {
			status = "error"
		}
		text := ""
		for _, c := range ev.ToolResult.Content {
			text += c.Text
		}
		fmt.Fprintf(w, "[result %s (%s): %s]\n", ev.ToolResult.Name, status, text)
	case kernel.EventCustom:
		fmt.Fprintf(w, "[event %s %v]\n", ev.Custom.Name, ev.Custom.Data)
	case kernel.EventResult:
		fmt.Fprintf(w, "\n[%s] %s\n", ev.Result.Subtype, ev.Result.Result)
	}
}
