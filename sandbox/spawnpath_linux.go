package sandbox

import (
	"fmt"
	"syscall"

	"github.com/lite-agent/lite-agent/sandbox/internal/cgroup"
	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
	"golang.org/x/sys/unix"
)

// The sandbox's side of the spawn path (sandbox/internal/spawn): its
// errors as this package's SpawnError, and its spawner threads as the idle
// list and the cgroup slots (sandbox/internal/cgroup) hold them, joined to
// a slot's v1 directories first (cgroup.JoinV1). What the spawn path does, and in what order, is its own (see its
// doc.go); nothing here confines anything.

// SpawnError says which step of starting a confined command failed.
type SpawnError struct {
	Step  string
	Errno syscall.Errno
}

func (e *SpawnError) Error() string {
	return fmt.Sprintf("sandbox: %s: %v", e.Step, e.Errno)
}

func (e *SpawnError) Unwrap() error { return e.Errno }

// spawnError turns the spawn path's *spawn.Error into a SpawnError (its
// context, a spawner thread's, as a prefix); other errors pass as they are.
func spawnError(err error) error {
	e, ok := err.(*spawn.Error)
	if !ok {
		return err
	}
	se := &SpawnError{Step: e.Step, Errno: e.Errno}
	if e.Context != "" {
		return fmt.Errorf("sandbox: %s: %w", e.Context, se)
	}
	return se
}

// spawner is one spawner thread (spawn.Spawner): idle in Sandbox.spIdle,
// or parked in a cgroup slot's v1 directories (a cgroup.Thread).
type spawner struct {
	t *spawn.Spawner
	// refusals: what the thread's own notification server (a sealed
	// thread's) refused, read for the one command its slot runs.
	refusals *notify.RefusalLog
}

// startSpawner starts a spawner thread that joins the v1 cgroup
// directories dirs (may be none) and loads prog. supervise, if the program
// notifies, is started on the listener and stopped with the spawner.
func startSpawner(prog spawn.ThreadProgram, dirs []string, refusals *notify.RefusalLog, supervise func(listener int, mountNS uint64) (func(), error)) (*spawner, error) {
	t, err := spawn.StartSpawner(prog, cgroup.JoinV1(dirs), supervise)
	if err != nil {
		return nil, spawnError(err)
	}
	return &spawner{t, refusals}, nil
}

// spawn starts r from the spawner's thread (spawn.Spawner.Spawn).
func (sp *spawner) spawn(r *spawn.Request) (spawn.Result, error) {
	res, err := sp.t.Spawn(r)
	return res, spawnError(err)
}

// Stop ends the thread once it is idle, then its supervisor (a slot's
// cgroup.Thread: the slot stops it before removing its directories).
func (sp *spawner) Stop() { sp.t.Stop() }

// user is who the spawn path makes its instances for.
func (h *hostInfo) user() spawn.User {
	return spawn.User{Root: h.root, UID: h.uid, GID: h.gid}
}

// commandMountNS is the inode of the mount namespace a just-started
// command runs in when the sandbox made it one, else 0. The process is
// not reaped yet, so pid still names it.
func (s *Sandbox) commandMountNS(pid int) uint64 {
	if s.mountNS == spawn.MountNone {
		return 0
	}
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/ns/mnt", pid), &st) != nil {
		return 0
	}
	return st.Ino
}
