package policies

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// The sandbox's PATH is the person's: no profile puts a directory in front
// of it, and what it names is granted — with --toolchains none too —
// along with the version managers its shims run through, their
// credential files hidden; an entry that would expose credentials is
// left out with a note naming it.
func TestCommandsResolveThroughThePersonsPath(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	pyenv := filepath.Join(home, ".pyenv")
	node := filepath.Join(home, ".nvm/versions/node/v20.1.0")
	mkdirs(t, root, "ws", "cache", "home/.pyenv/libexec", "home/.pyenv/shims", "home/.pyenv/plugins/pyenv-virtualenv/shims",
		"home/.pyenv/versions/3.12.1/bin", "home/.nvm/versions/node/v20.1.0/bin", "home/.nvm/versions/node/v20.1.0/lib/node_modules/npm/bin",
		"home/.nvm/versions/node/v18.0.0/bin", "home/.cargo/bin", "home/.rustup/toolchains", "home/.ssh/bin", "opt/jdk/bin")
	for _, f := range []string{pyenv + "/libexec/pyenv", pyenv + "/shims/python3", pyenv + "/versions/3.12.1/bin/python3.12",
		node + "/bin/node", node + "/lib/node_modules/npm/bin/npm-cli.js", home + "/.cargo/bin/rustup", home + "/.cargo/bin/cargo"} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(pyenv+"/versions/3.12.1/pip.conf", []byte("[global]\nindex-url = https://u:SECRET@pypi.example/simple\n"), 0o600)
	os.WriteFile(home+"/.cargo/credentials.toml", []byte("token = \"SECRET\"\n"), 0o600)
	if err := os.Symlink("../lib/node_modules/npm/bin/npm-cli.js", node+"/bin/npm"); err != nil {
		t.Fatal(err)
	}
	// ~/bin/notes links to a script among the person's documents.
	mkdirs(t, home, "bin", "Documents")
	os.WriteFile(home+"/Documents/notes.sh", []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(home+"/Documents/private.txt", []byte("private\n"), 0o600)
	if err := os.Symlink("../Documents/notes.sh", home+"/bin/notes"); err != nil {
		t.Fatal(err)
	}
	userPath := strings.Join([]string{pyenv + "/plugins/pyenv-virtualenv/shims", pyenv + "/shims", node + "/bin",
		home + "/.cargo/bin", home + "/.ssh/bin", home + "/gone/bin", home + "/bin", "/usr/local/bin", "/usr/bin", "/bin"}, ":")
	h := &fakeHost{home: home, cache: filepath.Join(root, "cache"),
		env:  map[string]string{"PATH": userPath, "PYENV_VERSION": "3.12.1", "RUSTUP_TOOLCHAIN": "stable", "JAVA_HOME": root + "/opt/jdk"},
		bins: map[string]string{"python3": pyenv + "/shims/python3"}}
	strict, _ := PresetByName("strict")
	for _, tcs := range [][]string{{"none"}, {"python", "node", "rust"}} {
		t.Run(strings.Join(tcs, ","), func(t *testing.T) {
			p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{Toolchains: tcs}, h)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(p.Env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) || !slices.Contains(p.Env, "PATH") {
				t.Errorf("PATH must pass as the person's, unchanged: %q", p.Env)
			}
			granted := func(path string) bool {
				return slices.ContainsFunc(p.ReadOnlyPaths, func(g string) bool { return paths.Within(path, g) })
			}
			for _, want := range []string{
				pyenv + "/shims/python3", pyenv + "/libexec/pyenv", pyenv + "/versions/3.12.1/bin/python3.12", // the shim and what it runs
				node + "/bin/node", node + "/lib/node_modules/npm/bin/npm-cli.js", // npm links into the install
				home + "/.cargo/bin/cargo", home + "/.rustup/toolchains", // rustup's proxy and its toolchains
				root + "/opt/jdk/bin",                             // $JAVA_HOME
				home + "/bin/notes", home + "/Documents/notes.sh", // a program linked from elsewhere: itself
			} {
				if !granted(want) {
					t.Errorf("%s is not granted: %v", want, p.ReadOnlyPaths)
				}
			}
			for _, never := range []string{pyenv + "/versions/3.12.1/pip.conf", home + "/.cargo/credentials.toml", home + "/.ssh/bin",
				home + "/.nvm/versions/node/v18.0.0", home + "/Documents/private.txt"} {
				if granted(never) {
					t.Errorf("%s is granted: %v", never, p.ReadOnlyPaths)
				}
			}
			if !slices.ContainsFunc(rep.Notes, func(n string) bool {
				return strings.Contains(n, "your PATH: not granting "+home+"/.ssh/bin") && strings.Contains(n, "--allow-read "+home+"/.ssh/bin")
			}) {
				t.Errorf("no note for the PATH entry left out: %q", rep.Notes)
			}
			// RUSTUP_HOME is named: the sandbox's HOME may not be theirs.
			for _, want := range []string{"PYENV_VERSION=3.12.1", "RUSTUP_TOOLCHAIN=stable", "JAVA_HOME=" + root + "/opt/jdk",
				"RUSTUP_HOME=" + home + "/.rustup"} {
				if !slices.Contains(p.Env, want) {
					t.Errorf("env lacks %s: %q", want, p.Env)
				}
			}
		})
	}
}

// The case: PYENV_ROOT set, pyenv nowhere on the PATH. python3 is
// the system's outside, so the python profile grants nothing of pyenv's
// and puts nothing on PATH (with $PYENV_ROOT/shims first, python3 would
// be pyenv's inside and the system's outside).
func TestPyenvRootAloneChangesNothing(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	pyenv := filepath.Join(home, ".pyenv")
	mkdirs(t, root, "ws", "cache", "home/.pyenv/libexec", "home/.pyenv/shims", "home/.pyenv/bin")
	os.WriteFile(pyenv+"/libexec/pyenv", []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(pyenv+"/shims/python3", []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(root, "ws", "requirements.txt"), []byte("pytest\n"), 0o644)
	h := &fakeHost{home: home, cache: filepath.Join(root, "cache"),
		env:  map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "PYENV_ROOT": pyenv},
		bins: map[string]string{"python3": "/usr/bin/python3", "pyenv": ""}}
	strict, _ := PresetByName("strict")
	p, rep, err := (&Policy{Preset: strict}).SandboxPolicy(filepath.Join(root, "ws"), SandboxSettings{}, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Toolchains) != 1 || rep.Toolchains[0].Name != "python" {
		t.Fatalf("the python profile is not on: %+v", rep.Toolchains)
	}
	if slices.ContainsFunc(p.ReadOnlyPaths, func(g string) bool { return paths.Within(g, pyenv) }) {
		t.Errorf("pyenv granted though the PATH does not use it: %v", p.ReadOnlyPaths)
	}
	if slices.ContainsFunc(p.Env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) {
		t.Errorf("the profile set PATH: %q", p.Env)
	}
}
