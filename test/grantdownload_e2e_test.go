package test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Package managers downloading through a grant (issue 13, "Tests and
// benchmarks"): a Go module proxy, an npm registry and a PyPI simple
// index, each a small server this test starts on 127.0.0.1 — a company
// mirror as a user would run one on their machine — reached from the
// agent's bash under network none with `--allow-domain 127.0.0.1:PORT`.
// Go and npm go straight to a loopback mirror (Go never proxies loopback;
// npm follows npm_config_noproxy, which names it), so what admits them is
// the literal IP:PORT grant in the notification server
// (netproxy.Rules.Direct): without it they got EPERM even with the grant.
// pip goes through the proxy (PIP_PROXY is explicit, and requests applies
// NO_PROXY to environment proxies only), which admits the same grant.
// Without the grant each fails at once.

// mirror is a loopback HTTP server serving fixed files by path, and what
// was asked of it.
type mirror struct {
	srv   *httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	asked []string
}

// set serves b at path from now on (a document that names the mirror's
// own address).
func (m *mirror) set(path string, b []byte) {
	m.mu.Lock()
	m.files[path] = b
	m.mu.Unlock()
}

func startMirror(t *testing.T, files map[string][]byte) *mirror {
	t.Helper()
	m := &mirror{files: files}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.asked = append(m.asked, r.URL.Path)
		b, ok := m.files[r.URL.Path]
		m.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *mirror) addr() string { return m.srv.Listener.Addr().String() }

// served says whether path was asked for.
func (m *mirror) served(path string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.asked {
		if p == path {
			return true
		}
	}
	return false
}

func (m *mirror) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.asked)
}

// timedCmd runs cmd in bash and appends how long it took ("took-ms=N").
func timedCmd(cmd string) string {
	return "s=$(date +%s%N); " + cmd + " 2>&1 | tail -15; echo took-ms=$(( ($(date +%s%N) - s) / 1000000 ))"
}

// refusedAtOnce checks what a download made without the grant printed
// (timedCmd's output): it did not succeed (no success marker in it), it
// failed within bound, and the mirror saw no request.
func (m *mirror) refusedAtOnce(t *testing.T, what, out, success string, bound time.Duration) {
	t.Helper()
	if strings.Contains(out, success) {
		t.Fatalf("%s succeeded:\n%s", what, out)
	}
	var ms int
	i := strings.LastIndex(out, "took-ms=")
	if i < 0 {
		t.Fatalf("%s: no timing:\n%s", what, out)
	}
	fmt.Sscanf(out[i:], "took-ms=%d", &ms)
	if took := time.Duration(ms) * time.Millisecond; took > bound {
		t.Errorf("%s took %v to fail (bound %v): not at once", what, took, bound)
	}
	if n := m.requests(); n != 0 {
		t.Fatalf("%s: the mirror was reached (%d requests)", what, n)
	}
}

// TestGoModuleDownloadThroughGrant: a module not on the machine comes from
// a GOPROXY on loopback (the user's Go env file names it) once
// --allow-domain grants that IP:PORT, into the per-workspace cache; the
// build then passes. Without the grant, go fails at once naming the grant
// (the go profile's offline marker); with only another domain granted
// (the proxy exists, the mirror is not granted) the direct connect is
// refused at once (EPERM).
func TestGoModuleDownloadThroughGrant(t *testing.T) {
	need(t, "Go", "go")
	real, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The mirror serves golang.org/x/sync v0.23.0 in the GOPROXY
	// protocol, from this machine's module cache (already that layout).
	src := filepath.Join(strings.TrimSpace(string(real)), "cache", "download", "golang.org", "x", "sync", "@v")
	files := map[string][]byte{"/golang.org/x/sync/@v/list": []byte("v0.23.0\n")}
	for _, f := range []string{"v0.23.0.info", "v0.23.0.mod", "v0.23.0.zip"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Skipf("golang.org/x/sync v0.23.0 is not in this machine's module cache (go mod download in the repository first): %v", err)
		}
		files["/golang.org/x/sync/@v/"+f] = b
	}
	m := startMirror(t, files)
	u := newFakeUser(t)
	// The user's Go settings: an empty module cache of their own (the
	// module is on no disk the sandbox reads), the mirror, no checksum
	// database (offline: go.sum has the hashes).
	modcache := filepath.Join(u.home, "go", "pkg", "mod")
	if err := os.MkdirAll(filepath.Join(modcache, "cache", "download"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(u.home, ".config", "go", "env"), "GOMODCACHE="+modcache+"\nGOPROXY=http://"+m.addr()+"\nGOSUMDB=off\nGOTOOLCHAIN=local\nGOFLAGS=-mod=mod\n")
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/dl\n\ngo 1.26.0\n\nrequire golang.org/x/sync v0.23.0\n")
	writeFile(t, filepath.Join(ws, "go.sum"), "golang.org/x/sync v0.23.0 h1:KameEIfc1IkluZyXWLn39Wd4tURc6GbCiISGiZm2bQk=\ngolang.org/x/sync v0.23.0/go.mod h1:sUUOizhqBxiL6pEWpqNLUiaJn1ShEbZ6BBqskPbjZm0=\n")
	writeFile(t, filepath.Join(ws, "dl.go"), "package dl\n\nimport \"golang.org/x/sync/errgroup\"\n\nfunc Run() error { var g errgroup.Group; g.Go(func() error { return nil }); return g.Wait() }\n")
	build := "go build ./... && echo BUILD-OK"

	res, _ := u.bashSession(t, ws, nil, timedCmd(build))
	m.refusedAtOnce(t, "go build, no grant", res[0].text, "BUILD-OK", 10*time.Second)
	if !strings.Contains(res[0].text, "allow-domain-@go") {
		t.Errorf("no grant: go build should fail naming the grant:\n%s", res[0].text)
	}
	res, _ = u.bashSession(t, ws, []string{"--allow-domain", "example.com"}, timedCmd(build))
	m.refusedAtOnce(t, "go build, another domain granted", res[0].text, "BUILD-OK", 10*time.Second)
	if !strings.Contains(res[0].text, "operation not permitted") {
		t.Errorf("another domain granted, not the mirror: go build should fail with EPERM:\n%s", res[0].text)
	}

	res, _ = u.bashSession(t, ws, []string{"--allow-domain", m.addr()}, build, "go list -m -f '{{.Dir}}' golang.org/x/sync")
	if !strings.Contains(res[0].text, "BUILD-OK") {
		t.Fatalf("go build with the mirror granted:\n%s", res[0].text)
	}
	if !m.served("/golang.org/x/sync/@v/v0.23.0.zip") {
		t.Errorf("the module did not come from the mirror")
	}
	// Into the per-workspace cache, not the user's module cache.
	if dir := strings.TrimSpace(res[1].text); !strings.HasPrefix(dir, filepath.Join(u.home, ".cache", "lite-agent")) {
		t.Errorf("the module went to %q, want the per-workspace cache", dir)
	}
	if _, err := os.Stat(filepath.Join(modcache, "cache", "download", "golang.org")); err == nil {
		t.Errorf("the download reached the user's own module cache")
	}
}

// TestNpmInstallThroughGrant: npm install from a registry on loopback
// (a package document and its tarball), named by --registry, once
// --allow-domain grants its IP:PORT; without the grant it fails at once.
func TestNpmInstallThroughGrant(t *testing.T) {
	need(t, "Node", "node", "npm")
	tgz := tarGz(t, map[string]string{
		"package/package.json": `{"name": "tinypad", "version": "1.0.0", "main": "index.js"}`,
		"package/index.js":     `module.exports = (s, n) => s.padStart(n, "*");`,
	})
	sha1sum := sha1.Sum(tgz)
	sha512sum := sha512.Sum512(tgz)
	m := startMirror(t, map[string][]byte{"/tinypad/-/tinypad-1.0.0.tgz": tgz})
	m.set("/tinypad", fmt.Appendf(nil, `{"name": "tinypad", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {"name": "tinypad", "version": "1.0.0", "main": "index.js",
		"dist": {"tarball": "http://%s/tinypad/-/tinypad-1.0.0.tgz", "shasum": "%s", "integrity": "sha512-%s"}}}}`,
		m.addr(), hex.EncodeToString(sha1sum[:]), base64.StdEncoding.EncodeToString(sha512sum[:])))
	u := newFakeUser(t)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "package.json"), `{"name": "dl", "version": "1.0.0", "dependencies": {"tinypad": "1.0.0"}}`)
	install := "npm install --no-audit --no-fund --registry http://" + m.addr() + "/ && node -e 'console.log(require(\"tinypad\")(\"x\", 3))'"

	res, _ := u.bashSession(t, ws, nil, timedCmd(install))
	m.refusedAtOnce(t, "npm install, no grant", res[0].text, "**x", 20*time.Second)
	res, _ = u.bashSession(t, ws, []string{"--allow-domain", m.addr()}, install)
	if !strings.Contains(res[0].text, "**x") {
		t.Fatalf("npm install with the registry granted:\n%s", res[0].text)
	}
	if !m.served("/tinypad/-/tinypad-1.0.0.tgz") {
		t.Errorf("the tarball did not come from the registry")
	}
}

// TestPipInstallThroughGrant: pip install into a venv in the workspace
// from a PyPI simple index on loopback (one wheel), once --allow-domain
// grants its IP:PORT; without the grant it fails at once.
func TestPipInstallThroughGrant(t *testing.T) {
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import venv, pip").CombinedOutput(); err != nil {
		t.Skipf("needs %s with pip and venv (make deps installs python3-pip python3-venv): this test would pip install from a loopback index through a grant: %s", py, out)
	}
	whl := wheel(t, "tinypkg", "1.0", map[string]string{"tinypkg/__init__.py": "VALUE = 42\n"})
	sum := sha256.Sum256(whl)
	const name = "tinypkg-1.0-py3-none-any.whl"
	m := startMirror(t, map[string][]byte{
		"/simple/tinypkg/": fmt.Appendf(nil, `<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, name, hex.EncodeToString(sum[:]), name),
		"/files/" + name:   whl,
	})
	u := newFakeUser(t)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "requirements.txt"), "tinypkg\n")
	// A venv of the system python with its pip (Debian's, through the
	// system site packages): nothing to bootstrap.
	install := py + " -m venv --without-pip --system-site-packages .venv && .venv/bin/python -m pip install --retries 0 --timeout 5 --index-url http://" + m.addr() + "/simple tinypkg && .venv/bin/python -c 'import tinypkg; print(\"VALUE\", tinypkg.VALUE)'"

	res, _ := u.bashSession(t, ws, nil, timedCmd(install))
	m.refusedAtOnce(t, "pip install, no grant", res[0].text, "VALUE 42", 20*time.Second)
	res, _ = u.bashSession(t, ws, []string{"--allow-domain", m.addr()}, "rm -rf .venv && "+install)
	if !strings.Contains(res[0].text, "VALUE 42") {
		t.Fatalf("pip install with the index granted:\n%s", res[0].text)
	}
	if !m.served("/files/" + name) {
		t.Errorf("the wheel did not come from the index")
	}
}

// tarGz is a gzipped tar of files (npm's package tarball).
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1e9, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// wheel is a pure-Python wheel of files, with its dist-info (METADATA,
// WHEEL, RECORD with each file's hash, as pip checks them).
func wheel(t *testing.T, name, version string, files map[string]string) []byte {
	t.Helper()
	info := name + "-" + version + ".dist-info/"
	all := map[string]string{
		info + "METADATA": "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n",
		info + "WHEEL":    "Wheel-Version: 1.0\nGenerator: lite-agent-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	for k, v := range files {
		all[k] = v
	}
	var record strings.Builder
	for k, v := range all {
		h := sha256.Sum256([]byte(v))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", k, base64.RawURLEncoding.EncodeToString(h[:]), len(v))
	}
	record.WriteString(info + "RECORD,,\n")
	all[info+"RECORD"] = record.String()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for k, v := range all {
		w, err := zw.Create(k)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(v))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
