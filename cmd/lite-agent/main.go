// Command lite-agent runs LLM agents confined by the kernel: see doc.go.
package main

import (
	"os"

	"github.com/lite-agent/lite-agent/tools"
)

func main() {
	// First: in a process started to run one confined tool call, this runs
	// the call and exits.
	tools.ServeConfinedCall()
	os.Exit(runCLI(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
