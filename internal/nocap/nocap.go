// Package nocap runs file I/O with no more privilege than a confined
// command has.
//
// # Why
//
// The built-in file tools (read_file, write_file, edit_file, list_dir, glob,
// grep) run inside lite-agent's own process, through an os.Root on the
// workspace, while `bash` runs in a child whose capabilities are all
// dropped. When lite-agent runs as root, the process keeps
// CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER, so without this
// package the file tools could read a 0600 file of another user in the
// workspace that `bash` cannot, or write a file whose mode forbids it: the
// agent would reach more through a tool than through the shell.
//
// # How
//
// Capabilities belong to a thread, not to a process. Do locks the calling
// goroutine to its OS thread, clears that thread's effective capability set
// (the permitted set is kept, so the set can be raised again), runs the
// function, and restores the effective set. Threads the Go runtime creates
// meanwhile are cloned from its template thread, never from a locked one,
// so nothing else is affected; and a goroutine started inside fn runs on
// another thread, with the process's capabilities: fn must do its I/O on
// the calling goroutine (grep's workers call Do themselves). If the set
// cannot be restored the thread stays locked, so the runtime discards it
// when the goroutine exits instead of reusing it.
//
// With no effective capabilities (an unprivileged user) Do only calls fn.
package nocap

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn with the calling thread's effective capabilities cleared.
func Do(fn func() error) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	runtime.LockOSThread()
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("reading this thread's capabilities: %w", err)
	}
	if data[0].Effective == 0 && data[1].Effective == 0 {
		runtime.UnlockOSThread()
		return fn()
	}
	dropped := data
	dropped[0].Effective, dropped[1].Effective = 0, 0
	if err := unix.Capset(&hdr, &dropped[0]); err != nil {
		// Refuse rather than run fn with root's override.
		runtime.UnlockOSThread()
		return fmt.Errorf("dropping this thread's capabilities for file I/O: %w", err)
	}
	defer func() {
		if unix.Capset(&hdr, &data[0]) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return fn()
}

// Effective reports whether the calling thread has any effective
// capability; tests use it to check what Do changed.
func Effective() (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, err
	}
	return data[0].Effective != 0 || data[1].Effective != 0, nil
}
