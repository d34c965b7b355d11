package policies

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/sandbox"
)

// Preset is a named hardening level, as data a user can read. For now it
// holds the sandbox part: the policy every command runs under and how far a
// custom tool's declared network may reach. The permission issue (#5) adds
// the default permission mode and rules.
type Preset struct {
	// Name is what --preset takes: strict, standard or permissive.
	Name string `json:"name"`
	// Description says in one line who the preset is for.
	Description string `json:"description"`
	// Sandbox is the policy for commands (the bash tool, `lite-agent
	// sandbox run`), as a template: Workspace is empty and is filled in by
	// Policy. Zero limits mean the sandbox package's defaults.
	Sandbox sandbox.Policy `json:"sandbox"`
	// CustomToolMaxNetwork is the widest network a custom tool may declare
	// in its Security; a tool declaring more is refused, not narrowed.
	CustomToolMaxNetwork sandbox.NetworkMode `json:"custom_tool_max_network"`
}

// The presets, narrowest first. Each is built fresh by its function so
// that no caller can change another caller's copy through a shared slice.
//
// The filesystem of all three is the same on purpose: the workspace
// read-write, the narrow read-only system paths of
// sandbox.DefaultSystemPaths, a private TMPDIR, and nothing of $HOME. What
// widens from one preset to the next is the network.
func strictPreset() Preset {
	return Preset{
		Name:        "strict",
		Description: "workspace-only filesystem, no network for commands; custom tools at most loopback",
		Sandbox: sandbox.Policy{
			Network: sandbox.NetworkNone,
		},
		// Issue #5: "strict: ... network none for built-ins, custom tools
		// at most loopback" (a local test server, a language server).
		CustomToolMaxNetwork: sandbox.NetworkLoopback,
	}
}

func standardPreset() Preset {
	return Preset{
		Name:        "standard",
		Description: "strict's confinement for commands (no network), custom tools at most loopback; the permission issue (#5) relaxes its rules for custom tools",
		// Today the sandbox part equals strict's: what sets standard apart
		// (custom tools that touch more than the workspace, a less asking
		// permission mode) belongs to the permission issue (#5).
		Sandbox: sandbox.Policy{
			Network: sandbox.NetworkNone,
		},
		CustomToolMaxNetwork: sandbox.NetworkLoopback,
	}
}

func permissivePreset() Preset {
	return Preset{
		Name:        "permissive",
		Description: "commands may reach any network (package installs, git fetch); the filesystem stays confined to the workspace",
		Sandbox: sandbox.Policy{
			Network: sandbox.NetworkUnrestricted,
		},
		// Even here a custom tool declaring more than loopback is refused
		// (issue #5: the assembler refuses Network beyond loopback).
		CustomToolMaxNetwork: sandbox.NetworkLoopback,
	}
}

// DefaultPreset is the preset used when none is named.
const DefaultPreset = "strict"

// Presets returns every preset, narrowest first.
func Presets() []Preset {
	return []Preset{strictPreset(), standardPreset(), permissivePreset()}
}

// PresetNames returns the preset names, narrowest first.
func PresetNames() []string {
	var names []string
	for _, p := range Presets() {
		names = append(names, p.Name)
	}
	return names
}

// PresetByName returns the named preset; "" means DefaultPreset.
func PresetByName(name string) (Preset, error) {
	if name == "" {
		name = DefaultPreset
	}
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("unknown preset %q (%s)", name, strings.Join(PresetNames(), ", "))
}

// Policy returns the preset's sandbox policy for one workspace: a copy of
// the template that shares no slice with it.
func (p Preset) Policy(workspace string) sandbox.Policy {
	pol := p.Sandbox
	pol.Workspace = workspace
	pol.ReadOnlyPaths = slices.Clone(pol.ReadOnlyPaths)
	pol.ReadWritePaths = slices.Clone(pol.ReadWritePaths)
	pol.SystemPaths = slices.Clone(pol.SystemPaths)
	pol.Env = slices.Clone(pol.Env)
	return pol
}
