package policies

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox"
)

// Grant is one value of a sandbox setting and where it came from: a flag
// ("--allow-read"), a policy file line (FILE:LINE), "local.Config", a
// preset or a toolchain profile. `policy show` and `sandbox check
// --workspace` print the source next to every grant, so a person can see
// why a path is readable.
type Grant struct {
	Value  string `json:"value"`
	Source string `json:"source"`
}

// SandboxSettings are what one layer — a policy file's [sandbox] table,
// the command line, local.Config — says about the sandbox of commands.
// The zero value says nothing.
type SandboxSettings struct {
	// Network is "" when the layer sets none.
	Network       sandbox.NetworkMode `json:"network,omitempty"`
	NetworkSource string              `json:"network_source,omitempty"`
	// AllowDomains and DenyDomains go to sandbox.Policy after expansion
	// of the @go, @npm, ... registry grants (toolchains.go).
	AllowDomains []Grant `json:"allow_domains,omitempty"`
	DenyDomains  []Grant `json:"deny_domains,omitempty"`
	// Read and Write are absolute paths (a policy file's relative path is
	// taken against its workspace); Env is NAME or NAME=VALUE.
	Read  []Grant `json:"read,omitempty"`
	Write []Grant `json:"write,omitempty"`
	Env   []Grant `json:"env,omitempty"`
	// Toolchains is nil when the layer sets none, else ["auto"], ["none"]
	// or profile names (ParseToolchains).
	Toolchains       []string `json:"toolchains,omitempty"`
	ToolchainsSource string   `json:"toolchains_source,omitempty"`
	// Git is "" when the layer sets none, else GitReadOnly or
	// GitWritable (sandbox.Policy.GitWritable).
	Git       string `json:"git,omitempty"`
	GitSource string `json:"git_source,omitempty"`
	// Level is "" when the layer sets none, else the sandbox's level
	// (sandbox.Policy.Level): LevelContainer runs commands without
	// namespaces, and is only ever used when named here, in a flag
	// (--sandbox-level) or in a file the user trusts.
	Level       sandbox.Level `json:"level,omitempty"`
	LevelSource string        `json:"level_source,omitempty"`
}

// The values of the [sandbox] git key and the --git flag: whether
// commands may write the workspace's .git (sandbox.Policy.GitWritable).
// Read-only is the default; writable lets an agent commit, and also lets
// it plant hooks and config that the user's git runs outside the sandbox.
const (
	GitReadOnly = "read-only"
	GitWritable = "writable"
)

// ParseGit checks a git value given as text.
func ParseGit(s string) (string, error) {
	switch s {
	case GitReadOnly, GitWritable:
		return s, nil
	}
	return "", fmt.Errorf("unknown git mode %q (%s or %s)", s, GitReadOnly, GitWritable)
}

// ParseToolchains reads a --toolchains value: "auto", "none" or a comma
// list of profile names (or their aliases: npm, pnpm, yarn are node...).
func ParseToolchains(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "auto":
		return []string{"auto"}, nil
	case "none":
		return []string{"none"}, nil
	}
	var out []string
	for _, part := range strings.Split(s, ",") {
		name := strings.TrimSpace(part)
		tc := ToolchainByName(name)
		if tc == nil {
			return nil, fmt.Errorf("unknown toolchain %q (auto, none, or a list of %s)", name, strings.Join(ToolchainNames(), ", "))
		}
		if !slices.Contains(out, tc.Name) {
			out = append(out, tc.Name)
		}
	}
	return out, nil
}

// SplitList splits a repeatable flag's value given as a comma list
// ("--allow-domain a.com,b.com"), dropping empty parts.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// merge lays o over s: a value set later wins, lists are a union.
func (s *SandboxSettings) merge(o SandboxSettings) {
	if o.Network != "" {
		s.Network, s.NetworkSource = o.Network, o.NetworkSource
	}
	s.AllowDomains = append(s.AllowDomains, o.AllowDomains...)
	s.DenyDomains = append(s.DenyDomains, o.DenyDomains...)
	s.Read = append(s.Read, o.Read...)
	s.Write = append(s.Write, o.Write...)
	s.Env = append(s.Env, o.Env...)
	if o.Toolchains != nil {
		s.Toolchains, s.ToolchainsSource = slices.Clone(o.Toolchains), o.ToolchainsSource
	}
	if o.Git != "" {
		s.Git, s.GitSource = o.Git, o.GitSource
	}
	if o.Level != "" {
		s.Level, s.LevelSource = o.Level, o.LevelSource
	}
}

// sandboxTightenOnly refuses what would widen the sandbox in a file the
// preset does not trust (the workspace's, under strict), judged against
// what is in force before it (the preset and the user's file). Its
// toolchains may only narrow: "none", or a list, which then limits the
// toolchains in force (ToolchainLimit) instead of replacing them.
func sandboxTightenOnly(d distrust, inForce SandboxSettings, f *File) error {
	s := f.Sandbox
	deny := func(source, what string) error {
		return d.refuse(f, source, what, fmt.Sprintf("widen the sandbox; put it in your user file (%s) or give it on the command line", userFileHint()))
	}
	if s.Network != "" && !s.Network.Within(inForce.Network) {
		return deny(s.NetworkSource, fmt.Sprintf("sandbox.network %q is wider than the %q in force (%s)", s.Network, inForce.Network, inForce.NetworkSource))
	}
	for _, g := range s.AllowDomains {
		return deny(g.Source, fmt.Sprintf("sandbox.allow_domains %q", g.Value))
	}
	for _, g := range s.Read {
		return deny(g.Source, fmt.Sprintf("sandbox.read %q", g.Value))
	}
	for _, g := range s.Write {
		return deny(g.Source, fmt.Sprintf("sandbox.write %q", g.Value))
	}
	for _, g := range s.Env {
		return deny(g.Source, fmt.Sprintf("sandbox.env %q", g.Value))
	}
	if s.Git == GitWritable && inForce.Git != GitWritable {
		// The very file an agent that could write .git would want
		// trusted: only the user's file, a trusted one, or a flag.
		return deny(s.GitSource, fmt.Sprintf("sandbox.git %q (commands could plant git hooks the user's git runs)", s.Git))
	}
	if s.Level == sandbox.LevelContainer && inForce.Level != sandbox.LevelContainer {
		// Weaker confinement chosen by the agent's own file: only the
		// user's file, a trusted one, or the flag may name it.
		return deny(s.LevelSource, fmt.Sprintf("sandbox.level %q (commands would run without namespaces: no read-only mounts outside the workspace, no /proc of their own, and what else `lite-agent sandbox check` lists)", s.Level))
	}
	return nil
}

func userFileHint() string {
	if p, err := UserFile(); err == nil {
		return p
	}
	return "$XDG_CONFIG_HOME/lite-agent/policy.toml"
}

// SandboxReport is the sandbox of commands for one workspace, with where
// each grant came from.
type SandboxReport struct {
	Network       sandbox.NetworkMode `json:"network"`
	NetworkSource string              `json:"network_source"`
	Read          []Grant             `json:"read,omitempty"`
	Write         []Grant             `json:"write,omitempty"`
	Env           []Grant             `json:"env,omitempty"`
	AllowDomains  []Grant             `json:"allow_domains,omitempty"`
	DenyDomains   []Grant             `json:"deny_domains,omitempty"`
	// Git is GitReadOnly or GitWritable, with where it came from.
	Git       string `json:"git"`
	GitSource string `json:"git_source"`
	// Level is the sandbox's level, with where it came from.
	Level       sandbox.Level `json:"level"`
	LevelSource string        `json:"level_source"`
	// Toolchains are the profiles in force and what each found.
	Toolchains       []ToolchainGrant `json:"toolchains,omitempty"`
	ToolchainsSource string           `json:"toolchains_source"`
	// Notes say what a profile looked for and did not grant, and why.
	Notes []string `json:"notes,omitempty"`
	// Withheld says what of the person's own settings commands do not
	// get, and why (a trust store they cannot read, and the flag that
	// passes it): said to the person at the start of a session and of
	// `sandbox run`, whose commands would otherwise fail unexplained.
	Withheld []string `json:"withheld,omitempty"`
}

// SandboxPolicy is the sandbox policy of commands for workspace ws: the
// preset's, then the files' [sandbox] settings, then extra (the options
// layer: flags, local.Config), with the toolchain profiles resolved on h.
// It returns the policy and the report of where each grant came from.
func (pol *Policy) SandboxPolicy(ws string, extra SandboxSettings, h Host) (sandbox.Policy, *SandboxReport, error) {
	s := SandboxSettings{Network: pol.Preset.Sandbox.Network, NetworkSource: "preset " + pol.Preset.Name,
		Toolchains: []string{"auto"}, ToolchainsSource: "default", Git: GitReadOnly, GitSource: "default",
		Level: sandbox.LevelFull, LevelSource: "default"}
	if s.Network == "" {
		s.Network = sandbox.NetworkNone
	}
	s.merge(pol.Sandbox)
	s.merge(extra)
	p := pol.Preset.Policy(ws)
	p.Network = s.Network
	rep := &SandboxReport{Network: s.Network, NetworkSource: s.NetworkSource, ToolchainsSource: s.ToolchainsSource,
		DenyDomains: slices.Clone(s.DenyDomains), Git: s.Git, GitSource: s.GitSource, Level: s.Level, LevelSource: s.LevelSource}
	p.GitWritable = s.Git == GitWritable
	p.Level = s.Level
	for _, g := range s.Read {
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, g.Value)
		rep.Read = append(rep.Read, g)
	}
	for _, g := range s.Write {
		p.ReadWritePaths = append(p.ReadWritePaths, g.Value)
		rep.Write = append(rep.Write, g)
	}
	for _, g := range s.Env {
		p.Env = append(withDefaultEnv(p.Env), g.Value)
		rep.Env = append(rep.Env, g)
	}
	// The tools' own queries run unconfined: never a program the agent
	// could have planted in a place it can write.
	// Each file-system question is asked once (snapshot).
	h = plantProof{newSnapshot(h), append([]string{ws}, p.ReadWritePaths...)}
	names, err := selectToolchains(s.Toolchains, pol.ToolchainLimit, ws, h)
	if err != nil {
		return sandbox.Policy{}, nil, err
	}
	given := map[string]bool{} // the names of the person's own --env: they win
	for _, g := range s.Env {
		name, _, _ := strings.Cut(g.Value, "=")
		given[name] = true
	}
	// Offline: no network and no domain grant, so a tool that tries to
	// download can be told to stop at once, and why.
	offline := s.Network == sandbox.NetworkNone && len(s.AllowDomains) == 0
	if offline {
		proxyVars := sandbox.ProxyVariables(offlineProxy)
		// A proxy the person set (any variable naming one: clients read
		// different ones, curl https_proxy before HTTPS_PROXY) is
		// theirs, whole; a NO_PROXY of theirs replaces only that.
		if slices.ContainsFunc(proxyVars, func(kv [2]string) bool { return given[kv[0]] && kv[1] == offlineProxy }) {
			proxyVars = nil
		}
		for _, kv := range proxyVars {
			if given[kv[0]] {
				continue
			}
			p.Env = append(withDefaultEnv(p.Env), kv[0]+"="+kv[1])
			rep.Env = append(rep.Env, Grant{kv[0] + "=" + kv[1], "network none (a download fails at once, naming the grant)"})
		}
		for _, tc := range toolchains {
			for _, kv := range tc.RefuseAtOnceEnv {
				if name, _, _ := strings.Cut(kv, "="); given[name] {
					continue
				}
				p.Env = append(withDefaultEnv(p.Env), kv)
				rep.Env = append(rep.Env, Grant{kv, "network none (" + tc.Name + "'s tools fail at their first request, not after retries)"})
			}
		}
	}
	var tcs []ToolchainGrant
	for _, tc := range names {
		g, err := tc.resolve(ws, offline, h)
		if err != nil {
			return sandbox.Policy{}, nil, fmt.Errorf("toolchain %s: %w", tc.Name, err)
		}
		if g != nil {
			tcs = append(tcs, *g)
		}
	}
	applyToolchains(&p, rep, tcs, given)
	hideSystemCredentials(&p, rep, tcs, h)
	hideSystemConfigSecrets(&p, rep, h)
	personPath(&p, rep, h)
	passTrustStores(&p, rep, ws, given, h)
	p.CredentialPatterns = append(p.CredentialPatterns, homeAndSystemCredentialPatterns(h)...)
	slices.Sort(p.CredentialPatterns)
	p.CredentialPatterns = slices.Compact(p.CredentialPatterns)
	for _, g := range s.AllowDomains {
		hosts, err := expandDomain(g, tcs, h)
		if err != nil {
			return sandbox.Policy{}, nil, err
		}
		for _, host := range hosts {
			p.AllowDomains = append(p.AllowDomains, host)
			rep.AllowDomains = append(rep.AllowDomains, Grant{host, g.Source + viaAlias(g.Value, host)})
		}
	}
	// Denials only subtract from allowed domains: with none allowed they
	// change nothing, so they do not start a domain proxy that would
	// admit nothing (the report still lists them).
	if len(p.AllowDomains) > 0 {
		for _, g := range s.DenyDomains {
			p.DenyDomains = append(p.DenyDomains, g.Value)
		}
	}
	return p, rep, nil
}

// offlineProxy is the proxy every HTTP client is pointed at when the
// network is none and no domain is granted (sandbox.ProxyVariables: the
// variables curl, wget, git, pip, npm, pnpm and yarn read). Its name is
// in the reserved .invalid domain and DNS is refused in the sandbox, so
// the client fails at its first request, before any retry loop has a
// connection to retry, and its error — "Could not resolve proxy: ..." —
// carries the explanation, as goOfflineMarker does for go. A tool's own
// offline setting (OfflineEnv, Maven's marker repository) says it better
// where the tool has one.
const offlineProxy = "http://lite-agent-sandbox.network-is-none.grant-the-host-with--allow-domain.invalid:9"

// withDefaultEnv is env, or the sandbox's default allowlist when env is
// nil: a grant adds to the allowlist, it never replaces it.
func withDefaultEnv(env []string) []string {
	if env == nil {
		return sandbox.DefaultEnv()
	}
	return env
}

func viaAlias(value, host string) string {
	if strings.HasPrefix(value, "@") && value != host {
		return " (" + value + ")"
	}
	return ""
}

// RelativeTo makes a policy file's relative path absolute against the
// workspace; an absolute or ~/ path is kept (~ expanded by the caller).
func relativeTo(ws, p string) string {
	if filepath.IsAbs(p) || ws == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(ws, p)
}

// plantProof is a Host that finds and runs no program beneath writable:
// the toolchain queries (go env, npm config get) run unconfined in the
// parent, so a PATH entry inside the workspace — ./node_modules/.bin, a
// bin/ the project keeps — would let the agent's `go` run outside the
// sandbox at the next session's start. Such a program shadows the real
// one, so the profile is not detected rather than detected through it.
type plantProof struct {
	Host
	writable []string
}

func (h plantProof) LookPath(name string) string {
	p := h.Host.LookPath(name)
	if p == "" {
		return ""
	}
	real := realPathOf(h.Host, p)
	for _, w := range h.writable {
		for _, root := range []string{w, realPathOf(h.Host, w)} {
			if paths.Within(p, root) || paths.Within(real, root) {
				return ""
			}
		}
	}
	return p
}

func (h plantProof) Output(argv ...string) (string, error) {
	if len(argv) == 0 || h.LookPath(argv[0]) == "" {
		return "", fmt.Errorf("%s: not found on PATH outside the workspace and the read-write paths (a program there is never run unconfined)", strings.Join(argv[:min(len(argv), 1)], ""))
	}
	return h.Host.Output(argv...)
}

// VerifyWorkspaceCache and EvalSymlinks pass the optional capabilities of
// the Host beneath through.
func (h plantProof) VerifyWorkspaceCache(ws, profile, dir string) []string {
	if v, ok := h.Host.(cacheVerifier); ok {
		return v.VerifyWorkspaceCache(ws, profile, dir)
	}
	return nil
}

func (h plantProof) EvalSymlinks(p string) (string, error) {
	if r, ok := h.Host.(symlinkResolver); ok {
		return r.EvalSymlinks(p)
	}
	return p, nil
}

// trustStoreVars name the certificate bundles and directories that TLS
// clients trust instead of (or beside) the system's: what a person behind
// a company proxy that re-signs TLS, or with a private CA, sets. Dropped,
// every download through the domain proxy fails ("self-signed
// certificate in certificate chain") where it works outside.
var trustStoreVars = []string{
	"SSL_CERT_FILE", "SSL_CERT_DIR", // OpenSSL: curl, git, python, Go, Rust's native-tls
	"NODE_EXTRA_CA_CERTS",            // node, npm, pnpm, yarn
	"REQUESTS_CA_BUNDLE", "PIP_CERT", // Python requests, pip
	"CURL_CA_BUNDLE",                   // curl
	"GIT_SSL_CAINFO", "GIT_SSL_CAPATH", // git
	"CARGO_HTTP_CAINFO", // cargo
}

// passTrustStores passes each trustStoreVars variable the person has set,
// npm's cafile as npm_config_cafile (npmCAFile) and pip's cert as
// PIP_CERT (pipCertFile), unless the person's own --env names the
// variable, when the path, at its real location, is one the grants
// already let commands read (the system's /etc/ssl/certs, an
// --allow-read) and no sandboxed command can write. Nothing is granted
// for it: a file granted by path can be swapped for a link to a secret
// between this check and the sandbox's grant by an agent that can write
// there (security reviews did so from another workspace's session, and
// to a copy lite-agent wrote, through a broad --allow-write of the
// cache), while a path already readable gains nothing from a swap —
// Landlock checks a link's target.
// Each path not passed is a note naming the --allow-read that would pass
// it; never one that is, holds or lies in a credential path.
func passTrustStores(p *sandbox.Policy, rep *SandboxReport, ws string, given map[string]bool, h Host) {
	home := h.HomeDir()
	var writable []string
	for _, w := range append([]string{ws, liteAgentCache(h)}, p.ReadWritePaths...) {
		if w == "" {
			continue
		}
		writable = append(writable, w)
		if r, err := filepath.EvalSymlinks(w); err == nil && r != w {
			writable = append(writable, r)
		}
	}
	agentWritable := func(path string) bool {
		return slices.ContainsFunc(writable, func(w string) bool { return paths.Within(path, w) })
	}
	sys := p.SystemPaths
	if sys == nil {
		sys = sandbox.DefaultSystemPaths()
	}
	readable := func(path string) bool {
		for _, r := range append(slices.Clone(sys), p.ReadOnlyPaths...) {
			if paths.Within(path, r) {
				return true
			}
		}
		return false
	}
	found := map[string]string{}
	for _, name := range trustStoreVars {
		found[name] = h.Getenv(name)
	}
	// From the configuration files the sandbox hides (they may hold
	// tokens): read here, never granted.
	found["npm_config_cafile"] = npmCAFile(h, agentWritable)
	if found["PIP_CERT"] == "" {
		found["PIP_CERT"] = pipCertFile(h, agentWritable)
	}
	for _, name := range append(slices.Clone(trustStoreVars), "npm_config_cafile") {
		v := found[name]
		if v == "" || given[name] {
			continue
		}
		refuse := func(why string) {
			rep.Withheld = append(rep.Withheld, fmt.Sprintf("not passing %s=%s: %s", name, v, why))
		}
		if !filepath.IsAbs(v) {
			refuse("not an absolute path")
			continue
		}
		real, err := filepath.EvalSymlinks(v)
		if err != nil {
			continue // nothing there: the tool finds nothing outside either
		}
		c := credentialClash(v, home)
		if c == "" {
			c = credentialClash(real, home)
		}
		switch {
		case c != "":
			refuse("it would expose " + c)
		case agentWritable(real):
			refuse("it lies where sandboxed commands write")
		case !readable(real):
			refuse("commands cannot read it; --allow-read " + real + " (read in a policy file's [sandbox]) lets them, and passes it")
		default:
			p.Env = append(withDefaultEnv(p.Env), name+"="+real)
			rep.Env = append(rep.Env, Grant{name + "=" + real, "your " + name + " (a TLS trust store)"})
		}
	}
}

// liteAgentCache is lite-agent's cache directory, which holds every
// workspace's writable caches ($XDG_CACHE_HOME/lite-agent, else
// ~/.cache/lite-agent; machine.CacheRoot's parent).
func liteAgentCache(h Host) string {
	if d := h.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "lite-agent")
	}
	if home := h.HomeDir(); home != "" {
		return filepath.Join(home, ".cache", "lite-agent")
	}
	return ""
}

// configContents reads the configuration files among files that exist,
// in order, leaving out one that is relative or lies where a sandboxed
// command can write (a workspace's pip.conf would let the agent choose
// what is passed).
func configContents(h Host, files []string, agentWritable func(string) bool) [][]byte {
	var out [][]byte
	for _, f := range files {
		if !filepath.IsAbs(f) || agentWritable(f) {
			continue
		}
		if real, err := filepath.EvalSymlinks(f); err == nil && agentWritable(real) {
			continue
		}
		if b, err := h.ReadFile(f); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// npmCAFile is the cafile npm's configuration names, as npm reads it (a
// later line of a file, and an earlier source, wins): npm_config_cafile,
// the user's npmrc (NPM_CONFIG_USERCONFIG, else ~/.npmrc), then the
// global npmrc of the node on PATH (NPM_CONFIG_GLOBALCONFIG, else
// {prefix}/etc/npmrc). "" when none does, npm is not installed, or the
// value is not a plain path (npm expands ${VAR}: left alone). No npm is
// started: a Node start costs every session 0.2–0.3 s.
func npmCAFile(h Host, agentWritable func(string) bool) string {
	node := h.LookPath("node")
	if node == "" {
		return ""
	}
	for _, n := range []string{"npm_config_cafile", "NPM_CONFIG_CAFILE"} {
		if v := h.Getenv(n); v != "" {
			return v
		}
	}
	user := h.Getenv("NPM_CONFIG_USERCONFIG")
	if user == "" && h.HomeDir() != "" {
		user = filepath.Join(h.HomeDir(), ".npmrc")
	}
	global := h.Getenv("NPM_CONFIG_GLOBALCONFIG")
	if global == "" {
		global = filepath.Join(filepath.Dir(filepath.Dir(node)), "etc", "npmrc")
	}
	for _, b := range configContents(h, []string{user, global}, agentWritable) {
		cafile := ""
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
			if ok && strings.TrimSpace(k) == "cafile" {
				cafile = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
		if strings.Contains(cafile, "${") {
			return ""
		}
		if cafile != "" {
			return cafile
		}
	}
	return ""
}

// pipCertFile is the cert a pip configuration file's [global] section
// names, the way pip reads them (a later file wins): the system's
// (/etc/xdg/pip, /etc), the user's (~/.pip, ~/.config/pip), then
// PIP_CONFIG_FILE — which, set to the null device, turns them all off.
// The user's files may hold an index URL with a password, so they are
// read here and never granted.
func pipCertFile(h Host, agentWritable func(string) bool) string {
	files := []string{"/etc/xdg/pip/pip.conf", "/etc/pip.conf"}
	if home := h.HomeDir(); home != "" {
		files = append(files, filepath.Join(home, ".pip", "pip.conf"), filepath.Join(home, ".config", "pip", "pip.conf"))
	}
	switch f := h.Getenv("PIP_CONFIG_FILE"); f {
	case "":
	case os.DevNull:
		return ""
	default:
		files = append(files, f)
	}
	cert := ""
	for _, b := range configContents(h, files, agentWritable) {
		section := ""
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
				section = strings.TrimSpace(l[1 : len(l)-1])
				continue
			}
			k, v, ok := strings.Cut(l, "=")
			if ok && section == "global" && strings.TrimSpace(k) == "cert" {
				cert = strings.TrimSpace(v)
			}
		}
	}
	return cert
}
