package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/internal/sandboxrun"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/sandbox"
)

// Exit codes of `lite-agent sandbox run` beyond the command's own
// (internal/sandboxrun, which runs the command).
const (
	exitSandboxFailed = sandboxrun.ExitSandboxFailed
	exitCannotExec    = sandboxrun.ExitCannotExec
	exitNotFound      = sandboxrun.ExitNotFound
)

const sandboxUsageText = `usage: lite-agent sandbox <command> [flags]

commands:
  run [flags] -- CMD [ARGS...]   run one command confined (see 'lite-agent sandbox run -h')
  check [--json] [--workspace DIR]  print what this kernel can enforce and what each preset would lose;
                                 with --workspace, the sandbox a session gets there and where each grant came from
`

// cmdSandbox dispatches `lite-agent sandbox run|check`.
func cmdSandbox(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErrorf("missing sandbox command\n%s", strings.TrimRight(sandboxUsageText, "\n"))
	}
	switch args[0] {
	case "run":
		return cmdSandboxRun(args[1:], stdin, stdout, stderr)
	case "check":
		return cmdSandboxCheck(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, sandboxUsageText)
		return nil
	}
	return usageErrorf("unknown sandbox command %q\n%s", args[0], strings.TrimRight(sandboxUsageText, "\n"))
}

// cmdSandboxRun is `sandbox run` (internal/sandboxrun, the same code as
// the lite-agent-sandbox program that this binary hands the command
// over to when it is installed beside it: entry_linux.c).
func cmdSandboxRun(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return sandboxrun.Run(args, stdin, stdout, stderr)
}

// presetReport is what one preset would get on this system: every field
// comes from a trial that just ran here (sandbox.Trial), not from the
// probe's answers.
type presetReport struct {
	Name    string `json:"name"`
	Network string `json:"network"`
	// Enforced: the preset's trial passed at the full level with nothing
	// missing and nothing lost — every guarantee of docs/security.md held.
	Enforced bool `json:"enforced"`
	// Refused is why the full level does not run the preset here: the
	// sandbox's refusal (fail closed), or the trial step that failed.
	Refused string `json:"refused,omitempty"`
	// Lost: when the preset runs, what it runs without here
	// (Enforcement.Lost); when it is refused, what --best-effort would
	// leave unenforced, as a best-effort trial just saw it.
	Lost []string `json:"lost,omitempty"`
	// BestEffortError: even best effort cannot run here.
	BestEffortError string               `json:"best_effort_error,omitempty"`
	Enforcement     *sandbox.Enforcement `json:"enforcement,omitempty"`
	// Container is the preset at --sandbox-level container.
	Container *levelReport `json:"container,omitempty"`
}

// levelReport is what one preset gets at another level, from its trial.
type levelReport struct {
	Level sandbox.Level `json:"level"`
	// Runs: the trial passed; Lost is what the level runs without here.
	Runs    bool     `json:"runs"`
	Refused string   `json:"refused,omitempty"`
	Lost    []string `json:"lost,omitempty"`
}

type checkReport struct {
	Capabilities sandbox.Capabilities `json:"capabilities"`
	// Cgroup is the cgroup version the sandbox uses here ("" for none).
	Cgroup  string         `json:"cgroup_used"`
	Presets []presetReport `json:"presets"`
	// Workspace is the sandbox of commands in --workspace DIR.
	Workspace *policies.SandboxReport `json:"workspace,omitempty"`
}

func cmdSandboxCheck(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sandbox check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	wsFlag := fs.String("workspace", "", "also show the sandbox of commands an agent session gets in `DIR` (preset, policy files, toolchain profiles) and where each grant came from")
	presetFlag := fs.String("preset", policies.DefaultPreset, "with --workspace: the preset `NAME`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lite-agent sandbox check [--json] [--workspace DIR [--preset NAME]]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{code: 2}
	}
	if fs.NArg() > 0 {
		return usageErrorf("sandbox check takes no arguments, got %q", fs.Args())
	}
	rep := checkReport{Capabilities: sandbox.Probe()}
	if *wsFlag != "" {
		preset, err := policies.PresetByName(*presetFlag)
		if err != nil {
			return usageErrorf("--preset: %v", err)
		}
		ws, err := filepath.Abs(*wsFlag)
		if err != nil {
			return usageErrorf("--workspace: %v", err)
		}
		pol, err := policies.Load(preset, ws, nil)
		if err != nil {
			return failf("%v", err)
		}
		if _, rep.Workspace, err = pol.SandboxPolicy(ws, policies.SandboxSettings{}, &local.MachineHost{}); err != nil {
			return failf("%v", err)
		}
	}
	// Each preset is prepared for real, against a throw-away workspace,
	// first as asked and then with best effort: what New refuses and what
	// Enforcement reports missing is the truth, not a guess from the probe.
	ws, err := os.MkdirTemp("", "lite-agent-check-")
	if err != nil {
		return failf("sandbox check: a scratch workspace: %v", err)
	}
	defer os.RemoveAll(ws)
	for _, p := range policies.Presets() {
		rep.Presets = append(rep.Presets, checkPreset(p, ws))
	}
	if e, err := sandbox.Decide(sandbox.Policy{Workspace: ws, BestEffort: true}); err == nil {
		rep.Cgroup = e.Cgroup
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return failf("writing output: %v", err)
		}
		return nil
	}
	printCheck(stdout, &rep)
	if rep.Workspace != nil {
		printSandboxReport(stdout, rep.Workspace)
	}
	return nil
}

func checkPreset(p policies.Preset, ws string) presetReport {
	r := presetReport{Name: p.Name, Network: string(p.Sandbox.Network)}
	pol := p.Policy(ws)
	// As an agent session runs it: with change capture (checkpoints and
	// the .git rule need it).
	pol.CaptureChanges = true
	e, err := sandbox.Trial(pol)
	switch {
	case err == nil:
		r.Enforcement = &e
		r.Enforced = len(e.Missing) == 0 && len(e.Lost) == 0
		r.Lost = e.Lost
	default:
		r.Refused = err.Error()
		// The best-effort line is what a best-effort command was just
		// seen to do, not what New expects.
		be := pol
		be.BestEffort = true
		e, err := sandbox.Trial(be)
		if err != nil {
			r.BestEffortError = err.Error()
		} else {
			r.Enforcement = &e
			r.Lost = append(slices.Clone(e.Missing), e.Lost...)
		}
	}
	c := pol
	c.Level = sandbox.LevelContainer
	r.Container = &levelReport{Level: sandbox.LevelContainer}
	if e, err := sandbox.Trial(c); err != nil {
		r.Container.Refused = err.Error()
	} else {
		r.Container.Runs, r.Container.Lost = true, e.Lost
	}
	return r
}

// landlockFeatures says what each Landlock ABI adds (see landlock(7) and
// the kernel's Documentation/userspace-api/landlock.rst).
var landlockFeatures = []string{
	1: "file access",
	2: "cross-directory links and renames (refer)",
	3: "truncate",
	4: "TCP bind/connect by port",
	5: "device ioctl",
	6: "abstract unix socket and signal scoping",
	7: "audit logging",
}

func printCheck(w io.Writer, rep *checkReport) {
	c := &rep.Capabilities
	who := "an unprivileged user"
	if c.Root {
		who = "root"
	}
	fmt.Fprintf(w, "lite-agent sandbox check: kernel %s, running as %s\n\n", orUnknown(c.Kernel), who)
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	landlock := "NO (kernel without Landlock, or it is not enabled in the lsm= boot list)"
	if c.LandlockABI > 0 {
		var have []string
		for abi := 1; abi <= c.LandlockABI && abi < len(landlockFeatures); abi++ {
			have = append(have, landlockFeatures[abi])
		}
		landlock = fmt.Sprintf("ABI %d: %s", c.LandlockABI, strings.Join(have, ", "))
		if c.LandlockABI < 6 {
			landlock += "; missing " + strings.Join(landlockFeatures[c.LandlockABI+1:7], ", ")
		}
	}
	cgroups := "none usable"
	switch {
	case c.CgroupV2 && c.CgroupWritable:
		cgroups = "v2, writable"
	case len(c.CgroupV1) > 0 && c.CgroupWritable:
		cgroups = "v1 (" + strings.Join(c.CgroupV1, ", ") + "), writable"
	case c.CgroupV2 || len(c.CgroupV1) > 0:
		cgroups = "present but NOT writable by this user"
		if len(c.CgroupV1) > 0 {
			cgroups += " (v1: " + strings.Join(c.CgroupV1, ", ") + ")"
		}
	}
	// What the sandbox's plan uses of them (sandbox.Decide), not a guess.
	if rep.Cgroup != "" {
		cgroups += "; the sandbox uses " + rep.Cgroup
	} else {
		cgroups += "; the sandbox uses none (the whole tree's memory limit is lost)"
	}
	rows := [][2]string{
		{"Landlock", landlock},
		{"seccomp filter", yes(c.Seccomp)},
		{"seccomp user notification", yes(c.SeccompUserNotify)},
		{"pidfd_getfd", yes(c.PidfdGetfd)},
		{"unshare(CLONE_FILES)", yes(c.UnshareFiles)},
		{"user namespaces", yes(c.UserNamespaces)},
		{"PID namespaces", yes(c.PIDNamespaces)},
		{"read-only mounts", yes(c.ReadOnlyMounts)},
		{"cgroups", cgroups},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-27s %s\n", r[0], r[1])
	}
	fmt.Fprintln(w, "\npresets (each tried here: a command writes, is captured and rewound, reads nothing outside, reaches no network):")
	list := func(items []string) {
		for _, it := range items {
			fmt.Fprintf(w, "%15s- %s\n", "", it)
		}
	}
	for _, p := range rep.Presets {
		head := fmt.Sprintf("  %-11s network %-13s", p.Name, p.Network)
		switch {
		case p.Enforced:
			fmt.Fprintf(w, "%s fully enforced\n", head)
			if p.Enforcement != nil && len(p.Enforcement.Notes) > 0 {
				fmt.Fprintf(w, "%13s how: %s\n", "", strings.Join(p.Enforcement.Notes, "; "))
			}
		case p.Refused == "":
			fmt.Fprintf(w, "%s runs, without:\n", head)
			list(p.Lost)
		case p.BestEffortError != "":
			fmt.Fprintf(w, "%s refused: %s\n%13s even --best-effort cannot run: %s\n", head, p.Refused, "", p.BestEffortError)
		default:
			fmt.Fprintf(w, "%s refused: %s\n", head, p.Refused)
			if len(p.Lost) > 0 {
				fmt.Fprintf(w, "%13s with --best-effort (sandbox run only) it would lose:\n", "")
				list(p.Lost)
			}
		}
		if l := p.Container; l != nil {
			switch {
			case !l.Runs:
				fmt.Fprintf(w, "%13s --sandbox-level container: refused: %s\n", "", l.Refused)
			case len(l.Lost) == 0:
				fmt.Fprintf(w, "%13s --sandbox-level container: runs, losing nothing here\n", "")
			default:
				fmt.Fprintf(w, "%13s --sandbox-level container: runs, without:\n", "")
				list(l.Lost)
			}
		}
	}
	if len(c.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
