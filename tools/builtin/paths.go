package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lite-agent/lite-agent/internal/nocap"
	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/tools"
)

// errNoWorkspace is returned when a file tool is called without an open
// workspace root (a programming error in the embedding code, not the model's).
var errNoWorkspace = errors.New("no workspace is open for this call")

// resolvePath turns a path the model gave (relative to the workspace, or
// absolute inside it; components may be quoted as listings show them) into a clean slash-free-of-".." path relative to the
// workspace root, for use with ctx.Root. Lexical escapes are refused here
// with a message the model can act on; escapes through symlinks are refused
// by os.Root itself when the path is opened (see rootErr).
func resolvePath(ctx *tools.Context, p string) (string, error) {
	if ctx == nil || ctx.Root == nil {
		return "", errNoWorkspace
	}
	if p == "" {
		return ".", nil
	}
	// A name a listing showed quoted (names.go) is read back first, so
	// that the checks below see the name itself.
	p = unquotePath(p)
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	root := ctx.Workspace // an absolute path names the workspace's own
	if !filepath.IsAbs(p) {
		root = "."
	}
	rel, ok := paths.Rel(root, p)
	if !ok {
		return "", outsideErr(ctx, p)
	}
	return rel, nil
}

func outsideErr(ctx *tools.Context, p string) error {
	return fmt.Errorf("path %q is outside the workspace %s; only paths inside the workspace can be used", p, ctx.Workspace)
}

// rootErr rewrites errors from os.Root into messages the model can act on.
// os.Root reports a symlink (or "..") that leads outside the workspace as
// "path escapes from parent".
func rootErr(ctx *tools.Context, p string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("path %q resolves outside the workspace %s (through a symlink or '..'); only paths inside the workspace can be used", p, ctx.Workspace)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s does not exist", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", p, pe.Err)
	}
	return err
}

// Declarations shared by the built-in tools.
var (
	readOnlySecurity  = &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsNone}
	workspaceSecurity = &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsWorkspace}
)

// unprivileged wraps a file tool's handler so that its I/O runs with no
// more privilege than a confined command has: when lite-agent runs as root,
// the handler's thread drops root's capabilities (CAP_DAC_OVERRIDE,
// CAP_DAC_READ_SEARCH, CAP_FOWNER among them) for the call, so read_file
// cannot read a 0600 file of another user that `bash` cannot read either.
// A handler that starts goroutines for I/O (grep) drops them in each.
func unprivileged[In, Out any](h func(*tools.Context, In) (Out, error)) func(*tools.Context, In) (Out, error) {
	return func(ctx *tools.Context, in In) (out Out, err error) {
		if derr := nocap.Do(func() error { out, err = h(ctx, in); return nil }); derr != nil {
			return out, derr
		}
		return out, err
	}
}

// storeFullHint explains a pre-image that could not be saved because the
// disk of the checkpoint store is full: the bare "no space left on device"
// reads as if the workspace's disk were full, and the store usually lives
// on another. A refusal at the store's cap carries its own advice and is
// returned as it is.
func storeFullHint(err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(pe.Err, syscall.ENOSPC) {
		return err
	}
	return fmt.Errorf("the checkpoint store is full: the disk it is on has no space left (writing %s), whatever room the workspace has. Free space there, or shrink the store with 'lite-agent gc --max-size SIZE', then try again (%w)", pe.Path, err)
}
