package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/sandbox"
)

func runSandboxCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runCLI(append([]string{"sandbox"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

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

// TestSandboxUsageErrors: mistakes in the command line exit 2 and never
// start anything.
func TestSandboxUsageErrors(t *testing.T) {
	ws := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "missing sandbox command"},
		{[]string{"launch"}, `unknown sandbox command "launch"`},
		{[]string{"run"}, "no command"},
		{[]string{"run", "--workspace", ws, "--"}, "no command"},
		{[]string{"run", "--preset", "lax", "--", "true"}, `unknown preset "lax"`},
		{[]string{"run", "--network", "internet", "--", "true"}, `unknown network mode "internet"`},
		{[]string{"run", "--network=", "--", "true"}, "--network"},
		{[]string{"run", "--max-memory", "lots", "--", "true"}, "--max-memory"},
		{[]string{"run", "--max-file-size", "0", "--", "true"}, "--max-file-size"},
		{[]string{"run", "--max-procs", "0", "--", "true"}, "--max-procs"},
		{[]string{"run", "--timeout", "soon", "--", "true"}, "--timeout"},
		{[]string{"run", "--env", "=x", "--", "true"}, "--env"},
		{[]string{"run", "--env", "A-B", "--", "true"}, "--env"},
		{[]string{"run", "--allow-read", "", "--", "true"}, "--allow-read"},
		{[]string{"run", "--no-such-flag", "--", "true"}, "no-such-flag"},
		{[]string{"check", "extra"}, "no arguments"},
	} {
		code, _, stderr := runSandboxCLI(t, "", c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("sandbox %q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
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
	f := sandboxRunFlags{
		workspace: ws, preset: "permissive",
		grants:  sandboxGrantFlags{network: "loopback", allowRead: []string{ro}, allowWrite: []string{rw}, env: []string{"GIT_AUTHOR_NAME=x", "EDITOR"}},
		timeout: "3s", maxMemory: "256M", maxProcs: 32, maxFileSize: "1M", maxOutput: "64K", bestEffort: true,
	}
	set := map[string]bool{"network": true, "timeout": true, "max-memory": true, "max-procs": true, "max-file-size": true, "max-output": true}
	pol, err := sandboxPolicy(&f, set)
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
	pol, err = sandboxPolicy(&sandboxRunFlags{workspace: ws, preset: "strict"}, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	if pol.Network != sandbox.NetworkNone || pol.BestEffort || pol.Limits != (sandbox.Limits{}) || pol.ReadOnlyPaths != nil {
		t.Errorf("default policy = %+v", pol)
	}
	// The env: the defaults, and (network none) the proxy variables that
	// make a refused download name the sandbox.
	for _, e := range pol.Env {
		name, _, _ := strings.Cut(e, "=")
		if !slices.Contains(sandbox.DefaultEnv(), e) && !slices.ContainsFunc(sandbox.ProxyVariables(""), func(kv [2]string) bool { return kv[0] == name }) {
			t.Errorf("default policy env has %q", e)
		}
	}
	// A relative --allow-read is taken from the current directory.
	pol, err = sandboxPolicy(&sandboxRunFlags{workspace: ws, preset: "strict", grants: sandboxGrantFlags{allowRead: []string{"testdata"}}}, map[string]bool{})
	if err != nil || !filepath.IsAbs(pol.ReadOnlyPaths[0]) {
		t.Errorf("relative --allow-read: %v, %v", pol.ReadOnlyPaths, err)
	}
}

// TestSandboxMissingWorkspaceIs125: the sandbox cannot start, which is 125
// with the reason, never the command's exit code.
func TestSandboxMissingWorkspaceIs125(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	code, _, stderr := runSandboxCLI(t, "", "run", "--workspace", missing, "--", "true")
	if code != exitSandboxFailed || !strings.Contains(stderr, "workspace "+missing) {
		t.Errorf("exit %d, stderr %q; want 125 naming the workspace", code, stderr)
	}
}

// TestSandboxRunInProcess runs a real confined command through runCLI;
// the escape suite in test/ covers the sandbox itself.
func TestSandboxRunInProcess(t *testing.T) {
	ws := t.TempDir()
	code, stdout, stderr := runSandboxCLI(t, "through stdin\n", "run", "--workspace", ws, "--", "/bin/sh", "-c", "cat; exit 3")
	if code == exitSandboxFailed {
		t.Skipf("the sandbox cannot run here (%s); this would have checked stdin, stdout and the exit code through runCLI", strings.TrimSpace(stderr))
	}
	if code != 3 || stdout != "through stdin\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 3 and the stdin echoed", code, stdout, stderr)
	}
	code, _, stderr = runSandboxCLI(t, "", "run", "--workspace", ws, "--", "no-such-command-lite-agent")
	if code != exitNotFound {
		t.Errorf("a missing command: exit %d, stderr %q; want 127", code, stderr)
	}
	code, _, stderr = runSandboxCLI(t, "", "run", "--workspace", ws, "--", "/no/such/program")
	if code != exitNotFound {
		t.Errorf("a missing program path: exit %d, stderr %q; want 127", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(ws, "not-executable"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runSandboxCLI(t, "", "run", "--workspace", ws, "--", "./not-executable")
	if code != exitCannotExec {
		t.Errorf("a program without x permission: exit %d, stderr %q; want 126", code, stderr)
	}
	// A secret-looking --env NAME is dropped, and the user is told.
	t.Setenv("LITE_AGENT_TEST_TOKEN", "do-not-pass")
	code, stdout, stderr = runSandboxCLI(t, "", "run", "--workspace", ws, "--env", "LITE_AGENT_TEST_TOKEN", "--", "/bin/sh", "-c", "echo token=$LITE_AGENT_TEST_TOKEN")
	if code != 0 || stdout != "token=\n" || !strings.Contains(stderr, "--env LITE_AGENT_TEST_TOKEN looks like a secret") {
		t.Errorf("--env SECRET_NAME: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestSandboxCheckJSON: the report names every preset and is valid JSON.
func TestSandboxCheckJSON(t *testing.T) {
	code, stdout, stderr := runSandboxCLI(t, "", "check", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep checkReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(rep.Presets) != 3 || rep.Presets[0].Name != "strict" || rep.Presets[2].Network != "unrestricted" {
		t.Errorf("presets = %+v", rep.Presets)
	}
	for _, p := range rep.Presets {
		if !p.Enforced && p.Refused == "" && len(p.Lost) == 0 {
			t.Errorf("preset %s neither enforced nor explained: %+v", p.Name, p)
		}
	}
	code, stdout, _ = runSandboxCLI(t, "", "check")
	for _, want := range []string{"Landlock", "seccomp filter", "seccomp user notification", "pidfd_getfd", "user namespaces", "cgroups", "strict", "standard", "permissive"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("check output (exit %d) lacks %q:\n%s", code, want, stdout)
		}
	}
}

// TestSandboxRunLevel: --sandbox-level container runs the command with no
// namespace (its /proc is the host's, so /proc/self is unreadable, as
// the level says) and states on stderr what it runs without; a bad level
// is a usage error.
func TestSandboxRunLevel(t *testing.T) {
	ws := t.TempDir()
	code, stdout, stderr := runSandboxCLI(t, "", "run", "--workspace", ws, "--sandbox-level", "container", "--", "/bin/sh", "-c", "echo hi > f; read l < f; echo $l; (read s < /proc/self/status) 2>/dev/null || echo no-proc-self")
	if code != 0 || stdout != "hi\nno-proc-self\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "level container: runs without: read-only mounts outside the read-write roots") {
		t.Errorf("stderr does not say what the level gives up: %q", stderr)
	}
	code, stdout, stderr = runSandboxCLI(t, "", "run", "--workspace", ws, "--", "/bin/sh", "-c", "(read s < /proc/self/status) && echo proc-self")
	if code != 0 || stdout != "proc-self\n" || strings.Contains(stderr, "runs without") {
		t.Errorf("the full level: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runSandboxCLI(t, "", "run", "--sandbox-level", "weak", "--", "true"); code != 2 || !strings.Contains(stderr, "--sandbox-level: give full or container") {
		t.Errorf("a bad level: exit %d, %q", code, stderr)
	}
}
