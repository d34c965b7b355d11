package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lite-agent/lite-agent/internal/sandboxrun"
	"github.com/lite-agent/lite-agent/internal/termsafe"
)

// version is set by the build (-ldflags "-X main.version=...").
var version = "dev"

// exitError carries the exit code of a failure to main.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, args...)}
}

func failf(format string, args ...any) error {
	return &exitError{code: 1, msg: fmt.Sprintf(format, args...)}
}

const usageText = `usage: lite-agent [flags] [PROMPT]   an interactive session (starting with PROMPT)
       lite-agent -p PROMPT [flags]   run PROMPT, print the answer, exit (= run)
       lite-agent <command> [flags]

  -c, --continue       continue the newest session of this workspace (chat and run)
  -r, --resume [ID]    resume session ID (chat without ID: pick one)
  -v, --version        print the version

commands:
  run [flags] PROMPT   run an agent headless (see 'lite-agent run --help')
  sandbox run|check    run one command confined, or show what this kernel can enforce
                       (see 'lite-agent sandbox --help')
  policy show [NAME]   print a preset (strict, standard, permissive) as data, and with
                       --workspace DIR the rules and hooks its policy files add
  policy trust         trust the workspace's policy file in this version, so that under
                       standard and permissive it may loosen the policy ([--workspace DIR];
                       policy untrust takes it back)
  sessions             list sessions: id, start, prompt, checkpoints
  checkpoints SESSION  list a session's checkpoints and the files each changed
  rewind SESSION --to N
                       go back to checkpoint N: files and conversation
                       (see 'lite-agent rewind --help')
  gc                   remove old checkpoints (--max-age, --max-count, --max-size)
  verify               re-hash the checkpoint store and report corruption
  version              print the version
  chat [flags] [PROMPT]
                       the interactive session (also: no command, in a terminal;
                       see 'lite-agent chat --help')
`

// runCLI is main without the process: it returns the exit code.
func runCLI(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 && !isTerminal(stdin) {
		fmt.Fprint(stderr, usageText)
		fmt.Fprintln(stderr, "(with no command in a terminal, lite-agent opens an interactive session; without one, use run)")
		return 2
	}
	if len(args) > 0 && (args[0] == "-p" || args[0] == "--print" || strings.HasPrefix(args[0], "--print=")) {
		// Claude Code's "print and exit" is run.
		return exitCode(cmdRun(args, stdin, stdout, stderr), stderr)
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") && !isCommand(args[0]) {
		// A prompt as the first argument starts a session with it: the
		// interactive one in a terminal, run (prints and exits) without.
		// One word near a command's name is a mistyped command.
		if err := promptOrTypo(args[0]); err != nil {
			return exitCode(err, stderr)
		}
		if !isTerminal(stdin) || !isTerminalWriter(stdout) {
			return exitCode(cmdRun(args, stdin, stdout, stderr), stderr)
		}
		return exitCode(cmdChat(args, stdin, stdout, stderr), stderr)
	}
	if isChatCommand(args) {
		// The interactive mode: no command, "chat", or chat's flags.
		if len(args) > 0 && args[0] == "chat" {
			args = args[1:]
		}
		return exitCode(cmdChat(args, stdin, stdout, stderr), stderr)
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(args[1:], stdin, stdout, stderr)
	case "sandbox":
		err = cmdSandbox(args[1:], stdin, stdout, stderr)
	case "policy":
		err = cmdPolicy(args[1:], stdout, stderr)
	case "sessions":
		err = cmdSessions(args[1:], stdout, stderr)
	case "checkpoints":
		err = cmdCheckpoints(args[1:], stdout, stderr)
	case "rewind":
		err = cmdRewind(args[1:], stdout, stderr)
	case "gc":
		err = cmdGC(args[1:], stdout, stderr)
	case "verify":
		err = cmdVerify(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "lite-agent", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usageText)
	default:
		err = usageErrorf("unknown flag %s; lite-agent --help lists the commands, lite-agent chat --help the flags", args[0])
	}
	return exitCode(err, stderr)
}

// isCommand reports whether name is one of the CLI's commands (or help).
func isCommand(name string) bool {
	for _, c := range commands {
		if name == c {
			return true
		}
	}
	return false
}

// isChatCommand reports whether args start the interactive mode: no
// command, "chat", or a flag (lite-agent --continue).
func isChatCommand(args []string) bool {
	if len(args) == 0 || args[0] == "chat" {
		return true
	}
	switch args[0] {
	case "-h", "--help", "--version", "-v":
		return false
	}
	return strings.HasPrefix(args[0], "-")
}

// exitCode prints err (if any) and returns the exit code for it.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "lite-agent:", termsafe.Text(ee.msg))
		}
		return ee.code
	}
	var se *sandboxrun.ExitError // sandbox run's
	if errors.As(err, &se) {
		if se.Msg != "" {
			fmt.Fprintln(stderr, "lite-agent:", termsafe.Text(se.Msg))
		}
		return se.Code
	}
	// Errors quote what the agent made (file names, tool output, a
	// model's error): escaped here, the one place every error is printed.
	fmt.Fprintln(stderr, "lite-agent:", termsafe.Text(err.Error()))
	return 1
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("run PROMPT --max-turns 3" as well as "run --max-turns 3
// PROMPT"). Everything after "--" is positional.
//
// Flag names spelled in camelCase or snake_case are taken in fs's
// kebab-case (normalizeFlagNames). A mistake is one usage error line
// naming the nearest flag (flagError); the flag package's own message
// and full usage are printed only for -h.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	args = normalizeFlagNames(fs, args)
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage = usage
				fs.SetOutput(out)
				usage()
				return nil, err
			}
			return nil, flagError(fs, err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return positional, nil
}

// commaList splits a comma-separated flag value, dropping empty items.
func commaList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
