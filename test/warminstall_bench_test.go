package test

import (
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
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestInstallsSideBySide measures installs through the allowlist (issue
// 28): `go list -deps -test ./...` of this repository (its ~60 modules),
// `npm ci` of 100 packages and `pip install` of 20 wheels, each from a
// loopback mirror the test starts, unconfined and in the sandbox
// (`lite-agent sandbox run --allow-domain 127.0.0.1:PORT`, the profiles
// on), cold (empty caches) then warm (the same install again: the
// unconfined run with the person's caches filled, the sandboxed one with
// the workspace's). Each pair alternates outside/inside, RUNS times
// (default 3), and the medians and ratios are printed with the requests
// each warm run made of the mirror. Each sandboxed run is a `sandbox run`,
// so it pays a session's start (the profiles resolved, the module cache's
// stat digest) that an agent's bash call within a session does not; the
// column "sandbox run of echo alone" is that start and end by themselves,
// in the same workspace after the warm run. A measurement, not a check:
// it runs only with LITE_AGENT_BENCH=1.
//
//	LITE_AGENT_BENCH=1 go test -count=1 -run TestInstallsSideBySide -v ./test/
func TestInstallsSideBySide(t *testing.T) {
	if os.Getenv("LITE_AGENT_BENCH") == "" {
		t.Skip("a measurement: LITE_AGENT_BENCH=1 runs it (it prints the side-by-side table of BENCHMARKS.md)")
	}
	runs := 3
	if n, err := fmt.Sscan(os.Getenv("RUNS"), &runs); n != 1 || err != nil {
		runs = 3
	}
	type row struct {
		name                string
		setup               func(t *testing.T) installCase
		coldOut, coldIn     []time.Duration
		warmOut, warmIn     []time.Duration
		firstWarmIn         []time.Duration
		startIn             []time.Duration
		warmReqOut, warmReq int64
	}
	rows := []*row{{name: "go list -deps -test ./... (this repository, ~60 modules)", setup: goInstallCase},
		{name: "npm ci (100 packages)", setup: npmInstallCase}, {name: "pip install (20 wheels) into a venv", setup: pipInstallCase}}
	for _, r := range rows {
		t.Run(strings.Fields(r.name)[0], func(t *testing.T) {
			for i := 0; i < runs; i++ {
				c := r.setup(t)
				// Outside, cold then warm; inside, cold then warm.
				r.coldOut = append(r.coldOut, c.run(t, false))
				before := c.requests.Load()
				r.warmOut = append(r.warmOut, c.run(t, false))
				r.warmReqOut = c.requests.Load() - before
				r.coldIn = append(r.coldIn, c.run(t, true))
				// The first sandboxed run after the cold one also verifies
				// the modules that run extracted (internal/machine/cacheverify.go):
				// once per new module, so it is shown on its own.
				r.firstWarmIn = append(r.firstWarmIn, c.run(t, true))
				before = c.requests.Load()
				r.warmIn = append(r.warmIn, c.run(t, true))
				r.warmReq = c.requests.Load() - before
				// What of the warm run is the session's start and end
				// alone: the same sandbox run, of a command that does
				// nothing.
				idle := c
				idle.cmd = "echo INSTALLED"
				r.startIn = append(r.startIn, idle.run(t, true))
			}
		})
	}
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		if len(s) == 0 {
			return 0
		}
		return s[len(s)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| install (medians of %d) | unconfined cold | sandbox cold | ratio | unconfined warm | sandbox warm | ratio | sandbox, first warm | sandbox run of echo alone | mirror requests, warm (unconfined / sandbox) |\n|---|---|---|---|---|---|---|---|---|---|\n", runs)
	for _, r := range rows {
		if len(r.coldOut) == 0 {
			continue
		}
		co, ci, wo, wi := med(r.coldOut), med(r.coldIn), med(r.warmOut), med(r.warmIn)
		fmt.Fprintf(&b, "| %s | %.2f s | %.2f s | %.2f× | %.2f s | %.2f s | %.2f× | %.2f s | %.3f s | %d / %d |\n", r.name, co.Seconds(), ci.Seconds(), ci.Seconds()/co.Seconds(),
			wo.Seconds(), wi.Seconds(), wi.Seconds()/wo.Seconds(), med(r.firstWarmIn).Seconds(), med(r.startIn).Seconds(), r.warmReqOut, r.warmReq)
	}
	t.Log(b.String())
}

// installCase is one install: a workspace, a mirror, and how to run the
// install unconfined (with the person's environment) or sandboxed.
type installCase struct {
	ws       string
	outside  string // a scratch copy of the workspace for the unconfined runs
	env      []string
	cmd      string
	mirror   string
	requests *atomic.Int64
	ok       string // what a successful install prints
}

func (c installCase) run(t *testing.T, sandboxed bool) time.Duration {
	t.Helper()
	var cmd *exec.Cmd
	if sandboxed {
		cmd = exec.Command(binary, "sandbox", "run", "--workspace", c.ws, "--allow-domain", c.mirror, "--", "bash", "-c", c.cmd)
		cmd.Dir = c.ws
	} else {
		cmd = exec.Command("bash", "-c", c.cmd)
		cmd.Dir = c.outside
	}
	cmd.Env = c.env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil || !strings.Contains(string(out), c.ok) {
		t.Fatalf("%s (sandboxed %v): %v\n%s", c.cmd, sandboxed, err, out)
	}
	return took
}

// countingMirror serves h on loopback and counts its requests.
func countingMirror(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// benchUser is an environment with a HOME, caches and state of its own.
func benchUser(t *testing.T, extra ...string) (string, []string) {
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+filepath.Join(home, ".state"))
	return home, append(env, extra...)
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v %s", src, err, out)
	}
}

// goInstallCase: this repository's modules from a GOPROXY on loopback
// serving this machine's module cache (the protocol's layout already).
func goInstallCase(t *testing.T) installCase {
	need(t, "Go", "go", "git")
	real, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	srv, n := countingMirror(t, http.FileServer(http.Dir(filepath.Join(strings.TrimSpace(string(real)), "cache", "download"))))
	ws, outside := t.TempDir(), t.TempDir()
	if out, err := exec.Command("sh", "-c", "git -C .. archive HEAD | tar -x -C "+ws).CombinedOutput(); err != nil {
		t.Fatalf("git archive: %v %s", err, out)
	}
	copyTree(t, ws, outside)
	home, env := benchUser(t)
	modcache := filepath.Join(home, "go", "pkg", "mod")
	os.MkdirAll(filepath.Join(modcache, "cache", "download"), 0o755)
	writeFile(t, filepath.Join(home, ".config", "go", "env"), "GOMODCACHE="+modcache+"\nGOPROXY="+srv.URL+"\nGOSUMDB=off\nGOTOOLCHAIN=local\nGOFLAGS=-modcacherw\n")
	env = append(env, "GOENV="+filepath.Join(home, ".config", "go", "env"), "GOCACHE="+filepath.Join(home, ".cache", "go-build"))
	return installCase{ws: ws, outside: outside, env: env, cmd: "go list -deps -test ./... >/dev/null && echo INSTALLED",
		mirror: strings.TrimPrefix(srv.URL, "http://"), requests: n, ok: "INSTALLED"}
}

// npmInstallCase: 100 packages from a registry on loopback, by a
// lockfile the person's npm wrote.
func npmInstallCase(t *testing.T) installCase {
	need(t, "Node", "node", "npm")
	files := map[string][]byte{}
	var srv *httptest.Server
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	})
	srv, n := countingMirror(t, mux)
	deps := map[string]string{}
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("benchpkg%d", i)
		tgz := tarGz(t, map[string]string{
			"package/package.json": fmt.Sprintf(`{"name": %q, "version": "1.0.0", "main": "index.js"}`, name),
			"package/index.js":     fmt.Sprintf("module.exports = %d;\n", i),
		})
		s1, s512 := sha1.Sum(tgz), sha512.Sum512(tgz)
		files["/"+name+"/-/"+name+"-1.0.0.tgz"] = tgz
		files["/"+name] = fmt.Appendf(nil, `{"name": %q, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {"name": %q, "version": "1.0.0", "main": "index.js",
			"dist": {"tarball": "%s/%s/-/%s-1.0.0.tgz", "shasum": "%s", "integrity": "sha512-%s"}}}}`,
			name, name, srv.URL, name, name, hex.EncodeToString(s1[:]), base64.StdEncoding.EncodeToString(s512[:]))
		deps[name] = "1.0.0"
	}
	var dl []string
	for k, v := range deps {
		dl = append(dl, fmt.Sprintf("%q: %q", k, v))
	}
	slices.Sort(dl)
	ws, outside := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "package.json"), `{"name": "bench", "version": "1.0.0", "dependencies": {`+strings.Join(dl, ", ")+`}}`)
	home, env := benchUser(t, "npm_config_registry="+srv.URL+"/")
	env = append(env, "npm_config_cache="+filepath.Join(home, ".npm"))
	seed := exec.Command("npm", "install", "--package-lock-only", "--no-audit", "--no-fund")
	seed.Dir, seed.Env = ws, env
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("writing the lockfile: %v %s", err, out)
	}
	os.RemoveAll(filepath.Join(home, ".npm")) // cold: the lockfile alone
	copyTree(t, ws, outside)
	return installCase{ws: ws, outside: outside, env: env, cmd: "rm -rf node_modules && npm ci --no-audit --no-fund >/dev/null && node -e 'console.log(require(\"benchpkg99\") === 99 ? \"INSTALLED\" : \"wrong\")'",
		mirror: strings.TrimPrefix(srv.URL, "http://"), requests: n, ok: "INSTALLED"}
}

// pipInstallCase: 20 wheels from a simple index on loopback into a venv
// of the system's python (Debian's pip through its site packages).
func pipInstallCase(t *testing.T) installCase {
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import venv, pip").CombinedOutput(); err != nil {
		t.Skipf("needs %s with pip and venv: %s", py, out)
	}
	files := map[string][]byte{}
	var names []string
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("benchwheel%d", i)
		whl := wheel(t, name, "1.0", map[string]string{name + "/__init__.py": fmt.Sprintf("VALUE = %d\n", i)})
		sum := sha256.Sum256(whl)
		file := name + "-1.0-py3-none-any.whl"
		files["/simple/"+name+"/"] = fmt.Appendf(nil, `<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, file, hex.EncodeToString(sum[:]), file)
		files["/files/"+file] = whl
		names = append(names, name)
	}
	srv, n := countingMirror(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	ws, outside := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "requirements.txt"), strings.Join(names, "\n")+"\n")
	copyTree(t, ws, outside)
	home, env := benchUser(t)
	env = append(env, "PIP_CACHE_DIR="+filepath.Join(home, ".cache", "pip"))
	return installCase{ws: ws, outside: outside, env: env,
		cmd:    "rm -rf .venv && " + py + " -m venv --without-pip --system-site-packages .venv && .venv/bin/python -m pip install -q --index-url " + srv.URL + "/simple -r requirements.txt && .venv/bin/python -c 'import benchwheel19; print(\"INSTALLED\")'",
		mirror: strings.TrimPrefix(srv.URL, "http://"), requests: n, ok: "INSTALLED"}
}
