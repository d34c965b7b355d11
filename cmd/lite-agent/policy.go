package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/policies"
)

const policyUsage = `usage: lite-agent policy show [NAME] [--workspace DIR] [--json]
       lite-agent policy trust [--workspace DIR] [FILE]
       lite-agent policy untrust [--workspace DIR] [FILE]`

// cmdPolicy is `lite-agent policy show [NAME] [--workspace DIR] [--json]`:
// a preset as data, and with --workspace the policy that preset and the
// policy files make for that workspace; and `policy trust|untrust`, which
// record or remove the user's trust in the workspace's policy file as it
// is now (policies/trust.go).
func cmdPolicy(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "trust" || args[0] == "untrust") {
		return cmdPolicyTrust(args[0], args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "show" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stdout, policyUsage)
			return nil
		}
		return usageErrorf("%s", policyUsage)
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
		return err // -h, or a usage error (exit 2) in one line
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
	var ws string
	if *workspace != "" {
		if ws, err = filepath.Abs(*workspace); err != nil {
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
		printWorkspaceTrust(stdout, preset, pol, ws)
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

// printWorkspaceTrust says whether the workspace's policy file may loosen
// the policy, and why not.
func printWorkspaceTrust(w io.Writer, preset policies.Preset, pol *policies.Policy, ws string) {
	var state string
	switch {
	case pol.WorkspaceTrusted:
		state = "trusted in this version: it may loosen the policy"
	case len(pol.Files) == 0 || pol.Files[len(pol.Files)-1] != policies.WorkspaceFile(ws):
		state = "none"
	case !preset.TrustWorkspacePolicy:
		state = fmt.Sprintf("read tighten-only: the %s preset never lets it loosen, trusted or not", preset.Name)
	default:
		state = "not trusted in this version (new, or changed since it was trusted): read tighten-only; `lite-agent policy trust` trusts it"
	}
	fmt.Fprintf(w, "workspace policy file  %s\n", state)
}

// cmdPolicyTrust is `lite-agent policy trust|untrust [--workspace DIR]
// [FILE]`. trust shows the workspace's policy file — or FILE, another
// file of the workspace such as the .mcp.json given to --mcp-config —
// with its path, size, SHA-256 and what it may loosen, and records that
// version in the trust store; only then may it loosen the policy (or
// widen its MCP servers' sandboxes) under standard or permissive.
// untrust removes the record. The store is outside every workspace, where
// the sandbox of commands cannot write, so the agent cannot trust a file
// for itself.
func cmdPolicyTrust(verb string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("policy "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	workspace := fs.String("workspace", "", "the workspace (default: the current directory)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: lite-agent policy %s [--workspace DIR] [FILE]\n(FILE: a file of the workspace other than its policy file, e.g. .mcp.json)\n", verb)
		fs.PrintDefaults()
	}
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		return err // -h, or a usage error (exit 2) in one line
	}
	if len(positional) > 1 {
		return usageErrorf("policy %s takes at most one file, not %q (the workspace is --workspace DIR)", verb, strings.Join(positional, " "))
	}
	ws := *workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return failf("no --workspace given and the current directory is unknown: %v", err)
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return failf("%v", err)
	}
	if len(positional) == 1 {
		return trustOtherFile(verb, ws, positional[0], stdout)
	}
	if verb == "untrust" {
		had, err := policies.Untrust("", ws)
		if err != nil {
			return failf("removing the trust record: %v", err)
		}
		fmt.Fprintf(stdout, "%s: %s\n", esc(policies.WorkspaceFile(ws)), yesNo(had, "no longer trusted", "was not trusted"))
		return nil
	}
	// The bytes shown and hashed are the ones recorded: one read.
	f, err := policies.LoadWorkspaceFile(ws)
	if err != nil {
		return failf("%v", err)
	}
	if f == nil {
		return failf("%s does not exist: nothing to trust", esc(policies.WorkspaceFile(ws)))
	}
	fmt.Fprintf(stdout, "file    %s\nsize    %d bytes\nsha256  %s\n", esc(f.Path), f.Size, hex.EncodeToString(f.Digest[:]))
	printLoosens(stdout, f)
	rec, err := policies.Trust("", ws, f)
	if err != nil {
		return failf("%v", err)
	}
	fmt.Fprintf(stdout, "trusted in this version (%s); a change to the file untrusts it\n", esc(rec))
	return nil
}

// trustOtherFile is `policy trust|untrust FILE`: a file of the workspace
// that is not its policy file — today the MCP configurations given to
// --mcp-config. It is read as --mcp-config reads it (mcp.LoadConfigIn:
// beneath the workspace, no symlink followed, a regular file within the
// cap), so the version hashed is the version loaded; what its servers
// declare is shown first, escaped (the agent may have written it).
func trustOtherFile(verb, ws, file string, stdout io.Writer) error {
	if verb == "untrust" {
		rel, err := relInWorkspace(ws, file)
		if err != nil {
			return failf("%v", err)
		}
		had, err := policies.UntrustFile("", ws, rel)
		if err != nil {
			return failf("removing the trust record: %v", err)
		}
		fmt.Fprintf(stdout, "%s: %s\n", esc(file), yesNo(had, "no longer trusted", "was not trusted"))
		return nil
	}
	c, err := mcp.LoadConfigIn(file, ws)
	if err != nil {
		return failf("%s: %v (only an MCP configuration, such as .mcp.json, is trusted this way; the policy file is trusted without FILE)", esc(file), err)
	}
	var rel string
	var digest [32]byte
	for _, sc := range c.Servers {
		rel, digest = sc.WorkspaceFile, sc.WorkspaceDigest
	}
	if rel == "" {
		if len(c.Servers) > 0 {
			return failf("%s is not in the workspace %s: a file outside it is yours already and needs no trust", esc(file), esc(ws))
		}
		return failf("%s defines no MCP server: nothing to trust", esc(file))
	}
	if filepath.Join(ws, rel) == policies.WorkspaceFile(ws) {
		return failf("%s is the workspace's policy file: trust it with `lite-agent policy trust` (no FILE)", esc(file))
	}
	fmt.Fprintf(stdout, "file    %s\nsha256  %s\n", esc(filepath.Join(ws, rel)), hex.EncodeToString(digest[:]))
	fmt.Fprintln(stdout, "once trusted, under standard and permissive its servers may have more than the agent's own commands:")
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		sc := c.Servers[name]
		sec := sc.Security()
		what := sc.URL
		if sc.Command != "" {
			what = strings.Join(append([]string{sc.Command}, sc.Args...), " ")
		}
		fmt.Fprintf(stdout, "  %s: %s (network %s, filesystem %s", esc(name), esc(what), esc(string(sec.Network)), esc(string(sec.Filesystem)))
		if len(sc.ReadOnlyPaths) > 0 {
			fmt.Fprintf(stdout, ", reads %s", esc(strings.Join(sc.ReadOnlyPaths, ", ")))
		}
		if len(sc.EnvRefs) > 0 {
			fmt.Fprintf(stdout, ", environment %s", esc(strings.Join(sc.EnvRefs, ", ")))
		}
		if len(sc.Env) > 0 {
			fmt.Fprintf(stdout, ", sets %s", esc(strings.Join(slices.Sorted(maps.Keys(sc.Env)), ", ")))
		}
		if len(sc.Headers) > 0 {
			fmt.Fprintf(stdout, ", headers %s", esc(strings.Join(slices.Sorted(maps.Keys(sc.Headers)), ", ")))
		}
		if sc.TrustAnnotations {
			fmt.Fprint(stdout, ", its read-only hints believed (trustAnnotations)")
		}
		fmt.Fprintln(stdout, ")")
	}
	rec, err := policies.TrustFile("", ws, rel, digest)
	if err != nil {
		return failf("%v", err)
	}
	fmt.Fprintf(stdout, "trusted in this version (%s); a change to the file untrusts it\n", esc(rec))
	return nil
}

// relInWorkspace is file's path beneath ws, lexically (for untrust, where
// the file may be gone), through ws's real path too.
func relInWorkspace(ws, file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	bases := []string{ws}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		bases = append(bases, real)
	}
	for _, b := range bases {
		if rel, ok := paths.Rel(b, abs); ok {
			return rel, nil
		}
	}
	return "", fmt.Errorf("%s is not in the workspace %s", file, ws)
}

// printLoosens lists what a trusted workspace file may loosen: its allow
// rules, its mode, hooks that may allow or rewrite, its sandbox grants.
// It is text an agent may have written, so it is escaped (esc).
func printLoosens(w io.Writer, f *policies.File) {
	fmt.Fprintln(w, "once trusted, under standard and permissive it may loosen")
	n := 0
	line := func(format string, args ...any) {
		n++
		fmt.Fprintf(w, "  "+format+"\n", args...)
	}
	for _, r := range f.Rules {
		if r.Behavior == policies.Allow {
			line("allow %-40s %s", esc(r.Text), esc(r.Source))
		}
	}
	if f.DefaultMode != "" {
		line("default_mode %s %s", esc(string(f.DefaultMode)), esc(f.ModeSource))
	}
	for _, h := range f.Hooks {
		m := h.Matcher
		if m == "" {
			m = "*"
		}
		line("hook %s %s: %s (may allow and rewrite) %s", esc(string(h.Event)), esc(m), esc(h.Command), esc(h.Source))
	}
	sb := f.Sandbox
	if sb.Network != "" {
		line("sandbox.network %s %s", esc(string(sb.Network)), esc(sb.NetworkSource))
	}
	for _, l := range []struct {
		name   string
		grants []policies.Grant
	}{{"read", sb.Read}, {"write", sb.Write}, {"env", sb.Env}, {"allow_domains", sb.AllowDomains}} {
		for _, g := range l.grants {
			line("sandbox.%s %s %s", l.name, esc(g.Value), esc(g.Source))
		}
	}
	if len(sb.Toolchains) > 0 {
		line("sandbox.toolchains %s", esc(strings.Join(sb.Toolchains, ", ")))
	}
	if sb.Git != "" {
		line("sandbox.git %s %s", esc(sb.Git), esc(sb.GitSource))
	}
	if n == 0 {
		fmt.Fprintln(w, "  (nothing: it only denies or asks)")
	}
}
