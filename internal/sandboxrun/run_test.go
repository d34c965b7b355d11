package sandboxrun

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/sandbox"
)

func TestParseLimitSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"1", 1}, {"4096", 4096}, {"1K", 1 << 10}, {"512M", 512 << 20}, {"512m", 512 << 20},
		{"2G", 2 << 30}, {"2GiB", 2 << 30}, {"2GB", 2 << 30}, {"1T", 1 << 40}, {"10MiB", 10 << 20}, {"100B", 100},
	} {
		if got, err := parseLimitSize(c.in); err != nil || got != c.want {
			t.Errorf("parseLimitSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "0", "-1M", "M", "1.5G", "12X", "1PB", "99999999999T"} {
		if got, err := parseLimitSize(bad); err == nil {
			t.Errorf("parseLimitSize(%q) = %d, want an error", bad, got)
		}
	}
	for _, n := range []int64{1, 1000, 1 << 10, 3 << 20, 256 << 20, 2 << 30} {
		if got, _ := parseLimitSize(formatSize(n)); got != n {
			t.Errorf("formatSize(%d) = %q reads back as %d", n, formatSize(n), got)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{{"500ms", 500 * time.Millisecond}, {"1m30s", 90 * time.Second}, {"2", 2 * time.Second}, {"0.25", 250 * time.Millisecond}} {
		if got, err := parseTimeout(c.in); err != nil || got != c.want {
			t.Errorf("parseTimeout(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "0", "-1s", "soon"} {
		if _, err := parseTimeout(bad); err == nil {
			t.Errorf("parseTimeout(%q): want an error", bad)
		}
	}
}

// TestSandboxPolicyFromFlags: the flags land in the policy on top of the
// preset's template.
func TestSandboxPolicyFromFlags(t *testing.T) {
	// A PATH of system directories only and no version-selecting
	// variables: what the person's PATH names is granted too
	// (policies/toolchains_path.go), and this test is about the flags.
	t.Setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
	for _, v := range []string{"PYENV_ROOT", "PYENV_VERSION", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "VOLTA_HOME", "NVM_DIR", "NVM_BIN",
		"FNM_DIR", "FNM_MULTISHELL_PATH", "JAVA_HOME", "SDKMAN_DIR", "GOTOOLCHAIN", "UV_PYTHON"} {
		t.Setenv(v, "")
	}
	ws, ro, rw := t.TempDir(), t.TempDir(), t.TempDir()
	f := runFlags{
		workspace: ws, preset: "permissive",
		grants:  GrantFlags{network: "loopback", allowRead: []string{ro}, allowWrite: []string{rw}, env: []string{"GIT_AUTHOR_NAME=x", "EDITOR"}},
		timeout: "3s", maxMemory: "256M", maxProcs: 32, maxFileSize: "1M", maxOutput: "64K", bestEffort: true,
	}
	set := map[string]bool{"network": true, "timeout": true, "max-memory": true, "max-procs": true, "max-file-size": true, "max-output": true}
	pol, _, err := sandboxPolicy(&f, set)
	if err != nil {
		t.Fatal(err)
	}
	want := sandbox.Limits{WallTime: 3 * time.Second, MemoryBytes: 256 << 20, Processes: 32, FileBytes: 1 << 20, OutputBytes: 64 << 10}
	if pol.Workspace != ws || pol.Network != sandbox.NetworkLoopback || pol.Limits != want || !pol.BestEffort {
		t.Errorf("policy = %+v", pol)
	}
	if len(pol.ReadOnlyPaths) != 1 || pol.ReadOnlyPaths[0] != ro || len(pol.ReadWritePaths) != 1 || pol.ReadWritePaths[0] != rw {
		t.Errorf("paths ro %v rw %v", pol.ReadOnlyPaths, pol.ReadWritePaths)
	}
	// --env adds to the allowlist; it does not replace it.
	envs := strings.Join(pol.Env, " ")
	for _, name := range append(sandbox.DefaultEnv(), "GIT_AUTHOR_NAME=x", "EDITOR") {
		if !strings.Contains(" "+envs+" ", " "+name+" ") {
			t.Errorf("env %q lacks %q", envs, name)
		}
	}

	// Without flags: the strict preset, fail closed, the sandbox's defaults.
	pol, _, err = sandboxPolicy(&runFlags{workspace: ws, preset: "strict"}, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	if pol.Network != sandbox.NetworkNone || pol.BestEffort || pol.Limits != (sandbox.Limits{}) || pol.ReadOnlyPaths != nil {
		t.Errorf("default policy = %+v", pol)
	}
	// The env: the defaults, and (network none) the proxy variables that
	// make a refused download name the sandbox and the package managers'
	// settings that make it fail at its first request.
	refuseAtOnce := []string{"npm_config_fetch_retries", "YARN_HTTP_RETRY", "PIP_RETRIES", "CARGO_NET_RETRY"}
	// And the TLS trust stores this machine's person has (CA bundles).
	trustStores := []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "PIP_CERT",
		"CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "CARGO_HTTP_CAINFO", "npm_config_cafile"}
	for _, e := range pol.Env {
		name, _, _ := strings.Cut(e, "=")
		if !slices.Contains(sandbox.DefaultEnv(), e) && !slices.Contains(refuseAtOnce, name) && !slices.Contains(trustStores, name) &&
			!slices.ContainsFunc(sandbox.ProxyVariables(""), func(kv [2]string) bool { return kv[0] == name }) {
			t.Errorf("default policy env has %q", e)
		}
	}
	// A relative --allow-read is taken from the current directory.
	pol, _, err = sandboxPolicy(&runFlags{workspace: ws, preset: "strict", grants: GrantFlags{allowRead: []string{"testdata"}}}, map[string]bool{})
	if err != nil || !filepath.IsAbs(pol.ReadOnlyPaths[0]) {
		t.Errorf("relative --allow-read: %v, %v", pol.ReadOnlyPaths, err)
	}
}

// TestTailBufferKeepsTheEnd: the tail `sandbox run` keeps of a command's
// output for its read refusals is the last max bytes, whatever the
// writes' sizes, from two writers at once (run with -race).
func TestTailBufferKeepsTheEnd(t *testing.T) {
	tb := &tailBuffer{max: 10}
	var want []byte
	for i := range 100 {
		p := []byte(strconv.Itoa(i) + ",")
		if n, err := tb.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write: %d %v", n, err)
		}
		want = append(want, p...)
	}
	if got := tb.String(); got != string(want[len(want)-10:]) {
		t.Errorf("tail %q, want %q", got, want[len(want)-10:])
	}
	big := strings.Repeat("x", 25) + "0123456789"
	if n, _ := tb.Write([]byte(big)); n != len(big) || tb.String() != "0123456789" {
		t.Errorf("after a write larger than the tail: n=%d %q", n, tb.String())
	}
	done := make(chan struct{})
	for range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 1000 {
				tb.Write([]byte("abc"))
			}
		}()
	}
	<-done
	<-done
	if got := tb.String(); len(got) != 10 || strings.Trim(got, "abc") != "" {
		t.Errorf("after concurrent writes: %q", got)
	}
}
