package policies

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Each tool's own settings and registries. The hosts come from the tool's
// own configuration, never from a list of well-known names, so that a
// company mirror is what gets granted.

// goSettings is `go env -json` of the user's go: GOROOT, the module
// cache and the env-file settings (GOFLAGS, GOPROXY, GOTOOLCHAIN...).
func goSettings(h Host) map[string]string {
	vars := append([]string{"GOROOT", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS", "GOSUMDB"}, goPass...)
	out, err := h.Output(append([]string{"go", "env", "-json"}, vars...)...)
	set := map[string]string{}
	if err == nil {
		json.Unmarshal([]byte(out), &set)
	}
	// GOPATH may be a list; its first entry holds bin/.
	if p, _, ok := strings.Cut(set["GOPATH"], ":"); ok {
		set["GOPATH"] = p
	}
	return set
}

// goRegistries: GOPROXY's proxies and GOSUMDB's checksum database.
func goRegistries(h Host) ([]string, error) {
	set := goSettings(h)
	if len(set) == 0 {
		return nil, errors.New("`go env` gave no answer (is go installed?)")
	}
	var hosts []string
	for _, p := range strings.FieldsFunc(set["GOPROXY"], func(r rune) bool { return r == ',' || r == '|' }) {
		if host := urlHost(p); host != "" {
			hosts = append(hosts, host)
		}
	}
	// GOSUMDB is "name", "name+key" or "name+key url"; "off" is none.
	if db := set["GOSUMDB"]; db != "" && db != "off" {
		f := strings.Fields(db)
		if len(f) == 2 {
			hosts = append(hosts, urlHost(f[1]))
		} else {
			name, _, _ := strings.Cut(f[0], "+")
			hosts = append(hosts, name)
		}
	}
	return hosts, nil
}

// npmRegistries: `npm config get registry` (the user's .npmrc and
// NPM_CONFIG_REGISTRY, read by npm in the parent; the sandbox never sees
// the file, which may hold tokens) and any scoped registries.
func npmRegistries(h Host) ([]string, error) {
	out, err := h.Output("npm", "config", "get", "registry")
	if err != nil {
		return nil, err
	}
	var hosts []string
	if host := urlHost(out); host != "" {
		hosts = append(hosts, host)
	}
	if list, err := h.Output("npm", "config", "list", "--json"); err == nil {
		var m map[string]any
		if json.Unmarshal([]byte(list), &m) == nil {
			for k, v := range m {
				if s, ok := v.(string); ok && strings.HasSuffix(k, ":registry") {
					if host := urlHost(s); host != "" {
						hosts = append(hosts, host)
					}
				}
			}
		}
	}
	return hosts, nil
}

// nodeSettings: NPM_USER_CACHE is the user's npm cache (`npm config get
// cache`: npm_config_cache, .npmrc's cache, else ~/.npm — read by npm in
// the parent), set only when it holds a _cacache npm could read.
func nodeSettings(h Host) map[string]string {
	set := map[string]string{}
	out, err := h.Output("npm", "config", "get", "cache")
	if dir := strings.TrimSpace(out); err == nil && filepath.IsAbs(dir) && h.Exists(filepath.Join(dir, "_cacache")) {
		set["NPM_USER_CACHE"] = filepath.Clean(dir)
	}
	return set
}

var pipConfigLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[\w:.-]*\.?(index-url|extra-index-url)='(.*)'$`) })

// pypiRegistries: pip's index-url and extra-index-url (PIP_INDEX_URL, pip
// config), else the index pip itself defaults to, with its file host.
func pypiRegistries(h Host) ([]string, error) {
	var hosts []string
	for _, v := range []string{h.Getenv("PIP_INDEX_URL"), h.Getenv("UV_INDEX_URL")} {
		if host := urlHost(v); host != "" {
			hosts = append(hosts, host)
		}
	}
	if out, err := h.Output("python3", "-m", "pip", "config", "list"); err == nil {
		for _, l := range strings.Split(out, "\n") {
			if m := pipConfigLine().FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				for _, u := range strings.Fields(m[2]) {
					if host := urlHost(u); host != "" {
						hosts = append(hosts, host)
					}
				}
			}
		}
	}
	if len(hosts) > 0 {
		return hosts, nil
	}
	out, err := h.Output("python3", "-c", "from pip._internal.models.index import PyPI; print(PyPI.simple_url); print(PyPI.file_storage_domain)")
	if err != nil {
		return nil, errors.New("no index-url in pip's configuration and pip's own default could not be read (is pip installed?)")
	}
	for _, l := range strings.Fields(out) {
		if host := urlHost(l); host != "" {
			hosts = append(hosts, host)
		} else if !strings.Contains(l, "/") {
			hosts = append(hosts, l)
		}
	}
	return hosts, nil
}

func rustSettings(h Host) map[string]string {
	home := h.HomeDir()
	set := map[string]string{"CARGO_HOME": h.Getenv("CARGO_HOME"), "RUSTUP_HOME": h.Getenv("RUSTUP_HOME"),
		"RUSTUP_TOOLCHAIN": h.Getenv("RUSTUP_TOOLCHAIN")}
	if set["CARGO_HOME"] == "" {
		set["CARGO_HOME"] = filepath.Join(home, ".cargo")
	}
	if set["RUSTUP_HOME"] == "" && h.Exists(filepath.Join(home, ".rustup")) {
		set["RUSTUP_HOME"] = filepath.Join(home, ".rustup")
	}
	return set
}

var tomlURL = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*(index|registry)\s*=\s*"([^"]+)"`) })

// cratesRegistries: the registries and source replacements of cargo's
// configuration ($CARGO_HOME/config.toml). Cargo's built-in registry
// index is not printed by any stable cargo command, so it is not guessed:
// grant it by name.
func cratesRegistries(h Host) ([]string, error) {
	home := rustSettings(h)["CARGO_HOME"]
	var hosts []string
	for _, f := range []string{"config.toml", "config"} {
		b, err := h.ReadFile(filepath.Join(home, f))
		if err != nil {
			continue
		}
		for _, m := range tomlURL().FindAllStringSubmatch(string(b), -1) {
			if host := urlHost(m[2]); host != "" {
				hosts = append(hosts, host)
			}
		}
	}
	if len(hosts) == 0 {
		return nil, errors.New("cargo's configuration ($CARGO_HOME/config.toml) names no registry or source replacement; cargo's built-in registry is printed by no cargo command, so grant its index and download hosts by name (--allow-domain HOST,HOST: the hosts cargo's own error names)")
	}
	return hosts, nil
}

var (
	xmlComment  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<!--.*?-->`) })
	mirrorBlock = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<mirror>.*?</mirror>`) })
	blockedTrue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<blocked>\s*true\s*</blocked>`) })
)

var xmlURL = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<url>\s*([^<\s]+)\s*</url>`) })

// mavenRegistries: the mirrors and repositories of Maven's settings
// (~/.m2/settings.xml, /etc/maven/settings.xml), read here in the parent;
// the file itself is never granted (it may hold server passwords).
func mavenRegistries(h Host) ([]string, error) {
	var hosts []string
	for _, f := range []string{filepath.Join(h.HomeDir(), ".m2", "settings.xml"), "/etc/maven/settings.xml"} {
		b, err := h.ReadFile(f)
		if err != nil {
			continue
		}
		// Comments first: Debian's settings.xml is mostly commented-out
		// examples.
		text := xmlComment().ReplaceAllString(string(b), "")
		// A blocked mirror (Maven's default http blocker, 0.0.0.0) is a
		// refusal, not a registry.
		text = mirrorBlock().ReplaceAllStringFunc(text, func(m string) string {
			if blockedTrue().MatchString(m) {
				return ""
			}
			return m
		})
		for _, m := range xmlURL().FindAllStringSubmatch(text, -1) {
			if host := urlHost(m[1]); host != "" {
				hosts = append(hosts, host)
			}
		}
	}
	if len(hosts) == 0 {
		return nil, errors.New("the Maven settings (~/.m2/settings.xml, /etc/maven/settings.xml) name no mirror or repository; Maven's built-in central repository is not printed by mvn offline, so grant its host by name (--allow-domain HOST: the host Maven's own error names)")
	}
	return hosts, nil
}

// mavenOfflineMarker is the first repository Maven is given when the
// sandbox has no network — and the mirror of every remote one (Maven's
// "external:*": all but file:// and localhost) — the way goOfflineMarker
// is Go's: a file:// URL that does not exist, so an artifact that is not
// on the machine fails at once, without a connection attempt, and
// Maven's "Could not find artifact ... in <id> (<url>)" names the sandbox
// and the grant.
const mavenOfflineMarker = "file:///lite-agent-sandbox/network-is-none--an-artifact-not-on-this-machine-needs---allow-domain-@maven"

// debianMavenRepo is where Debian's lib*-java packages install their
// artifacts in Maven's layout (with the plugin versions Maven's default
// lifecycle asks for): a project whose dependencies are packaged builds
// offline from it.
const debianMavenRepo = "/usr/share/maven-repo"

// mavenSettings is the user settings file the sandbox's Maven reads
// (${user.home}/.m2/settings.xml, user.home being {conf}): the
// per-workspace local repository, and the repositories already on the
// machine as file:// ones — the user's ~/.m2/repository (read-only;
// Maven before 3.9 has no maven.repo.local.tail) and Debian's packaged
// one. Each is looked up afresh every build (updatePolicy always: a
// lookup is a stat), so a miss is never cached. Offline, the marker
// comes first and mirrors the rest. The global settings
// (/etc/maven/settings.xml) still apply: a company mirror there is kept.
func mavenSettings(home, cache string, offline bool) map[string]string {
	esc := func(s string) string {
		var b strings.Builder
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	fileURL := func(p string) string { return esc((&url.URL{Scheme: "file", Path: p}).String()) }
	type repo struct{ id, url string }
	var repos []repo
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	b.WriteString("<!-- Written by lite-agent for Maven in its sandbox (the java toolchain profile); rewritten at every session start. -->\n")
	b.WriteString("<settings>\n  <localRepository>" + esc(filepath.Join(cache, "m2")) + "</localRepository>\n")
	if offline {
		repos = append(repos, repo{"lite-agent-sandbox-network-is-none", esc(mavenOfflineMarker)})
		b.WriteString("  <mirrors>\n    <mirror>\n      <id>lite-agent-sandbox-network-is-none</id>\n      <mirrorOf>external:*</mirrorOf>\n")
		b.WriteString("      <url>" + esc(mavenOfflineMarker) + "</url>\n    </mirror>\n  </mirrors>\n")
	}
	repos = append(repos, repo{"lite-agent-user-repository", fileURL(filepath.Join(home, ".m2", "repository"))},
		repo{"lite-agent-debian-repository", fileURL(debianMavenRepo)})
	const policy = "<updatePolicy>always</updatePolicy><checksumPolicy>ignore</checksumPolicy>"
	b.WriteString("  <profiles>\n    <profile>\n      <id>lite-agent-machine-repositories</id>\n")
	for _, kind := range [][2]string{{"repository", "repositories"}, {"pluginRepository", "pluginRepositories"}} {
		b.WriteString("      <" + kind[1] + ">\n")
		for _, r := range repos {
			b.WriteString("        <" + kind[0] + "><id>" + r.id + "</id><url>" + r.url + "</url>")
			b.WriteString("<releases>" + policy + "</releases><snapshots>" + policy + "</snapshots></" + kind[0] + ">\n")
		}
		b.WriteString("      </" + kind[1] + ">\n")
	}
	b.WriteString("    </profile>\n  </profiles>\n")
	b.WriteString("  <activeProfiles><activeProfile>lite-agent-machine-repositories</activeProfile></activeProfiles>\n</settings>\n")
	return map[string]string{".m2/settings.xml": b.String()}
}

// credentialPaths are where tools keep credentials, relative to the
// user's home. No profile grants one of them, a directory holding one,
// or a path inside one — whatever the installation layout.
var credentialPaths = []string{
	".npmrc", ".yarnrc", ".yarnrc.yml", ".cargo/credentials", ".cargo/credentials.toml",
	".m2/settings.xml", ".m2/settings-security.xml", ".pypirc", ".config/pip", ".pip",
	".netrc", ".git-credentials", ".config/git/credentials", ".docker", ".ssh", ".gnupg",
	".aws", ".config/gcloud", ".azure", ".kube", ".config/gh", ".config/hub",
	".gradle/gradle.properties", ".terraform.d", ".local/share/keyrings", ".password-store",
	".config/go/env", ".config/op", ".vault-token",
	// pnpm's global rc; Gradle's user init scripts (repository
	// credentials are often set there).
	".config/pnpm", ".gradle/init.d", ".gradle/init.gradle", ".gradle/init.gradle.kts",
}

// CredentialPaths returns the credential paths under home.
func CredentialPaths(home string) []string {
	var out []string
	for _, c := range credentialPaths {
		out = append(out, filepath.Join(home, c))
	}
	return out
}

// credentialClash returns the credential path that granting p would
// expose ("" when none): p is one, lies in one, or holds one (an
// ancestor of home holds them all).
func credentialClash(p, home string) string {
	if home == "" || home == "/" {
		return ""
	}
	if paths.Within(home, p) || p == "/" {
		return filepath.Join(home, ".ssh")
	}
	for _, c := range CredentialPaths(home) {
		if paths.Within(p, c) || paths.Within(c, p) {
			return c
		}
	}
	return ""
}

// cargoConfig carries the person's source configuration into the
// sandbox's CARGO_HOME (the per-workspace cache): cargo reads
// $CARGO_HOME/config.toml and the workspace's .cargo/ only, so without it
// a source replacement of theirs — Debian's /usr/share/cargo/registry, a
// vendor directory, a company mirror — would not apply inside, and a
// build that works outside would reach for the default registry. Only
// what chooses where crates come from is copied: [source.*], each
// [registries.*]'s index and protocol, [registry].default and [net]'s
// retry and git-fetch-with-cli — never a token, a credential provider or
// [http] (which may carry headers); URLs lose any user:password@. The
// person's file is read here, in the parent, and stays unreadable inside.
func cargoConfig(h Host) map[string]string {
	home := rustSettings(h)["CARGO_HOME"]
	var b []byte
	for _, f := range []string{"config.toml", "config"} {
		if data, err := h.ReadFile(filepath.Join(home, f)); err == nil {
			b = data
			break
		}
	}
	var in map[string]any
	if len(b) == 0 || toml.Unmarshal(b, &in) != nil {
		in = nil
	}
	keep := map[string][]string{"registries": {"index", "protocol"}, "registry": {"default"}, "net": {"retry", "git-fetch-with-cli"}}
	out := map[string]any{}
	if src, ok := in["source"].(map[string]any); ok {
		out["source"] = stripURLs(src)
	}
	for table, keys := range keep {
		t, ok := in[table].(map[string]any)
		if !ok {
			continue
		}
		kept := map[string]any{}
		for k, v := range t {
			if sub, ok := v.(map[string]any); ok && table == "registries" {
				r := map[string]any{}
				for _, key := range keys {
					if x, ok := sub[key]; ok {
						r[key] = x
					}
				}
				kept[k] = stripURLs(r)
			} else if slices.Contains(keys, k) {
				kept[k] = v
			}
		}
		if len(kept) > 0 {
			out[table] = kept
		}
	}
	text := "# Written by lite-agent for cargo in its sandbox (the rust profile) from your cargo configuration's\n" +
		"# sources and registries; rewritten at every session start.\n"
	if len(out) > 0 {
		enc, err := toml.Marshal(out)
		if err == nil {
			text += string(enc)
		}
	}
	return map[string]string{"cargo/config.toml": text}
}

// stripURLs removes user:password@ from every string of a configuration
// table, recursively.
func stripURLs(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		switch x := v.(type) {
		case string:
			out[k] = stripUserinfo(x)
		case map[string]any:
			out[k] = stripURLs(x)
		default:
			out[k] = v
		}
	}
	return out
}
