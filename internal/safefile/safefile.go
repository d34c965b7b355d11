// Package safefile reads small configuration files from places an agent may
// have written.
//
// # Why
//
// A confined `bash` can write the workspace, so every file lite-agent reads
// from there at the start of the next session — a policy file, an ignore
// file, `.mcp.json`, a script — is input an adversary controls. A plain
// os.ReadFile of such a path hangs for ever on a FIFO, reads without end from
// a symlink to /dev/zero, and follows a symlink to a file the user never
// meant to load. The functions here open without following a symlink in the
// last component (and, beneath a directory, in any component), without
// blocking on a FIFO or a device, require a regular file and refuse one
// larger than the caller's cap with an error that says so.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// DefaultLimit is the cap for configuration files: 1 MiB.
const DefaultLimit = 1 << 20

// Sentinel errors, wrapped with the path in the errors returned.
var (
	// ErrNotRegular: the path names a FIFO, a device, a socket, a
	// directory or a symlink.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than the cap.
	ErrTooLarge = errors.New("file too large")
)

// openFlags never block (a FIFO with no writer, a tty), never follow a
// symlink in the last component, never make the file our controlling
// terminal.
const openFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_CLOEXEC

// ReadFile reads the regular file at path, at most limit bytes (limit <= 0
// means DefaultLimit). A symlink as the last component is refused; symlinks
// in the directories above it are followed (use ReadFileBeneath for a path
// inside a directory the agent can write). A missing file gives an error
// satisfying errors.Is(err, fs.ErrNotExist).
func ReadFile(path string, limit int64) ([]byte, error) {
	fd, err := unix.Open(path, openFlags, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	return readFD(fd, path, limit)
}

// ReadFileBeneath reads the regular file rel beneath the directory dir, at
// most limit bytes (limit <= 0 means DefaultLimit). rel must stay beneath
// dir and no component of it may be a symlink (openat2 with RESOLVE_BENEATH
// and RESOLVE_NO_SYMLINKS: the kernel decides, so a symlink planted in any
// component is refused, not followed). dir itself may be reached through
// symlinks: it is the caller's choice, not the agent's.
func ReadFileBeneath(dir, rel string, limit int64) ([]byte, error) {
	if filepath.IsAbs(rel) {
		return nil, fmt.Errorf("%s: path must be relative to %s", rel, dir)
	}
	name := filepath.Join(dir, rel)
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(dir, err)
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat2(dfd, rel, &unix.OpenHow{
		Flags:   uint64(openFlags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) {
		// Kernels before 5.6: no openat2. Refuse a symlink in the last
		// component at least, and check the result is beneath dir.
		fd, err = unix.Openat(dfd, rel, openFlags, 0)
		if err == nil {
			if real, rerr := filepath.EvalSymlinks(name); rerr != nil || !within(dir, real) {
				unix.Close(fd)
				return nil, fmt.Errorf("%s: %w (it leads outside %s)", name, ErrNotRegular, dir)
			}
		}
	}
	if err != nil {
		return nil, openError(name, err)
	}
	return readFD(fd, name, limit)
}

// within reports whether p, a real path, is dir (once resolved) or
// beneath it.
func within(dir, p string) bool {
	d, err := filepath.EvalSymlinks(dir)
	return err == nil && paths.Within(p, d)
}

func openError(path string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	case errors.Is(err, unix.ELOOP):
		// O_NOFOLLOW on a symlink, or RESOLVE_NO_SYMLINKS on the way.
		return fmt.Errorf("%s: %w (a symlink; lite-agent does not follow symlinks here)", path, ErrNotRegular)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%s: %w (it leads outside its directory)", path, ErrNotRegular)
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

func readFD(fd int, path string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kindName(st.Mode))
	}
	if st.Size > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, the limit is %d", path, ErrTooLarge, st.Size, limit)
	}
	// The file may grow between fstat and read: read at most limit+1 bytes.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, limit)
	}
	return data, nil
}

func kindName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "not a regular file"
}

// ReadUserFile reads a file the user chose — their own configuration
// file, or a path given on the command line (--mcp-config, --agents) —
// at most limit bytes (limit <= 0 means DefaultLimit). The rule, in one
// place for every such file:
//
//   - the path is resolved as the kernel resolves it (a ".." after a
//     symlink climbs from the link's target), following the user's own
//     symlinks (their directories are not the agent's to change, and
//     dotfile managers link files there), one into the workspace
//     included, but no symlink inside workspace (the directory the agent
//     can write; "" for none), since the agent may have planted it: a
//     path through one is refused;
//   - a file that lies in the workspace is read with ReadFileBeneath, so
//     that a link planted since is refused too; any other with ReadFile.
//
// Either way the file must be a regular file within the cap, opened
// without blocking.
func ReadUserFile(path, workspace string, limit int64) ([]byte, error) {
	data, _, err := ReadUserFileFrom(path, workspace, limit)
	return data, err
}

// ReadUserFileFrom is ReadUserFile that also says whether the file lay in
// the workspace — whether an agent could have written it — so that the
// caller can trust it less (an MCP configuration there may not widen a
// server's sandbox unless the user trusted that version of it): rel is
// its path beneath the workspace (the key of a trust record), or "" for
// a file outside it.
func ReadUserFileFrom(path, workspace string, limit int64) (data []byte, rel string, err error) {
	ws := "" // the workspace as the kernel finds it
	if workspace != "" {
		if ws, err = filepath.EvalSymlinks(workspace); err != nil {
			if ws, err = filepath.Abs(workspace); err != nil {
				return nil, "", &fs.PathError{Op: "open", Path: workspace, Err: err}
			}
		}
	}
	// The path as the kernel resolves it (a ".." after a link climbs from
	// the link's target), following the user's links, and a link of the
	// user's into the workspace, but no link inside the workspace.
	real, err := paths.Resolve(path, func(link string) bool { return ws == "" || !paths.Within(link, ws) })
	switch {
	case errors.Is(err, paths.ErrLinkRefused):
		return nil, "", fmt.Errorf("%s: %w (a symlink in the workspace on the way; lite-agent does not follow symlinks there)", path, ErrNotRegular)
	case err != nil:
		return nil, "", openError(path, err)
	}
	if ws != "" {
		if rel, ok := beneath(ws, real); ok {
			// Read beneath the workspace again: the kernel refuses a link
			// planted since the walk.
			data, err = ReadFileBeneath(ws, rel, limit)
			return data, rel, err
		}
	}
	data, err = ReadFile(real, limit)
	return data, "", err
}

// beneath returns p relative to dir when p is strictly inside dir
// (lexically: both are absolute and clean).
func beneath(dir, p string) (string, bool) {
	if !paths.Beneath(p, dir) {
		return "", false
	}
	return paths.Rel(dir, p)
}
