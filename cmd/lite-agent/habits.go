package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// The habits a Claude Code user brings, accepted where they mean the same
// here: a prompt as the first argument, -p/--print, -c/--continue,
// -r [ID], -v, and flag names spelled in camelCase (--allowedTools). A
// mistake is one line naming the nearest command or flag, exit 2, never
// the whole usage.

// commands are the CLI's commands, for "did you mean".
var commands = []string{"run", "chat", "sandbox", "policy", "sessions", "checkpoints", "rewind", "gc", "verify", "version", "help"}

// promptOrTypo decides what a first argument that is no command is: a
// mistyped command (one word near a command's name: "sesions") is a
// usage error naming the command, anything else is a prompt.
func promptOrTypo(arg string) error {
	if strings.ContainsAny(arg, " \t\n") {
		return nil
	}
	if near := nearest(arg, commands); near != "" {
		return usageErrorf("unknown command %q: did you mean %q? (for a prompt of one word: lite-agent run %q)", arg, near, arg)
	}
	return nil
}

// nearest is the candidate closest to s by edit distance, if it is close
// enough to be a slip of the keys (at most 2 edits, fewer than half of
// s), else "".
func nearest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), c); d < bestD && d*2 < len(s)+1 {
			best, bestD = c, d
		}
	}
	return best
}

// kebab turns a flag name spelled allowedTools or allowed_tools into
// allowed-tools.
func kebab(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_':
			b.WriteByte('-')
		case unicode.IsUpper(r):
			if i > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// normalizeFlagNames rewrites each flag of args spelled in camelCase or
// snake_case (--allowedTools, --max_turns) to the name fs defines
// (--allowed-tools), leaving values, positionals and everything after
// "--" alone. A flag fs does not define under either spelling is left
// for the parser to refuse.
func normalizeFlagNames(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
			continue
		}
		dashes := "-"
		if strings.HasPrefix(a, "--") {
			dashes = "--"
		}
		name, value, hasValue := strings.Cut(a[len(dashes):], "=")
		if fs.Lookup(name) == nil {
			if k := kebab(name); k != name && fs.Lookup(k) != nil {
				name = k
			}
		}
		if hasValue {
			out = append(out, dashes+name+"="+value)
		} else {
			out = append(out, dashes+name)
		}
	}
	return out
}

// flagError is a parse error as one line: what was wrong, the nearest
// flag for an unknown one, and where the flags are listed.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	const undefined = "flag provided but not defined: -"
	if name, ok := strings.CutPrefix(msg, undefined); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		msg = "unknown flag " + dashed(name)
		if near := nearest(kebab(name), names); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", dashed(near))
		}
	}
	return usageErrorf("%s; lite-agent %s --help lists the flags", msg, fs.Name())
}

// dashed is a flag's name as the help writes it: -p, --workspace.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// printFlags writes fs's flags as flag.PrintDefaults does, but with the
// double dash of long names (--workspace), leaving out those in skip.
func printFlags(w io.Writer, fs *flag.FlagSet, skip ...string) {
	fs.VisitAll(func(f *flag.Flag) {
		for _, s := range skip {
			if f.Name == s {
				return
			}
		}
		kind, usage := flag.UnquoteUsage(f)
		line := "  " + dashed(f.Name)
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// printIsMode handles -p and --print used as Claude Code's switch ("print
// the answer and exit", which is what run does) rather than as run's
// -p PROMPT: a -p (or --print) that is last or followed by another flag is
// dropped, and --print PROMPT is -p PROMPT.
func printIsMode(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "-p" || a == "--p" || a == "--print" || a == "-print" {
			if i+1 == len(args) || (strings.HasPrefix(args[i+1], "-") && args[i+1] != "-") {
				continue
			}
			out = append(out, "-p")
			continue
		}
		if v, ok := strings.CutPrefix(a, "--print="); ok {
			out = append(out, "-p="+v)
			continue
		}
		out = append(out, a)
	}
	return out
}
