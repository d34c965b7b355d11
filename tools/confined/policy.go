package confined

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// HandlerPolicy narrows ceiling to what a custom tool declared, for
// running its handler in a confined child. The result is the intersection
// of ceiling (the most the session lets a handler have) and the
// declaration, never more than either — and a declaration the ceiling
// cannot give is an error, not a silent narrowing (CheckNetwork):
//
//   - Network: the declared mode, which must be within ceiling's (a tool
//     declaring loopback under a ceiling of none is refused); ceiling's
//     domain grants (the proxy) and its OnUnknownDomain only for a tool
//     declaring unrestricted: the proxy reaches the internet, and its
//     questions reach the person;
//   - Filesystem none: no workspace at all (the child works in an empty
//     private directory), no extra paths;
//   - Filesystem workspace: the workspace, read-only when SideEffects is
//     none, and ceiling's extra paths except a grant of "/" (the whole
//     filesystem is what "unrestricted" declares, not "workspace");
//   - Filesystem unrestricted: ceiling's paths as they are — "/" is
//     readable only if ceiling already grants it, writable only if
//     ceiling grants it read-write. It is never added here.
//
// An undeclared tool gets ceiling. The program's own executable is made
// readable, since the child is a re-execution of it.
func HandlerPolicy(ceiling sandbox.Policy, sec *tools.Security) (sandbox.Policy, error) {
	if err := CheckNetwork(ceiling, sec); err != nil {
		return sandbox.Policy{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return sandbox.Policy{}, fmt.Errorf("locating this program to re-execute it: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	p := ceiling
	p.ReadOnlyPaths = append(append([]string(nil), ceiling.ReadOnlyPaths...), exe)
	p.ReadWritePaths = append([]string(nil), ceiling.ReadWritePaths...)
	if sec == nil {
		return p, nil
	}
	s := sec.Normalized()
	NarrowNetwork(&p, s.Network)
	switch s.Filesystem {
	case tools.FilesystemNone:
		p.Workspace = ""
		p.ReadOnlyPaths = []string{exe}
		p.ReadWritePaths = nil
	case tools.FilesystemWorkspace:
		p.ReadOnlyPaths = WithoutRoot(p.ReadOnlyPaths)
		p.ReadWritePaths = WithoutRoot(p.ReadWritePaths)
		if s.SideEffects == tools.SideEffectsNone {
			ReadOnlyWorkspace(&p, ceiling.Workspace)
		}
	case tools.FilesystemUnrestricted:
		// Nothing is added: ceiling decides how much of "/" there is.
	}
	return p, nil
}

// CheckNetwork reports a declared network that ceiling cannot give: one
// wider than ceiling's mode. A declaration of unrestricted under a
// ceiling that grants domains (AllowDomains) is within it: the domain
// proxy is how that ceiling reaches the internet — for its commands as
// for the handler — and the grants are the ceiling's own, explicit
// narrowing of it. An undeclared tool (sec nil) is within any ceiling.
//
// The kernel calls it for every custom tool when a session starts
// (kernel.CheckConfinedTools), so that a tool whose handler would get
// less network than it says it needs is refused there, naming the tool,
// instead of failing at its first connection.
func CheckNetwork(ceiling sandbox.Policy, sec *tools.Security) error {
	if sec == nil {
		return nil
	}
	declared := sec.Network
	if declared.Within(ceiling.Network) || (declared == tools.NetworkUnrestricted && len(ceiling.AllowDomains) > 0) {
		return nil
	}
	limit := ceiling.Network
	if limit == "" {
		limit = sandbox.NetworkNone
	}
	return fmt.Errorf("it declares network %q, beyond the %q its handler ceiling allows: a handler never gets more than the ceiling, so declare what it needs within it, or give handlers a wider ceiling (kernel.Confinement.HandlerCeiling; behind package local, a preset whose custom tools may have it)", declared, limit)
}

// ReadOnlyWorkspace is what a declaration of filesystem "workspace" with
// side effects "none" gets, the one rule for custom handlers
// (HandlerPolicy) and sandboxed MCP servers: the workspace and every write
// grant of the ceiling (--allow-write, a toolchain cache) become
// read-only. Writable, the grants would be writable through a sandbox
// with no workspace, where change capture — which refuses a new .git —
// does not run: a server declaring no side effects could plant a
// repository, hooks and all, in a write grant.
func ReadOnlyWorkspace(p *sandbox.Policy, workspace string) {
	if workspace != "" {
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, workspace)
	}
	p.ReadOnlyPaths = append(p.ReadOnlyPaths, p.ReadWritePaths...)
	p.Workspace = ""
	p.ReadWritePaths = nil
}

// NarrowNetwork narrows p's network to what declared allows, the one
// rule for custom handlers (HandlerPolicy) and sandboxed MCP servers:
// the narrower of the two modes, and the domain proxy (AllowDomains, and
// OnUnknownDomain, which asks the person about other hosts) only for a
// declaration of unrestricted network — the proxy is a way to the
// internet, and a handler declaring none, loopback or private must get
// neither a proxy to the allowed domains nor a way to put questions to
// the person about any other host. (Under loopback and private the
// handler could still reach another sandbox's proxy on 127.0.0.1 — the
// bash tool's, say — but the sandbox refuses every live proxy to all
// commands but its own: TestOtherSandboxesProxyRefused.) A mode this
// package does not know is not unrestricted (Within fails closed).
func NarrowNetwork(p *sandbox.Policy, declared tools.Network) {
	p.Network = p.Network.Narrower(declared)
	if !tools.NetworkUnrestricted.Within(declared) {
		p.AllowDomains, p.DenyDomains, p.DomainSources = nil, nil, nil
		p.OnUnknownDomain = nil
	}
}

// WithoutRoot drops grants of the whole filesystem from paths.
func WithoutRoot(paths []string) []string {
	out := paths[:0:0]
	for _, p := range paths {
		if filepath.Clean(p) != "/" {
			out = append(out, p)
		}
	}
	return out
}
