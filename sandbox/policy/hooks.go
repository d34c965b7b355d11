package policy

// ForeignFunc is told that path (absolute, inside the workspace) was
// changed by a process that is not the command's, and why it says so
// (sandbox.Command.ForeignChange).
type ForeignFunc func(path, why string)

// ChangeFunc is called before a confined process changes paths (absolute,
// symlink-free, inside the workspace: sandbox.Command.BeforeChange). The change proceeds once it returns
// nil; an error refuses the call (ENOSPC when the error says so, else
// EPERM), so that no change happens whose pre-image could not be saved.
type ChangeFunc func(paths []string) error
