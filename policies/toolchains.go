package policies

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox"
)

// # Toolchain profiles
//
// A profile grants one toolchain what it needs to build and test inside
// the sandbox, and nothing of the user's credentials:
//
//   - its install read-only where the user installed it (the root of
//     each of its programs found on the user's PATH, the roots the tool
//     itself reports — `go env GOROOT` — and its version manager's, such
//     as ~/.rustup) and the /etc files it reads. Never a PATH entry: the
//     sandbox's PATH is the user's, and what it names is granted whatever
//     profiles are on (toolchains_path.go), so a command resolves to the
//     same program inside as outside;
//   - the user's package caches read-only (UserCaches), each used the way
//     the tool allows: Go reads the module cache as a file:// proxy,
//     Gradle as its read-only dependency cache;
//   - a writable cache per workspace under $XDG_CACHE_HOME/lite-agent/
//     (Host.WorkspaceCache): build caches and new downloads land there,
//     never in the user's own caches, so a poisoned cache cannot reach
//     the user's unconfined builds. A later session trusts what is there
//     (go checks go.sum only when it extracts), so the cache is keyed on
//     the workspace directory's identity, not its path (a re-created
//     workspace starts empty), Go's module sources stay read-only and
//     are checked against go.sum before each session (cacheVerifier:
//     local's VerifyWorkspaceCache), and `rewind --to 0` empties it
//     (local.ResetWorkspaceCaches): the
//     checkpoint store does not record caches, whose trees are large and
//     refill offline from the user's read-only caches;
//   - the variables that point the tool there, and the user's own tool
//     settings that are not secrets (Pass).
//
// The table below is the data; Host supplies the machine's facts (PATH
// lookups, the tools' own queries such as `go env -json`), so this
// package runs nothing itself. Every read-only and writable grant of a
// profile passes credentialClash: a directory that is, holds or lies in a
// credentials path (credentialPaths) is never granted, whatever a profile
// or an installation layout says. Inside the roots it grants, the tool's
// own configuration files (npm's {prefix}/etc/npmrc, pip's site pip.conf,
// Maven's conf/settings.xml...) are not granted either
// (toolchains_creds.go).

// Host is the machine a profile is resolved on. local supplies the real
// one; tests supply fakes.
type Host interface {
	// Getenv is the user's environment.
	Getenv(name string) string
	// HomeDir is the user's home directory.
	HomeDir() string
	// LookPath finds a program on the user's PATH ("" when absent), with
	// symlinks resolved.
	LookPath(name string) string
	// Output runs a toolchain's own query (go env -json, npm config get
	// registry) unconfined, outside the workspace, with a time limit.
	Output(argv ...string) (string, error)
	// Exists reports whether a path exists; Glob expands a pattern.
	Exists(path string) bool
	Glob(pattern string) []string
	// ReadFile reads a tool's configuration in the parent (Maven's
	// settings.xml for its mirrors): read, never granted.
	ReadFile(path string) ([]byte, error)
	// WorkspaceCache returns (creating it) the writable per-workspace
	// cache directory of one profile.
	WorkspaceCache(workspace, profile string) (string, error)
	// WriteFile replaces (atomically: a concurrent session reads the old
	// file or the new one) a configuration file that a profile generates,
	// in a directory WorkspaceCache returned. Maven's settings: the tool
	// takes them from no variable, only from a file.
	WriteFile(path string, data []byte) error
}

// cacheVerifier is the optional Host capability of checking a profile's
// per-workspace cache for content the tool trusts without checking again
// (local's MachineHost: Go's extracted module sources against go.sum,
// cargo's extracted crates against their .crate and Cargo.lock),
// removing what differs; it returns a note per removal.
type cacheVerifier interface {
	VerifyWorkspaceCache(ws, profile, dir string) []string
}

// Toolchain is one profile, as data.
type Toolchain struct {
	Name    string
	Aliases []string // other names --toolchains takes (npm, pnpm, yarn...)
	// Registry is the --allow-domain alias of its registries (@go...).
	Registry string
	// Markers are workspace files (globs) that select it under auto.
	Markers []string
	// Binaries are looked up on PATH; one found means it is installed.
	Binaries []string
	// Roots are install directories granted read-only (never put on
	// PATH): templates over {home}, {cache} and the settings ($NAME).
	Roots []string
	// Etc are /etc paths (globs) the tool reads.
	Etc []string
	// UserCaches are the user's caches, read-only: only those the tool
	// really reads as they are (a grant nothing uses is noise).
	UserCaches []string
	// OfflineUserCaches are user caches the tool can read only while it
	// downloads nothing (npm's): granted, like OfflineEnv, only when the
	// network is none and no domain is granted.
	OfflineUserCaches []string
	// Env is set in the sandbox (NAME=template). An entry whose template
	// names an empty setting is left out.
	Env []string
	// Pass copies these settings when the user has them.
	Pass []string
	// OfflineEnv is set when the network is none and no domain is
	// granted and the profile is selected: the tool's own offline
	// settings, where they name the sandbox.
	OfflineEnv []string
	// RefuseAtOnceEnv is set when the network is none and no domain is
	// granted, whether the profile is selected or not (an agent in a Go
	// repository may still run npm or pip): the tool gives up at its
	// first failed request instead of retrying for seconds to a minute
	// (its error names the offline proxy, or the refused name lookup's
	// note names the grant). Settings that change nothing a tool does
	// with a network that answers.
	RefuseAtOnceEnv []string
	// settings reads the tool's own settings (go env -json).
	settings func(h Host) map[string]string
	// config is the configuration lite-agent writes for the tool, where
	// no variable can say it (Maven's settings.xml): file names relative
	// to {conf} — a per-workspace directory granted read-only, one per
	// offline/online variant so that two sessions do not overwrite each
	// other's — and their contents (templates like Env's).
	config func(home, cache string, offline bool) map[string]string
	// cacheConfig is configuration the tool reads only from inside its
	// own writable home (cargo's $CARGO_HOME/config.toml): file names
	// relative to the per-workspace cache and their contents, rewritten
	// at every session start — what the sandbox may have changed there
	// lasts until the next session of the workspace at most.
	cacheConfig func(h Host) map[string]string
	// registries are the hosts of the registries its configuration
	// names.
	registries func(h Host) ([]string, error)
}

// goPass are the Go settings passed as the user has them (the env file's
// too): not secrets. GOAUTH, which may name credentials, is not among
// them, and URLs lose any user:password@ (stripUserinfo).
var goPass = []string{"GOTOOLCHAIN", "GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GONOSUMCHECK", "GOSUMDB",
	"GOINSECURE", "GOEXPERIMENT", "GOAMD64", "GOARM64", "CGO_ENABLED"}

// goOfflineMarker is the GOPROXY entry after the user's module cache when
// the sandbox has no network: a file:// URL that does not exist, so go
// fails at once and its message carries the explanation.
const goOfflineMarker = "file:///lite-agent-sandbox/network-is-none--a-module-not-in-your-module-cache-needs---allow-domain-@go"

// pipOfflineIndex is pip's index when the sandbox has no network, the
// way goOfflineMarker is Go's: on the offline proxy's unresolvable host,
// naming the grant; https, or pip adds a warning that the host is not
// trusted.
var pipOfflineIndex = "https://" + strings.TrimPrefix(offlineProxy, "http://") +
	"/network-is-none--a-package-not-on-this-machine-needs---allow-domain-@pypi/simple"

// toolchains is the table. Order is the report's order.
var toolchains = []Toolchain{
	{
		Name:     "go",
		Registry: "@go",
		Markers:  []string{"go.mod", "go.work"},
		Binaries: []string{"go", "gofmt"},
		Roots:    []string{"$GOROOT"},
		// ~/go/bin, the user's installed tools, is granted when it is on
		// their PATH (toolchains_path.go), like any PATH entry.
		UserCaches: []string{"$GOMODCACHE/cache/download"},
		Env: []string{
			"GOCACHE={cache}/build",
			"GOMODCACHE={cache}/mod",
			"GOPATH={cache}/path",
			// Modules already on the machine resolve offline from the
			// user's module cache, read-only; new ones come from the
			// user's own GOPROXY into the per-workspace cache.
			"GOPROXY=file://$GOMODCACHE/cache/download,$GOPROXY",
			// Extracted module sources stay read-only, as go leaves
			// them: go checks go.sum only when it extracts a module, so
			// a source edited afterwards would be compiled unchecked.
			// Last, so that a -modcacherw of the user's does not win
			// (go applies GOFLAGS in order). `lite-agent gc` and
			// `rewind --to 0` make the directories writable to remove
			// them. Read-only is no bar to a deliberate chmod by the
			// agent: before each session the extracted sources are
			// checked against go.sum (cacheVerifier), and a rewind to 0
			// empties the cache (local.ResetWorkspaceCaches).
			"GOFLAGS=$GOFLAGS -modcacherw=false",
		},
		// A module that is not on the machine: instead of a DNS error
		// ("socket: operation not permitted"), go names this path —
		// which says what happened and what would allow it.
		OfflineEnv: []string{"GOPROXY=file://$GOMODCACHE/cache/download," + goOfflineMarker},
		Pass:       goPass,
		settings:   goSettings,
		registries: goRegistries,
	},
	{
		Name:     "node",
		Aliases:  []string{"npm", "pnpm", "yarn", "nodejs"},
		Registry: "@npm",
		Markers:  []string{"package.json"},
		Binaries: []string{"node", "npm", "npx", "pnpm", "yarn", "corepack"},
		// No Roots: nvm's, fnm's and Volta's node is the one on the
		// user's PATH, granted with the install it links into
		// (toolchains_path.go); the other versions they keep are not
		// what a command runs.
		// npm cannot read one cache and write another, and it cannot
		// look a request up in a read-only cache: every lookup compacts
		// (rewrites) the index bucket, and a failed compaction is a miss
		// (make-fetch-happen's lib/cache/entry.js, find). What it does
		// read from a read-only cache is a tarball by the integrity a
		// lockfile names (pacote: cacache.get.stream.byDigest), which
		// is what `npm ci` or `npm install` of a project with a
		// package-lock.json — resolved URLs and integrity — needs. So
		// with the network none (nothing can be downloaded, nothing
		// needs writing), npm's cache is the user's (its _cacache only,
		// read-only; found by `npm config get cache`, which honours
		// npm_config_cache and .npmrc), offline-first, its logs in the
		// per-workspace cache; with a registry granted it is the
		// per-workspace one and the user's is not granted.
		OfflineUserCaches: []string{"$NPM_USER_CACHE/_cacache"},
		Env: []string{
			"npm_config_cache={cache}/npm",
			"npm_config_store_dir={cache}/pnpm-store",
			"YARN_CACHE_FOLDER={cache}/yarn",
			"COREPACK_HOME={cache}/corepack",
			"npm_config_update_notifier=false",
			"npm_config_fund=false",
			"npm_config_audit=false",
		},
		// npm and pnpm retry a failed request twice with a 10-60 s
		// back-off (fetch-retries: ~70 s before the error), yarn berry
		// three times (httpRetry). With the retries off they fail at the
		// first request, and their error names the offline proxy
		// (offlineProxy) that says what would allow it.
		RefuseAtOnceEnv: []string{"npm_config_fetch_retries=0", "YARN_HTTP_RETRY=0"},
		OfflineEnv: []string{"npm_config_fetch_timeout=5000",
			"npm_config_cache=$NPM_USER_CACHE", "npm_config_prefer_offline=true", "npm_config_logs_dir={cache}/npm-logs"},
		settings:   nodeSettings,
		registries: npmRegistries,
	},
	{
		Name:     "python",
		Aliases:  []string{"pip", "uv", "pytest", "python3"},
		Registry: "@pypi",
		Markers:  []string{"pyproject.toml", "requirements*.txt", "setup.py", "setup.cfg", "Pipfile", "uv.lock"},
		Binaries: []string{"python3", "python", "pip", "pip3", "uv", "pytest"},
		// pyenv's root is granted when its shims are on the user's PATH
		// (toolchains_path.go: a shim runs pyenv, which reads the root),
		// never because PYENV_ROOT is set: then python3 is what the
		// PATH finds. uv's managed pythons are what `uv run` picks.
		Roots: []string{"{home}/.local/share/uv/python"},
		// Not the user's pip or uv cache: neither tool can use one
		// read-only. pip has no offline install from its cache — it
		// asks for every index page with Cache-Control: max-age=0
		// (pip/_internal/index/collector.py), so a cached page is
		// revalidated over the network — and a read-only PIP_CACHE_DIR
		// breaks building a wheel from an sdist (the build goes into the
		// cache's wheels/). uv fails outright on a read-only cache
		// (astral-sh/uv#15934, open). Offline, pip installs from a
		// wheelhouse: `pip download -d DIR` outside, then
		// `pip install --no-index --find-links DIR` with --allow-read DIR.
		Env: []string{
			"PIP_CACHE_DIR={cache}/pip",
			"UV_CACHE_DIR={cache}/uv",
			"PIP_DISABLE_PIP_VERSION_CHECK=1",
		},
		// pip retries five times with a back-off (8.5 s measured). Its
		// refusal through the proxy then names nothing ("No matching
		// distribution found"): with the profile on, its index, offline,
		// is a URL that says why, and pip prints it ("Looking in
		// indexes: ..."). Not with the profile off: PIP_INDEX_URL beats
		// every pip.conf, and one naming a loopback index must keep
		// working (the refused name lookup's note names the grant).
		RefuseAtOnceEnv: []string{"PIP_RETRIES=0"},
		OfflineEnv:      []string{"PIP_TIMEOUT=5", "UV_OFFLINE=1", "PIP_INDEX_URL=" + pipOfflineIndex},
		registries:      pypiRegistries,
	},
	{
		Name:     "rust",
		Aliases:  []string{"cargo", "rustup", "rustc"},
		Registry: "@crates",
		Markers:  []string{"Cargo.toml"},
		Binaries: []string{"cargo", "rustc", "rustup"},
		// Never $CARGO_HOME itself: it holds credentials.toml. Nor its
		// registry/ and git/: cargo reads them only as its own
		// CARGO_HOME, which must be writable (its package-cache lock,
		// new downloads) — and that is the per-workspace one below, so
		// a read-only grant of the user's would be used by nothing.
		// Crates already on the machine build offline vendored: `cargo
		// vendor` outside, and the [source] directory replacement it
		// prints in the workspace's .cargo/config.toml
		// (TestRustCargoBuildVendoredCrateOffline).
		Roots: []string{"$RUSTUP_HOME"},
		Env: []string{
			"CARGO_HOME={cache}/cargo",
			"RUSTUP_HOME=$RUSTUP_HOME",
		},
		Pass: []string{"RUSTUP_TOOLCHAIN"},
		// Not offline mode: with the network none cargo meets the offline
		// proxy (CARGO_HTTP_PROXY, offlineProxy) at its first request and
		// says so, naming the grant — its offline mode's "no matching
		// package" names nothing. A build whose Cargo.lock is complete
		// and whose crates are on the machine (the workspace's cache, a
		// vendor directory, Debian's registry) makes no request either
		// way; `cargo --offline` is still the person's to give.
		RefuseAtOnceEnv: []string{"CARGO_NET_RETRY=0"},
		settings:        rustSettings,
		cacheConfig:     cargoConfig,
		registries:      cratesRegistries,
	},
	{
		Name:     "java",
		Aliases:  []string{"maven", "mvn", "gradle", "jdk"},
		Registry: "@maven",
		Markers:  []string{"pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"},
		Binaries: []string{"java", "javac", "mvn", "gradle"},
		Roots:    []string{"$JAVA_HOME", "$SDKMAN_DIR/candidates", "{home}/.sdkman/candidates"},
		// Debian's JDK keeps its security and logging configuration in
		// /etc/java-N-openjdk (the JDK's conf/ links there), Maven its
		// m2.conf, logging and global settings in /etc/maven (Maven's
		// conf/ links there), Gradle its init scripts in /etc/gradle.
		Etc: []string{"/etc/java-*", "/etc/maven", "/etc/gradle"},
		// Debian's packaged artifacts (/usr/share/maven-repo) are under
		// /usr, readable already.
		UserCaches: []string{"{home}/.m2/repository", "{home}/.gradle/caches"},
		Env: []string{
			// user.home is lite-agent's {conf}: Maven reads the user's
			// settings from ${user.home}/.m2/settings.xml and dies when
			// that file is unreadable ("Non-readable settings") — and the
			// user's is, it may hold server passwords. Java's user.home
			// comes from /etc/passwd, not HOME, so it is the user's real
			// home unless set. The settings there (mavenSettings) name the
			// machine's repositories. Maven 3.9 also reads the user's
			// repository read-only through maven.repo.local.tail;
			// downloads go to the workspace's. A file:// repository works
			// in offline mode (-o) only when aether.offline.protocols says
			// so.
			"MAVEN_OPTS=-Duser.home={conf} -Dmaven.repo.local={cache}/m2 -Dmaven.repo.local.tail={home}/.m2/repository -Daether.offline.protocols=file",
			"GRADLE_USER_HOME={cache}/gradle",
			"GRADLE_RO_DEP_CACHE={home}/.gradle/caches",
			// No java.io.tmpdir: /tmp is the sandbox's own and writable,
			// as Java expects (it ignores TMPDIR), so temp paths are what
			// they are outside.
		},
		Pass: []string{"JAVA_HOME"},
		// Gradle's JVM ignores HTTP(S)_PROXY: the offline proxy is given
		// as its system properties, so a download fails at its first
		// request naming the grant ("… grant-the-host-with--allow-
		// domain.invalid: Name or service not known") — Gradle's own
		// offline switch names nothing ("No cached version … available
		// for offline mode"). Maven's is its marker repository
		// (mavenSettings).
		OfflineEnv: []string{"GRADLE_OPTS=" + javaProxyProperties(offlineProxy)},
		config:     mavenSettings,
		registries: mavenRegistries,
	},
}

// javaProxyProperties are the JVM system properties that send HTTP and
// HTTPS through proxy (a URL with a port).
func javaProxyProperties(proxy string) string {
	u, err := url.Parse(proxy)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("-Dhttp.proxyHost=%[1]s -Dhttp.proxyPort=%[2]s -Dhttps.proxyHost=%[1]s -Dhttps.proxyPort=%[2]s", u.Hostname(), u.Port())
}

// Toolchains returns the profiles (copies).
func Toolchains() []Toolchain { return slices.Clone(toolchains) }

// ToolchainNames lists the profile names.
func ToolchainNames() []string {
	var out []string
	for _, t := range toolchains {
		out = append(out, t.Name)
	}
	return out
}

// ToolchainByName finds a profile by name or alias (nil: none).
func ToolchainByName(name string) *Toolchain {
	for i := range toolchains {
		if toolchains[i].Name == name || slices.Contains(toolchains[i].Aliases, name) {
			return &toolchains[i]
		}
	}
	return nil
}

// ToolchainByAlias finds a profile by its registry alias (@go).
func ToolchainByAlias(alias string) *Toolchain {
	for i := range toolchains {
		if toolchains[i].Registry == alias {
			return &toolchains[i]
		}
	}
	return nil
}

// RegistryAliases lists the --allow-domain aliases.
func RegistryAliases() []string {
	var out []string
	for _, t := range toolchains {
		out = append(out, t.Registry)
	}
	return append(out, "@registries")
}

// ToolchainGrant is what one profile granted on this machine.
type ToolchainGrant struct {
	Name string `json:"name"`
	// Why it is on: the marker found, or the setting that named it.
	Why   string   `json:"why"`
	Read  []Grant  `json:"read,omitempty"`
	Write []Grant  `json:"write,omitempty"`
	Env   []Grant  `json:"env,omitempty"`
	Notes []string `json:"notes,omitempty"`
	// systemRoots are its installs beneath the system paths (/usr for
	// /usr/bin/node), whose credential files hideSystemCredentials
	// takes out of those paths.
	systemRoots []string
	// credentialPatterns name its credential files in every root it
	// grants (hideCredentialsFrom), for sandbox.Policy.CredentialPatterns.
	credentialPatterns []string
}

type selected struct {
	*Toolchain
	why string
}

// selectToolchains chooses the profiles: "none", a list (each must be
// installed), or "auto" — every profile whose marker is in the workspace
// and which is installed; limit (an untrusted file's list) narrows.
func selectToolchains(sel, limit []string, ws string, h Host) ([]selected, error) {
	var out []selected
	switch {
	case len(sel) == 0 || sel[0] == "none":
		return nil, nil
	case sel[0] == "auto":
		for i := range toolchains {
			tc := &toolchains[i]
			for _, m := range tc.Markers {
				if hits := h.Glob(filepath.Join(globQuote(ws), m)); len(hits) > 0 {
					out = append(out, selected{tc, filepath.Base(hits[0]) + " in the workspace"})
					break
				}
			}
		}
	default:
		for _, n := range sel {
			out = append(out, selected{ToolchainByName(n), "named by --toolchains or a policy file"})
		}
	}
	if limit != nil {
		out = slices.DeleteFunc(out, func(s selected) bool { return !slices.Contains(limit, s.Name) })
	}
	return out, nil
}

// resolve grants the profile on h, or nil with nothing installed.
func (tc selected) resolve(ws string, offline bool, h Host) (*ToolchainGrant, error) {
	g := &ToolchainGrant{Name: tc.Name, Why: tc.why}
	var bins []string
	for _, b := range tc.Binaries {
		if p := h.LookPath(b); p != "" {
			bins = append(bins, p)
		}
	}
	if len(bins) == 0 {
		return &ToolchainGrant{Name: tc.Name, Why: tc.why, Notes: []string{fmt.Sprintf(
			"%s: none of %s is installed (on PATH); nothing granted", tc.Name, strings.Join(tc.Binaries, ", "))}}, nil
	}
	// The tool's settings are asked for only when a template of this
	// session names one: asking may start the tool (npm's `config get
	// cache` is a Node start, 0.2–0.3 s), and the node profile needs its
	// answer only offline.
	settings := sync.OnceValue(func() map[string]string {
		if tc.settings == nil {
			return nil
		}
		return tc.settings(h)
	})
	cache, err := h.WorkspaceCache(ws, tc.Name)
	if err != nil {
		return nil, err
	}
	// What the tool checked once and trusts since (Go's extracted module
	// sources) is checked again before the sandbox can use it.
	if v, ok := h.(cacheVerifier); ok {
		g.Notes = append(g.Notes, v.VerifyWorkspaceCache(ws, tc.Name, cache)...)
	}
	home := h.HomeDir()
	conf, err := tc.writeConfig(ws, home, cache, offline, h)
	if err != nil {
		return nil, err
	}
	if tc.cacheConfig != nil {
		files := tc.cacheConfig(h)
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if err := h.WriteFile(filepath.Join(cache, name), []byte(files[name])); err != nil {
				return nil, fmt.Errorf("writing %s's configuration: %w", tc.Name, err)
			}
		}
	}
	expand := func(tmpl string) (string, bool) { return expandTemplate(tmpl, home, cache, conf, settings, h) }
	src := "toolchain " + tc.Name
	read := func(p, why string) {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) || !h.Exists(p) || slices.ContainsFunc(g.Read, func(x Grant) bool { return x.Value == p }) {
			return
		}
		if c := credentialClash(p, home); c != "" {
			g.Notes = append(g.Notes, fmt.Sprintf("%s: not granting %s: it would expose %s", tc.Name, p, c))
			return
		}
		g.Read = append(g.Read, Grant{p, src + " (" + why + ")"})
	}
	for _, b := range bins {
		dir := filepath.Dir(b)
		if systemPath(dir) {
			// Granted by the system paths, with its configuration
			// (a node in /usr reads /usr/etc/npmrc): hideSystemCredentials.
			if filepath.Base(dir) == "bin" {
				dir = filepath.Dir(dir)
			}
			if !slices.Contains(g.systemRoots, dir) {
				g.systemRoots = append(g.systemRoots, dir)
			}
			continue
		}
		// An install's root is the parent of its bin/ (nvm's
		// versions/node/vN, a JDK); a root that would expose
		// credentials (~/.cargo) shrinks to the bin/ itself.
		root := dir
		if filepath.Base(dir) == "bin" && credentialClash(filepath.Dir(dir), home) == "" && filepath.Dir(dir) != home {
			root = filepath.Dir(dir)
		}
		read(root, "where "+filepath.Base(b)+" is installed")
		// A shim's version manager (pyenv's root for its python3
		// shim, rustup's for its cargo proxy).
		if vm, m := versionManagerRoot(realPathOf(h, dir), h); vm != "" {
			read(vm, m+"'s root, which "+filepath.Base(b)+" runs through")
		}
	}
	for _, r := range tc.Roots {
		v, ok := expand(r)
		if !ok {
			continue
		}
		for _, m := range globOrSelf(h, v) {
			read(m, r)
		}
	}
	for _, e := range tc.Etc {
		for _, m := range h.Glob(e) {
			read(m, "read by "+tc.Name)
		}
	}
	caches := tc.UserCaches
	if offline {
		caches = append(slices.Clone(caches), tc.OfflineUserCaches...)
	}
	for _, c := range caches {
		if v, ok := expand(c); ok {
			read(v, "the user's "+c+", read-only")
		}
	}
	// The tool's own configuration files in what was granted: never
	// (toolchains_creds.go).
	g.hideCredentials(h)
	g.Write = append(g.Write, Grant{cache, src + " (its per-workspace cache)"})
	if conf != "" {
		// Read-only: what lite-agent wrote is what the tool reads.
		g.Read = append(g.Read, Grant{conf, src + " (the configuration lite-agent writes for it)"})
	}
	env := slices.Clone(tc.Env)
	for _, n := range tc.Pass {
		if v := settings()[n]; v != "" {
			env = append(env, n+"="+stripUserinfo(v))
		}
	}
	if offline {
		env = append(env, tc.OfflineEnv...)
	}
	for _, e := range env {
		name, tmpl, _ := strings.Cut(e, "=")
		v, ok := expand(tmpl)
		if !ok {
			continue
		}
		// A later entry (OfflineEnv) replaces an earlier one of the same
		// name, so the report shows what the tool sees.
		g.Env = slices.DeleteFunc(g.Env, func(e Grant) bool { return strings.HasPrefix(e.Value, name+"=") })
		g.Env = append(g.Env, Grant{name + "=" + strings.TrimSpace(v), src})
	}
	return g, nil
}

// writeConfig writes the profile's generated configuration (config) into
// its per-workspace {conf} directory and returns that directory ("" for a
// profile without one). The directory is a sibling of the writable cache,
// never inside it: the sandbox can read it, not rewrite what the next
// session's tool will trust. Online and offline get a directory each, so
// that two sessions of one workspace with different networks do not
// replace each other's files while the tool runs.
func (tc selected) writeConfig(ws, home, cache string, offline bool, h Host) (string, error) {
	if tc.config == nil {
		return "", nil
	}
	variant := tc.Name + ".conf"
	if offline {
		variant += "-offline"
	}
	conf, err := h.WorkspaceCache(ws, variant)
	if err != nil {
		return "", err
	}
	files := tc.config(home, cache, offline)
	names := slices.Sorted(maps.Keys(files))
	for _, name := range names {
		if err := h.WriteFile(filepath.Join(conf, name), []byte(files[name])); err != nil {
			return "", fmt.Errorf("writing %s's configuration: %w", tc.Name, err)
		}
	}
	return conf, nil
}

// expandTemplate fills {home}, {cache}, {conf} and $NAME (the tool's
// settings, else the user's environment). ok is false when a $NAME is
// empty, or the result is empty: the entry does not apply here.
func expandTemplate(tmpl, home, cache, conf string, settings func() map[string]string, h Host) (string, bool) {
	if conf == "" && strings.Contains(tmpl, "{conf}") {
		return "", false
	}
	s := strings.NewReplacer("{home}", home, "{cache}", cache, "{conf}", conf).Replace(tmpl)
	ok := true
	s = expandVars(s, func(name string) string {
		v, found := settings()[name]
		if !found {
			v = h.Getenv(name)
		}
		if v == "" && !optionalVar(tmpl, name) {
			ok = false
		}
		return stripUserinfo(v)
	})
	return s, ok && strings.TrimSpace(s) != ""
}

// optionalVar: a $NAME that only extends a value ($GOFLAGS
// -modcacherw=false, a proxy list's tail) may be empty. tmpl is the
// value's template, without NAME=.
func optionalVar(tmpl, name string) bool {
	return strings.HasSuffix(tmpl, " $"+name) || strings.HasSuffix(tmpl, ",$"+name) || strings.HasPrefix(tmpl, "$"+name+" ")
}

func expandVars(s string, get func(string) string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		b.WriteString(get(s[i+1 : j]))
		i = j - 1
	}
	return strings.TrimSuffix(b.String(), ",")
}

// globQuote escapes the pattern characters of a literal path (a
// workspace named "a[1]" must not turn its markers into other patterns).
func globQuote(p string) string {
	var b strings.Builder
	for _, c := range p {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func globOrSelf(h Host, p string) []string {
	if strings.ContainsAny(p, "*?[") {
		return h.Glob(p)
	}
	return []string{p}
}

// systemPath: already granted read-only by sandbox.DefaultSystemPaths.
func systemPath(dir string) bool {
	for _, s := range sandbox.DefaultSystemPaths() {
		if paths.Within(dir, s) {
			return true
		}
	}
	return false
}

// stripUserinfo removes user:password@ from every URL in a list setting
// (GOPROXY=https://user:token@proxy.corp): a credential must not reach
// the sandbox through a tool setting that passes.
func stripUserinfo(v string) string {
	if !strings.Contains(v, "@") || !strings.Contains(v, "://") {
		return v
	}
	parts := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' })
	for _, p := range parts {
		if u, err := url.Parse(p); err == nil && u.User != nil {
			u.User = nil
			v = strings.Replace(v, p, u.String(), 1)
		}
	}
	return v
}

// applyToolchains lays the profiles' grants over p and the report. A
// variable the person set (given: the names of their --env) is theirs:
// the profile's value for it is left out, and a note says so.
func applyToolchains(p *sandbox.Policy, rep *SandboxReport, tcs []ToolchainGrant, given map[string]bool) {
	for _, g := range tcs {
		for _, r := range g.Read {
			p.ReadOnlyPaths = append(p.ReadOnlyPaths, r.Value)
			rep.Read = append(rep.Read, r)
		}
		for _, w := range g.Write {
			p.ReadWritePaths = append(p.ReadWritePaths, w.Value)
			rep.Write = append(rep.Write, w)
		}
		for _, e := range g.Env {
			if name, _, _ := strings.Cut(e.Value, "="); given[name] {
				rep.Notes = append(rep.Notes, fmt.Sprintf("toolchain %s: %s is yours (--env), not the profile's %s", g.Name, name, e.Value))
				continue
			}
			p.Env = append(withDefaultEnv(p.Env), e.Value)
			rep.Env = append(rep.Env, e)
		}
		rep.Notes = append(rep.Notes, g.Notes...)
		p.CredentialPatterns = append(p.CredentialPatterns, g.credentialPatterns...)
		rep.Toolchains = append(rep.Toolchains, g)
	}
}

// expandDomain turns one domain grant into hosts: a registry alias
// through its tool's configuration, anything else as written.
func expandDomain(g Grant, tcs []ToolchainGrant, h Host) ([]string, error) {
	if !strings.HasPrefix(g.Value, "@") {
		return []string{g.Value}, nil
	}
	var profiles []*Toolchain
	if g.Value == "@registries" {
		for _, t := range tcs {
			if len(t.Read) > 0 || len(t.Env) > 0 {
				profiles = append(profiles, ToolchainByName(t.Name))
			}
		}
		if len(profiles) == 0 {
			return nil, fmt.Errorf("%s: --allow-domain @registries: no toolchain profile is on (see --toolchains)", g.Source)
		}
	} else if tc := ToolchainByAlias(g.Value); tc != nil {
		profiles = append(profiles, tc)
	} else {
		return nil, fmt.Errorf("%s: %v", g.Source, CheckDomain(g.Value))
	}
	var out []string
	for _, tc := range profiles {
		hosts, err := tc.registries(h)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", g.Source, tc.Registry, err)
		}
		if len(hosts) == 0 {
			return nil, fmt.Errorf("%s: %s: %s's configuration names no registry host", g.Source, tc.Registry, tc.Name)
		}
		for _, host := range hosts {
			if !slices.Contains(out, host) {
				out = append(out, host)
			}
		}
	}
	return out, nil
}

// urlHost is the host (with a non-default port) of a registry URL, or ""
// for what is not a network URL (file://, "direct", "off").
func urlHost(raw string) string {
	raw = strings.TrimSpace(raw)
	raw = strings.TrimPrefix(raw, "sparse+")
	raw = strings.TrimPrefix(raw, "registry+")
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Scheme == "file" {
		return ""
	}
	return u.Host
}
