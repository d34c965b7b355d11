package policies

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
)

func TestParseSandboxTable(t *testing.T) {
	ws := t.TempDir()
	path := WorkspaceFile(ws)
	f, err := ParseFile(path, []byte(`[sandbox]
network = "loopback"
allow_domains = ["@go", "docs.example.com",
  "*.example.org", "127.0.0.1:8080"]
deny_domains = ["ads.example.com"]
read = ["/opt/sdk", "vendor/lib"]
write = ["~/scratch"]
env = ["CI=1", "GOFLAGS"]
toolchains = ["go", "npm"]
`))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Sandbox
	if s.Network != sandbox.NetworkLoopback || s.NetworkSource != path+":2" {
		t.Errorf("network %q from %q", s.Network, s.NetworkSource)
	}
	if len(s.AllowDomains) != 4 || s.AllowDomains[3] != (Grant{"127.0.0.1:8080", path + ":4"}) {
		t.Errorf("allow_domains %+v (each with its own line)", s.AllowDomains)
	}
	home, _ := os.UserHomeDir()
	if s.Read[1].Value != filepath.Join(ws, "vendor/lib") || s.Write[0].Value != filepath.Join(home, "scratch") {
		t.Errorf("paths: read %+v write %+v", s.Read, s.Write)
	}
	if !slices.Equal(s.Toolchains, []string{"go", "node"}) || s.ToolchainsSource != path+":9" {
		t.Errorf("toolchains %v from %q (npm is node)", s.Toolchains, s.ToolchainsSource)
	}
	for _, tc := range []struct{ text, want string }{
		{"[sandbox]\nnetwork = \"internet\"\n", "p.toml:2: sandbox.network: unknown network mode"},
		{"[sandbox]\nnetwork = 1\n", "p.toml:2: sandbox.network must be a string"},
		{"[sandbox]\nread = [\"rel/path\"]\n", "p.toml:2: sandbox.read: path \"rel/path\" is relative"},
		{"[sandbox]\nread = \"/x\"\n", "p.toml:2: sandbox.read must be an array"},
		{"[sandbox]\nallow_domains = [\n\"ok.com\",\n\"@gopher\"]\n", "p.toml:4: sandbox.allow_domains: unknown registry alias \"@gopher\""},
		{"[sandbox]\nallow_domains = [\"http://x.com/\"]\n", "is not a name"},
		{"[sandbox]\nenv = [\"1BAD=x\"]\n", "p.toml:2: sandbox.env: \"1BAD=x\": want NAME"},
		{"[sandbox]\ntoolchains = \"cobol\"\n", "p.toml:2: sandbox.toolchains: unknown toolchain \"cobol\""},
		{"[sandbox]\ntoolchains = [\"go\", \"auto\"]\n", "\"auto\" is a value of its own"},
		{"[sandbox]\nnetworks = \"none\"\n", "p.toml:2: unknown key sandbox.networks"},
		{"[sandbox]\n[sandbox]\n", "p.toml:2: [sandbox] is given twice"},
	} {
		_, err := ParseFile("p.toml", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.text, err, tc.want)
		}
	}
}

// Under strict the workspace's file may only tighten the sandbox; the
// user's file may widen it; under standard the workspace's may too.
func TestLoadSandboxTightenOnly(t *testing.T) {
	ws, cfg := t.TempDir(), t.TempDir()
	user := filepath.Join(cfg, "policy.toml")
	os.WriteFile(user, []byte("[sandbox]\nnetwork = \"loopback\"\nread = [\"/opt\"]\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
	wsFile := WorkspaceFile(ws)
	strict, _ := PresetByName("strict")
	standard, _ := PresetByName("standard")

	for _, tc := range []struct{ text, want string }{
		{"[sandbox]\nnetwork = \"private\"\n", wsFile + ":2: sandbox.network \"private\" is wider than the \"loopback\" in force (" + user + ":2)"},
		{"[sandbox]\n\nread = [\"/etc\"]\n", wsFile + ":3: sandbox.read \"/etc\": the strict preset does not let"},
		{"[sandbox]\nwrite = [\"/tmp\"]\n", wsFile + ":2: sandbox.write"},
		{"[sandbox]\nenv = [\"AWS_PROFILE\"]\n", wsFile + ":2: sandbox.env"},
		{"[sandbox]\nallow_domains = [\"evil.example\"]\n", wsFile + ":2: sandbox.allow_domains \"evil.example\""},
	} {
		os.WriteFile(wsFile, []byte(tc.text), 0o644)
		if _, err := Load(strict, ws, &LoadOptions{UserFile: user}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("strict, workspace %q: got %v, want %q", tc.text, err, tc.want)
		}
		// Under standard, not until the user trusts this version.
		store := t.TempDir()
		if _, err := Load(standard, ws, &LoadOptions{UserFile: user, TrustStore: store}); err == nil || !strings.Contains(err.Error(), strings.SplitN(tc.want, ": ", 2)[0]+": ") || !strings.Contains(err.Error(), "not trusted in this version") || !strings.Contains(err.Error(), "lite-agent policy trust") {
			t.Errorf("standard, untrusted workspace %q: got %v, want the line and the trust command", tc.text, err)
		}
		trustFile(t, store, ws)
		if _, err := Load(standard, ws, &LoadOptions{UserFile: user, TrustStore: store}); err != nil {
			t.Errorf("standard trusts the workspace's file once trusted (%q): %v", tc.text, err)
		}
	}
	// What tightens is taken: a narrower network, deny_domains, and a
	// toolchain list that limits what is in force.
	os.WriteFile(wsFile, []byte("[sandbox]\nnetwork = \"none\"\ndeny_domains = [\"x.example\"]\ntoolchains = [\"go\"]\n"), 0o644)
	pol, err := Load(strict, ws, &LoadOptions{UserFile: user})
	if err != nil {
		t.Fatal(err)
	}
	if pol.Sandbox.Network != sandbox.NetworkNone || len(pol.Sandbox.DenyDomains) != 1 || pol.Sandbox.Read[0].Source != user+":3" {
		t.Errorf("merged: %+v", pol.Sandbox)
	}
	if pol.Sandbox.Toolchains != nil || !slices.Equal(pol.ToolchainLimit, []string{"go"}) {
		t.Errorf("an untrusted toolchain list narrows: toolchains %v limit %v", pol.Sandbox.Toolchains, pol.ToolchainLimit)
	}
}

// fakeHost is a machine made of a temp dir: programs are files in bin/,
// tool queries answer from a map.
type fakeHost struct {
	home, cache string
	env         map[string]string
	bins        map[string]string // name -> path
	out         map[string]string // argv joined by spaces -> output
	files       map[string]string // path -> content, over the real files (ReadFile)
}

func (h *fakeHost) Getenv(n string) string { return h.env[n] }
func (h *fakeHost) HomeDir() string        { return h.home }
func (h *fakeHost) LookPath(n string) string {
	return h.bins[n]
}
func (h *fakeHost) Output(argv ...string) (string, error) {
	if o, ok := h.out[strings.Join(argv, " ")]; ok {
		return o, nil
	}
	return "", errors.New("not installed")
}
func (h *fakeHost) Exists(p string) bool   { _, err := os.Stat(p); return err == nil }
func (h *fakeHost) Glob(p string) []string { m, _ := filepath.Glob(p); return m }
func (h *fakeHost) ReadFile(p string) ([]byte, error) {
	if b, ok := h.files[p]; ok {
		return []byte(b), nil
	}
	return os.ReadFile(p)
}
func (h *fakeHost) WriteFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o600)
}
func (h *fakeHost) WorkspaceCache(ws, p string) (string, error) {
	d := filepath.Join(h.cache, p)
	return d, os.MkdirAll(d, 0o700)
}

func mkdirs(t *testing.T, root string, dirs ...string) {
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGoModuleSourcesReadOnly: the go profile leaves extracted module
// sources read-only (go checks go.sum only when it extracts), whether or
// not the user has GOFLAGS, and a -modcacherw of theirs does not win.
func TestGoModuleSourcesReadOnly(t *testing.T) {
	for _, userFlags := range []string{"", "-modcacherw"} {
		root := t.TempDir()
		mkdirs(t, root, "home/sdk/go/bin", "home/go/pkg/mod/cache/download", "ws", "cache")
		home := filepath.Join(root, "home")
		goroot := filepath.Join(home, "sdk/go")
		h := &fakeHost{home: home, cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": "/usr/bin"},
			bins: map[string]string{"go": filepath.Join(goroot, "bin/go")},
			out: map[string]string{
				"go env -json GOROOT GOMODCACHE GOPATH GOPROXY GOFLAGS GOSUMDB " + strings.Join(goPass, " "): `{"GOROOT": "` + goroot + `",
			"GOMODCACHE": "` + home + `/go/pkg/mod", "GOPATH": "` + home + `/go", "GOFLAGS": "` + userFlags + `"}`,
			}}
		ws := filepath.Join(root, "ws")
		os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module x\n"), 0o644)
		strict, _ := PresetByName("strict")
		p, _, err := (&Policy{Preset: strict}).SandboxPolicy(ws, SandboxSettings{}, h)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSpace(userFlags + " -modcacherw=false")
		if !slices.Contains(p.Env, "GOFLAGS="+want) {
			t.Errorf("user GOFLAGS %q: env %q lacks GOFLAGS=%s", userFlags, p.Env, want)
		}
	}
}

func TestGoProfileGrants(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "home/sdk/go/bin", "home/go/pkg/mod/cache/download", "home/go/bin", "ws", "cache")
	home := filepath.Join(root, "home")
	goroot := filepath.Join(home, "sdk/go")
	// The user's PATH: their go, their installed tools, the system.
	userPath := goroot + "/bin:" + home + "/go/bin:/usr/bin"
	h := &fakeHost{home: home, cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": userPath},
		bins: map[string]string{"go": filepath.Join(goroot, "bin/go")},
		out: map[string]string{
			"go env -json GOROOT GOMODCACHE GOPATH GOPROXY GOFLAGS GOSUMDB " + strings.Join(goPass, " "): `{"GOROOT": "` + goroot + `",
			"GOMODCACHE": "` + home + `/go/pkg/mod", "GOPATH": "` + home + `/go", "GOPROXY": "http://user:tok@127.0.0.1:9/mod,direct",
			"GOFLAGS": "-trimpath", "GOSUMDB": "off", "GOTOOLCHAIN": "local", "GOPRIVATE": "corp.example"}`,
		}}
	ws := filepath.Join(root, "ws")
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module x\n"), 0o644)
	strict, _ := PresetByName("strict")
	pol := &Policy{Preset: strict}
	p, rep, err := pol.SandboxPolicy(ws, SandboxSettings{AllowDomains: []Grant{{"@go", "--allow-domain @go"}}}, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{goroot, home + "/go/pkg/mod/cache/download", home + "/go/bin"} {
		if !slices.Contains(p.ReadOnlyPaths, want) {
			t.Errorf("read-only %v lacks %s", p.ReadOnlyPaths, want)
		}
	}
	if !slices.Equal(p.ReadWritePaths, []string{filepath.Join(root, "cache/go")}) {
		t.Errorf("writable: %v (the per-workspace cache only)", p.ReadWritePaths)
	}
	env := strings.Join(p.Env, "\n") + "\n"
	for _, want := range []string{
		"GOCACHE=" + root + "/cache/go/build\n",
		"GOMODCACHE=" + root + "/cache/go/mod\n",
		"GOPROXY=file://" + home + "/go/pkg/mod/cache/download,http://127.0.0.1:9/mod,direct\n",
		"GOFLAGS=-trimpath -modcacherw=false\n",
		"GOTOOLCHAIN=local\n", "GOPRIVATE=corp.example\n",
	} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	// PATH is the user's, passed as it is: no profile puts anything
	// before it.
	if slices.ContainsFunc(p.Env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) || !slices.Contains(p.Env, "PATH") {
		t.Errorf("the profile set PATH (it passes as the user's):\n%s", env)
	}
	if strings.Contains(env, "tok") {
		t.Errorf("a credential in GOPROXY reached the sandbox:\n%s", env)
	}
	// @go is the user's GOPROXY host, from go env; GOSUMDB=off adds none.
	if !slices.Equal(p.AllowDomains, []string{"127.0.0.1:9"}) || rep.AllowDomains[0].Source != "--allow-domain @go (@go)" {
		t.Errorf("@go: %v %+v", p.AllowDomains, rep.AllowDomains)
	}
	if len(rep.Toolchains) != 1 || rep.Toolchains[0].Why != "go.mod in the workspace" {
		t.Errorf("report: %+v", rep.Toolchains)
	}
	// none: nothing granted but the user's PATH entries (so go is the
	// same go); a list: named even without a marker.
	onPath := []string{goroot + "/bin", home + "/go/bin"}
	p, _, _ = pol.SandboxPolicy(ws, SandboxSettings{Toolchains: []string{"none"}}, h)
	// (The env holds only the offline proxy of network none.)
	if !slices.Equal(p.ReadOnlyPaths, onPath) || len(p.ReadWritePaths) != 0 || slices.ContainsFunc(p.Env, func(e string) bool { return strings.HasPrefix(e, "GO") }) {
		t.Errorf("toolchains none: %+v", p)
	}
	os.Remove(filepath.Join(ws, "go.mod"))
	if p, _, _ = pol.SandboxPolicy(ws, SandboxSettings{}, h); !slices.Equal(p.ReadOnlyPaths, onPath) {
		t.Errorf("auto without go.mod granted %v", p.ReadOnlyPaths)
	}
	if p, _, _ = pol.SandboxPolicy(ws, SandboxSettings{Toolchains: []string{"go"}}, h); !slices.Contains(p.ReadOnlyPaths, goroot) {
		t.Errorf("--toolchains go: %v", p.ReadOnlyPaths)
	}
	// Network none and no domain: after the user's module cache, go
	// meets a path that explains the refusal instead of a DNS error.
	if env := strings.Join(p.Env, "\n") + "\n"; !strings.Contains(env, "GOPROXY=file://"+home+"/go/pkg/mod/cache/download,"+goOfflineMarker+"\n") {
		t.Errorf("offline GOPROXY:\n%s", env)
	}
	// An untrusted file's list narrows auto.
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module x\n"), 0o644)
	lim := &Policy{Preset: strict, ToolchainLimit: []string{"node"}}
	if p, _, _ = lim.SandboxPolicy(ws, SandboxSettings{}, h); !slices.Equal(p.ReadOnlyPaths, onPath) {
		t.Errorf("limit node still granted go: %v", p.ReadOnlyPaths)
	}
}

// A profile never grants a credentials path, a directory holding one or a
// path in one — here rustup's layout, where cargo's bin/ sits in
// ~/.cargo next to credentials.toml: the "parent of bin/" rule would
// grant ~/.cargo, and the guard shrinks it to ~/.cargo/bin.
func TestProfilesNeverGrantCredentials(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	mkdirs(t, home, ".cargo/bin", ".cargo/registry", ".rustup/toolchains", ".ssh")
	os.WriteFile(filepath.Join(home, ".cargo/credentials.toml"), []byte("token"), 0o600)
	h := &fakeHost{home: home, cache: filepath.Join(root, "cache"), env: map[string]string{},
		bins: map[string]string{"cargo": filepath.Join(home, ".cargo/bin/cargo")}, out: map[string]string{}}
	strict, _ := PresetByName("strict")
	p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(t.TempDir(), SandboxSettings{Toolchains: []string{"rust"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.ReadOnlyPaths {
		if c := credentialClash(r, home); c != "" {
			t.Errorf("granted %s, exposing %s", r, c)
		}
	}
	if !slices.Contains(p.ReadOnlyPaths, home+"/.cargo/bin") || !slices.Contains(p.ReadOnlyPaths, home+"/.rustup") {
		t.Errorf("rust read-only: %v", p.ReadOnlyPaths)
	}
	_ = rep
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{home, true}, {"/", true}, {root, true}, {home + "/.cargo", true}, {home + "/.ssh", true},
		{home + "/.ssh/id_ed25519", true}, {home + "/.docker", true}, {home + "/.config", true},
		{home + "/.m2", true}, {home + "/.m2/repository", false}, {home + "/.cargo/registry", false},
		{home + "/.rustup", false}, {"/usr/local/go", false},
	} {
		if got := credentialClash(tc.p, home) != ""; got != tc.want {
			t.Errorf("credentialClash(%s) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestRegistryAliasErrors(t *testing.T) {
	h := &fakeHost{home: t.TempDir(), cache: t.TempDir(), env: map[string]string{}, out: map[string]string{}}
	strict, _ := PresetByName("strict")
	_, _, err := (&Policy{Preset: strict}).SandboxPolicy(t.TempDir(), SandboxSettings{AllowDomains: []Grant{{"@crates", "x.toml:3"}}}, h)
	if err == nil || !strings.Contains(err.Error(), "x.toml:3: @crates: cargo's configuration") {
		t.Errorf("@crates without a configured registry: %v", err)
	}
	_, _, err = (&Policy{Preset: strict}).SandboxPolicy(t.TempDir(), SandboxSettings{AllowDomains: []Grant{{"@registries", "--allow-domain @registries"}}}, h)
	if err == nil || !strings.Contains(err.Error(), "no toolchain profile is on") {
		t.Errorf("@registries with none: %v", err)
	}
}

func TestAutoDetectsMarkersInAWorkspaceWithPatternCharacters(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "a[1]*")
	mkdirs(t, ws, ".")
	if err := os.WriteFile(filepath.Join(ws, "requirements-dev.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{home: t.TempDir(), env: map[string]string{}}
	got, _ := selectToolchains([]string{"auto"}, nil, ws, h)
	if len(got) != 1 || got[0].Name != "python" || got[0].why != "requirements-dev.txt in the workspace" {
		t.Errorf("auto in %s: %+v", ws, got)
	}
}

func TestDenyDomainsWithoutAllowsChangeNothing(t *testing.T) {
	strict, _ := PresetByName("strict")
	h := &fakeHost{home: t.TempDir(), cache: t.TempDir(), env: map[string]string{}}
	deny := []Grant{{"ads.example", "f.toml:2"}}
	p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(t.TempDir(), SandboxSettings{DenyDomains: deny, Toolchains: []string{"none"}}, h)
	if err != nil || p.DenyDomains != nil || len(rep.DenyDomains) != 1 {
		t.Errorf("deny only: policy %v report %v err %v", p.DenyDomains, rep.DenyDomains, err)
	}
	p, _, _ = (&Policy{Preset: strict}).SandboxPolicy(t.TempDir(), SandboxSettings{DenyDomains: deny,
		AllowDomains: []Grant{{"*.example", "--allow-domain *.example"}}, Toolchains: []string{"none"}}, h)
	if !slices.Equal(p.DenyDomains, []string{"ads.example"}) || !slices.Equal(p.AllowDomains, []string{"*.example"}) {
		t.Errorf("allow and deny: %v %v", p.AllowDomains, p.DenyDomains)
	}
}

// TestToolchainQueriesNeverRunAPlantedProgram: the profiles' queries (go
// env) run unconfined, so a go on PATH inside the workspace or a
// read-write path — which the agent could have written — is neither run
// nor granted: the profile is not detected through it. Shown detected
// with the same program outside.
func TestToolchainQueriesNeverRunAPlantedProgram(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "ws/bin", "rw/bin", "sdk/bin", "cache")
	ws := filepath.Join(root, "ws")
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module x\n"), 0o644)
	standard, _ := PresetByName("standard")
	for _, tc := range []struct {
		name, bin string
		detected  bool
	}{
		{"outside", filepath.Join(root, "sdk/bin/go"), true},
		{"in the workspace", filepath.Join(ws, "bin/go"), false},
		{"in a read-write path", filepath.Join(root, "rw/bin/go"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			h := &fakeHost{home: root, cache: filepath.Join(root, "cache"), env: map[string]string{"PATH": filepath.Dir(tc.bin)},
				bins: map[string]string{"go": tc.bin}, out: map[string]string{}}
			h.out["go env -json GOROOT GOMODCACHE GOPATH GOPROXY GOFLAGS GOSUMDB "+strings.Join(goPass, " ")] = `{"GOROOT": "` + filepath.Join(root, "sdk") + `"}`
			counting := &countingHost{fakeHost: h, ran: &ran}
			pol := &Policy{Preset: standard}
			_, rep, err := pol.SandboxPolicy(ws, SandboxSettings{Write: []Grant{{filepath.Join(root, "rw"), "--allow-write"}}}, counting)
			if err != nil && tc.detected {
				t.Fatal(err)
			}
			if ran != tc.detected {
				t.Errorf("the go at %s ran: %v, want %v", tc.bin, ran, tc.detected)
			}
			if got := rep != nil && len(rep.Toolchains) == 1 && len(rep.Toolchains[0].Read) > 0; got != tc.detected {
				t.Errorf("go detected through %s: %v, want %v (%+v)", tc.bin, got, tc.detected, rep)
			}
		})
	}
}

// countingHost notes whether any tool query ran.
type countingHost struct {
	*fakeHost
	ran *bool
}

func (h *countingHost) Output(argv ...string) (string, error) {
	*h.ran = true
	return h.fakeHost.Output(argv...)
}

// TestGitSetting: .git is read-only unless the user's file (or a flag,
// the options layer) says writable; a workspace file may say read-only
// (it tightens nothing, and is allowed); a bad value names the line.
func TestGitSetting(t *testing.T) {
	standard, _ := PresetByName("standard")
	ws, dir := t.TempDir(), t.TempDir()
	user := filepath.Join(dir, "policy.toml")
	load := func(userText, wsText string) (*Policy, error) {
		os.WriteFile(user, []byte(userText), 0o644)
		os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
		os.WriteFile(WorkspaceFile(ws), []byte(wsText), 0o644)
		return Load(standard, ws, &LoadOptions{UserFile: user, TrustStore: t.TempDir()})
	}
	host := &fakeHost{env: map[string]string{}, home: t.TempDir()}
	for _, tc := range []struct {
		name, user, ws string
		extra          SandboxSettings
		writable       bool
		source         string
	}{
		{"default", "", "", SandboxSettings{}, false, "default"},
		{"user file", "[sandbox]\ngit = \"writable\"\n", "", SandboxSettings{}, true, user + ":2"},
		{"flag", "", "", SandboxSettings{Git: GitWritable, GitSource: "--git"}, true, "--git"},
		{"workspace tightens", "[sandbox]\ngit = \"writable\"\n", "[sandbox]\ngit = \"read-only\"\n", SandboxSettings{}, false, WorkspaceFile(ws) + ":2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := load(tc.user, tc.ws)
			if err != nil {
				t.Fatal(err)
			}
			p, rep, err := pol.SandboxPolicy(ws, tc.extra, host)
			if err != nil {
				t.Fatal(err)
			}
			if p.GitWritable != tc.writable || rep.GitSource != tc.source {
				t.Errorf("GitWritable %v from %q, want %v from %q", p.GitWritable, rep.GitSource, tc.writable, tc.source)
			}
		})
	}
	if _, err := load("[sandbox]\ngit = \"rw\"\n", ""); err == nil || !strings.Contains(err.Error(), ":2: sandbox.git: unknown git mode \"rw\" (read-only or writable)") {
		t.Errorf("bad value: %v", err)
	}
}

// TestLevelSetting: the container level is used only when named by the
// user's file or a flag (the options layer); a workspace's own file may
// only choose full (tightening), and naming container there is an error
// naming the line; a bad value names the line too.
func TestLevelSetting(t *testing.T) {
	strict, _ := PresetByName("strict")
	ws, dir := t.TempDir(), t.TempDir()
	user := filepath.Join(dir, "policy.toml")
	load := func(userText, wsText string) (*Policy, error) {
		os.WriteFile(user, []byte(userText), 0o644)
		os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
		os.WriteFile(WorkspaceFile(ws), []byte(wsText), 0o644)
		return Load(strict, ws, &LoadOptions{UserFile: user, TrustStore: t.TempDir()})
	}
	host := &fakeHost{env: map[string]string{}, home: t.TempDir()}
	for _, tc := range []struct {
		name, user, ws string
		extra          SandboxSettings
		level          sandbox.Level
		source         string
	}{
		{"default", "", "", SandboxSettings{}, sandbox.LevelFull, "default"},
		{"user file", "[sandbox]\nlevel = \"container\"\n", "", SandboxSettings{}, sandbox.LevelContainer, user + ":2"},
		{"flag", "", "", SandboxSettings{Level: sandbox.LevelContainer, LevelSource: "--sandbox-level"}, sandbox.LevelContainer, "--sandbox-level"},
		{"workspace tightens", "[sandbox]\nlevel = \"container\"\n", "[sandbox]\nlevel = \"full\"\n", SandboxSettings{}, sandbox.LevelFull, WorkspaceFile(ws) + ":2"},
		{"workspace may repeat the user's choice", "[sandbox]\nlevel = \"container\"\n", "[sandbox]\nlevel = \"container\"\n", SandboxSettings{}, sandbox.LevelContainer, WorkspaceFile(ws) + ":2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := load(tc.user, tc.ws)
			if err != nil {
				t.Fatal(err)
			}
			p, rep, err := pol.SandboxPolicy(ws, tc.extra, host)
			if err != nil {
				t.Fatal(err)
			}
			if p.Level != tc.level || rep.Level != tc.level || rep.LevelSource != tc.source {
				t.Errorf("level %q (report %q from %q), want %q from %q", p.Level, rep.Level, rep.LevelSource, tc.level, tc.source)
			}
		})
	}
	if _, err := load("", "[sandbox]\nlevel = \"container\"\n"); err == nil || !strings.Contains(err.Error(), WorkspaceFile(ws)+":2") || !strings.Contains(err.Error(), `sandbox.level "container"`) {
		t.Errorf("the workspace's file chose the container level: %v", err)
	}
	if _, err := load("[sandbox]\nlevel = \"none\"\n", ""); err == nil || !strings.Contains(err.Error(), ":2: sandbox.level: unknown sandbox level \"none\" (full or container)") {
		t.Errorf("bad value: %v", err)
	}
}
