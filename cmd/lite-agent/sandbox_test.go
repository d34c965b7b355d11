package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runSandboxCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runCLI(append([]string{"sandbox"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
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
