// Package cgroup is the sandbox's cgroup manager: the directories that
// give each confined command a process limit that also binds root
// (pids.max), a memory limit for the whole tree, and — where the kernel
// has it — an atomic way to kill the tree (cgroup.kill) and to learn that
// it is gone (cgroup.events "populated 0"). Cgroups are optional: without
// a writable hierarchy the sandbox falls back to rlimits and a PID
// namespace (its sandbox_linux.go), or fails closed.
//
// The package is internal to the sandbox because it decides nothing: the
// sandbox reads where this process sits (Detect), decides which
// hierarchies to use for what (Plan: from what is writable and what v2
// delegates to us), and this package carries the plan out, one Manager
// per Sandbox. Nothing else in the sandbox touches a cgroup file.
//
// # Layout
//
// Under the cgroup this process already belongs to (so that an outer
// limit, such as a systemd unit's or a container's, still applies), one
// directory per Sandbox, lite-agent.<pid>.<n>.<pidns> (the maker's pid,
// a sequence number, and the inode of its PID namespace, so that nested
// lite-agents, each PID 2 of their namespace, never share a name; the
// sweep of stale directories only judges its own namespace's), and in it
// one directory per running command, c<k>. This package never writes to
// the caller's own cgroup or an ancestor's: only controllers our cgroup
// already delegates are used.
//
// # v2 and v1: no spawn migrates a process
//
// Joining a cgroup — writing to cgroup.procs or tasks — takes the kernel's
// global threadgroup rwsem for writing, and that waits for an RCU grace
// period whenever no other migration happened in the last few tens of
// milliseconds: 7-15 ms here, measured, against 6 µs back to back. So no
// spawn ever migrates a process:
//
//   - v2 (V2Set): the child is born in its directory (clone3
//     CLONE_INTO_CGROUP, which takes the locks only for reading; V2Set.FDs
//     are what the spawn passes).
//   - v1 has no such flag, but in v1 a single thread can be moved, and a
//     child forked by a thread is born in that thread's cgroups. So each
//     per-command set of v1 directories is a "slot" (Slot) with a spawner
//     thread parked in it: the thread migrates once, when the slot is made
//     (JoinV1, moving itself: the one migration without that rwsem), and
//     every command started from it is born inside. The thread is the
//     sandbox's (internal/spawn's Spawner), started by the callback
//     AcquireSlot is given, so this package does not import the spawn
//     path; it only stops the thread (Thread.Stop) before removing the
//     slot.
//
// # The pool
//
// Command directories are pooled: making one costs a mkdir (and, for a
// slot, a thread and its migration); reusing an empty one costs nothing.
// A v2 set or a slot goes back to the pool (ReleaseV2, ReleaseSlot) only
// once its tree is gone — no process can enter an empty one, since only a
// member's fork would — and its counters (oom_kill, pids max events) are
// read at acquisition (v2) or left by the previous command (Slot.Settle),
// so each command reports only what it hit. Close kills what is left,
// stops the threads and removes every directory.
//
// # Stale directories
//
// Directories of lite-agent processes that died without Close (kill -9)
// are removed by the next NewManager (cleanStale), beside the first
// command, and Close waits for that sweep: a directory whose owner pid is
// gone has the commands still running in it killed (each through a pidfd,
// after checking it is still a member, so a recycled pid is never hit),
// then is removed. A live owner's directories (another Sandbox, this
// process's included) are left alone.
package cgroup
