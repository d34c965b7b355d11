package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lite-agent/lite-agent/internal/sandboxrun"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/sandbox"
)

// sandboxGrantFlags are the confinement flags `run` (and chat) share
// with `sandbox run`: one set of definitions (internal/sandboxrun), one
// translation into policies.SandboxSettings, so the commands cannot drift.
type sandboxGrantFlags = sandboxrun.GrantFlags

// printSandboxReport shows the sandbox of commands and where each grant
// came from: the preset, a flag, a policy file line or a toolchain
// profile. Policy file values are the workspace's (agent-writable), so
// every string is escaped for the terminal.
func printSandboxReport(w io.Writer, rep *policies.SandboxReport) {
	fmt.Fprintln(w, "\nsandbox of commands")
	fmt.Fprintf(w, "  network     %s (%s)\n", esc(string(rep.Network)), esc(rep.NetworkSource))
	tcs := "none"
	if len(rep.Toolchains) > 0 {
		var names []string
		for _, t := range rep.Toolchains {
			names = append(names, t.Name+" ("+t.Why+")")
		}
		tcs = strings.Join(names, ", ")
	}
	fmt.Fprintf(w, "  toolchains  %s [%s]\n", esc(tcs), esc(rep.ToolchainsSource))
	git := rep.Git
	if git == policies.GitWritable {
		git += " (commands may commit, and may plant hooks your git runs)"
	} else {
		git += " (.git cannot be written by commands: committing is yours)"
	}
	fmt.Fprintf(w, "  git         %s [%s]\n", esc(git), esc(rep.GitSource))
	level := string(rep.Level)
	if rep.Level == sandbox.LevelContainer {
		level += " (no namespaces: what it gives up here is listed by `lite-agent sandbox check`)"
	}
	fmt.Fprintf(w, "  level       %s [%s]\n", esc(level), esc(rep.LevelSource))
	for _, sec := range []struct {
		name   string
		grants []policies.Grant
	}{
		{"read-only", rep.Read}, {"read-write", rep.Write}, {"env", rep.Env},
		{"allow domain", rep.AllowDomains}, {"deny domain", rep.DenyDomains},
	} {
		for _, g := range sec.grants {
			fmt.Fprintf(w, "  %-12s%s  [%s]\n", sec.name, esc(g.Value), esc(g.Source))
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note        %s\n", esc(n))
	}
	for _, n := range rep.Withheld {
		fmt.Fprintf(w, "  withheld    %s\n", esc(n))
	}
}
