package sandbox

import "time"

// NetworkMode is how much network a confined process may reach.
type NetworkMode string

const (
	// NetworkNone: no AF_INET/AF_INET6 sockets at all. The default.
	NetworkNone NetworkMode = "none"
	// NetworkLoopback: 127.0.0.0/8 and ::1 only.
	NetworkLoopback NetworkMode = "loopback"
	// NetworkPrivate: loopback plus 10/8, 172.16/12, 192.168/16, fc00::/7.
	NetworkPrivate NetworkMode = "private"
	// NetworkUnrestricted: no network filter.
	NetworkUnrestricted NetworkMode = "unrestricted"
)

// Limits bound what one confined command may consume. Zero means the
// preset's default.
type Limits struct {
	WallTime    time.Duration
	MemoryBytes int64
	Processes   int
	FileBytes   int64
	OutputBytes int64
}

// Policy describes the confinement of one command or handler: what it may
// read and write, which network it may reach, which environment it sees and
// what it may consume. A Policy is plain data; building and applying the
// kernel rules from it is the job of this package's confined child.
type Policy struct {
	// Workspace is the only directory writable by default.
	Workspace string
	// ReadOnlyPaths and ReadWritePaths extend the workspace.
	ReadOnlyPaths  []string
	ReadWritePaths []string
	// Network is the network mode; empty means NetworkNone.
	Network NetworkMode
	// Env lists the environment variables passed to the child, as NAME
	// (copied from the parent) or NAME=VALUE.
	Env []string
	// Limits bound the child's resources.
	Limits Limits
}
