// Package machine is this machine as the toolchain profiles see it: Host,
// the policies.Host that reads the user's environment and PATH, runs the
// tools' own queries (go env -json, npm config get registry) unconfined
// in the parent, and keeps the per-workspace caches (CacheRoot,
// WorkspaceCacheDir, RemoveWorkspaceCaches, ResetWorkspaceCaches) and
// their verification (cacheverify.go).
//
// # Why a package of its own
//
// Both the agent (package local, which wires a session) and the
// sandbox's own entry point (cmd/lite-agent-sandbox, `sandbox run`)
// resolve a policy on this machine. The entry point must not link what
// an agent session needs — the kernel, the MCP SDK, the providers' SDKs —
// since every linked package's initialisation runs before each command
// it wraps; this package imports only policies, internal helpers,
// go-toml, golang.org/x/sys and the standard library.
// local re-exports Host as MachineHost.
package machine
