//go:build !linux

package sandbox

// lite-agent is Linux-only, by decision (docs/install.md, "Platforms"):
// confinement is Landlock + seccomp + cgroups, and the sandbox path is cgo
// with libseccomp. There is no honest way to run a tool "confined" on a
// system without them, and a stub that compiles but refuses everything
// would only suggest a portability that does not exist. So building for
// another GOOS stops here, with this identifier as the message.
var _ = lite_agent_builds_only_on_linux_with_cgo_and_libseccomp
