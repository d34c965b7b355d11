// Package noquery keeps Bubble Tea's package init from asking the terminal
// for its background colour.
//
// # Why
//
// Bubble Tea v1 (tea_init.go) calls lipgloss.HasDarkBackground() in an
// init function, for every command of any binary that links it, whenever
// stdout is a terminal. termenv answers that by writing an OSC 11 query
// and a cursor-position request to the terminal and reading the reply
// with a 5-second timeout: on a terminal (or a pty, a serial console, an
// editor's terminal pane) that answers neither, every `lite-agent`
// command, `lite-agent --version` included, stalls 5 s before main runs.
// Nothing in lite-agent needs the answer: the interactive mode's styles
// use the 16 ANSI colours, which the terminal itself maps to its theme,
// and it sets lipgloss's background explicitly.
//
// # How
//
// Code in main runs too late, so this package does it at init. It imports
// nothing but the standard library, so the Go initialisation order (Go
// 1.21+: packages in import-path order, each once its imports are done)
// runs it before termenv, and so before lipgloss and Bubble Tea: it sets
// TERM=dumb, which termenv reads at query time and for which it skips the
// query (it does the same for screen and tmux). Restore puts TERM back;
// the main package calls it from its own init, which runs after every
// package it imports, so before main, before any child process is
// started, and before lipgloss first reads TERM for the colour profile
// (it does so lazily, on first use). While TERM is "dumb" nothing runs
// but package initialisers.
//
// A test (test/chat_e2e_test.go, TestChatStartsOnSilentTerminal) runs the
// binary on a pty that never answers and bounds its start time.
package noquery

import "os"

var (
	term    string
	hadTerm bool
	set     bool
)

func init() {
	term, hadTerm = os.LookupEnv("TERM")
	// Only when it matters: a TERM that already skips the query is left
	// as it is, and nothing needs restoring.
	if os.Setenv("TERM", "dumb") == nil {
		set = true
	}
}

// Restore puts TERM back as the process started with it. It is idempotent.
func Restore() {
	if !set {
		return
	}
	set = false
	if hadTerm {
		os.Setenv("TERM", term)
	} else {
		os.Unsetenv("TERM")
	}
}
