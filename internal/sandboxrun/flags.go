package sandboxrun

import (
	"flag"
	"strings"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/sandbox"
)

// GrantFlags are the confinement flags `run` (and chat) share
// with `sandbox run`: one set of definitions, one translation into
// policies.SandboxSettings, so the two commands cannot drift.
type GrantFlags struct {
	network     string
	allowRead   []string
	allowWrite  []string
	env         []string
	allowDomain []string
	toolchains  string
	git         string
	level       string
}

func repeatedFlag(dst *[]string) func(string) error {
	return func(v string) error { *dst = append(*dst, v); return nil }
}

// Register defines the flags on fs.
func (g *GrantFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&g.network, "network", "", "network `MODE` of commands: none, loopback, private or unrestricted (default: the preset's)")
	fs.Func("allow-read", "also allow commands to read `PATH` (repeatable)", repeatedFlag(&g.allowRead))
	fs.Func("allow-write", "also allow commands to read and write `PATH` (repeatable)", repeatedFlag(&g.allowWrite))
	fs.Func("env", "pass `NAME` from this environment, or set NAME=VALUE (repeatable); by default only a small allowlist passes, and a NAME that looks like a secret passes only as NAME=VALUE", repeatedFlag(&g.env))
	fs.Func("allow-domain", "let commands reach `DOMAIN` through lite-agent's domain proxy (repeatable, or a comma list): example.com, *.example.com, IP[:PORT], or a registry from a toolchain's own configuration: @go, @npm, @pypi, @crates, @maven, @registries", repeatedFlag(&g.allowDomain))
	fs.StringVar(&g.toolchains, "toolchains", "", "toolchain profiles: auto (default: detected from the workspace and what is installed), none, or a list such as go,node")
	fs.StringVar(&g.level, "sandbox-level", "", "`LEVEL` of the sandbox of commands: full (default: Landlock, seccomp and namespaces) or container (no namespaces, for a Docker or Podman container, a host without user namespaces, or inside another sandbox: says at the start what it gives up; `lite-agent sandbox check` lists it)")
	fs.StringVar(&g.git, "git", "", "`MODE` of the workspace's .git for commands: read-only (default: git status, diff and log work, committing is yours) or writable (commands may commit, and may also plant hooks and config that your git runs outside the sandbox)")
}

// Settings turns the flags that were given into the options layer of the
// sandbox settings, each grant sourced by its flag.
func (g *GrantFlags) Settings(set map[string]bool) (policies.SandboxSettings, error) {
	var s policies.SandboxSettings
	if set["network"] {
		if g.network == "" {
			return s, usageErrorf("--network: give none, loopback, private or unrestricted")
		}
		mode, err := sandbox.ParseNetworkMode(g.network)
		if err != nil {
			return s, usageErrorf("--network: %v", err)
		}
		s.Network, s.NetworkSource = mode, "--network"
	}
	for _, p := range g.allowRead {
		abs, err := flagPath("--allow-read", p)
		if err != nil {
			return s, err
		}
		s.Read = append(s.Read, policies.Grant{Value: abs, Source: "--allow-read"})
	}
	for _, p := range g.allowWrite {
		abs, err := flagPath("--allow-write", p)
		if err != nil {
			return s, err
		}
		s.Write = append(s.Write, policies.Grant{Value: abs, Source: "--allow-write"})
	}
	for _, e := range g.env {
		name, _, _ := strings.Cut(e, "=")
		if !validEnvName(name) {
			return s, usageErrorf("--env %q: want NAME or NAME=VALUE", e)
		}
		s.Env = append(s.Env, policies.Grant{Value: e, Source: "--env"})
	}
	for _, v := range g.allowDomain {
		for _, d := range policies.SplitList(v) {
			if err := policies.CheckDomain(d); err != nil {
				return s, usageErrorf("--allow-domain: %v", err)
			}
			s.AllowDomains = append(s.AllowDomains, policies.Grant{Value: d, Source: "--allow-domain " + d})
		}
	}
	if set["toolchains"] {
		tcs, err := policies.ParseToolchains(g.toolchains)
		if err != nil {
			return s, usageErrorf("--toolchains: %v", err)
		}
		s.Toolchains, s.ToolchainsSource = tcs, "--toolchains"
	}
	if set["git"] {
		g, err := policies.ParseGit(g.git)
		if err != nil {
			return s, usageErrorf("--git: %v", err)
		}
		s.Git, s.GitSource = g, "--git"
	}
	if set["sandbox-level"] {
		l, err := sandbox.ParseLevel(g.level)
		if err != nil || g.level == "" {
			return s, usageErrorf("--sandbox-level: give full or container")
		}
		s.Level, s.LevelSource = l, "--sandbox-level"
	}
	return s, nil
}
