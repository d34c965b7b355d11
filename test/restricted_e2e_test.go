package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The restrictions lite-agent meets in containers and nested sandboxes,
// reproduced without Docker: testdata/restrict/restrict.c (built here with
// gcc and libseccomp) makes the calls fail with the errno the real
// environment gives, and bwrap gives the PID namespace with the outer
// /proc. Each row asserts what `sandbox check` says and what `run` does.

var restrictOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lite-agent-restrict-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "restrict")
	out, err := exec.Command("gcc", "-O2", "-Wall", "-o", bin, "testdata/restrict/restrict.c", "-lseccomp").CombinedOutput()
	if err != nil {
		return "", &buildError{string(out), err}
	}
	return bin, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// restricted returns the argv prefix that runs a command under row.
func restricted(t *testing.T, row string) []string {
	t.Helper()
	if row == "bwrap-pid" {
		bw, err := exec.LookPath("bwrap")
		if err != nil {
			t.Skip("bwrap is not installed: the row with a PID namespace and the outer /proc is not reproduced")
		}
		return []string{bw, "--unshare-pid", "--bind", "/", "/", "--dev-bind", "/dev", "/dev"}
	}
	bin, err := restrictOnce()
	if err != nil {
		t.Skipf("cannot build the restriction wrapper (gcc and libseccomp-dev are needed): %v", err)
	}
	return []string{bin, row, "--"}
}

func runUnder(t *testing.T, prefix []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	argv := append(append([]string(nil), prefix...), binary)
	cmd := exec.Command(argv[0], append(argv[1:], args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// presetLines returns the check's line for each preset.
func presetLines(out string) map[string]string {
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && f[1] == "network" {
			lines[f[0]] = l
		}
	}
	return lines
}

func TestRestrictedHosts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the rows are measured as root (as in a default container); unprivileged runs fail earlier, on user namespaces")
	}
	for _, row := range []struct {
		name string
		// note is what the check's notes must say (the reason).
		note string
		// strictRuns: the strict preset still holds and runs.
		strictRuns bool
	}{
		// Another listener in the filter chain: EBUSY.
		{name: "notify", note: "installing a listener failed"},
		// Docker's default profile without CAP_SYS_PTRACE.
		{name: "pidfd", note: "pidfd_getfd on a real pidfd failed"},
		// No namespaces can be made (clone/unshare EPERM).
		{name: "ns", note: "no private mount namespace"},
		// bwrap --unshare-pid with the outer /proc.
		{name: "bwrap-pid", note: "a PID namespace with the outer /proc"},
	} {
		t.Run(row.name, func(t *testing.T) {
			prefix := restricted(t, row.name)
			out, stderr, code := runUnder(t, prefix, "sandbox", "check")
			if code != 0 {
				t.Fatalf("sandbox check exit %d: %s", code, stderr)
			}
			lines := presetLines(out)
			if len(lines) == 0 {
				t.Fatalf("no preset lines in:\n%s", out)
			}
			for name, l := range lines {
				if strings.Contains(l, "fully enforced") {
					t.Errorf("%s: %q, but a session's commands cannot run as promised here", name, l)
				}
			}
			if !strings.Contains(out, row.note) {
				t.Errorf("the check does not give the reason %q:\n%s", row.note, out)
			}

			ws, state := t.TempDir(), t.TempDir()
			script := filepath.Join(t.TempDir(), "s.json")
			writeFile(t, script, `{"turns": [
			  {"tool_calls": [{"id": "b", "name": "bash", "input": {"command": "echo hi > f.txt"}}]},
			  {"text": "done"}]}`)
			stdout, stderr, code := runUnder(t, prefix, "run", "--workspace", ws, "--state-dir", state,
				"--output-format", "stream-json", "--script", script, "--allowed-tools", "bash", "--preset", "strict", "write it")
			if code != 3 {
				t.Fatalf("run exit %d, want 3 (the sandbox cannot run commands here); stderr: %s", code, stderr)
			}
			if !strings.Contains(stderr, "sandbox") {
				t.Errorf("stderr does not tell the person: %q", stderr)
			}
			if !strings.Contains(stdout, `"type":"result"`) || !strings.Contains(stdout, `"is_error":true`) || !strings.Contains(stdout, "sandbox") {
				t.Errorf("the stream-json result does not say why:\n%s", stdout)
			}
			if _, err := os.Stat(filepath.Join(ws, "f.txt")); err == nil {
				t.Errorf("f.txt exists although the run was refused")
			}
		})
	}
}

// TestUnrestrictedHostStillFullyEnforced: the trials pass where every
// mechanism is there, so the check keeps saying so and runs exit 0.
func TestUnrestrictedHostStillFullyEnforced(t *testing.T) {
	out, stderr, code := runUnder(t, nil, "sandbox", "check")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if l := presetLines(out)["strict"]; !strings.Contains(l, "fully enforced") {
		t.Skipf("this host does not hold strict without restrictions (%q): nothing to compare against", l)
	}
}
