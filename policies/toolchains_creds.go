package policies

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox"
)

// # Credentials inside the roots a profile grants
//
// An install holds its tool's own configuration next to what the tool
// executes: npm's global npmrc in {prefix}/etc, pip's site pip.conf in
// sys.prefix (every pyenv version), Maven's conf/settings.xml in its home
// (sdkman's candidates, /etc/maven), Gradle's gradle.properties and
// init.d in its distribution, cargo's credentials.toml in a CARGO_HOME
// outside the home. Each may hold a token or a password. A profile grants
// what the tool runs and its libraries, never these: before a root is
// granted, the profile's credential files (credentialFile, patterns
// relative to the root) that exist in it are found, and the root is
// granted as its other entries instead (splitAround) — down the path to
// each such file, every sibling granted whole, the file itself not.
// Landlock cannot deny inside an allowed tree, so the tree holding a
// credential file is never allowed; the sandbox's root skeleton, made from
// the very grants, then has no name for the file at all (a tool sees no
// such file, as if it had none), and without a private mount namespace
// reading it fails with EACCES. The person grants one with --allow-read
// FILE (a policy file's [sandbox] read), which the refusal note names.
//
// What is matched is what exists when the policy is made: a credential
// file created inside an install while a session runs is granted to that
// session through its directory, and hidden from the next.

// credentialFile is one configuration file (or directory) a toolchain
// reads credentials from, as a pattern relative to a granted root
// (filepath.Match syntax, one component per '/'), and what it is.
type credentialFile struct {
	Pattern string
	What    string
}

// installCredentials are hidden in the roots of every profile: the
// per-directory rc files that tools look up from a directory upwards, and
// the home-style stores, should a root hold one.
var installCredentials = []credentialFile{
	{".npmrc", "an npm configuration"},
	{".yarnrc", "a yarn configuration"},
	{".yarnrc.yml", "a yarn configuration"},
	{".pypirc", "a PyPI upload configuration"},
	{".netrc", "a netrc (host passwords)"},
	{".git-credentials", "a git credential store"},
	{".config/git/credentials", "a git credential store"},
}

// Each profile's own, by install layout.
var (
	nodeCredentials = []credentialFile{
		{"etc/npmrc", "npm's global configuration ({prefix}/etc/npmrc, read by npm and pnpm)"},
		{"lib/node_modules/npm/npmrc", "npm's built-in configuration"},
		{"npmrc", "npm's built-in configuration"}, // a root that is npm's own directory
		// Volta keeps each node in tools/image/node/VERSION.
		{"tools/image/node/*/etc/npmrc", "npm's global configuration"},
		{"tools/image/node/*/lib/node_modules/npm/npmrc", "npm's built-in configuration"},
	}
	pythonCredentials = []credentialFile{
		{"pip.conf", "pip's site configuration (sys.prefix/pip.conf)"},
		// pyenv: each version is a sys.prefix; pyenv-virtualenv's envs too.
		{"versions/*/pip.conf", "pip's site configuration"},
		{"versions/*/envs/*/pip.conf", "pip's site configuration"},
		// uv's managed pythons: one sys.prefix per directory.
		{"*/pip.conf", "pip's site configuration"},
	}
	rustCredentials = []credentialFile{
		{"credentials", "cargo's registry tokens"},
		{"credentials.toml", "cargo's registry tokens"},
		{"config", "cargo's configuration (may hold registry tokens)"},
		{"config.toml", "cargo's configuration (may hold registry tokens)"},
	}
	javaCredentials = []credentialFile{
		{"conf/settings.xml", "Maven's global settings (server passwords)"},
		{"conf/settings-security.xml", "Maven's master password"},
		{"settings.xml", "Maven's settings (server passwords)"}, // /etc/maven, Maven's conf/ itself
		{"settings-security.xml", "Maven's master password"},
		{"gradle.properties", "Gradle's properties (repository credentials)"},
		{"init.d", "Gradle's init scripts (may carry repository credentials)"},
		// sdkman: candidates/TOOL/VERSION (and its current link).
		{"maven/*/conf/settings.xml", "Maven's global settings (server passwords)"},
		{"maven/*/conf/settings-security.xml", "Maven's master password"},
		{"gradle/*/gradle.properties", "Gradle's properties (repository credentials)"},
		{"gradle/*/init.d", "Gradle's init scripts (may carry repository credentials)"},
	}
)

// toolchainCredentials are the credential files profile name hides in
// every root it grants.
func toolchainCredentials(name string) []credentialFile {
	own := map[string][]credentialFile{"node": nodeCredentials, "python": pythonCredentials,
		"rust": rustCredentials, "java": javaCredentials}[name]
	return append(slices.Clone(installCredentials), own...)
}

// hiddenCredential is a credential file found in a granted root.
type hiddenCredential struct {
	path, what string
}

// credentialsIn lists the credential files (of list) that exist in root.
func credentialsIn(root string, list []credentialFile, h Host) []hiddenCredential {
	var out []hiddenCredential
	for _, c := range list {
		for _, m := range expandPattern(h, root, c.Pattern) {
			m = filepath.Clean(m)
			if paths.Beneath(m, root) && !slices.ContainsFunc(out, func(x hiddenCredential) bool { return x.path == m }) {
				out = append(out, hiddenCredential{m, c.What})
			}
		}
	}
	return out
}

// expandPattern is h.Glob of pattern (components separated by '/')
// beneath root, asked one component at a time: a component with a
// wildcard lists its directory (Glob of dir/component), a literal one is
// looked up by name (Glob of the literal path, an lstat). What matches is
// what h.Glob of the whole pattern matches — a name is found in a
// directory that lists it, and looked up in one that does not list it
// to the user (search permission only: more is found, and hidden) — at
// the cost of the lookups alone, where filepath.Glob lists every
// directory on the way (pythonCredentials' "*/pip.conf" read each
// directory of a pyenv root); and through a snapshot the listing of a
// directory that several patterns share is made once.
func expandPattern(h Host, root, pattern string) []string {
	matches := []string{filepath.Clean(root)}
	for comp := range strings.SplitSeq(pattern, "/") {
		if comp == "" || len(matches) == 0 {
			continue
		}
		var next []string
		for _, d := range matches {
			if strings.ContainsAny(comp, `*?[\`) {
				next = append(next, h.Glob(globQuote(d)+"/"+comp)...)
			} else {
				next = append(next, h.Glob(globQuote(filepath.Join(d, comp)))...)
			}
		}
		matches = next
	}
	if len(matches) == 1 && matches[0] == filepath.Clean(root) {
		return nil // an empty pattern names no file in root
	}
	return matches
}

// splitAround lists what granting dir without the hidden paths beneath it
// means: every entry of dir that neither is one nor holds one, whole, and
// those that hold one split the same way. An entry dir's listing cannot
// show is not granted (fail closed).
func splitAround(dir string, hidden []string, h Host) []string {
	var out []string
	for _, c := range h.Glob(filepath.Join(globQuote(dir), "*")) {
		c = filepath.Clean(c)
		switch {
		case slices.Contains(hidden, c):
		case slices.ContainsFunc(hidden, func(x string) bool { return paths.Beneath(x, c) }):
			out = append(out, splitAround(c, hidden, h)...)
		default:
			out = append(out, c)
		}
	}
	return out
}

// hideCredentials replaces every read grant of g that is, holds or lies in
// one of the credential files found (in any of g's grants) by its split,
// and notes each file with the grant that would allow it.
func (g *ToolchainGrant) hideCredentials(h Host) {
	g.hideCredentialsFrom(toolchainCredentials(g.Name), h)
}

// hideCredentialsFrom is hideCredentials with the credential files of
// list. Every root granted gets list's patterns in
// g.credentialPatterns, whether a file of them exists there or not.
func (g *ToolchainGrant) hideCredentialsFrom(list []credentialFile, h Host) {
	for _, r := range g.Read {
		g.credentialPatterns = append(g.credentialPatterns, credentialPatternsIn(r.Value, list)...)
	}
	var found []hiddenCredential
	for _, r := range g.Read {
		for _, c := range credentialsIn(r.Value, list, h) {
			if !slices.ContainsFunc(found, func(x hiddenCredential) bool { return x.path == c.path }) {
				found = append(found, c)
			}
		}
	}
	if len(found) == 0 {
		return
	}
	var credPaths []string
	for _, c := range found {
		credPaths = append(credPaths, c.path)
	}
	var read []Grant
	add := func(p string, src string) {
		if !slices.ContainsFunc(read, func(x Grant) bool { return x.Value == p }) {
			read = append(read, Grant{p, src})
		}
	}
	for _, r := range g.Read {
		switch {
		case slices.ContainsFunc(credPaths, func(c string) bool { return paths.Within(r.Value, c) }):
			// The grant is a credential file or lies in one: dropped.
		case slices.ContainsFunc(credPaths, func(c string) bool { return paths.Beneath(c, r.Value) }):
			for _, p := range splitAround(r.Value, credPaths, h) {
				add(p, r.Source)
			}
		default:
			add(r.Value, r.Source)
		}
	}
	g.Read = read
	for _, c := range found {
		g.Notes = append(g.Notes, fmt.Sprintf("%s: not granting %s (%s): grant it with --allow-read %s (or read in a policy file's [sandbox])",
			g.Name, c.path, c.what, c.path))
	}
}

// symlinkResolver is the optional Host capability of resolving a path's
// symlinks (local's MachineHost has it).
type symlinkResolver interface {
	EvalSymlinks(path string) (string, error)
}

// hideSystemCredentials takes the credential files of the profiles'
// installs beneath the system paths (/usr/etc/npmrc of a node in /usr,
// /usr/local/pip.conf of a python in /usr/local, a Maven home's
// conf/settings.xml under /usr/share) out of the system paths that hold
// them: that path is granted as its other entries (splitAround). A file
// whose real location is outside every system path (Debian's
// /usr/share/maven/conf, a link to /etc/maven) is not exposed by them, and
// the path stays whole.
func hideSystemCredentials(p *sandbox.Policy, rep *SandboxReport, tcs []ToolchainGrant, h Host) {
	sys := p.SystemPaths
	if sys == nil {
		sys = sandbox.DefaultSystemPaths()
	}
	hidden := map[string][]string{} // system path -> real paths of its credential files
	var notes []string
	for _, g := range tcs {
		list := toolchainCredentials(g.Name)
		for _, root := range g.systemRoots {
			p.CredentialPatterns = append(p.CredentialPatterns, credentialPatternsIn(root, list)...)
			for _, c := range credentialsIn(root, list, h) {
				real := c.path
				if r, ok := h.(symlinkResolver); ok {
					var err error
					if real, err = r.EvalSymlinks(c.path); err != nil {
						continue // gone: nothing to read
					}
				}
				for _, s := range sys {
					if paths.Beneath(real, s) && !slices.Contains(hidden[s], real) {
						hidden[s] = append(hidden[s], real)
						notes = append(notes, fmt.Sprintf("%s: not granting %s (%s): grant it with --allow-read %s (or read in a policy file's [sandbox])",
							g.Name, real, c.what, real))
					}
				}
			}
		}
	}
	if len(hidden) == 0 {
		return
	}
	var out []string
	for _, s := range sys {
		if hs := hidden[s]; len(hs) > 0 {
			out = append(out, splitAround(s, hs, h)...)
		} else {
			out = append(out, s)
		}
	}
	p.SystemPaths = out
	rep.Notes = append(rep.Notes, notes...)
}

// systemConfigFiles are configuration files beneath the system paths
// (sandbox.DefaultSystemPaths grants /usr and a few /etc files whole)
// that a tool reads credentials from: wget's global wgetrc (http_password),
// git's system gitconfig (an http.extraHeader with a token), npm's global
// npmrc of a node in /usr or /usr/local (_authToken), pip's site pip.conf
// of a python there (an index URL with a password), and netrc-like files.
// Each is hidden when it holds a credential (secretLine) and kept
// otherwise: a tool that cannot read a global configuration file it finds
// (wget) refuses to start, and one without secrets is what makes the tool
// behave as it does outside (a company registry in /usr/etc/npmrc).
var systemConfigFiles = []string{
	"/etc/wgetrc", "/etc/gitconfig", "/usr/etc/gitconfig", "/usr/local/etc/gitconfig", "/usr/etc/wgetrc", "/usr/local/etc/wgetrc",
	"/usr/etc/npmrc", "/usr/local/etc/npmrc", "/usr/pip.conf", "/usr/local/pip.conf", "/usr/etc/netrc", "/usr/local/etc/netrc",
}

// secretLine matches a configuration line that carries a credential:
// wgetrc's password keys, npmrc's _auth/_authToken/_password, a URL with
// user:password@, git's extraHeader (Authorization), netrc's password and
// any key naming a token or secret. Comments are not lines that count.
var secretLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(pass(word|wd)?\b|_auth|token|secret|extraheader|authorization|://[^/\s:@]+:[^/\s@]+@)`)
})

// holdsSecret reports whether a configuration file has a line that is not
// a comment and carries a credential.
func holdsSecret(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		if maySecretLine(l) && secretLine().MatchString(l) {
			return true
		}
	}
	return false
}

// maySecretLine is false for a line secretLine cannot match, found
// without the regular expression (whose compilation every `sandbox run`
// would otherwise pay for a stock /etc/wgetrc's "passive_ftp = on"): an
// ASCII line names none of its words — "pass" as a whole word or
// followed by "word" or "wd", _auth, token, secret, extraheader,
// authorization, in any case — and has no "://" with an "@" after it. A
// line with any other byte is left to the expression (its case folding
// is Unicode's).
func maySecretLine(l string) bool {
	for i := 0; i < len(l); i++ {
		if l[i] >= 0x80 {
			return true
		}
	}
	lower := strings.ToLower(l)
	for _, w := range []string{"_auth", "token", "secret", "extraheader", "authorization"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	if i := strings.Index(lower, "://"); i >= 0 && strings.Contains(lower[i:], "@") {
		return true
	}
	boundary := func(j int) bool {
		if j >= len(lower) {
			return true
		}
		c := lower[j]
		return !(c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9')
	}
	for i := 0; ; {
		k := strings.Index(lower[i:], "pass")
		if k < 0 {
			return false
		}
		j := i + k + 4
		if boundary(j) || strings.HasPrefix(lower[j:], "word") && boundary(j+4) || strings.HasPrefix(lower[j:], "wd") && boundary(j+2) {
			return true
		}
		i = i + k + 1
	}
}

// hideSystemConfigSecrets takes each systemConfigFiles entry that holds a
// credential out of the system paths that grant it (a file granted by its
// own name is dropped, one beneath a granted directory splits it:
// splitAround), whatever profiles are on, and notes the --allow-read that
// would grant it. What the policy grants by other means (--allow-read
// /etc/wgetrc) stays granted.
func hideSystemConfigSecrets(p *sandbox.Policy, rep *SandboxReport, h Host) {
	sys := p.SystemPaths
	if sys == nil {
		sys = sandbox.DefaultSystemPaths()
	}
	hidden := map[string][]string{}
	for _, f := range systemConfigFiles {
		if slices.ContainsFunc(p.ReadOnlyPaths, func(r string) bool { return paths.Within(f, r) }) {
			continue // granted on purpose
		}
		b, err := h.ReadFile(f)
		if err != nil || !holdsSecret(b) {
			continue
		}
		for _, s := range sys {
			if paths.Within(f, s) && !slices.Contains(hidden[s], f) {
				hidden[s] = append(hidden[s], f)
				rep.Notes = append(rep.Notes, fmt.Sprintf("not granting %s: it holds a credential; grant it with --allow-read %s (or read in a policy file's [sandbox])", f, f))
			}
		}
	}
	if len(hidden) == 0 {
		return
	}
	var out []string
	for _, s := range sys {
		switch hs := hidden[s]; {
		case len(hs) == 0:
			out = append(out, s)
		case slices.Contains(hs, s):
			// The file itself: not granted.
		default:
			out = append(out, splitAround(s, hs, h)...)
		}
	}
	p.SystemPaths = out
}

// # The notes' patterns
//
// sandbox.Policy.CredentialPatterns let the bash tool's note name a path
// a failed command could not read as a credential hidden from commands
// (sandbox.Sandbox.ReadRefusals). They are patterns, not the files found:
// the note must read the same whether the file exists or not (a command
// could print an error line of its own making to learn which does), and
// they grant nothing. They cover every kind this file hides: the home's
// credential paths (credentialPaths), each profile's files in each root
// it grants and in its system installs, and the system configuration
// files hidden when they hold a password. Each is named both as itself
// and with "/**" (what lies inside a credential directory).

// credentialPatternsIn are the patterns of list's files beneath root.
func credentialPatternsIn(root string, list []credentialFile) []string {
	var out []string
	for _, c := range list {
		out = append(out, credentialPattern(patternQuote(filepath.Clean(root))+"/"+c.Pattern)...)
	}
	return out
}

// credentialPattern is pattern and what lies beneath what it matches.
func credentialPattern(pattern string) []string {
	return []string{pattern, pattern + "/**"}
}

// patternQuote escapes p's doublestar metacharacters, so that a root
// named "a[1]" or "{x}" is matched as written.
func patternQuote(p string) string {
	var b strings.Builder
	for _, c := range p {
		if strings.ContainsRune(`*?[]{}\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// homeAndSystemCredentialPatterns are the patterns of the credentials
// hidden whatever profiles are on: the home's credential paths (as the
// home is named and as resolved) and systemConfigFiles.
func homeAndSystemCredentialPatterns(h Host) []string {
	var out []string
	if home := h.HomeDir(); filepath.IsAbs(home) && home != "/" {
		homes := []string{filepath.Clean(home)}
		if real := realPathOf(h, home); real != homes[0] && filepath.IsAbs(real) && real != "/" {
			homes = append(homes, real)
		}
		for _, home := range homes {
			for _, c := range credentialPaths {
				out = append(out, credentialPattern(patternQuote(home)+"/"+patternQuote(c))...)
			}
		}
	}
	for _, f := range systemConfigFiles {
		out = append(out, credentialPattern(patternQuote(f))...)
	}
	return out
}
