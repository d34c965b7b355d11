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
// variable assignment, no function definition.
//
// Bash runs strings as code in more places than command words: trap
// handlers, aliases, completion and mapfile callbacks, prompt variables
// (PS4 with set -x), PROMPT_COMMAND, BASH_ENV and startup files, source,
// subscripts in variable names, history, hash -p, set -k, exported
// functions, and programs such as su -c, script -c, env -S, ssh, git -c.
// shellcode.go surveys them from the bash manual, one line each; every
// one is either checked (its code is parsed and meets the deny rules) or
// unprovable.
//
// What the parser cannot prove — a command name that is an expansion,
// arithmetic (which can run code), declare/export, bash reading commands
// from stdin or a file, inline code in another language (python -c, awk,
// sed without --sandbox), input that does not parse — asks when the tool
// has deny or ask rules with arguments, because it might be one of them.
// Such an ask is marked Decision.Unproven when a deny rule could match:
// a person may approve it, but where nobody is asked (bypassPermissions)
// the kernel's gate denies it, so a deny rule never depends on an ask.
// Rules see names, not programs: a denied program copied under another
// name, a script file run by path, or a Makefile, is beyond them — the
// sandbox is the boundary.
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
//
// The workspace's file is written by whoever controls the workspace —
// including the agent's bash in an earlier session — so it is read as
// hostile input (LoadWorkspaceFile, internal/safefile): beneath the
// workspace with no symlink on the way, without blocking (a FIFO is an
// error, not a hang), a regular file of at most 1 MiB. The user's file
// may be a symlink (it is the user's), but what it leads to is held to
// the same rules. Parsing is linear in the size of the file.
//
// # Trusted versions of the workspace's file
//
// A preset that trusts the workspace's file (standard, permissive) lets
// it loosen only in a version the user trusted (trust.go, as direnv's
// allow and mise's trust): Load compares the SHA-256 of the bytes
// LoadWorkspaceFile parsed (File.Digest, no second read) with the record
// in the trust store, LoadOptions.TrustStore or TrustStoreDir()
// ($XDG_STATE_HOME/lite-agent/trusted-policies, one file per workspace
// named by the SHA-256 of its resolved path). Any other version — new,
// changed by the agent's bash or a git pull, a record that is corrupt or
// for another workspace — is read exactly as strict reads every version
// (tightenOnly, one path), and a loosening entry is an error naming its
// line and `lite-agent policy trust`. The store is outside every
// workspace, so the sandbox of commands (Landlock) cannot write it and the
// agent cannot trust a file for itself; a session whose writable roots
// would hold the store (the workspace at $HOME, a write grant over
// ~/.local) is refused by the assembler (local). AddRuleToWorkspaceFile
// keeps a trusted (or new) file trusted. TrustFile/FileTrusted keep the
// same records for another file of the workspace, by its path there (an
// MCP configuration: local lets its servers widen only in a trusted
// version).
//
// AddRule (addrule.go) adds a rule to a policy file in place, for an
// approval's "allow always"; the result is parsed again before it is
// written, and the workspace's file is written beneath the workspace
// through os.Root. ViewShellCommand shows a person what the shell parser
// the rules use found in a command line.
//
// # The sandbox of commands
//
// A policy file's [sandbox] table (sandboxfile.go: network,
// allow_domains, deny_domains, read, write, env, toolchains, git, level) is one layer
// of SandboxSettings; the options layer (CLI flags, local.Config) comes
// last. Policy.SandboxPolicy turns the preset and the layers into the
// sandbox.Policy of commands plus a SandboxReport that names the source
// of every grant. Under a preset that does not trust the workspace's file
// (strict), or in a version the user did not trust, it may only tighten
// the sandbox (sandboxTightenOnly): a wider network, a path, a variable,
// an allowed domain, git = "writable" (which would let commands plant
// hooks that the user's git runs) or level = "container" (commands
// without namespaces) there is an error naming its line, and a toolchain
// list narrows what is in force. git defaults to "read-only"
// (sandbox.Policy.GitWritable off), level to "full"
// (sandbox.Policy.Level: the container level is used only when the user's
// file, a trusted one, or the options layer names it).
//
// Toolchain profiles (toolchains.go, toolchains_tools.go) are data: the
// markers that select one, the binaries that show it installed, the
// install roots, /etc paths and user caches it reads, the per-workspace
// cache and variables it sets, the user settings it passes. A user cache
// is granted only where the tool really reads it read-only — npm's only
// offline (OfflineUserCaches: npm cannot look up by URL in a read-only
// cache, only by a lockfile's integrity), pip's, uv's and cargo's
// registry never — since a grant nothing uses is only exposure. The machine's
// facts — PATH lookups, the tools' own queries such as `go env -json` and
// `npm config get registry` — come through the Host interface that local
// supplies, so this package still runs nothing. Where a tool takes its
// settings only from a file (Maven), the profile's config is written
// through Host.WriteFile into a per-workspace directory the sandbox may
// read and not write. Every grant of a profile
// passes credentialClash: nothing that is, holds or lies inside a
// credentials path (credentialPaths) is ever granted by a profile; inside
// the roots it grants (and the system paths its installs lie beneath),
// the tool's own credential files (toolchains_creds.go, patterns per
// profile) are left out by granting the rest of the root around them.
// No profile touches PATH: the sandbox's PATH is the user's, and what it
// names (each entry, the installs its links point into, the version
// managers its shims run through) is granted whatever profiles are on,
// or left out with a note when it would expose credentials
// (toolchains_path.go), so a command resolves to the same program inside
// as outside. Configuration files the system paths grant whole
// (/etc/wgetrc, /usr/etc/npmrc...) are hidden when they hold a credential
// (hideSystemConfigSecrets). Every kind of credential path hidden is also
// named, as patterns and not as the files found, in the policy's
// CredentialPatterns, so that a command's failed read of one is noted as
// a credential (sandbox.Sandbox.ReadRefusals); they grant nothing.
//
// # Offline, a refusal says why
//
// With the network none and no domain granted, every session points the
// HTTP clients' proxy variables (sandbox.ProxyVariables, the same list the
// domain proxy sets) at offlineProxy, an unresolvable .invalid name that
// says what would allow the download; every profile's RefuseAtOnceEnv
// turns its tools' retries off (selected or not: an agent in a Go
// repository may still run npm), and a selected profile's OfflineEnv,
// goOfflineMarker and mavenOfflineMarker say it in the tool's own terms. A download fails at its first request
// with a message that names the sandbox and --allow-domain.
package policies
