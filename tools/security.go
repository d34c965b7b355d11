package tools

import (
	"fmt"

	"github.com/lite-agent/lite-agent/internal/levels"
	"github.com/lite-agent/lite-agent/sandbox/policy"
)

// Network is how far a tool's handler reaches over the network. It is the
// sandbox's network mode itself (an alias of policy.NetworkMode, which is
// sandbox.NetworkMode: not a copy of its words), so that a tool's
// declaration and the policy its handler runs under are one type,
// compared by one ordering: NetworkMode.Within, Narrower and Wider.
type Network = policy.NetworkMode

// The network modes, as tools declare them.
const (
	NetworkNone         = policy.NetworkNone
	NetworkLoopback     = policy.NetworkLoopback
	NetworkPrivate      = policy.NetworkPrivate
	NetworkUnrestricted = policy.NetworkUnrestricted
)

// Filesystem is how much of the filesystem a tool's handler touches.
type Filesystem string

const (
	FilesystemNone         Filesystem = "none"
	FilesystemWorkspace    Filesystem = "workspace"
	FilesystemUnrestricted Filesystem = "unrestricted"
)

// filesystemLadder orders the filesystem scopes, narrowest first.
var filesystemLadder = []Filesystem{FilesystemNone, FilesystemWorkspace, FilesystemUnrestricted}

// Within reports whether f touches no more than g ("" is none). A scope
// this package does not know is within none, and none is within it (see
// internal/levels: unknown words fail closed).
func (f Filesystem) Within(g Filesystem) bool { return levels.Within(filesystemLadder, f, g) }

// Wider returns the wider of f and g ("" is none; an unknown scope wins).
func (f Filesystem) Wider(g Filesystem) Filesystem { return levels.Wider(filesystemLadder, f, g) }

// SideEffects is where a tool's effects land.
type SideEffects string

const (
	SideEffectsNone      SideEffects = "none"
	SideEffectsWorkspace SideEffects = "workspace"
	SideEffectsExternal  SideEffects = "external"
)

// sideEffectsLadder orders the side-effect scopes, narrowest first.
var sideEffectsLadder = []SideEffects{SideEffectsNone, SideEffectsWorkspace, SideEffectsExternal}

// Within reports whether s lands no further than t ("" is none; unknown
// scopes fail closed as for Filesystem.Within).
func (s SideEffects) Within(t SideEffects) bool { return levels.Within(sideEffectsLadder, s, t) }

// Wider returns the wider of s and t ("" is none; an unknown scope wins).
func (s SideEffects) Wider(t SideEffects) SideEffects { return levels.Wider(sideEffectsLadder, s, t) }

// Security declares what a tool touches. Network is required; the other
// fields default to the narrowest value ("none") when empty. The hardened
// assembler refuses custom tools that declare nothing, and each handler runs
// under the sandbox profile its declaration allows — so declare honestly.
type Security struct {
	Network     Network     `json:"network"`
	Filesystem  Filesystem  `json:"filesystem,omitempty"`
	SideEffects SideEffects `json:"sideEffects,omitempty"`
}

// Validate reports the first field of s that is missing or has an unknown
// value, naming the field.
func (s *Security) Validate() error {
	switch s.Network {
	case NetworkNone, NetworkLoopback, NetworkPrivate, NetworkUnrestricted:
	case "":
		return fmt.Errorf("security.network is required (none, loopback, private or unrestricted)")
	default:
		return fmt.Errorf("security.network: unknown value %q (want none, loopback, private or unrestricted)", s.Network)
	}
	switch s.Filesystem {
	case "", FilesystemNone, FilesystemWorkspace, FilesystemUnrestricted:
	default:
		return fmt.Errorf("security.filesystem: unknown value %q (want none, workspace or unrestricted)", s.Filesystem)
	}
	switch s.SideEffects {
	case "", SideEffectsNone, SideEffectsWorkspace, SideEffectsExternal:
	default:
		return fmt.Errorf("security.sideEffects: unknown value %q (want none, workspace or external)", s.SideEffects)
	}
	return nil
}

// Normalized returns a copy of s with empty optional fields set to "none".
func (s Security) Normalized() Security {
	if s.Filesystem == "" {
		s.Filesystem = FilesystemNone
	}
	if s.SideEffects == "" {
		s.SideEffects = SideEffectsNone
	}
	return s
}

// Annotations are MCP-style hints about a tool's behaviour. They are hints
// for the permission gate and the user interface, not guarantees: the
// sandbox enforces, annotations inform.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Bool returns a pointer to b, for the optional hints.
func Bool(b bool) *bool { return &b }
