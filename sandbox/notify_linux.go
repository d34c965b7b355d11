package sandbox

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
)

// The sandbox's side of the notification server (sandbox/internal/notify):
// starting it and mapping this package's vocabulary onto its options
// (the child program's capture calls are seccomp.WithCapture). Every
// decision the server makes is its own; nothing here decides a call.

// startServer is netSupervisor: notify.Start, with an unsupported kernel
// or architecture reported as this package's ErrUnsupported.
func startServer(listenerFD, pidfd, pid int, opts notify.Options) (stop func(), err error) {
	stop, err = notify.Start(listenerFD, pidfd, pid, opts)
	if errors.Is(err, notify.ErrUnsupported) {
		err = fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return stop, err
}

// internalMode is the name the notification server and the seccomp
// programs give a network mode: empty is none, as Policy.Network says,
// and an unknown mode maps to one that both refuse (the server to start,
// the programs to compile).
func internalMode(m NetworkMode) notify.Mode {
	switch m {
	case NetworkNone, "":
		return notify.ModeNone
	case NetworkLoopback:
		return notify.ModeLoopback
	case NetworkPrivate:
		return notify.ModePrivate
	case NetworkUnrestricted:
		return notify.ModeUnrestricted
	}
	return notify.Mode(255)
}

// newCapture returns the change capture of one command and its writer
// watch (foreign_linux.go), or nils when there is nothing to capture.
// The capture keeps the Landlock write rule: the read-write roots, and
// the writable devices among the policy's system paths.
func (s *Sandbox) newCapture(cmd *Command) (*notify.Capture, *foreignWatch) {
	if (cmd.BeforeChange == nil && !s.capturesAll()) || s.workspaceReal == "" {
		return nil, nil
	}
	hook := cmd.BeforeChange
	if hook == nil {
		// Captured only for the .git name rule, or because the process
		// cannot write the roots itself (capturesAll): nothing to
		// record.
		hook = func([]string) error { return nil }
	}
	var devices []string
	for _, p := range s.pol.SystemPaths {
		if devReadWrite[p] {
			devices = append(devices, p)
		}
	}
	opts := notify.CaptureOptions{Workspace: s.workspaceReal, Hook: hook,
		Binds: !s.notifyCalls.Has("bind"), Roots: s.rwRoots, Devices: devices, GitWritable: s.pol.GitWritable,
		Private: s.privateRoot, OwnRoot: s.ownRoot, OwnTmp: s.ownTmp}
	if cmd.BeforeChange != nil {
		opts.Held = cmd.Writers.registry()
	}
	fw := newForeignWatch(cmd.ForeignChange)
	if fw != nil {
		opts.Watch = fw // not a nil *foreignWatch in the interface
	}
	return notify.NewCapture(opts), fw
}

// HardLinkNames returns every name in fsys (a workspace) of the inode that
// name leads to (symlinks followed, as a write follows them), when it is a
// regular file with more than one link; nil when it is absent, not a
// regular file, or has one name. It is the one implementation of change
// capture's hard-link rule, shared with the in-process file tools; past
// its bound it returns ErrTooManyEntries.
func HardLinkNames(fsys fs.FS, name string) ([]string, error) {
	return notify.HardLinkNames(fsys, name)
}

// ErrTooManyEntries is returned by HardLinkNames when the tree is larger
// than its bound: the caller cannot know every name, and must refuse the
// change (a rewind could not bring the bytes back under the names it did
// not find).
var ErrTooManyEntries = notify.ErrTooManyEntries
