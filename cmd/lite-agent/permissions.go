package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
)

// permissionFlags adds the permission flags of `run`.
func permissionFlags(fs *flag.FlagSet, f *runFlags) {
	fs.StringVar(&f.preset, "preset", "", "hardening preset: strict, standard or permissive (default strict; see 'lite-agent policy show NAME')")
	fs.StringVar(&f.permissionMode, "permission-mode", "", "default, acceptEdits, plan, dontAsk, bypassPermissions or auto (default: the policy files', else the preset's)")
	fs.BoolVar(&f.skipPermissions, "dangerously-skip-permissions", false, "permission mode bypassPermissions: every call runs without asking; deny rules, ask rules, hooks and the sandbox still apply (not with --preset strict)")
}

// buildAgent turns the run flags into a hardened agent (package local):
// the preset, the policy files, the flags' rules and mode, and — in a
// terminal — an interactive prompt for calls that ask.
func buildAgent(f *runFlags, set map[string]bool, model provider.Model, modelName string, stdin io.Reader, stderr io.Writer) (*local.Agent, error) {
	mode := f.permissionMode
	if mode != "" {
		m, err := policies.ParseMode(mode)
		if err != nil {
			return nil, usageErrorf("--permission-mode: %v", err)
		}
		if m == policies.ModeBypassPermissions && !f.skipPermissions {
			return nil, usageErrorf("--permission-mode bypassPermissions needs --dangerously-skip-permissions")
		}
	}
	if f.skipPermissions {
		if mode != "" && mode != string(policies.ModeBypassPermissions) {
			return nil, usageErrorf("--dangerously-skip-permissions is the bypassPermissions mode; it conflicts with --permission-mode %s", mode)
		}
		mode = string(policies.ModeBypassPermissions)
	}
	if f.preset != "" {
		if _, err := policies.PresetByName(f.preset); err != nil {
			return nil, usageErrorf("--preset: %v", err)
		}
	}
	allowed, err := ruleList("--allowed-tools", f.allowedTools)
	if err != nil {
		return nil, err
	}
	disallowed, err := ruleList("--disallowed-tools", f.disallowedTools)
	if err != nil {
		return nil, err
	}
	cfg := local.Config{
		Preset:                          f.preset,
		Workspace:                       f.workspace,
		Model:                           model,
		ModelName:                       modelName,
		SystemPrompt:                    f.systemPrompt,
		MaxTokens:                       f.maxTokens,
		MaxTurns:                        f.maxTurns,
		AllowedTools:                    allowed,
		DisallowedTools:                 disallowed,
		PermissionMode:                  kernel.PermissionMode(mode),
		AllowDangerouslySkipPermissions: f.skipPermissions,
		StateDir:                        f.stateDir,
		NoCheckpoints:                   f.noCheckpoints,
	}
	if set["tools"] {
		cfg.Tools = commaList(f.tools)
	}
	if err := applyExtras(f, &cfg); err != nil {
		return nil, err
	}
	applyModelFlags(&f.modelSettings, &cfg)
	if isTerminal(stdin) {
		cfg.CanUseTool = terminalPrompt(bufio.NewReader(stdin), stderr)
	}
	agent, err := local.New(cfg)
	if err != nil {
		return nil, failf("%v", err)
	}
	return agent, nil
}

// ruleList splits a comma list of rules, keeping commas inside an
// argument pattern ("bash(git add a,b),read_file").
func ruleList(flagName, s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				if p := strings.TrimSpace(s[start:i]); p != "" {
					out = append(out, p)
				}
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, usageErrorf("%s: %q has an unclosed '('", flagName, s)
	}
	if p := strings.TrimSpace(s[start:]); p != "" {
		out = append(out, p)
	}
	return out, nil
}

// isTerminal reports whether r is a terminal (a variable for tests).
var isTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// maxShownInput bounds the input shown in a prompt.
const maxShownInput = 2000

// terminalPrompt asks a person about a call that asks: allow once, allow
// always for this session (the call's suggested rules are added), or deny.
// No answer (end of input) denies.
func terminalPrompt(in *bufio.Reader, out io.Writer) kernel.CanUseToolFunc {
	return func(ctx context.Context, name string, input json.RawMessage, info kernel.ToolUseInfo) (kernel.PermissionResult, error) {
		who := ""
		if info.Agent != "" {
			who = fmt.Sprintf(" (in the subagent %s, %s)", info.Agent, info.AgentID)
		}
		fmt.Fprintf(out, "\n? %s wants to run%s — %s\n", name, who, info.Reason)
		fmt.Fprintf(out, "  %s\n", showInput(name, input))
		always := "allow always for this session"
		if len(info.Suggestions) > 0 {
			always += " (" + strings.Join(info.Suggestions, ", ") + ")"
		}
		fmt.Fprintf(out, "  [y] allow once   [a] %s   [n] deny\n  > ", always)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			fmt.Fprintln(out)
			return kernel.PermissionResult{Message: fmt.Sprintf("the call to %s was denied: nobody answered the approval prompt", name)}, nil
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return kernel.PermissionResult{Allow: true}, nil
		case "a", "always":
			if len(info.Suggestions) == 0 {
				fmt.Fprintln(out, "  (no rule can describe this call, so it is allowed this once)")
				return kernel.PermissionResult{Allow: true}, nil
			}
			return kernel.PermissionResult{Allow: true, AllowRules: info.Suggestions}, nil
		}
		return kernel.PermissionResult{Message: fmt.Sprintf("the user denied this call to %s", name)}, nil
	}
}

// showInput renders a call's input for a person: a bash command as is,
// anything else as JSON.
func showInput(name string, input json.RawMessage) string {
	s := string(input)
	if name == policies.ShellTool {
		var v struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(input, &v) == nil && v.Command != "" {
			s = "$ " + v.Command
		}
	}
	if len(s) > maxShownInput {
		s = s[:maxShownInput] + "…"
	}
	return strings.ReplaceAll(s, "\n", "\n  ")
}

// renderPermission shows the gate at work in text output: denials and
// hook failures always (on stderr), allows with --verbose.
func renderPermission(ev kernel.Event, verbose bool, out *bufio.Writer, stderr io.Writer) {
	out.Flush()
	switch ev.Type {
	case kernel.EventHook:
		fmt.Fprintf(stderr, "[hook %s (%s) failed: %s; %s]\n", ev.Hook, ev.HookEvent, ev.Error, ev.Reason)
	case kernel.EventPermission:
		if ev.Decision == "deny" {
			fmt.Fprintf(stderr, "[denied %s: %s]\n", ev.Name, truncate(ev.Reason, 300))
		} else if verbose {
			fmt.Fprintf(stderr, "[allowed %s by %s: %s]\n", ev.Name, ev.DecidedBy, truncate(ev.Reason, 200))
		}
	}
}
