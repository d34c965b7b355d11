package sandbox

import (
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
	"golang.org/x/sys/unix"
)

// What a policy grants, in the spawn path's vocabulary: the Landlock rules
// (spawn.Rule, with spawn's rights RO, RW, DevRW), what the ruleset
// handles, and the host's /proc files the sandbox's /proc binds in. The
// spawn path builds the kernel objects from these (spawn.BuildRuleset,
// Mounts.AddProc, Mounts.AddRoot, whose root skeleton is made from this
// very list); which paths a policy grants, and how, is decided here only.

// devReadWrite are the device files a system path list may name that are
// also written to (`> /dev/null`). Any other device stays read-only.
var devReadWrite = map[string]bool{"/dev/null": true, "/dev/zero": true, "/dev/full": true, "/dev/tty": true}

// devPty are PseudoTerminalPaths. No rule is ever made from these paths
// (/dev/pts names the host's devpts, the user's other terminals): a
// policy naming them gets the pty rules, on the sandbox's own devpts
// instance, when it can have one (Mounts.AddDevpts).
var devPty = map[string]bool{"/dev/ptmx": true, "/dev/pts": true}

// landlockRules lists the rules of a normalized policy. tmp is the
// directory that holds per-command temporary directories (or the policy's
// TempDir).
func landlockRules(p *Policy, tmp string) []spawn.Rule {
	var rules []spawn.Rule
	for _, s := range p.SystemPaths {
		if procSelfLike(s) || devPty[s] {
			continue // see procSelfLike, devPty
		}
		acc := uint64(spawn.RO)
		if devReadWrite[s] {
			acc = spawn.DevRW
		}
		rules = append(rules, spawn.Rule{Path: s, Access: acc})
	}
	for _, s := range p.ReadOnlyPaths {
		if procSelfLike(s) {
			continue
		}
		rules = append(rules, spawn.Rule{Path: s, Access: spawn.RO})
	}
	for _, s := range p.ReadWritePaths {
		if procSelfLike(s) {
			continue
		}
		rules = append(rules, spawn.Rule{Path: s, Access: spawn.RW})
	}
	if p.Workspace != "" {
		rules = append(rules, spawn.Rule{Path: p.Workspace, Access: spawn.RW})
	}
	if tmp != "" {
		rules = append(rules, spawn.Rule{Path: tmp, Access: spawn.RW})
	}
	return rules
}

// landlockHandled returns what a ruleset for this ABI and network mode
// handles (and so denies unless a rule allows it).
func landlockHandled(abi int, mode NetworkMode) unix.LandlockRulesetAttr {
	// TCP bind/connect by port: in "none" no IP socket can even be made
	// (seccomp), Landlock refusing every port is a second wall. In the
	// supervised modes the supervisor binds and connects on its own copy of
	// the socket, so the child's own calls never run; Landlock stays out.
	return spawn.Handled(abi, mode == NetworkNone)
}

// procFiles are the host's global /proc files a policy names among its
// system paths ("/proc/cpuinfo" -> "cpuinfo"), those that exist: the
// sandbox's /proc skeleton gets them bound in (Mounts.AddProc).
func procFiles(systemPaths []string) []string {
	var files []string
	for _, p := range systemPaths {
		name, ok := paths.Rel("/proc", p)
		if !ok || name == "." || strings.Contains(name, "/") || procSelfLike(p) {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			files = append(files, name)
		}
	}
	return files
}

// wantsProc: the policy names /proc/self (DefaultSystemPaths does), so
// its commands get a /proc of the sandbox's own (Mounts.AddProc).
func wantsProc(systemPaths []string) bool {
	for _, p := range systemPaths {
		if p == "/proc/self" || p == "/proc/thread-self" {
			return true
		}
	}
	return false
}
