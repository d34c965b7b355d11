package policies

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
)

// questionCounter counts the file-system questions asked of the Host.
type questionCounter struct {
	*fakeHost
	exists, globs map[string]int
}

func (h *questionCounter) Exists(p string) bool   { h.exists[p]++; return h.fakeHost.Exists(p) }
func (h *questionCounter) Glob(p string) []string { h.globs[p]++; return h.fakeHost.Glob(p) }

// personPathFixture is a home with a version manager's shims, rustup's
// proxies linked to rustup, an nvm install reached through a link, a
// link out to a documents folder and a credentials directory on PATH,
// with a credential file in two of the granted roots.
func personPathFixture(t *testing.T) (ws string, h *fakeHost) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	pyenv := filepath.Join(home, ".pyenv")
	node := filepath.Join(home, ".nvm/versions/node/v20.1.0")
	mkdirs(t, root, "ws", "cache", "home/.pyenv/libexec", "home/.pyenv/shims", "home/.pyenv/versions/3.12.1/bin",
		"home/.nvm/versions/node/v20.1.0/bin", "home/.nvm/versions/node/v20.1.0/lib/node_modules/npm/bin",
		"home/.cargo/bin", "home/.rustup/toolchains", "home/.ssh/bin", "home/bin", "home/Documents")
	for _, f := range []string{pyenv + "/libexec/pyenv", pyenv + "/shims/python3", node + "/lib/node_modules/npm/bin/npm-cli.js",
		home + "/.cargo/bin/rustup", home + "/Documents/notes.sh"} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, proxy := range []string{"cargo", "rustc", "rustdoc", "rustfmt"} {
		if err := os.Symlink("rustup", home+"/.cargo/bin/"+proxy); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(pyenv+"/versions/3.12.1/pip.conf", []byte("[global]\nindex-url = https://u:SECRET@pypi.example/simple\n"), 0o600)
	os.WriteFile(home+"/.rustup/credentials.toml", []byte("token = \"SECRET\"\n"), 0o600)
	os.Symlink("../lib/node_modules/npm/bin/npm-cli.js", node+"/bin/npm")
	os.Symlink("../Documents/notes.sh", home+"/bin/notes")
	os.Symlink(".cargo/bin", home+"/cargo-bin") // the same directory by another name
	userPath := strings.Join([]string{pyenv + "/shims", node + "/bin", home + "/.cargo/bin", home + "/cargo-bin",
		home + "/.ssh/bin", home + "/bin", pyenv + "/shims", home + "/.cargo/bin", "/usr/bin", "/bin"}, ":")
	return filepath.Join(root, "ws"), &fakeHost{home: home, cache: filepath.Join(root, "cache"),
		env: map[string]string{"PATH": userPath, "PYENV_VERSION": "3.12.1"}}
}

// TestPersonPathSameThroughSnapshot: the grants, notes and variables
// personPath makes through a snapshot (each question asked once, a PATH
// directory named again skipped) are exactly those it makes asking the
// file system every time — the fixture's PATH names directories twice and
// through a link, and holds credentials to hide.
func TestPersonPathSameThroughSnapshot(t *testing.T) {
	ws, h := personPathFixture(t)
	run := func(h Host) (sandbox.Policy, SandboxReport) {
		p := sandbox.Policy{Workspace: ws}
		var rep SandboxReport
		personPath(&p, &rep, h)
		return p, rep
	}
	p1, rep1 := run(h)
	p2, rep2 := run(newSnapshot(h))
	if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(rep1, rep2) {
		t.Errorf("through a snapshot:\n%+v\n%+v\nasking each time:\n%+v\n%+v", p2, rep2, p1, rep1)
	}
	// The fixture shows what it is for: credentials hidden, a grant made.
	if len(p1.ReadOnlyPaths) == 0 || !strings.Contains(strings.Join(rep1.Notes, "\n"), "pip.conf") ||
		!strings.Contains(strings.Join(rep1.Notes, "\n"), "credentials.toml") {
		t.Errorf("the fixture grants %q with notes %q: not the case it means to test", p1.ReadOnlyPaths, rep1.Notes)
	}
}

// TestSandboxPolicyAsksEachPathOnce: one SandboxPolicy asks the Host
// whether a path exists, or what a pattern matches, once.
func TestSandboxPolicyAsksEachPathOnce(t *testing.T) {
	ws, fh := personPathFixture(t)
	h := &questionCounter{fakeHost: fh, exists: map[string]int{}, globs: map[string]int{}}
	strict, _ := PresetByName("strict")
	if _, _, err := (&Policy{Preset: strict}).SandboxPolicy(ws, SandboxSettings{Toolchains: []string{"none"}}, h); err != nil {
		t.Fatal(err)
	}
	if len(h.exists) == 0 || len(h.globs) == 0 {
		t.Fatalf("no questions asked (%v %v): the fixture tests nothing", h.exists, h.globs)
	}
	for what, m := range map[string]map[string]int{"Exists": h.exists, "Glob": h.globs} {
		for p, n := range m {
			if n > 1 {
				t.Errorf("%s(%s) asked %d times", what, p, n)
			}
		}
	}
}

// TestSnapshotForgetsWhatTheCallCreates: a path the call itself creates
// (a profile's per-workspace cache) exists for it afterwards.
func TestSnapshotForgetsWhatTheCallCreates(t *testing.T) {
	root := t.TempDir()
	h := &fakeHost{cache: filepath.Join(root, "cache")}
	s := newSnapshot(h)
	dir := filepath.Join(root, "cache", "go")
	if s.Exists(dir) || len(s.Glob(dir)) != 0 || s.realPath(filepath.Join(dir, "x")) != filepath.Join(dir, "x") {
		t.Fatal("the cache exists before it is made")
	}
	if _, err := s.WorkspaceCache(root, "go"); err != nil {
		t.Fatal(err)
	}
	if !s.Exists(dir) || len(s.Glob(dir)) != 1 {
		t.Error("the cache the call made does not exist for it")
	}
	if err := s.WriteFile(filepath.Join(dir, "settings.xml"), nil); err != nil {
		t.Fatal(err)
	}
	if !s.Exists(filepath.Join(dir, "settings.xml")) {
		t.Error("the file the call wrote does not exist for it")
	}
}

// TestExpandPatternAsGlob: every credential pattern of every profile
// finds, component by component, what filepath.Glob of the whole pattern
// finds — in a root with the files present, directories linked, a file
// where a directory is expected and a dangling link named as a
// credential.
func TestExpandPatternAsGlob(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "etc", "lib/node_modules/npm", "tools/image/node/20.1/etc", "tools/image/node/18.0/lib/node_modules/npm",
		"versions/3.12.1/envs/web", "versions/3.11.0", "cpython-3.12/lib", "conf", "maven/3.9.6/conf", "gradle/8.5/init.d",
		"init.d", ".config/git", "a[1]/etc")
	for _, f := range []string{"etc/npmrc", "lib/node_modules/npm/npmrc", "tools/image/node/20.1/etc/npmrc",
		"tools/image/node/18.0/lib/node_modules/npm/npmrc", "versions/3.12.1/pip.conf", "versions/3.12.1/envs/web/pip.conf",
		"cpython-3.12/pip.conf", "conf/settings.xml", "maven/3.9.6/conf/settings-security.xml", "gradle/8.5/gradle.properties",
		"credentials.toml", ".npmrc", ".config/git/credentials", "versions/3.11.0/envs", "a[1]/etc/npmrc"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("versions/3.12.1", filepath.Join(root, "current"))
	os.Symlink("/nonexistent/pip.conf", filepath.Join(root, "versions/3.11.0/pip.conf"))
	os.Symlink("20.1", filepath.Join(root, "tools/image/node/latest"))
	h := &fakeHost{}
	var list []credentialFile
	for _, tc := range []string{"node", "python", "rust", "java"} {
		list = append(list, toolchainCredentials(tc)...)
	}
	found := 0
	for _, r := range []string{root, filepath.Join(root, "a[1]")} {
		for _, c := range list {
			want, _ := filepath.Glob(filepath.Join(globQuote(r), c.Pattern))
			got := expandPattern(h, r, c.Pattern)
			if !slices.Equal(got, want) {
				t.Errorf("%s in %s: %q, filepath.Glob %q", c.Pattern, r, got, want)
			}
			found += len(want)
		}
	}
	if found < 15 {
		t.Errorf("only %d matches: the fixture does not test what it means to", found)
	}
}
