package policies

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Policy is a preset merged with the policy files that apply to one
// workspace.
//
// # Merge order
//
// Layers are read in this order: the preset, the user's file
// ($XDG_CONFIG_HOME/lite-agent/policy.toml), the workspace's file
// (WORKSPACE/.lite-agent/policy.toml); the caller's options (kernel
// Options, local.Config, CLI flags) come last. Rules are a union: the
// order of layers never lets one rule cancel another, because a deny
// anywhere wins over an ask anywhere, which wins over an allow anywhere.
// Where one value must be chosen — the default permission mode — the
// later layer wins. Hooks run in layer order, then file order.
//
// A preset that does not trust the workspace's file (strict) lets it only
// tighten: allow rules or a mode that asks less in it are an error, and
// its hooks are deny-only: they may deny or ask, and an allow, an
// updated_input or an updated_output from one makes it a failed hook
// (kernel.Hook.DenyOnly).
type Policy struct {
	Preset Preset
	// Mode is the default permission mode after the files; ModeSource
	// says which layer chose it.
	Mode       Mode
	ModeSource string
	// Rules: the preset's, the user file's, the workspace file's.
	Rules []Rule
	// Hooks: the user file's, then the workspace file's.
	Hooks []HookSpec
	// Files lists the policy files that were read.
	Files []string
	// Sandbox is what the files' [sandbox] tables say (user's, then
	// workspace's), merged; SandboxPolicy lays the options layer over it.
	Sandbox SandboxSettings
	// ToolchainLimit, when not nil, is a list of toolchains from a file
	// the preset does not trust to widen: only these of the toolchains in
	// force are granted.
	ToolchainLimit []string
}

// LoadOptions choose which policy files Load reads.
type LoadOptions struct {
	// UserFile is the user's policy file; "" means UserFile(), "-" none.
	UserFile string
	// NoWorkspaceFile skips the workspace's policy file.
	NoWorkspaceFile bool
}

// Load merges preset with the user's and the workspace's policy files.
// A file that does not exist is skipped; a file with an error fails the
// load with an error naming the file and the line.
func Load(preset Preset, workspace string, opts *LoadOptions) (*Policy, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	pol := &Policy{
		Preset:     preset,
		Mode:       preset.PermissionMode,
		ModeSource: "preset " + preset.Name,
		Rules:      slices.Clone(preset.Rules),
	}
	if pol.Mode == "" {
		pol.Mode = ModeDefault
	}
	userPath := o.UserFile
	if userPath == "" {
		p, err := UserFile()
		if err != nil {
			return nil, err
		}
		userPath = p
	}
	if userPath != "-" {
		f, err := LoadFile(userPath)
		if err != nil {
			return nil, err
		}
		if f != nil {
			pol.add(f, true)
		}
	}
	if !o.NoWorkspaceFile && workspace != "" {
		f, err := LoadWorkspaceFile(workspace)
		if err != nil {
			return nil, err
		}
		if f != nil {
			if !preset.TrustWorkspacePolicy {
				if err := tightenOnly(preset, f); err != nil {
					return nil, err
				}
				inForce := SandboxSettings{Network: preset.Sandbox.Network, NetworkSource: "preset " + preset.Name}
				if inForce.Network == "" {
					inForce.Network = "none"
				}
				inForce.merge(pol.Sandbox)
				if err := sandboxTightenOnly(preset, inForce, f); err != nil {
					return nil, err
				}
				if f.DefaultMode != "" && !atLeastAsStrict(f.DefaultMode, pol.Mode) {
					// "default" does not loosen the preset, but it does loosen a
					// user's "plan": judged against the mode in force, not the
					// preset's.
					return nil, &FileError{Path: f.Path, Line: lineOf(f.ModeSource), Reason: fmt.Sprintf(
						"default_mode %q: the mode in force is %q (%s), and the %s preset lets the workspace's policy file only choose a stricter one", f.DefaultMode, pol.Mode, pol.ModeSource, preset.Name)}
				}
			}
			pol.add(f, preset.TrustWorkspacePolicy)
		}
	}
	return pol, nil
}

func (pol *Policy) add(f *File, trusted bool) {
	pol.Files = append(pol.Files, f.Path)
	sb := f.Sandbox
	if !trusted && sb.Toolchains != nil && sb.Toolchains[0] != "none" {
		// A list from an untrusted file narrows what is in force ("auto"
		// from it changes nothing).
		if sb.Toolchains[0] != "auto" {
			pol.ToolchainLimit = slices.Clone(sb.Toolchains)
		}
		sb.Toolchains = nil
	}
	pol.Sandbox.merge(sb)
	pol.Rules = append(pol.Rules, f.Rules...)
	if f.DefaultMode != "" {
		pol.Mode, pol.ModeSource = f.DefaultMode, f.ModeSource
	}
	for _, h := range f.Hooks {
		h.DenyOnly = h.DenyOnly || !trusted
		pol.Hooks = append(pol.Hooks, h)
	}
}

// tightenOnly refuses what would loosen the policy in a file the preset
// does not trust.
func tightenOnly(preset Preset, f *File) error {
	for _, r := range f.Rules {
		if r.Behavior == Allow {
			return &FileError{Path: f.Path, Line: lineOf(r.Source), Reason: fmt.Sprintf(
				"allow rule %q: the %s preset does not let the workspace's policy file loosen the policy; put allow rules in your user file, or choose --preset standard", r.Text, preset.Name)}
		}
	}
	if f.DefaultMode.loosens() {
		return &FileError{Path: f.Path, Line: lineOf(f.ModeSource), Reason: fmt.Sprintf(
			"default_mode %q: the %s preset does not let the workspace's policy file choose a mode that asks less; choose it on the command line (--permission-mode) or in your user file", f.DefaultMode, preset.Name)}
	}
	return nil
}

// lineOf reads the line back from a FILE:LINE source.
func lineOf(source string) int {
	n, _ := strconv.Atoi(source[strings.LastIndexByte(source, ':')+1:])
	return n
}
