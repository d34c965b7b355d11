// Package sandbox confines the commands and tool handlers an agent runs.
//
// # Policy
//
// A Policy names the workspace (the only writable place), extra read-only and
// read-write paths, the network mode, the environment allowlist and resource
// limits. It is data: the permission gate decides whether a call may run at
// all; this package decides what the call can touch once it runs.
//
// # Confinement
//
// A Go process cannot confine a goroutine — Landlock and seccomp apply to
// threads and the runtime moves goroutines between them — so confined code
// always runs in a child process that applies Landlock, drops capabilities,
// sets no_new_privs and loads a seccomp filter before it executes the
// command or the handler. See DESIGN.md, "Confinement".
package sandbox
