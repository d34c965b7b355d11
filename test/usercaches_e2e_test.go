package test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What the toolchain profiles take from the user's own machine, through
// lite-agent run, network none: npm's cache, vendored crates, pyenv's
// python.

// npmTarball is an npm package tarball: package/package.json and
// package/index.js.
func npmTarball(t *testing.T, name, version, index string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", fmt.Sprintf(`{"name": %q, "version": %q, "main": "index.js"}`, name, version)},
		{"package/index.js", index},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// npmRegistry is a loopback npm registry serving one package.
func npmRegistry(t *testing.T, name, version string, tgz []byte) *httptest.Server {
	t.Helper()
	sum512 := sha512.Sum512(tgz)
	sum1 := sha1.Sum(tgz)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/" + name:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{
				"name": name, "dist-tags": map[string]string{"latest": version},
				"versions": map[string]any{version: map[string]any{
					"name": name, "version": version, "main": "index.js",
					"dist": map[string]string{
						"tarball":   srv.URL + "/" + name + "/-/" + name + "-" + version + ".tgz",
						"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]),
						"shasum":    hex.EncodeToString(sum1[:]),
					},
				}},
			})
		case "/" + name + "/-/" + name + "-" + version + ".tgz":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(tgz)
		default:
			http.NotFound(w, r)
		}
	}))
	return srv
}

// TestNodeInstallFromTheUsersCacheOffline: a package that the user's npm
// installed before (so it is in their npm cache) installs in the
// sandbox with the network off — `npm ci` of the project's lockfile —
// from that cache, read-only: nothing in it changes. Without the profile
// (its cache is then the sandbox's empty HOME) the same npm ci fails
// fetching the package. The user's cache is where their npm_config_cache
// says, not ~/.npm: the profile asks npm (`npm config get cache`).
func TestNodeInstallFromTheUsersCacheOffline(t *testing.T) {
	need(t, "Node", "node", "npm")
	const name, version = "rw-cached-dep", "1.0.0"
	tgz := npmTarball(t, name, version, `module.exports = () => "from the user's npm cache";`)
	srv := npmRegistry(t, name, version, tgz)
	userCache := filepath.Join(t.TempDir(), "npm-cache")
	u := newFakeUser(t, "npm_config_cache="+userCache)
	pkg := fmt.Sprintf(`{"name": "rw", "version": "1.0.0", "scripts": {"test": "node test.js"}, "dependencies": {%q: %q}}`, name, version)
	// The user installs the package once, outside the sandbox, from
	// their registry (here a loopback one): the lockfile records its
	// resolved URL and integrity, their cache its tarball.
	seed := t.TempDir()
	writeFile(t, filepath.Join(seed, "package.json"), pkg)
	install := exec.Command("npm", "install", "--registry", srv.URL+"/", "--omit-lockfile-registry-resolved=false", "--no-audit", "--no-fund")
	install.Dir, install.Env = seed, u.env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install outside the sandbox (seeding the user's cache): %v\n%s", err, out)
	}
	srv.Close() // from now on the package exists only in the cache
	lock, err := os.ReadFile(filepath.Join(seed, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "package.json"), pkg)
	writeFile(t, filepath.Join(ws, "package-lock.json"), string(lock))
	writeFile(t, filepath.Join(ws, "test.js"), `const assert = require("assert"); assert.strictEqual(require("`+name+`")(), "from the user's npm cache"); console.log("node tests passed");`)
	before := treeState(t, filepath.Join(userCache, "_cacache"))

	res, _ := u.bashSession(t, ws, []string{"--toolchains", "none"}, "npm ci --fetch-retries=0 2>&1 | tail -3; ls node_modules")
	if strings.Contains(res[0].text, name) {
		t.Fatalf("without the profile npm ci installed %s (from where?):\n%s", name, res[0].text)
	}
	res, _ = u.bashSession(t, ws, nil, "npm ci 2>&1 | tail -3 && npm test", "npm config get cache")
	if !strings.Contains(res[0].text, "node tests passed") {
		t.Fatalf("npm ci + npm test from the user's cache, network none:\n%s", res[0].text)
	}
	// (npm's last line: it warns first that it knows no store-dir, the
	// node profile's setting for pnpm; lite-agent's own notes follow.)
	var got string
	for _, l := range strings.Split(strings.TrimSpace(res[1].text), "\n") {
		if !strings.HasPrefix(l, "[lite-agent]") && l != "" {
			got = l
		}
	}
	if got != userCache {
		t.Errorf("npm's cache in the sandbox is %q, want the user's %s", got, userCache)
	}
	if after := treeState(t, filepath.Join(userCache, "_cacache")); !maps.Equal(after, before) {
		t.Errorf("the user's npm cache changed:\nbefore:\n%v\nafter:\n%v", before, after)
	}
}

// TestRustCargoBuildVendoredCrateOffline: cargo builds and tests a crate
// with a registry dependency, offline, from vendored sources (what
// `cargo vendor` writes, and the [source] replacement it prints in
// .cargo/config.toml). cargo cannot use the user's ~/.cargo/registry
// read-only — it reads it only as its own CARGO_HOME, which must be
// writable — so the profile does not grant it (policies/toolchains.go).
func TestRustCargoBuildVendoredCrateOffline(t *testing.T) {
	need(t, "Rust", "cargo", "rustc")
	// rustup's toolchains live in the real HOME: this test keeps it (the
	// profile must find ~/.cargo/bin and ~/.rustup there).
	home, _ := os.UserHomeDir()
	u := newFakeUser(t, "HOME="+home)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "Cargo.toml"), "[package]\nname = \"rw\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ntinydep = \"1.0\"\n")
	writeFile(t, filepath.Join(ws, "src", "main.rs"), "fn main() { println!(\"rust built {}\", tinydep::answer()); }\n#[test]\nfn t() { assert_eq!(tinydep::answer(), 42); }\n")
	writeFile(t, filepath.Join(ws, "vendor", "tinydep", "Cargo.toml"), "[package]\nname = \"tinydep\"\nversion = \"1.0.0\"\nedition = \"2021\"\n")
	writeFile(t, filepath.Join(ws, "vendor", "tinydep", "src", "lib.rs"), "pub fn answer() -> u32 { 42 }\n")
	writeFile(t, filepath.Join(ws, "vendor", "tinydep", ".cargo-checksum.json"), `{"files": {}, "package": null}`)
	writeFile(t, filepath.Join(ws, ".cargo", "config.toml"), "[source.crates-io]\nreplace-with = \"vendored-sources\"\n\n[source.vendored-sources]\ndirectory = \"vendor\"\n")
	res, _ := u.bashSession(t, ws, nil, "cargo build --offline -q && ./target/debug/rw && cargo test --offline -q 2>&1 | tail -3")
	if !strings.Contains(res[0].text, "rust built 42") || !strings.Contains(res[0].text, "test result: ok") {
		t.Fatalf("cargo with a vendored crate in the sandbox:\n%s", res[0].text)
	}
	// Without the profile cargo is still the person's (their PATH and
	// rustup's root are granted), with no cache of its own.
	res, _ = u.bashSession(t, ws, []string{"--toolchains", "none"}, "cargo --version")
	if res[0].isError || !strings.HasPrefix(strings.TrimSpace(res[0].text), "cargo ") {
		t.Errorf("cargo without its profile is not the person's cargo:\n%s", res[0].text)
	}
}

// TestPythonIsThePersonsPython: python3 in the sandbox is the program
// the person's PATH finds outside, whether or not a profile is on (issues
// 23 and 28). With pyenv's shims on their PATH it is pyenv's python
// (the shim runs through $PYENV_ROOT, granted because the PATH uses it);
// with PYENV_ROOT set but pyenv nowhere on the PATH it is the system's,
// and pytest from the system's site-packages runs — the profile used to
// put $PYENV_ROOT/shims first (a python3 without pytest: "No module named
// pytest"), and --toolchains none used to drop the shims from the PATH.
func TestPythonIsThePersonsPython(t *testing.T) {
	const probe = `python3 -c 'import sys; print(sys.executable)'`
	outside := func(u *fakeUser) string {
		cmd := exec.Command("sh", "-c", probe)
		cmd.Env = u.env
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("python3 is not installed (%v): this test would check that the sandbox's python3 is the person's", err)
		}
		return strings.TrimSpace(string(out))
	}
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "requirements.txt"), "pytest\n")
	writeFile(t, filepath.Join(ws, "test_rw.py"), "def test_add():\n    assert 1 + 1 == 2\n")
	t.Run("pyenv on the PATH", func(t *testing.T) {
		home, _ := os.UserHomeDir()
		u := newFakeUser(t, "HOME="+home)
		want := outside(u)
		if shim, _ := exec.LookPath("python3"); !strings.Contains(shim, "/shims/") || strings.HasPrefix(want, "/usr/") {
			t.Skipf("python3 here is %s (%s), not a pyenv shim: this would check that a pyenv python3 stays pyenv's in the sandbox", shim, want)
		}
		for _, args := range [][]string{nil, {"--toolchains", "none"}} {
			res, _ := u.bashSession(t, ws, args, probe)
			if got := strings.TrimSpace(res[0].text); got != want {
				t.Errorf("%v: python3 in the sandbox is %q, outside %q", args, got, want)
			}
		}
	})
	t.Run("PYENV_ROOT without pyenv on the PATH", func(t *testing.T) {
		if out, err := exec.Command("/usr/bin/python3", "-c", "import pytest").CombinedOutput(); err != nil {
			t.Skipf("needs /usr/bin/python3 with pytest (make deps installs python3-pytest): %s", out)
		}
		home, _ := os.UserHomeDir()
		pyenvRoot := filepath.Join(home, ".pyenv")
		if _, err := os.Stat(pyenvRoot); err != nil {
			// A stand-in: a pyenv root whose shim would run another python.
			pyenvRoot = t.TempDir()
			writeFile(t, filepath.Join(pyenvRoot, "libexec", "pyenv"), "#!/bin/sh\necho pyenv-ran\n")
			writeFile(t, filepath.Join(pyenvRoot, "shims", "python3"), "#!/bin/sh\necho pyenv-ran\n")
		}
		u := newFakeUser(t, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PYENV_ROOT="+pyenvRoot)
		want := outside(u)
		res, _ := u.bashSession(t, ws, nil, probe, "python3 -m pytest -q -p no:cacheprovider 2>&1 | tail -2")
		if got := strings.TrimSpace(res[0].text); got != want {
			t.Errorf("python3 in the sandbox is %q, outside %q", got, want)
		}
		if !strings.Contains(res[1].text, "1 passed") {
			t.Errorf("python3 -m pytest in the sandbox:\n%s", res[1].text)
		}
	})
}

// TestRustDebianCratesOffline: a crate whose dependencies Debian packages
// (librust-*-dev, in /usr/share/cargo/registry) builds and tests in the
// sandbox as it does outside, from the person's own cargo configuration
// — the [source] replacement Debian documents, in ~/.cargo/config.toml —
// with no flag: the sandbox's cargo has a CARGO_HOME of its own (the
// per-workspace cache), and the rust profile carries the person's sources
// there. Without that, cargo inside went for the default registry.
func TestRustDebianCratesOffline(t *testing.T) {
	need(t, "Rust", "cargo", "rustc")
	if _, err := os.Stat("/usr/share/cargo/registry/itoa-1.0.1"); err != nil {
		t.Skip("librust-itoa-dev is not installed (make deps): this test would build a crate against Debian's /usr/share/cargo/registry in the sandbox")
	}
	home, _ := os.UserHomeDir()
	u := newFakeUser(t)
	if _, err := os.Stat(filepath.Join(home, ".rustup")); err == nil {
		u.env = append(u.env, "RUSTUP_HOME="+filepath.Join(home, ".rustup"))
	}
	writeFile(t, filepath.Join(u.home, ".cargo", "config.toml"),
		"[source.crates-io]\nreplace-with = \"debian\"\n\n[source.debian]\ndirectory = \"/usr/share/cargo/registry\"\n\n[registry]\ntoken = \"SECRET-cargo\"\n")
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "Cargo.toml"), "[package]\nname = \"rw\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n")
	writeFile(t, filepath.Join(ws, "src", "main.rs"), "fn main() { let mut b = itoa::Buffer::new(); println!(\"rust built {}\", b.format(42)); }\n#[test]\nfn t() { assert_eq!(itoa::Buffer::new().format(7), \"7\"); }\n")
	test := "cargo test -q 2>&1 | grep -E 'test result|error' ; cargo run -q"
	outside := exec.Command("sh", "-c", test)
	outside.Dir, outside.Env = t.TempDir(), u.env
	for _, f := range []string{"Cargo.toml", "src/main.rs"} {
		b, _ := os.ReadFile(filepath.Join(ws, f))
		writeFile(t, filepath.Join(outside.Dir, f), string(b))
	}
	if out, err := outside.CombinedOutput(); err != nil || !strings.Contains(string(out), "rust built 42") {
		t.Skipf("the crate does not build outside the sandbox either (%v): %s", err, out)
	}
	res, _ := u.bashSession(t, ws, nil, test, "cat $CARGO_HOME/config.toml "+filepath.Join(u.home, ".cargo", "config.toml"))
	if !strings.Contains(res[0].text, "test result: ok") || !strings.Contains(res[0].text, "rust built 42") {
		t.Fatalf("cargo test with Debian's crates in the sandbox:\n%s", res[0].text)
	}
	if strings.Contains(res[1].text, "SECRET") || !strings.Contains(res[1].text, "/usr/share/cargo/registry") {
		t.Errorf("the sandbox's cargo configuration (the person's sources, no token):\n%s", res[1].text)
	}
}

// TestVersionSelectionAsOutside: what a version manager or a toolchain's
// launcher picks is what it picks outside (issue 23): rustup's toolchain
// file in the workspace, pyenv's .python-version, the JDK Maven runs from
// JAVA_HOME, go.work and GOTOOLCHAIN, and node, with every profile on;
// and with none, each command name is the same program. Each probe runs
// unconfined in the workspace, then in the sandbox, and the outputs must
// be equal; a row whose tool or version is not installed here is left
// out (logged).
func TestVersionSelectionAsOutside(t *testing.T) {
	home, _ := os.UserHomeDir()
	extra := []string{"GOTOOLCHAIN=local"}
	if _, err := os.Stat(filepath.Join(home, ".rustup")); err == nil {
		extra = append(extra, "RUSTUP_HOME="+filepath.Join(home, ".rustup"))
	}
	jdks, _ := filepath.Glob("/usr/lib/jvm/*-jdk-amd64")
	if len(jdks) > 1 {
		// Not the one the java on PATH (the alternatives') runs.
		extra = append(extra, "JAVA_HOME="+jdks[len(jdks)-1])
	}
	u := newFakeUser(t, extra...)
	ws := t.TempDir()
	// Every profile's marker, so "auto" turns each on.
	writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/rw\n\ngo 1.21\n")
	writeFile(t, filepath.Join(ws, "go.work"), "go 1.21\n\nuse .\n")
	writeFile(t, filepath.Join(ws, "Cargo.toml"), "[package]\nname = \"rw\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
	writeFile(t, filepath.Join(ws, "package.json"), `{"name": "rw", "version": "1.0.0"}`)
	writeFile(t, filepath.Join(ws, "pyproject.toml"), "[project]\nname = \"rw\"\n")
	writeFile(t, filepath.Join(ws, "pom.xml"), "<project/>\n")
	writeFile(t, filepath.Join(ws, "rust-toolchain.toml"), "[toolchain]\nchannel = \"nightly\"\n")
	if vs, _ := filepath.Glob(filepath.Join(home, ".pyenv", "versions", "3.1[0-9].*")); len(vs) > 0 {
		writeFile(t, filepath.Join(ws, ".python-version"), filepath.Base(vs[0])+"\n")
	}
	probes := map[string]string{
		"rustup, rust-toolchain.toml": "rustc --version",
		"pyenv, .python-version":      "python3 --version",
		"Maven, JAVA_HOME":            "mvn -v 2>/dev/null | grep -i 'java version'",
		"go.work and GOTOOLCHAIN":     "go env GOWORK GOTOOLCHAIN && go version",
		"node":                        "command -v node && node --version",
	}
	var script strings.Builder
	var names []string
	for name, probe := range probes {
		cmd := exec.Command("sh", "-c", probe)
		cmd.Dir, cmd.Env = ws, u.env
		out, err := cmd.Output()
		if err != nil || len(strings.TrimSpace(string(out))) == 0 {
			t.Logf("left out %s: %q does not run here (%v)", name, probe, err)
			continue
		}
		names = append(names, name)
		script.WriteString("echo '== " + name + "'; " + probe + "; ")
	}
	if len(names) == 0 {
		t.Skip("none of the toolchains is installed: this test would compare their version selection inside and outside")
	}
	// With the profiles on, each runs as outside; with none, each name
	// still resolves to the same program (running a JDK or Maven needs
	// the /etc files their profile grants).
	const resolve = "for c in rustc cargo python3 pip3 mvn java go node npm; do command -v $c; done"
	for _, tc := range []struct {
		args   []string
		script string
	}{{nil, script.String()}, {nil, resolve}, {[]string{"--toolchains", "none"}, resolve}} {
		outside := exec.Command("sh", "-c", tc.script)
		outside.Dir, outside.Env = ws, u.env
		want, _ := outside.Output()
		res, _ := u.bashSession(t, ws, tc.args, tc.script)
		if got := strings.TrimSpace(res[0].text); got != strings.TrimSpace(string(want)) {
			t.Errorf("%v: inside:\n%s\noutside:\n%s", tc.args, got, want)
		}
	}
}
