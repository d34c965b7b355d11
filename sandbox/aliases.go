package sandbox

import "github.com/lite-agent/lite-agent/sandbox/policy"

// The policy types are declared in package policy, which is pure data, so
// that packages describing confinement (tools, presets) need not link
// the sandbox; here they are the same types under the names this
// package's API and documentation use.
type (
	Policy         = policy.Policy
	Limits         = policy.Limits
	Level          = policy.Level
	NetworkMode    = policy.NetworkMode
	NetworkEvent   = policy.NetworkEvent
	DomainQuestion = policy.DomainQuestion
	DomainDecision = policy.DomainDecision
	ChangeFunc     = policy.ChangeFunc
	ForeignFunc    = policy.ForeignFunc
)

// The network modes (see policy.NetworkMode).
const (
	NetworkNone         = policy.NetworkNone
	NetworkLoopback     = policy.NetworkLoopback
	NetworkPrivate      = policy.NetworkPrivate
	NetworkUnrestricted = policy.NetworkUnrestricted
)

// The levels (see policy.Level).
const (
	LevelFull      = policy.LevelFull
	LevelContainer = policy.LevelContainer
)

// The answers to a DomainQuestion (see policy.DomainDecision).
const (
	DomainRefuse       = policy.DomainRefuse
	DomainAllowOnce    = policy.DomainAllowOnce
	DomainAllowSession = policy.DomainAllowSession
	DomainAllowAlways  = policy.DomainAllowAlways
)

// ParseNetworkMode checks a mode given as text (policy.ParseNetworkMode).
func ParseNetworkMode(s string) (NetworkMode, error) { return policy.ParseNetworkMode(s) }

// ParseLevel checks a level given as text (policy.ParseLevel).
func ParseLevel(s string) (Level, error) { return policy.ParseLevel(s) }

// DefaultSystemPaths are the read-only paths a shell, git, python3 and cc
// need (policy.DefaultSystemPaths).
func DefaultSystemPaths() []string { return policy.DefaultSystemPaths() }

// PseudoTerminalPaths are the system paths a program that needs a
// terminal opens (policy.PseudoTerminalPaths).
func PseudoTerminalPaths() []string { return policy.PseudoTerminalPaths() }

// DefaultEnv is the environment allowlist (policy.DefaultEnv).
func DefaultEnv() []string { return policy.DefaultEnv() }
