package local

import "github.com/lite-agent/lite-agent/internal/machine"

// MachineHost is the policies.Host of this machine, for resolving the
// toolchain profiles: the user's environment and PATH, the tools' own
// queries run unconfined in the parent from "/", and the per-workspace
// caches under CacheRoot (internal/machine, which `sandbox run`'s entry
// point shares without linking this package).
type MachineHost = machine.Host

// CacheRoot is $XDG_CACHE_HOME/lite-agent/workspaces (or
// ~/.cache/lite-agent/workspaces): outside every workspace and outside
// the user's own tool caches.
func CacheRoot() (string, error) { return machine.CacheRoot() }

// WorkspaceCacheDir is the per-workspace cache directory of ws and the
// identity of ws it is keyed on (machine.WorkspaceCacheDir).
func WorkspaceCacheDir(root, ws string) (dir, identity string, err error) {
	return machine.WorkspaceCacheDir(root, ws)
}

// RemoveWorkspaceCaches removes per-workspace caches under root (""
// means CacheRoot()): with all, every one; otherwise those whose
// workspace is gone or is another directory now
// (machine.RemoveWorkspaceCaches).
func RemoveWorkspaceCaches(root string, all, dryRun bool) ([]string, error) {
	return machine.RemoveWorkspaceCaches(root, all, dryRun)
}

// ResetWorkspaceCaches empties the per-workspace toolchain caches of ws,
// what `lite-agent rewind --to 0` does besides the files
// (machine.ResetWorkspaceCaches).
func ResetWorkspaceCaches(root, ws string, dryRun bool) ([]string, error) {
	return machine.ResetWorkspaceCaches(root, ws, dryRun)
}
