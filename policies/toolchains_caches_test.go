package policies

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The user's package caches are granted only where the tool reads them
// as granted. npm's (found by `npm config get cache`) is granted — its
// _cacache only, read-only — and used, only offline: npm cannot look a
// request up in a read-only cache (a lookup rewrites the index), so with
// a registry granted it keeps the per-workspace cache and the user's is
// not granted. pip's and uv's caches and cargo's registry are never
// granted: no tool would read them (toolchains.go says why; the e2e
// tests TestNodeInstallFromTheUsersCacheOffline and
// TestRustCargoBuildVendoredCrateOffline show what works instead).
func TestUserCachesOnlyWhereTheToolReadsThem(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	npmCache := filepath.Join(root, "npm-cache") // npm_config_cache, not ~/.npm
	mkdirs(t, home, ".cache/pip/http-v2", ".cache/uv", ".cargo/bin", ".cargo/registry/cache", ".cargo/git", "bin")
	mkdirs(t, root, "npm-cache/_cacache/index-v5", "npm-cache/_logs", "ws", "cache")
	h := &fakeHost{home: home, cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": "/usr/bin"},
		bins: map[string]string{"npm": filepath.Join(home, "bin/npm"), "pip3": filepath.Join(home, "bin/pip3"),
			"cargo": filepath.Join(home, ".cargo/bin/cargo")},
		out: map[string]string{"npm config get cache": npmCache + "\n"}}
	strict, _ := PresetByName("strict")
	ws := filepath.Join(root, "ws")
	all := []string{"node", "python", "rust"}
	for _, tc := range []struct {
		name    string
		domains []Grant
	}{
		{"network none", nil},
		{"a registry granted", []Grant{{"127.0.0.1:4873", "--allow-domain"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingHost{fakeHost: h}
			p, _, err := (&Policy{Preset: strict}).SandboxPolicy(ws, SandboxSettings{Toolchains: all, AllowDomains: tc.domains}, rec)
			if err != nil {
				t.Fatal(err)
			}
			offline := tc.domains == nil
			// npm is asked for its cache only when its answer is used:
			// a Node start (0.2–0.3 s) at every session start otherwise.
			if asked := slices.Contains(rec.ran, "npm config get cache"); asked != offline {
				t.Errorf("npm asked for its cache: %v, want %v (queries run: %q)", asked, offline, rec.ran)
			}
			env := strings.Join(p.Env, "\n") + "\n"
			if got := slices.Contains(p.ReadOnlyPaths, npmCache+"/_cacache"); got != offline {
				t.Errorf("the user's npm _cacache granted = %v, want %v: %v", got, offline, p.ReadOnlyPaths)
			}
			wantCache := "npm_config_cache=" + filepath.Join(root, "cache/node/npm") + "\n"
			if offline {
				wantCache = "npm_config_cache=" + npmCache + "\n"
				if !strings.Contains(env, "npm_config_prefer_offline=true\n") ||
					!strings.Contains(env, "npm_config_logs_dir="+filepath.Join(root, "cache/node/npm-logs")+"\n") {
					t.Errorf("offline npm: offline-first, its logs in the per-workspace cache:\n%s", env)
				}
			}
			if !strings.Contains(env, wantCache) || strings.Count(env, "npm_config_cache=") != 1 {
				t.Errorf("env: want one %q:\n%s", wantCache, env)
			}
			for _, r := range p.ReadOnlyPaths {
				if r == npmCache || strings.Contains(r, "/.cache/") || strings.Contains(r, "/.cargo/registry") || strings.Contains(r, "/.cargo/git") {
					t.Errorf("granted %s, which no tool reads as granted", r)
				}
			}
			for _, w := range p.ReadWritePaths {
				if !strings.HasPrefix(w, filepath.Join(root, "cache")+"/") {
					t.Errorf("writable %s outside the per-workspace caches", w)
				}
			}
		})
	}
	// No usable npm cache (no _cacache there, or npm gave no answer): the
	// per-workspace cache stays npm's, and nothing is granted for it.
	h.out["npm config get cache"] = filepath.Join(root, "nothing-here") + "\n"
	p, _, err := (&Policy{Preset: strict}).SandboxPolicy(ws, SandboxSettings{Toolchains: []string{"node"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	if env := strings.Join(p.Env, "\n"); !strings.Contains(env, "npm_config_cache="+filepath.Join(root, "cache/node/npm")+"\n") {
		t.Errorf("without a user cache npm keeps the per-workspace one:\n%s", env)
	}
}

// recordingHost notes every tool query it is asked to run.
type recordingHost struct {
	*fakeHost
	ran []string
}

func (h *recordingHost) Output(argv ...string) (string, error) {
	h.ran = append(h.ran, strings.Join(argv, " "))
	return h.fakeHost.Output(argv...)
}

// cargo reads its configuration from its own CARGO_HOME, which in the
// sandbox is the per-workspace cache: the person's source replacements
// (Debian's registry, a mirror) and registries are carried there, their
// tokens, credential providers and [http] never; and with the network
// none cargo is not put in offline mode (whose "no matching package"
// names nothing) but fails at the offline proxy at once.
func TestCargoConfigurationCarriedWithoutSecrets(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	mkdirs(t, root, "ws", "cache", "home/.cargo/bin")
	os.WriteFile(filepath.Join(home, ".cargo/bin/cargo"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(home, ".cargo/config.toml"), []byte(`
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[source.corp]
registry = "sparse+https://me:SECRET-url@crates.corp.example/index/"
[registries.corp]
index = "sparse+https://crates.corp.example/index/"
token = "SECRET-token"
credential-provider = "cargo:token"
[registry]
default = "corp"
token = "SECRET-default"
[http]
proxy = "http://me:SECRET-proxy@proxy.example:3128"
[net]
git-fetch-with-cli = true
`), 0o600)
	h := &fakeHost{home: home, cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": "/usr/bin"},
		bins: map[string]string{"cargo": filepath.Join(home, ".cargo/bin/cargo")}}
	strict, _ := PresetByName("strict")
	p, _, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: []string{"rust"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "cache/rust/cargo/config.toml"))
	if err != nil {
		t.Fatalf("the sandbox's cargo configuration: %v", err)
	}
	got := string(b)
	if strings.Contains(got, "SECRET") || strings.Contains(got, "credential-provider") || strings.Contains(got, "[http]") {
		t.Errorf("a credential reached the sandbox's cargo configuration:\n%s", got)
	}
	for _, want := range []string{"replace-with = 'debian'", "directory = '/usr/share/cargo/registry'", "registry = 'sparse+https://crates.corp.example/index/'",
		"index = 'sparse+https://crates.corp.example/index/'", "default = 'corp'", "git-fetch-with-cli = true"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %s:\n%s", want, got)
		}
	}
	env := strings.Join(p.Env, "\n") + "\n"
	if !strings.Contains(env, "CARGO_HOME="+filepath.Join(root, "cache/rust/cargo")+"\n") || !strings.Contains(env, "CARGO_NET_RETRY=0\n") ||
		strings.Contains(env, "CARGO_NET_OFFLINE") || !strings.Contains(env, "CARGO_HTTP_PROXY="+offlineProxy+"\n") {
		t.Errorf("cargo's environment, network none:\n%s", env)
	}
}
