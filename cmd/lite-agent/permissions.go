package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/internal/termsafe"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
)

// permissionFlags adds the permission flags of `run`.
func permissionFlags(fs *flag.FlagSet, f *runFlags) {
	fs.StringVar(&f.preset, "preset", "", "hardening preset: strict, standard or permissive (default strict; see 'lite-agent policy show NAME')")
	fs.StringVar(&f.permissionMode, "permission-mode", "", "default, acceptEdits, plan, dontAsk, bypassPermissions (alias yolo) or auto (default: the policy files', else the preset's)")
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
			return nil, usageErrorf("--permission-mode %s needs --dangerously-skip-permissions", mode)
		}
		// "yolo" is bypassPermissions: from here on only the parsed mode
		// is passed on, so no later check can be fooled by the alias.
		mode = string(m)
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
	ckptMax, err := parseStoreCap(f.checkpointMax)
	if err != nil {
		return nil, usageErrorf("--checkpoint-max-size: %v", err)
	}
	cfg := local.Config{
		Preset:            f.preset,
		NoCheckpoints:     f.noCheckpoints,
		CheckpointMaxSize: ckptMax,
		Agent: kernel.Agent{
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
		},
	}
	if set["tools"] {
		cfg.Tools = commaList(f.tools)
	}
	if cfg.SandboxGrants, err = f.sandboxGrants.Settings(set); err != nil {
		return nil, err
	}
	if err := applyExtras(f, &cfg); err != nil {
		return nil, err
	}
	applyModelFlags(&f.modelSettings, &cfg)
	cfg.OnUnknownDomain = f.onUnknownDomain
	if f.canUseTool != nil {
		cfg.CanUseTool = f.canUseTool
	} else if isTerminal(stdin) {
		cfg.CanUseTool = terminalPrompt(bufio.NewReader(stdin), stderr)
	}
	agent, err := local.New(cfg)
	if err != nil {
		return nil, failf("%v", err)
	}
	if o := agent.Options(); o.Sandbox != nil {
		if err := flagFilesOutsideWrites(o.Sandbox.ReadWritePaths, map[string]string{
			"--mcp-config": f.mcpConfig, "--agents": f.agents, "--output-schema": f.outputSchema,
		}); err != nil {
			return nil, err
		}
	}
	return agent, nil
}

// flagFilesOutsideWrites refuses a flag's file (not inline JSON) that lies
// beneath one of the session's write grants outside the workspace
// (--allow-write, a [sandbox] write, a toolchain cache): the agent's
// commands could have written it in an earlier session, yet, being
// outside the workspace, it would be read as the user's own — an MCP
// server with the user's rights, a subagent in a wider mode. A file in
// the workspace is judged as the agent's already (mcp.LoadConfigIn,
// workspaceAgentsWiden).
func flagFilesOutsideWrites(writes []string, files map[string]string) error {
	for _, flagName := range slices.Sorted(maps.Keys(files)) {
		v := files[flagName]
		if v == "" || strings.HasPrefix(strings.TrimSpace(v), "{") {
			continue
		}
		// Resolved as the kernel, and the reader
		// (safefile.ReadUserFileFrom), resolve it: the file checked is
		// the file read (a ".." after a link climbs from its target).
		real, err := paths.Resolve(v, nil)
		if err != nil {
			continue // reading it has said what is wrong
		}
		for _, w := range writes {
			if paths.Within(real, paths.Real(w)) {
				return failf("%s %s lies beneath %s, which the agent's commands may write: it could have been planted there. Move it outside every write grant (or pass it inline)", flagName, esc(v), esc(w))
			}
		}
	}
	return nil
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

// lineReader reads the answers to the approval prompt without ever
// blocking the run: the read itself (which no context can interrupt)
// runs in a goroutine, and the prompt waits on it or on the run's context,
// so that Ctrl-C (SIGINT cancels the context, see cmdRun) stops the agent
// at the prompt at once instead of after the next Enter. At most one read
// is outstanding and it starts only when a prompt asks: nothing typed
// ahead is read before the prompt that it answers has been shown, and a
// read left waiting by an interrupted prompt answers the next one.
type lineReader struct {
	in      *bufio.Reader
	mu      sync.Mutex
	pending chan lineResult // the outstanding read, nil when none
}

type lineResult struct {
	line string
	err  error
}

func (r *lineReader) readLine(ctx context.Context) (string, error) {
	r.mu.Lock()
	if r.pending == nil {
		ch := make(chan lineResult, 1)
		r.pending = ch
		go func() {
			line, err := r.in.ReadString('\n')
			ch <- lineResult{line, err}
		}()
	}
	ch := r.pending
	r.mu.Unlock()
	select {
	case res := <-ch:
		r.mu.Lock()
		r.pending = nil
		r.mu.Unlock()
		return res.line, res.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// terminalPrompt asks a person about a call that asks: allow once, allow
// always for this session (the call's suggested rules are added), or deny.
// No answer (end of input) denies; an interrupt (Ctrl-C) denies and stops
// the run.
//
// Everything shown comes from the agent (the tool name and input, a
// subagent's name, a hook's reason, the suggested rules) and goes through
// termsafe: a command holding "\r" or cursor-movement escapes would
// otherwise show as something else than what runs.
func terminalPrompt(in *bufio.Reader, out io.Writer) kernel.CanUseToolFunc {
	lr := &lineReader{in: in}
	// One prompt at a time: parallel calls would interleave their
	// questions and take each other's answers.
	turn := make(chan struct{}, 1)
	return func(ctx context.Context, name string, input json.RawMessage, info kernel.ToolUseInfo) (kernel.PermissionResult, error) {
		interrupted := kernel.PermissionResult{Interrupt: true,
			Message: fmt.Sprintf("the call to %s was denied: the user interrupted the run at the approval prompt", name)}
		select {
		case turn <- struct{}{}:
			defer func() { <-turn }()
		case <-ctx.Done():
			return interrupted, nil
		}
		who := ""
		if info.Agent != "" {
			who = fmt.Sprintf(" (in the subagent %s, %s)", termsafe.Escape(info.Agent), termsafe.Escape(info.AgentID))
		}
		fmt.Fprintf(out, "\n? %s wants to run%s — %s\n", termsafe.Escape(name), who, termsafe.Escape(info.Reason))
		shown, warn := showInput(name, input)
		fmt.Fprintf(out, "  %s\n", shown)
		if warn != "" {
			fmt.Fprintf(out, "  (%s)\n", warn)
		}
		always := "allow always for this session"
		if len(info.Suggestions) > 0 {
			always += " (" + termsafe.Escape(strings.Join(info.Suggestions, ", ")) + ")"
		}
		fmt.Fprintf(out, "  [y] allow once   [a] %s   [n] deny\n  > ", always)
		line, err := lr.readLine(ctx)
		if ctx.Err() != nil {
			fmt.Fprintln(out, "\n  (interrupted)")
			return interrupted, nil
		}
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
// escaped (termsafe.Text: lines stay lines, indented under the question),
// anything else as its JSON (termsafe.JSON: on one line, with JSON's own
// escapes); bounded. warn says what the person must know to read it
// right: that it held characters now shown as escapes, that a backslash
// of its own is shown doubled (where it could pass for an escape), or
// that its end is not shown.
func showInput(name string, input json.RawMessage) (shown, warn string) {
	s := string(input)
	render := termsafe.JSON
	if name == policies.ShellTool {
		var v struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(input, &v) == nil && v.Command != "" {
			s, render = "$ "+v.Command, termsafe.Text
		}
	}
	var warns []string
	plain := termsafe.Safe(strings.NewReplacer("\n", "", "\t", "").Replace(s))
	switch {
	case !plain:
		warns = append(warns, "it holds control or invisible characters, shown as \\x.. and \\u.. escapes")
	case strings.Count(render(s), `\`) > strings.Count(s, `\`):
		// Nothing to hide, yet changed: termsafe doubled a backslash
		// followed by x, u, U or r, so that it cannot pass for an
		// escape. The person must not read it as two.
		warns = append(warns, `a backslash before x, u, U or r is shown doubled (\\x), so that it cannot pass for an escape`)
	}
	if len(s) > maxShownInput {
		cut := maxShownInput
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut-- // never show half a character
		}
		warns = append(warns, fmt.Sprintf("%d more bytes are not shown", len(s)-cut))
		s = s[:cut] + "…"
	}
	return strings.ReplaceAll(render(s), "\n", "\n  "), strings.Join(warns, "; ")
}

// renderPermission shows the gate at work in text output: denials and
// hook failures always (on stderr), allows with --verbose.
func renderPermission(ev kernel.Event, verbose bool, out *bufio.Writer, stderr io.Writer) {
	out.Flush()
	switch ev.Type {
	case kernel.EventHook:
		h := ev.Hook
		fmt.Fprintf(stderr, "[hook %s (%s) failed: %s; %s]\n", termsafe.Escape(h.Hook), termsafe.Escape(string(h.Event)), termsafe.Escape(h.Error), termsafe.Escape(h.Outcome))
	case kernel.EventPermission:
		if ev.Permission.Decision == "deny" {
			fmt.Fprintf(stderr, "[denied %s: %s]\n", termsafe.Escape(ev.Permission.Name), field(ev.Permission.Reason, 300))
		} else if verbose {
			fmt.Fprintf(stderr, "[allowed %s by %s: %s]\n", termsafe.Escape(ev.Permission.Name), termsafe.Escape(ev.Permission.DecidedBy), field(ev.Permission.Reason, 200))
		}
	}
}
