package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/lite-agent/lite-agent/internal/nocap"
	"github.com/lite-agent/lite-agent/tools"
)

// errNoWorkspace is returned when a file tool is called without an open
// workspace root (a programming error in the embedding code, not the model's).
var errNoWorkspace = errors.New("no workspace is open for this call")

// resolvePath turns a path the model gave (relative to the workspace, or
// absolute inside it) into a clean slash-free-of-".." path relative to the
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
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	var rel string
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(ctx.Workspace, filepath.Clean(p))
		if err != nil {
			return "", outsideErr(ctx, p)
		}
		rel = r
	} else {
		rel = filepath.Clean(p)
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
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
