// Package pidinit is the init of a sandbox's PID namespace: a C
// constructor (init_linux.c) that runs in every program linking this
// package, before the Go runtime starts, and returns at once unless the
// process was started with argv[0] == Marker.
//
// Why an init: where the process tree is a PID namespace (unprivileged
// users without a writable cgroup, or root with Landlock ABI < 6), the
// namespace's first process gets the kernel's init semantics — signals it
// has no handler for are dropped when they come from inside (`kill $$`
// does nothing, SIGPIPE and SIGXFSZ never arrive) and orphans become its
// children. A command must not be that process. So the confined first
// process execs this program again (/proc/self/exe), which stops here,
// forks the command as PID 2, reaps orphans and reports on a pipe: "S"
// once the command's execve succeeded, "E<errno>" when it failed,
// "X<wait status>" when it ended. It is confined already when it starts
// (everything but RLIMIT_AS, which it applies after its own exec), and
// makes itself non-dumpable, so that the command cannot open the status
// pipe through /proc and forge its exit.
//
// Package sandbox imports it explicitly (as runc's main imports
// libcontainer/nsenter), so that every program that links the sandbox
// can act as the init: the binary that starts a command is the one
// re-executed as its namespace's init.
package pidinit
