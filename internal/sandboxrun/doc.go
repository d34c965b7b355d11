// Package sandboxrun is the command `lite-agent sandbox run`: its flags
// (and the confinement flags `run` shares with it, GrantFlags), the
// policy they make on this machine, the confined run, and the exit codes.
//
// # Two programs, one command
//
// lite-agent runs it in-process (cmd/lite-agent), and so does
// lite-agent-sandbox (cmd/lite-agent-sandbox), a program that links this
// package, the sandbox, the policies and internal/machine and nothing of
// the agent's: the providers' and MCP SDKs, the terminal UI. A Go program
// initialises every package it links before main, so a command wrapped by
// the smaller program starts several milliseconds sooner (BENCHMARKS.md,
// the `sandbox run` section).
//
// lite-agent hands `sandbox run` over from a C constructor, before its
// own runtime starts (cmd/lite-agent/entry_linux.c): it execs the
// lite-agent-sandbox beside its own executable, with EntryEnv naming
// itself. Entry then requires both to come from one build (Paired: the
// Makefile stamps both with one -X main.version carrying a hash of the
// sources); when they do not, it execs lite-agent again with EntryEnv set,
// which makes lite-agent run the command itself. So the code that runs a
// command is always that of the lite-agent the person called, and a
// missing, stale or foreign entry point costs an exec, never a different
// sandbox. EntryEnv never reaches the command: both programs unset it
// first.
package sandboxrun
