package machine

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/policies"
)

// The registry aliases expand to what each tool's own configuration says,
// read by the real tool: here fake configurations (a fake HOME, GOENV,
// PIP_CONFIG_FILE, CARGO_HOME) that point at 127.0.0.1.
func TestRegistryAliasesFromToolConfigs(t *testing.T) {
	home := t.TempDir()
	write := func(rel, text string) string {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goenv := write("goenv", "GOPROXY=http://127.0.0.1:3001/go,direct\nGOSUMDB=sum.example+key http://127.0.0.1:3002\n")
	write(".npmrc", "registry=http://127.0.0.1:3003/npm/\n@corp:registry=http://127.0.0.1:3004/\n")
	pipconf := write("pip.conf", "[global]\nindex-url = http://127.0.0.1:3005/simple\n")
	write(".cargo/config.toml", "[source.crates-io]\nreplace-with = \"mirror\"\n[source.mirror]\nregistry = \"sparse+http://127.0.0.1:3006/index/\"\n")
	write(".m2/settings.xml", "<settings><!-- <url>http://commented.example/</url> --><mirrors><mirror><url>http://127.0.0.1:3007/maven2</url></mirror></mirrors></settings>")
	env := map[string]string{"HOME": home, "PATH": os.Getenv("PATH"), "GOENV": goenv, "PIP_CONFIG_FILE": pipconf,
		"CARGO_HOME": filepath.Join(home, ".cargo")}
	h := &Host{CacheRoot: t.TempDir(), Env: func(n string) string { return env[n] }}
	for _, tc := range []struct {
		alias, tool string
		want        []string
	}{
		{"@go", "go", []string{"127.0.0.1:3001", "127.0.0.1:3002"}},
		{"@npm", "npm", []string{"127.0.0.1:3003", "127.0.0.1:3004"}},
		{"@pypi", "python3", []string{"127.0.0.1:3005"}},
		{"@crates", "", []string{"127.0.0.1:3006"}},
		{"@maven", "", []string{"127.0.0.1:3007"}},
	} {
		t.Run(tc.alias, func(t *testing.T) {
			if tc.tool != "" {
				if _, err := exec.LookPath(tc.tool); err != nil {
					t.Skipf("needs %s (make deps): would check that %s comes from its configuration", tc.tool, tc.alias)
				}
			}
			if tc.alias == "@pypi" && exec.Command("python3", "-m", "pip", "--version").Run() != nil {
				t.Skip("needs pip (make deps): would check @pypi from pip config")
			}
			pol := &policies.Policy{Preset: mustPreset(t, "strict")}
			p, _, err := pol.SandboxPolicy(t.TempDir(), policies.SandboxSettings{
				Toolchains:   []string{"none"},
				AllowDomains: []policies.Grant{{Value: tc.alias, Source: "--allow-domain " + tc.alias}}}, h)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(p.AllowDomains)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s = %v, want %v", tc.alias, got, tc.want)
			}
		})
	}
}

func mustPreset(t *testing.T, name string) policies.Preset {
	p, err := policies.PresetByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWorkspaceCacheIsOutsideWorkspaceAndPerWorkspace(t *testing.T) {
	root, src := t.TempDir(), t.TempDir()
	h := &Host{CacheRoot: root}
	for _, d := range []string{"src/a", "other/a"} {
		os.MkdirAll(filepath.Join(src, d), 0o755)
	}
	a, err := h.WorkspaceCache(filepath.Join(src, "src/a"), "go")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.WorkspaceCache(filepath.Join(src, "other/a"), "go")
	if a == b || !strings.HasPrefix(a, root+"/") {
		t.Errorf("caches %s and %s", a, b)
	}
	if ws, _ := os.ReadFile(filepath.Join(filepath.Dir(a), "workspace")); !strings.HasPrefix(string(ws), filepath.Join(src, "src/a")+"\n") {
		t.Errorf("workspace file: %q", ws)
	}
	if _, err := h.WorkspaceCache(filepath.Join(src, "missing"), "go"); err == nil {
		t.Error("a cache for a workspace that does not exist")
	}
}

// TestRecreatedWorkspaceGetsFreshCache: a workspace removed and made
// again at the same path is another directory; it must not inherit the
// caches (an edited module source) of the one before. Keyed on the path
// alone, it did.
func TestRecreatedWorkspaceGetsFreshCache(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(t.TempDir(), "proj")
	os.Mkdir(ws, 0o755)
	h := &Host{CacheRoot: root}
	old, err := h.WorkspaceCache(ws, "go")
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(old, "mod", "example.com", "dep@v1.0.0", "dep.go")
	os.MkdirAll(filepath.Dir(planted), 0o755)
	os.WriteFile(planted, []byte("package dep // backdoored\n"), 0o644)
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(ws, 0o755)
	fresh, err := h.WorkspaceCache(ws, "go")
	if err != nil {
		t.Fatal(err)
	}
	if fresh == old {
		t.Fatalf("the re-created workspace %s inherited the cache %s", ws, old)
	}
	if _, err := os.Stat(filepath.Join(fresh, "mod", "example.com", "dep@v1.0.0", "dep.go")); err == nil {
		t.Fatal("the planted module source is in the new workspace's cache")
	}
	// The same directory keeps its cache (a later session reuses it).
	if again, _ := h.WorkspaceCache(ws, "go"); again != fresh {
		t.Errorf("the same workspace got a second cache: %s, %s", fresh, again)
	}
	// gc removes the old one: its workspace is another directory now.
	removed, err := RemoveWorkspaceCaches(root, false, false)
	if err != nil || len(removed) != 1 || removed[0] != filepath.Dir(old) {
		t.Errorf("gc removed %v (%v), want the old cache %s", removed, err, filepath.Dir(old))
	}
}

// TestResetWorkspaceCaches: what rewind --to 0 does to the caches.
func TestResetWorkspaceCaches(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	h := &Host{CacheRoot: root}
	if dirs, err := ResetWorkspaceCaches(root, ws, false); dirs != nil || err != nil {
		t.Fatalf("no cache yet: %q, %v", dirs, err)
	}
	c, _ := h.WorkspaceCache(ws, "go")
	conf, _ := h.WorkspaceCache(ws, "maven.conf")
	os.WriteFile(filepath.Join(conf, "settings.xml"), []byte("<settings/>"), 0o644)
	ro := filepath.Join(c, "mod", "x@v1")
	os.MkdirAll(ro, 0o755)
	os.WriteFile(filepath.Join(ro, "f.go"), []byte("package x"), 0o444)
	os.Chmod(ro, 0o555)
	if dirs, _ := ResetWorkspaceCaches(root, ws, true); !slices.Equal(dirs, []string{c}) {
		t.Errorf("dry run: %q", dirs)
	}
	if _, err := os.Stat(ro); err != nil {
		t.Fatal("the dry run removed the cache")
	}
	if dirs, err := ResetWorkspaceCaches(root, ws, false); !slices.Equal(dirs, []string{c}) || err != nil {
		t.Fatalf("reset: %q, %v", dirs, err)
	}
	if left, _ := os.ReadDir(c); len(left) != 0 {
		t.Errorf("left in the cache: %v", left)
	}
	if _, err := os.Stat(filepath.Join(conf, "settings.xml")); err != nil {
		t.Error("the generated configuration went too")
	}
	if dirs, _ := ResetWorkspaceCaches(root, ws, false); dirs != nil {
		t.Errorf("an empty cache reset again: %v", dirs)
	}
}

func TestRemoveWorkspaceCaches(t *testing.T) {
	root, live := t.TempDir(), t.TempDir()
	h := &Host{CacheRoot: root}
	keep, _ := h.WorkspaceCache(live, "go")
	os.Mkdir(filepath.Join(live, "gone"), 0o755)
	gone, _ := h.WorkspaceCache(filepath.Join(live, "gone"), "go")
	os.Remove(filepath.Join(live, "gone"))
	// A read-only directory, as Go leaves its module cache.
	ro := filepath.Join(gone, "mod", "x@v1")
	os.MkdirAll(ro, 0o755)
	os.WriteFile(filepath.Join(ro, "f.go"), []byte("package x"), 0o444)
	os.Chmod(ro, 0o555)
	removed, err := RemoveWorkspaceCaches(root, false, false)
	if err != nil || len(removed) != 1 || removed[0] != filepath.Dir(gone) {
		t.Fatalf("removed %v, %v", removed, err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the live workspace's cache went: %v", err)
	}
	if removed, _ = RemoveWorkspaceCaches(root, true, true); len(removed) != 1 {
		t.Errorf("dry run of all: %v", removed)
	}
	if removed, _ = RemoveWorkspaceCaches(root, true, false); len(removed) != 1 {
		t.Errorf("all: %v", removed)
	}
	if _, err := os.Stat(keep); err == nil {
		t.Error("--caches kept a cache")
	}
}
