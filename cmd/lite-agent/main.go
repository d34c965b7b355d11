// Command lite-agent runs LLM agents confined by the kernel: see doc.go.
package main

import (
	"os"

	"github.com/lite-agent/lite-agent/internal/sandboxrun"
	"github.com/lite-agent/lite-agent/tools"
)

func main() {
	// First: in a process started to run one confined tool call, this runs
	// the call and exits. The CLI has no custom Go tools of its own (its
	// built-ins run in-process or as confined commands), so it hands
	// over none: a custom tool would be refused at session start.
	tools.ServeConfinedCall()
	// Set when lite-agent-sandbox sent `sandbox run` back to run here
	// (entry_linux.c): the command's own business is not to see it.
	os.Unsetenv(sandboxrun.EntryEnv)
	os.Exit(runCLI(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
