package policies

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox"
)

// # Commands resolve inside as they do outside
//
// A command name means in the sandbox what it means in the person's own
// shell: the sandbox's PATH is the person's PATH, in their order, and
// nothing is put in front of it — a profile never decides that python3
// is pyenv's or that node is nvm's. What the person's PATH names is
// granted instead (personPath):
//
//   - every directory on it that the sandbox cannot read already, read-only,
//     unless it is, holds or lies in a credential path: then it is left
//     out, programs there are not found in the sandbox, and a note names
//     it and the --allow-read that would grant it (the sandbox drops an
//     unreadable PATH entry, so without the note it would vanish unsaid);
//   - where a program there is a link to an install elsewhere (nvm's npm
//     into lib/node_modules, fnm's multishell links, pipx's and uv's
//     tools), that install's root (the parent of the bin/ it links
//     into), read-only; a link to anything else grants the program it
//     names, not its directory;
//   - a version manager's own files, read the way its shims read them:
//     a directory of pyenv shims (or pyenv's bin) grants $PYENV_ROOT —
//     pyenv then picks the version from PYENV_VERSION, the workspace's
//     .python-version or $PYENV_ROOT/version, as the person's shell would;
//     a directory holding rustup's proxies grants $RUSTUP_HOME (its
//     settings and toolchains; rust-toolchain.toml is the workspace's);
//     Volta's bin grants $VOLTA_HOME. Each root's tool configuration
//     files (pip.conf, npmrc...) stay hidden (toolchains_creds.go);
//   - the variables that select a version (versionSelectors), when the
//     person has them: PYENV_VERSION, RUSTUP_TOOLCHAIN, JAVA_HOME,
//     GOTOOLCHAIN... JAVA_HOME's directory is granted read-only with
//     them, since Maven's and Gradle's scripts run $JAVA_HOME/bin/java.
//
// This holds whatever profiles are on (--toolchains none too): profiles
// add caches, settings and their tools' install roots, never a PATH
// entry.

// versionSelectors are the variables a version manager or a toolchain's
// launcher reads to choose what a command runs. None holds a secret.
var versionSelectors = []string{
	"PYENV_ROOT", "PYENV_VERSION", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "VOLTA_HOME",
	"NVM_DIR", "NVM_BIN", "FNM_DIR", "FNM_MULTISHELL_PATH", "JAVA_HOME", "SDKMAN_DIR",
	"GOTOOLCHAIN", "UV_PYTHON",
}

// managerVariable is the variable naming each version manager's root.
var managerVariable = map[string]string{"pyenv": "PYENV_ROOT", "rustup": "RUSTUP_HOME", "volta": "VOLTA_HOME"}

// maxPathLinks bounds the programs looked at in one PATH directory for
// links to installs elsewhere: a PATH directory holding thousands of
// links (a distribution's whole bin) is a system path, skipped anyway.
const maxPathLinks = 512

// versionManagerRoot returns the root of the version manager whose files
// a PATH directory dir (resolved) is, and the manager's name, or "".
func versionManagerRoot(dir string, h Host) (root, manager string) {
	home := h.HomeDir()
	// pyenv: shims/ and bin/ of $PYENV_ROOT, and plugins' shims (pyenv-
	// virtualenv's); the root is where libexec/pyenv is, which every
	// shim execs.
	if r := h.Getenv("PYENV_ROOT"); r != "" && paths.Within(dir, r) {
		return filepath.Clean(r), "pyenv"
	}
	for d, i := dir, 0; i < 4 && d != "/" && d != home; d, i = filepath.Dir(d), i+1 {
		if h.Exists(filepath.Join(d, "libexec", "pyenv")) {
			return d, "pyenv"
		}
	}
	// rustup: its proxies (cargo, rustc...) sit beside rustup in
	// $CARGO_HOME/bin and read $RUSTUP_HOME.
	if h.Exists(filepath.Join(dir, "rustup")) {
		if r := h.Getenv("RUSTUP_HOME"); r != "" {
			return filepath.Clean(r), "rustup"
		}
		if r := filepath.Join(home, ".rustup"); home != "" && h.Exists(r) {
			return r, "rustup"
		}
	}
	// Volta: its shims in $VOLTA_HOME/bin run the tools in
	// $VOLTA_HOME/tools.
	volta := h.Getenv("VOLTA_HOME")
	if volta == "" && home != "" {
		volta = filepath.Join(home, ".volta")
	}
	if filepath.Base(dir) == "bin" && filepath.Dir(dir) == filepath.Clean(volta) {
		return filepath.Clean(volta), "volta"
	}
	return "", ""
}

// managerCredentials are the configuration files hidden in a version
// manager's root: the same as its toolchain profile's.
func managerCredentials(manager string) []credentialFile {
	switch manager {
	case "pyenv":
		return toolchainCredentials("python")
	case "volta":
		return toolchainCredentials("node")
	case "java":
		return toolchainCredentials("java")
	case "rustup":
		return toolchainCredentials("rust")
	}
	return slices.Clone(installCredentials)
}

// installRoot is the directory a program at real (symlinks resolved)
// needs: its directory, or the parent of a bin/ (an install prefix: nvm's
// lib/node_modules/npm for npm-cli.js in its bin/) unless that parent is
// the home, a system path or holds credentials.
func installRoot(real, home string) string {
	dir := filepath.Dir(real)
	if filepath.Base(dir) == "bin" {
		parent := filepath.Dir(dir)
		if parent != home && parent != "/" && !systemPath(parent) && credentialClash(parent, home) == "" {
			return parent
		}
	}
	return dir
}

// personPath grants what the person's PATH names (see the section
// comment), after the profiles' grants, so that the sandbox's PATH is
// theirs: nothing reordered, and nothing dropped without a note.
func personPath(p *sandbox.Policy, rep *SandboxReport, h Host) {
	home := h.HomeDir()
	userPath := h.Getenv("PATH")
	for _, e := range p.Env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			userPath = v // --env PATH=...: what the person chose for the sandbox
		}
	}
	sys := p.SystemPaths
	if sys == nil {
		sys = sandbox.DefaultSystemPaths()
	}
	// The roots already readable, each as given and as its real path:
	// resolved once here, not for every candidate (a PATH of version
	// managers' shims asks hundreds of times, and each resolution walks
	// the root's components).
	var readableRoots []string
	for _, roots := range [][]string{sys, p.ReadOnlyPaths, p.ReadWritePaths, {p.Workspace}} {
		for _, r := range roots {
			if r != "" {
				readableRoots = append(readableRoots, filepath.Clean(r), realPathOf(h, r))
			}
		}
	}
	// Asked of clean paths (grant cleans them), against clean roots.
	readable := func(clean string) bool {
		return slices.ContainsFunc(readableRoots, func(r string) bool { return paths.WithinClean(clean, r) })
	}
	// Grants are collected per kind of root, so that each kind's
	// credential files are hidden in it (hideCredentials).
	grants := map[string]*ToolchainGrant{}
	var order []string
	var notes, managerRoots []string
	grant := func(path, kind, why string) {
		path = filepath.Clean(path)
		if !filepath.IsAbs(path) || !h.Exists(path) || readable(path) {
			return
		}
		for _, g := range grants {
			if slices.ContainsFunc(g.Read, func(x Grant) bool { return paths.Within(path, x.Value) }) {
				return
			}
		}
		if c := credentialClash(path, home); c != "" {
			notes = append(notes, fmt.Sprintf("your PATH: not granting %s (%s): it would expose %s; programs there are not found in the sandbox (--allow-read %s grants it)", path, why, c, path))
			return
		}
		g := grants[kind]
		if g == nil {
			g = &ToolchainGrant{Name: kind}
			grants[kind] = g
			order = append(order, kind)
		}
		g.Read = append(g.Read, Grant{path, "your PATH (" + why + ")"})
	}
	seen := map[string]bool{} // real PATH directories already looked at
	for _, entry := range filepath.SplitList(userPath) {
		if !filepath.IsAbs(entry) {
			continue // relative: resolved in the workspace, as the sandbox keeps it
		}
		real := realPathOf(h, entry)
		if !h.Exists(real) {
			continue // names nothing, outside either
		}
		// A directory named twice (or through a link) grants what it
		// granted the first time: every grant below depends on real
		// alone, and the manager's variable on the root found.
		if seen[real] {
			continue
		}
		seen[real] = true
		if root, m := versionManagerRoot(real, h); root != "" {
			grant(root, m, m+"'s root, for "+entry)
			// Found where the manager looks by default (~/.rustup):
			// named, because the sandbox's HOME is not the person's
			// when theirs is unreadable.
			if v := managerVariable[m]; h.Getenv(v) == "" && !slices.Contains(managerRoots, v+"="+root) {
				managerRoots = append(managerRoots, v+"="+root)
			}
		}
		grant(real, "path", entry)
		if systemPath(real) {
			continue
		}
		// Every entry of the directory, in name order (as Glob of real/*
		// lists them), with its type from the listing itself.
		ents, _ := os.ReadDir(real)
		if len(ents) > maxPathLinks {
			ents = ents[:maxPathLinks]
		}
		for _, e := range ents {
			// real is canonical, so only an entry that is itself a link
			// can lead elsewhere: the others (a version manager's
			// hundred shims) cost nothing more.
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			l := filepath.Join(real, e.Name())
			target := realPathOf(h, l)
			if target == l || filepath.Dir(target) == real || !h.Exists(target) {
				continue
			}
			// An install prefix whole (nvm's lib/node_modules/npm for
			// npm-cli.js in its bin/, pipx's venv); anything else, the
			// program alone — a script linked from ~/Documents does not
			// grant ~/Documents.
			what := "the install " + filepath.Base(l) + " in " + entry + " links to"
			if root := installRoot(target, home); root != filepath.Dir(target) {
				grant(root, "path", what)
			} else {
				grant(target, "path", "the program "+filepath.Base(l)+" in "+entry+" links to")
			}
		}
	}
	// JAVA_HOME is the JDK the person's Maven and Gradle run.
	if jh := h.Getenv("JAVA_HOME"); jh != "" {
		grant(realPathOf(h, jh), "java", "$JAVA_HOME")
	}
	for _, kind := range order {
		g := grants[kind]
		g.hideCredentialsFrom(managerCredentials(kind), h)
		p.CredentialPatterns = append(p.CredentialPatterns, g.credentialPatterns...)
		for _, r := range g.Read {
			p.ReadOnlyPaths = append(p.ReadOnlyPaths, r.Value)
			rep.Read = append(rep.Read, r)
		}
		for _, n := range g.Notes {
			rep.Notes = append(rep.Notes, strings.Replace(n, kind+": ", "your PATH: ", 1))
		}
	}
	rep.Notes = append(rep.Notes, notes...)
	for _, kv := range managerRoots {
		n, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(p.Env, func(e string) bool { return strings.HasPrefix(e, n+"=") }) {
			p.Env = append(withDefaultEnv(p.Env), kv)
			rep.Env = append(rep.Env, Grant{kv, "your PATH (where its shims find it)"})
		}
	}
	// The selection variables, as the person has them (a profile's own
	// setting of the same name stays).
	for _, n := range versionSelectors {
		v := h.Getenv(n)
		if v == "" || slices.ContainsFunc(p.Env, func(e string) bool { return strings.HasPrefix(e, n+"=") }) {
			continue
		}
		p.Env = append(withDefaultEnv(p.Env), n+"="+stripUserinfo(v))
		rep.Env = append(rep.Env, Grant{n + "=" + stripUserinfo(v), "your environment (it selects what a command runs)"})
	}
}
