package policies

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/sandbox"
)

// Preset is a named hardening level, as data a user can read (`lite-agent
// policy show NAME`): the sandbox policy of commands, how far a custom
// tool's declared security may reach, the default permission mode and the
// default rules.
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
	// CustomToolUnrestrictedFilesystem lets a custom tool declare
	// Filesystem "unrestricted"; CustomToolExternalSideEffects lets it
	// declare SideEffects "external". The assembler refuses such tools
	// when these are false.
	CustomToolUnrestrictedFilesystem bool `json:"custom_tool_unrestricted_filesystem"`
	CustomToolExternalSideEffects    bool `json:"custom_tool_external_side_effects"`
	// PermissionMode is the mode of a session that chooses none.
	PermissionMode Mode `json:"permission_mode"`
	// AllowBypassPermissions: whether bypassPermissions may be chosen at
	// all (it still needs the explicit opt-in).
	AllowBypassPermissions bool `json:"allow_bypass_permissions"`
	// TrustWorkspacePolicy: whether the workspace's policy file may loosen
	// the policy (allow rules, a mode that asks less, hooks that allow).
	// A workspace is often someone else's code; when false, its file may
	// only tighten (deny and ask rules, deny/ask hooks).
	TrustWorkspacePolicy bool `json:"trust_workspace_policy"`
	// Rules are the preset's own rules, merged first.
	Rules []Rule `json:"rules"`
}

// protectRules keep the file tools away from what runs outside the
// sandbox later: the policy files and hooks (.lite-agent/) and git's
// hooks and configuration (.git/), which git runs unconfined when the user
// next commits. Commands cannot write .git either, unless the user sets
// [sandbox] git = "writable" (sandbox.Policy.GitWritable); these rules
// hold for the file tools even then.
var protectRules = []string{
	"write_file(.lite-agent/**)", "edit_file(.lite-agent/**)",
	"write_file(.git/**)", "edit_file(.git/**)",
}

func presetRules(name string, extra ...[2]string) []Rule {
	var out []Rule
	for _, t := range protectRules {
		r := MustParseRule(Deny, t)
		r.Source = "preset " + name
		out = append(out, r)
	}
	for _, e := range extra {
		r := MustParseRule(Behavior(e[0]), e[1])
		r.Source = "preset " + name
		out = append(out, r)
	}
	return out
}

// The presets, narrowest first. Each is built fresh by its function so
// that no caller can change another caller's copy through a shared slice.
//
// The filesystem of all three is the same on purpose: the workspace
// read-write, the narrow read-only system paths of
// sandbox.DefaultSystemPaths, a private TMPDIR, and nothing of $HOME. What
// widens from one preset to the next is the network, what custom tools may
// declare, and how much runs without asking.
func strictPreset() Preset {
	return Preset{
		Name:        "strict",
		Description: "workspace-only filesystem, no network for commands; custom tools at most loopback, workspace-only, no external side effects; no bypassPermissions; the workspace's policy file may only tighten",
		Sandbox: sandbox.Policy{
			Network: sandbox.NetworkNone,
		},
		// Issue #5: "strict: ... network none for built-ins, custom tools
		// at most loopback" (a local test server, a language server).
		CustomToolMaxNetwork: sandbox.NetworkLoopback,
		PermissionMode:       ModeDefault,
		Rules:                presetRules("strict"),
	}
}

func standardPreset() Preset {
	return Preset{
		Name:        "standard",
		Description: "strict's confinement for commands (no network); custom tools at most loopback but may declare external side effects and the whole filesystem; a few read-only commands pre-approved",
		Sandbox: sandbox.Policy{
			Network: sandbox.NetworkNone,
		},
		CustomToolMaxNetwork:             sandbox.NetworkLoopback,
		CustomToolUnrestrictedFilesystem: true,
		CustomToolExternalSideEffects:    true,
		PermissionMode:                   ModeDefault,
		AllowBypassPermissions:           true,
		TrustWorkspacePolicy:             true,
		Rules: presetRules("standard",
			[2]string{"allow", "bash(git status:*)"},
			[2]string{"allow", "bash(pwd)"},
			[2]string{"allow", "bash(ls:*)"},
		),
	}
}

func permissivePreset() Preset {
	return Preset{
		Name:        "permissive",
		Description: "commands may reach any network (package installs, git fetch); file edits run without asking; the filesystem stays confined to the workspace",
		Sandbox: sandbox.Policy{
			Network: sandbox.NetworkUnrestricted,
		},
		// Even here a custom tool declaring more than loopback is refused
		// (issue #5: the assembler refuses Network beyond loopback).
		CustomToolMaxNetwork:             sandbox.NetworkLoopback,
		CustomToolUnrestrictedFilesystem: true,
		CustomToolExternalSideEffects:    true,
		PermissionMode:                   ModeAcceptEdits,
		AllowBypassPermissions:           true,
		TrustWorkspacePolicy:             true,
		Rules: presetRules("permissive",
			[2]string{"allow", "bash(git status:*)"},
			[2]string{"allow", "bash(pwd)"},
			[2]string{"allow", "bash(ls:*)"},
		),
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

// NetworkAllowed reports whether the preset lets a custom tool declare n
// (sandbox.NetworkMode.Within its CustomToolMaxNetwork).
func (p Preset) NetworkAllowed(n sandbox.NetworkMode) bool {
	return n.Within(p.CustomToolMaxNetwork)
}
