package policies

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lite-agent/lite-agent/sandbox"
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
	// WorkspaceTrusted: the workspace's file was read and may loosen the
	// policy — the preset trusts workspace files and this version is the
	// one the user trusted (Trusted).
	WorkspaceTrusted bool
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
	// TrustStore is the directory of trust records (trust.go); "" means
	// TrustStoreDir(). Under a preset that trusts the workspace's file,
	// only the version recorded there may loosen the policy.
	TrustStore string
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
			trusted := preset.TrustWorkspacePolicy && Trusted(o.TrustStore, workspace, f)
			if !trusted {
				// An untrusted version is read exactly as strict reads
				// every version: one path, whatever the reason.
				why := distrust{preset: preset, trustable: preset.TrustWorkspacePolicy, workspace: workspace}
				if err := tightenOnly(why, pol, f); err != nil {
					return nil, err
				}
			}
			pol.add(f, trusted)
			pol.WorkspaceTrusted = trusted
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

// distrust is why a workspace file may only tighten, for the errors:
// the preset never lets it loosen (strict), or the preset would but this
// version of the file is not one the user trusted.
type distrust struct {
	preset    Preset
	trustable bool
	workspace string
}

// refuse is the error for what, a loosening entry at source; remedy says
// what else the user could do under a preset that never trusts the file.
func (d distrust) refuse(f *File, source, what, remedy string) error {
	var reason string
	if d.trustable {
		reason = fmt.Sprintf("%s: the workspace's policy file is not trusted in this version (new, or changed since it was trusted; an agent's commands can write it), so it may only tighten the policy; if you wrote it, review it and run `%s`", what, TrustCommand(d.workspace))
	} else {
		reason = fmt.Sprintf("%s: the %s preset does not let the workspace's policy file %s", what, d.preset.Name, remedy)
	}
	return &FileError{Path: f.Path, Line: lineOf(source), Reason: reason}
}

// TrustCommand is the command that trusts workspace's policy file:
// `lite-agent policy trust`, with --workspace unless it is the current
// directory.
func TrustCommand(workspace string) string {
	if wd, err := os.Getwd(); err == nil {
		if a, err := filepath.Abs(workspace); err == nil && a == wd {
			return "lite-agent policy trust"
		}
	}
	return "lite-agent policy trust --workspace " + strconv.Quote(workspace)
}

// tightenOnly refuses what would loosen the policy pol in force in a
// workspace file that may not loosen it: allow rules, a mode that asks
// less than the one in force, a wider sandbox (sandboxTightenOnly).
func tightenOnly(d distrust, pol *Policy, f *File) error {
	preset := d.preset
	for _, r := range f.Rules {
		if r.Behavior == Allow {
			return d.refuse(f, r.Source, fmt.Sprintf("allow rule %q", r.Text),
				"loosen the policy; put allow rules in your user file, or choose --preset standard and trust the file (lite-agent policy trust)")
		}
	}
	if f.DefaultMode.loosens() {
		return d.refuse(f, f.ModeSource, fmt.Sprintf("default_mode %q", f.DefaultMode),
			"choose a mode that asks less; choose it on the command line (--permission-mode) or in your user file")
	}
	if f.DefaultMode != "" && !atLeastAsStrict(f.DefaultMode, pol.Mode) {
		// "default" does not loosen the preset, but it does loosen a
		// user's "plan": judged against the mode in force, not the
		// preset's.
		return d.refuse(f, f.ModeSource, fmt.Sprintf("default_mode %q: the mode in force is %q (%s)", f.DefaultMode, pol.Mode, pol.ModeSource),
			"choose a mode other than a stricter one")
	}
	inForce := SandboxSettings{Network: preset.Sandbox.Network, NetworkSource: "preset " + preset.Name, Level: sandbox.LevelFull, LevelSource: "default"}
	if inForce.Network == "" {
		inForce.Network = "none"
	}
	inForce.merge(pol.Sandbox)
	return sandboxTightenOnly(d, inForce, f)
}

// lineOf reads the line back from a FILE:LINE source.
func lineOf(source string) int {
	n, _ := strconv.Atoi(source[strings.LastIndexByte(source, ':')+1:])
	return n
}
