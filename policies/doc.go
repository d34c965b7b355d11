// Package policies holds hardening presets (strict, standard, permissive)
// as data, the allow/ask/deny permission rule language, and policy files.
// It runs nothing: the kernel's permission gate consults it.
//
// # Rules
//
// A rule is a behavior (allow, ask, deny) and a pattern: a tool name or
// wildcard ("read_file", "mcp__orders__*"), optionally with an argument
// pattern — a command for bash ("bash(git status)", prefix form
// "bash(npm run test:*)"), a path glob for the file tools
// ("read_file(src/**)", "write_file(/etc/**)"). See Rule for the syntax.
// Deny wins over ask, ask over allow, wherever each rule came from.
// Claude Code's tool names are read as ours ("Bash(git status)" is
// "bash(git status)"; names.go holds the one table), and a hook matcher
// may list alternatives with '|' ("Write|Edit").
//
// # Shell commands
//
// A bash command is parsed with a real shell parser (mvdan.cc/sh) and
// every simple command in it is a part: across ; && || | & and newlines,
// in subshells, blocks, if/while/for/case bodies, $(…) and `…`, <(…) and
// >(…), the string of bash -c and the words of eval. A deny or ask rule
// matches when it matches any part — also seen through wrappers (timeout,
// env, xargs, sudo, find -exec, a path like /usr/bin/curl). The command is
// allowed by argument rules only when every part is allowed and nothing in
// it is beyond what a rule states: no output redirection to a file, no
// variable assignment, no function definition. What the parser cannot
// prove — a command name that is an expansion, arithmetic (which can run
// code), declare/export, bash reading commands from stdin, input that does
// not parse — asks when the tool has deny or ask rules with arguments,
// because it might be one of them. Rules see names, not programs: a
// denied program copied under another name, or code an interpreter runs
// (python -c, a Makefile), is beyond them — the sandbox is the boundary.
//
// # Paths
//
// A path is made absolute against the workspace and matched in two forms:
// lexical (cleaned) and real (symlinks resolved component by component as
// the kernel does, so ".." after a symlink applies to its target). Deny
// and ask rules match either form; allow rules only the real one.
//
// # Presets and policy files
//
// Presets (presets.go) are the sandbox policy of commands, what custom
// tools may declare, the default permission mode and default rules.
// Policy files (file.go: TOML, [permissions] allow/ask/deny/default_mode
// and [[hooks]]) are read from $XDG_CONFIG_HOME/lite-agent/policy.toml and
// WORKSPACE/.lite-agent/policy.toml and merged as Load documents; a bad
// rule is an error naming the file and the line.
package policies
