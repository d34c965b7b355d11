package policies

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
)

// TestJavaProfileMavenSettings: the java profile writes the settings the
// sandbox's Maven reads (user.home is their directory), grants that
// directory read-only beside — never inside — the writable cache, and
// names the machine's repositories; offline, the marker repository comes
// first and mirrors every remote one. The user's ~/.m2/settings.xml is
// neither granted nor copied.
func TestJavaProfileMavenSettings(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home & co/.m2/repository", "ws", "cache")
	home := filepath.Join(root, "home & co")
	os.WriteFile(filepath.Join(home, ".m2", "settings.xml"), []byte("<settings><servers><server><password>SECRET</password></server></servers></settings>"), 0o600)
	h := &fakeHost{home: home, cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": "/usr/bin"},
		bins: map[string]string{"mvn": "/usr/bin/mvn", "java": "/usr/bin/java"}}
	ws := filepath.Join(root, "ws")
	os.WriteFile(filepath.Join(ws, "pom.xml"), []byte("<project/>\n"), 0o644)
	strict, _ := PresetByName("strict")
	pol := &Policy{Preset: strict}
	for _, tc := range []struct {
		name    string
		extra   SandboxSettings
		offline bool
	}{
		{"network none", SandboxSettings{}, true},
		{"a domain granted", SandboxSettings{AllowDomains: []Grant{{"repo.example", "--allow-domain repo.example"}}}, false},
		{"network unrestricted", SandboxSettings{Network: sandbox.NetworkUnrestricted}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, err := pol.SandboxPolicy(ws, tc.extra, h)
			if err != nil {
				t.Fatal(err)
			}
			conf := filepath.Join(root, "cache", "java.conf")
			if tc.offline {
				conf += "-offline"
			}
			if !slices.Contains(p.ReadOnlyPaths, conf) || slices.Contains(p.ReadWritePaths, conf) {
				t.Errorf("the settings directory %s must be read-only: read %v write %v", conf, p.ReadOnlyPaths, p.ReadWritePaths)
			}
			if !slices.Equal(p.ReadWritePaths, []string{filepath.Join(root, "cache", "java")}) {
				t.Errorf("writable: %v (the per-workspace cache only)", p.ReadWritePaths)
			}
			for _, r := range p.ReadOnlyPaths {
				if strings.HasPrefix(filepath.Join(home, ".m2", "settings.xml"), r) && r != filepath.Join(home, ".m2", "repository") {
					t.Errorf("%s grants the user's settings.xml", r)
				}
			}
			env := strings.Join(p.Env, "\n")
			if !strings.Contains(env, "MAVEN_OPTS=-Duser.home="+conf+" -Dmaven.repo.local="+filepath.Join(root, "cache", "java", "m2")) {
				t.Errorf("MAVEN_OPTS:\n%s", env)
			}
			b, err := os.ReadFile(filepath.Join(conf, ".m2", "settings.xml"))
			if err != nil {
				t.Fatal(err)
			}
			var s struct {
				Local   string `xml:"localRepository"`
				Mirrors []struct {
					MirrorOf string `xml:"mirrorOf"`
					URL      string `xml:"url"`
				} `xml:"mirrors>mirror"`
				Repos []struct {
					ID  string `xml:"id"`
					URL string `xml:"url"`
				} `xml:"profiles>profile>repositories>repository"`
				Plugins []struct {
					URL string `xml:"url"`
				} `xml:"profiles>profile>pluginRepositories>pluginRepository"`
			}
			if err := xml.Unmarshal(b, &s); err != nil {
				t.Fatalf("the settings are not XML (a home named %q): %v\n%s", home, err, b)
			}
			if strings.Contains(string(b), "SECRET") {
				t.Errorf("the user's settings reached the sandbox's:\n%s", b)
			}
			var urls []string
			for _, r := range s.Repos {
				urls = append(urls, r.URL)
			}
			want := []string{"file://" + strings.ReplaceAll(filepath.Join(home, ".m2", "repository"), " ", "%20"), "file:///usr/share/maven-repo"}
			if tc.offline {
				want = append([]string{mavenOfflineMarker}, want...)
			}
			if !slices.Equal(urls, want) || len(s.Plugins) != len(want) {
				t.Errorf("repositories %v, want %v (plugins: %d)", urls, want, len(s.Plugins))
			}
			if tc.offline != (len(s.Mirrors) == 1 && s.Mirrors[0].MirrorOf == "external:*" && s.Mirrors[0].URL == mavenOfflineMarker) {
				t.Errorf("offline %v, mirrors %+v", tc.offline, s.Mirrors)
			}
			if s.Local != filepath.Join(root, "cache", "java", "m2") {
				t.Errorf("localRepository %q", s.Local)
			}
		})
	}
}

// TestRefuseAtOnceWhateverTheProfiles: offline, every package manager's
// retries are off even when its profile is not selected (an agent in a
// Go repository may run npm or pip: npm retried for 70 s, cargo 11 s,
// pip 8.5 s); a grant leaves them out, and the person's own --env wins.
// pip's index is not replaced without the profile: a pip.conf naming a
// loopback index must keep working.
func TestRefuseAtOnceWhateverTheProfiles(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home", "ws", "cache")
	h := &fakeHost{home: filepath.Join(root, "home"), cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": "/usr/bin"}}
	strict, _ := PresetByName("strict")
	pol := &Policy{Preset: strict}
	want := []string{"npm_config_fetch_retries=0", "YARN_HTTP_RETRY=0", "PIP_RETRIES=0", "CARGO_NET_RETRY=0"}
	for _, tc := range []struct {
		extra   SandboxSettings
		offline bool
	}{
		{SandboxSettings{Toolchains: []string{"none"}}, true},
		{SandboxSettings{Toolchains: []string{"none"}, AllowDomains: []Grant{{"a.example", "flag"}}}, false},
		{SandboxSettings{Toolchains: []string{"none"}, Network: sandbox.NetworkLoopback}, false},
	} {
		p, rep, err := pol.SandboxPolicy(filepath.Join(root, "ws"), tc.extra, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range want {
			name, _, _ := strings.Cut(kv, "=")
			if got := envValue(p.Env, name); (name+"="+got == kv) != tc.offline {
				t.Errorf("%+v: %s is %q; want %q set: %v", tc.extra, name, got, kv, tc.offline)
			}
		}
		if got := envValue(p.Env, "PIP_INDEX_URL"); got != "" {
			t.Errorf("%+v: PIP_INDEX_URL set without the python profile: %q", tc.extra, got)
		}
		if tc.offline && !slices.ContainsFunc(rep.Env, func(g Grant) bool { return g.Value == "PIP_RETRIES=0" && strings.HasPrefix(g.Source, "network none") }) {
			t.Errorf("the report does not say where PIP_RETRIES comes from: %+v", rep.Env)
		}
	}
	p, _, err := pol.SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"none"}, Env: []Grant{{"PIP_RETRIES=2", "flag"}}}, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := envValue(p.Env, "PIP_RETRIES"); got != "2" {
		t.Errorf("--env PIP_RETRIES=2 gave %q: the person's own setting must win", got)
	}
	if got := envValue(p.Env, "CARGO_NET_RETRY"); got != "0" {
		t.Errorf("CARGO_NET_RETRY beside the person's PIP_RETRIES: %q", got)
	}
}

// TestOfflineProxyOnlyWhenOffline: with the network none and no domain
// granted every HTTP client is pointed at the offline proxy, whose name
// says what happened; loopback stays direct. With a domain granted the
// sandbox's own proxy takes the same variables, and with any other
// network mode they are the user's.
func TestOfflineProxyOnlyWhenOffline(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home", "ws", "cache")
	h := &fakeHost{home: filepath.Join(root, "home"), cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": "/usr/bin"}}
	strict, _ := PresetByName("strict")
	pol := &Policy{Preset: strict}
	for _, tc := range []struct {
		extra SandboxSettings
		want  bool
	}{
		{SandboxSettings{Toolchains: []string{"none"}}, true},
		{SandboxSettings{Toolchains: []string{"none"}, AllowDomains: []Grant{{"a.example", "flag"}}}, false},
		{SandboxSettings{Toolchains: []string{"none"}, Network: sandbox.NetworkLoopback}, false},
	} {
		p, rep, err := pol.SandboxPolicy(filepath.Join(root, "ws"), tc.extra, h)
		if err != nil {
			t.Fatal(err)
		}
		env := strings.Join(p.Env, "\n") + "\n"
		for _, v := range []string{"HTTPS_PROXY=" + offlineProxy + "\n", "http_proxy=" + offlineProxy + "\n", "npm_config_https_proxy=" + offlineProxy + "\n",
			"YARN_HTTPS_PROXY=" + offlineProxy + "\n", "NO_PROXY=localhost,127.0.0.1,::1\n"} {
			if strings.Contains(env, v) != tc.want {
				t.Errorf("%+v: %q in env = %v, want %v", tc.extra, v, !tc.want, tc.want)
			}
		}
		if tc.want && !slices.ContainsFunc(rep.Env, func(g Grant) bool { return strings.HasPrefix(g.Source, "network none") }) {
			t.Errorf("the report does not say where the proxy variables come from: %+v", rep.Env)
		}
	}
	if !strings.Contains(offlineProxy, ".invalid:") || !strings.Contains(offlineProxy, "network-is-none") || !strings.Contains(offlineProxy, "allow-domain") {
		t.Errorf("offlineProxy %q must be unresolvable (.invalid) and say why", offlineProxy)
	}
}

// TestPersonEnvWinsOverProfiles: a variable the person sets with --env is
// theirs — over a toolchain profile's value for it (the python profile's
// offline PIP_INDEX_URL), with a note saying so, and over the offline
// proxy, whose variables all step aside for a proxy of the person's (curl
// reads https_proxy before HTTPS_PROXY) while a NO_PROXY of theirs
// replaces only that one.
func TestPersonEnvWinsOverProfiles(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home", "ws", "cache")
	h := &fakeHost{home: filepath.Join(root, "home"), cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": "/usr/bin"},
		files: noSystemPip(), bins: map[string]string{"python3": "/usr/bin/python3"}}
	strict, _ := PresetByName("strict")
	pol := &Policy{Preset: strict}
	ws := filepath.Join(root, "ws")
	if err := os.WriteFile(filepath.Join(ws, "requirements.txt"), []byte("pytest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := func(env ...string) (sandbox.Policy, *SandboxReport) {
		t.Helper()
		var grants []Grant
		for _, e := range env {
			grants = append(grants, Grant{e, "--env"})
		}
		p, rep, err := pol.SandboxPolicy(ws, SandboxSettings{Toolchains: []string{"python"}, Env: grants}, h)
		if err != nil {
			t.Fatal(err)
		}
		return p, rep
	}
	p, _ := policy()
	if got := envValue(p.Env, "PIP_INDEX_URL"); got != pipOfflineIndex {
		t.Fatalf("the python profile's offline PIP_INDEX_URL is not set (%q): the test proves nothing", got)
	}
	const mine = "http://127.0.0.1:3141/simple"
	p, rep := policy("PIP_INDEX_URL=" + mine)
	if got := envValue(p.Env, "PIP_INDEX_URL"); got != mine {
		t.Errorf("--env PIP_INDEX_URL=%s gave %q", mine, got)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "PIP_INDEX_URL is yours (--env)") }) {
		t.Errorf("no note that the person's PIP_INDEX_URL wins: %q", rep.Notes)
	}
	if got := envValue(p.Env, "PIP_TIMEOUT"); got != "5" {
		t.Errorf("the profile's other variables went too: PIP_TIMEOUT=%q", got)
	}

	const proxy = "http://127.0.0.1:3128"
	p, _ = policy("HTTPS_PROXY=" + proxy)
	for _, name := range []string{"HTTP_PROXY", "http_proxy", "https_proxy", "npm_config_https_proxy", "PIP_PROXY"} {
		if got := envValue(p.Env, name); got == offlineProxy {
			t.Errorf("with the person's HTTPS_PROXY, %s is still the offline proxy", name)
		}
	}
	if got := envValue(p.Env, "HTTPS_PROXY"); got != proxy {
		t.Errorf("HTTPS_PROXY: %q", got)
	}
	p, _ = policy("NO_PROXY=localhost,.corp.example")
	if envValue(p.Env, "NO_PROXY") != "localhost,.corp.example" || envValue(p.Env, "https_proxy") != offlineProxy {
		t.Errorf("a NO_PROXY of the person's: NO_PROXY=%q https_proxy=%q", envValue(p.Env, "NO_PROXY"), envValue(p.Env, "https_proxy"))
	}
}
