// Command lite-agent-sandbox is `lite-agent sandbox run` as a program of
// its own (package internal/sandboxrun holds the command; lite-agent
// runs the same code): it links the sandbox, the policies and this
// machine's host, and none of the agent's packages — the providers' SDKs,
// the MCP SDK, the terminal UI — whose package initialisation would
// otherwise run before every command it wraps. lite-agent hands
// `sandbox run` over to it when it is installed beside lite-agent from
// the same build (cmd/lite-agent/entry_linux.c); it can also be called
// directly: lite-agent-sandbox run [flags] -- CMD [ARGS...].
package main

import (
	"os"

	"github.com/lite-agent/lite-agent/internal/sandboxrun"
)

// version is set by the build (-ldflags "-X main.version=..."), the same
// as lite-agent's.
var version = "dev"

func main() {
	os.Exit(sandboxrun.Entry(os.Args, version, os.Stdin, os.Stdout, os.Stderr))
}
