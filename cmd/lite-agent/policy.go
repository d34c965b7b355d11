package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/policies"
)

// cmdPolicy is `lite-agent policy show [NAME] [--workspace DIR] [--json]`:
// a preset as data, and with --workspace the policy that preset and the
// policy files make for that workspace.
func cmdPolicy(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "show" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stdout, "usage: lite-agent policy show [NAME] [--workspace DIR] [--json]")
			return nil
		}
		return usageErrorf("usage: lite-agent policy show [NAME] [--workspace DIR] [--json]")
	}
	fs := flag.NewFlagSet("policy show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workspace := fs.String("workspace", "", "also read this workspace's policy file and the user's, and show the merged policy")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lite-agent policy show [NAME] [--workspace DIR] [--json]")
		fs.PrintDefaults()
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{code: 2}
	}
	if len(positional) > 1 {
		return usageErrorf("policy show takes one preset name, not %q", strings.Join(positional, " "))
	}
	name := ""
	if len(positional) == 1 {
		name = positional[0]
	}
	preset, err := policies.PresetByName(name)
	if err != nil {
		return usageErrorf("%v", err)
	}
	var pol *policies.Policy
	var sbRep *policies.SandboxReport
	if *workspace != "" {
		ws, err := filepath.Abs(*workspace)
		if err != nil {
			return failf("%v", err)
		}
		if pol, err = policies.Load(preset, ws, nil); err != nil {
			return failf("%v", err)
		}
		if _, sbRep, err = pol.SandboxPolicy(ws, policies.SandboxSettings{}, &local.MachineHost{}); err != nil {
			return failf("%v", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		var v any = preset
		if pol != nil {
			v = struct {
				*policies.Policy
				SandboxInForce *policies.SandboxReport `json:"sandbox_in_force"`
			}{pol, sbRep}
		}
		if err := enc.Encode(v); err != nil {
			return failf("writing output: %v", err)
		}
		return nil
	}
	printPreset(stdout, preset)
	if pol != nil {
		printPolicy(stdout, pol)
		printSandboxReport(stdout, sbRep)
	}
	return nil
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

func printPreset(w io.Writer, p policies.Preset) {
	fmt.Fprintf(w, "preset %s\n  %s\n\n", p.Name, p.Description)
	fmt.Fprintf(w, "permission mode        %s\n", p.PermissionMode)
	fmt.Fprintf(w, "bypassPermissions      %s\n", yesNo(p.AllowBypassPermissions, "allowed with --dangerously-skip-permissions", "refused"))
	fmt.Fprintf(w, "workspace policy file  %s\n", yesNo(p.TrustWorkspacePolicy, "trusted (may allow)", "may only tighten (deny, ask, hooks that deny or ask)"))
	net := p.Sandbox.Network
	if net == "" {
		net = "none"
	}
	fmt.Fprintf(w, "commands (sandbox)     network %s; the workspace read-write, system paths read-only, a private TMPDIR, nothing of $HOME\n", net)
	fmt.Fprintf(w, "custom tools           network at most %s; filesystem unrestricted %s; external side effects %s\n",
		p.CustomToolMaxNetwork, yesNo(p.CustomToolUnrestrictedFilesystem, "allowed", "refused"), yesNo(p.CustomToolExternalSideEffects, "allowed", "refused"))
	fmt.Fprintln(w, "rules")
	printRules(w, p.Rules, false)
}

func printRules(w io.Writer, rules []policies.Rule, withSource bool) {
	if len(rules) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, r := range rules {
		if withSource {
			fmt.Fprintf(w, "  %-5s %-40s %s\n", r.Behavior, esc(r.Text), esc(r.Source))
		} else {
			fmt.Fprintf(w, "  %-5s %s\n", r.Behavior, esc(r.Text))
		}
	}
}

// printPolicy shows what the policy files add. The workspace's file is
// one an agent can write (bash may write .lite-agent/), so its rules, hook
// commands and paths are escaped for the terminal (esc, checkpoint.go).
func printPolicy(w io.Writer, pol *policies.Policy) {
	fmt.Fprintln(w, "\nwith the policy files")
	if len(pol.Files) == 0 {
		fmt.Fprintln(w, "  (none found)")
	}
	for _, f := range pol.Files {
		fmt.Fprintf(w, "  %s\n", esc(f))
	}
	fmt.Fprintf(w, "permission mode        %s (%s)\n", esc(string(pol.Mode)), esc(pol.ModeSource))
	fmt.Fprintln(w, "rules (deny wins, then ask, then allow)")
	printRules(w, pol.Rules, true)
	fmt.Fprintln(w, "hooks")
	if len(pol.Hooks) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, h := range pol.Hooks {
		m := h.Matcher
		if m == "" {
			m = "*"
		}
		fmt.Fprintf(w, "  %s %s: %s (timeout %v%s) %s\n", esc(string(h.Event)), esc(m), esc(h.Command), h.Timeout, yesNo(h.DenyOnly, ", deny/ask only", ""), esc(h.Source))
	}
}
