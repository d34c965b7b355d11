// Command lite-agent runs LLM agents confined by the kernel: see doc.go.
package main

import (
	"os"

	"github.com/lite-agent/lite-agent/internal/sandboxrun"
)

// main does not call confined.Serve: the CLI has no custom Go tools of its
// own (its built-ins run in-process or as confined commands), so no
// confined re-execution of it is ever started, and a custom tool given to
// its kernel would be refused when the session starts.
func main() {
	// Set when lite-agent-sandbox sent `sandbox run` back to run here
	// (entry_linux.c): the command's own business is not to see it.
	os.Unsetenv(sandboxrun.EntryEnv)
	os.Exit(runCLI(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
