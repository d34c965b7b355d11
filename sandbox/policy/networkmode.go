package policy

import (
	"net/netip"

	"github.com/lite-agent/lite-agent/internal/levels"
	"github.com/lite-agent/lite-agent/internal/netmode"
)

// networkLadder orders the network modes from narrowest to widest: each
// reaches everything the one before it reaches. It is the only ordering of
// them; tools.Network is the same type, so a tool's declaration, a
// preset's limit and an MCP server's entry are compared by it too.
var networkLadder = []NetworkMode{NetworkNone, NetworkLoopback, NetworkPrivate, NetworkUnrestricted}

// Within reports whether n reaches no further than m (none < loopback <
// private < unrestricted; "" is none). A mode this package does not know
// is within no mode, and no mode is within it: a declaration or a limit
// nobody can read fails closed.
func (n NetworkMode) Within(m NetworkMode) bool { return levels.Within(networkLadder, n, m) }

// Narrower returns the narrower of n and m ("" is none): how a
// declaration meets the policy it runs under. A mode this package does
// not know never wins.
func (n NetworkMode) Narrower(m NetworkMode) NetworkMode {
	return levels.Narrower(networkLadder, n, m)
}

// Wider returns the wider of n and m ("" is none): the reach of two
// things together. A mode this package does not know always wins, so that
// the union is then within no limit.
func (n NetworkMode) Wider(m NetworkMode) NetworkMode { return levels.Wider(networkLadder, n, m) }

// Reaches reports whether a process under n may reach addr: the
// supervisor's rule for confined commands (internal/netmode), so that a
// check outside the sandbox (an MCP server's HTTP dialer) draws the same
// line. A mode this package does not know reaches nothing.
func (n NetworkMode) Reaches(addr netip.Addr) bool { return netmode.Reaches(string(n), addr) }
