package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
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
// environment gives, takes the capabilities a container's root does not
// have and makes the cgroupfs read-only; bwrap gives the PID namespace
// with the outer /proc; lite-agent's own `sandbox run` gives itself.
// Each row asserts what `sandbox check` says, that the full level either
// runs or is refused with exit 3 naming --sandbox-level container, and
// that the container level runs a session whose bash writes land (and
// rewind, where change capture runs), cannot read a secret beside the
// workspace nor reach a loopback listener, and says at the start what it
// runs without.

var restrictOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lite-agent-restrict-")
	if err != nil {
		return "", err
	}
	os.Chmod(dir, 0o755) // the unprivileged rows run it too
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

// restrictedEnv is one row's place: the binary where the row's user can
// run it, and the directories of one session.
type restrictedEnv struct {
	bin, base, ws, state, home, secret, script string
	port                                       int
	user                                       bool // the row runs as uid 65534
}

func newRestrictedEnv(t *testing.T, user bool) *restrictedEnv {
	t.Helper()
	base, err := os.MkdirTemp("", "lite-agent-row-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	e := &restrictedEnv{base: base, user: user,
		bin: filepath.Join(base, "bin", "lite-agent"), ws: filepath.Join(base, "ws"), state: filepath.Join(base, "state"),
		home: filepath.Join(base, "home"), secret: filepath.Join(base, "secret"), script: filepath.Join(base, "script.json")}
	for _, d := range []string{filepath.Dir(e.bin), e.ws, e.state, e.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// A secret its user could read without the sandbox: only the
	// sandbox stands between the command and it.
	writeFile(t, e.secret, "s3cret-beside-the-workspace\n")
	os.Chmod(e.secret, 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	e.port = ln.Addr().(*net.TCPAddr).Port
	writeFile(t, e.script, fmt.Sprintf(`{"turns": [
	  {"tool_calls": [{"id": "b", "name": "bash", "input": {"command": "echo hi > f.txt; cat %s || echo SECRET-REFUSED; (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo NET-REACHED || echo NET-REFUSED"}}]},
	  {"text": "done"}]}`, e.secret, e.port))
	if user {
		for _, p := range []string{e.ws, e.state, e.home, e.secret} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e
}

// environ is the environment lite-agent runs with in e.
func (e *restrictedEnv) environ() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + e.home, "LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(e.home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(e.home, ".cache"),
		"XDG_STATE_HOME=" + e.state, "TMPDIR=" + os.TempDir()}
}

// launcher makes the command that runs lite-agent with args where a row
// puts it.
type launcher func(args []string) *exec.Cmd

// withPrefix runs lite-agent under an argv prefix (a wrapper that
// restricts, then execs it).
func withPrefix(e *restrictedEnv, prefix []string) launcher {
	return func(args []string) *exec.Cmd {
		argv := append(append(append([]string(nil), prefix...), e.bin), args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = e.ws, e.environ()
		return cmd
	}
}

// run runs lite-agent with args where launch puts it.
func (e *restrictedEnv) run(t *testing.T, launch launcher, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := launch(args)
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

// session runs the scripted session (a bash call that writes, tries the
// secret and the network) at level, with stream-json output.
func (e *restrictedEnv) session(t *testing.T, launch launcher, level string) (events []map[string]any, stderr string, code int) {
	t.Helper()
	args := []string{"run", "--workspace", e.ws, "--state-dir", e.state, "--output-format", "stream-json",
		"--script", e.script, "--allowed-tools", "bash", "--preset", "strict"}
	if level != "" {
		args = append(args, "--sandbox-level", level)
	}
	stdout, stderr, code := e.run(t, launch, append(args, "write it")...)
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev map[string]any
		if line != "" && json.Unmarshal([]byte(line), &ev) == nil {
			events = append(events, ev)
		}
	}
	return events, stderr, code
}

func eventsOf(events []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range events {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
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

// restrictedRow is one environment of docs/containers.md's table.
type restrictedRow struct {
	name string
	// launch returns how to run lite-agent there (the row skips when it
	// cannot be made here).
	launch func(t *testing.T, e *restrictedEnv) launcher
	user   bool // as uid 65534
	// note is what the check must give as the reason.
	note string
	// fullRuns: the full level runs here (losing what the check lists).
	fullRuns bool
	// capture: change capture runs at the container level, so bash's
	// writes rewind.
	capture bool
}

func restrictWith(what string) func(*testing.T, *restrictedEnv) launcher {
	return func(t *testing.T, e *restrictedEnv) launcher {
		bin, err := restrictOnce()
		if err != nil {
			t.Skipf("cannot build the restriction wrapper (gcc and libseccomp-dev are needed): %v", err)
		}
		return withPrefix(e, []string{bin, what, "--"})
	}
}

var restrictedRows = []restrictedRow{
	// Another listener in the filter chain (an outer sandbox's): EBUSY.
	{name: "notify", launch: restrictWith("notify"), note: "installing a listener failed"},
	// A container without CAP_SYS_PTRACE: pidfd_getfd EPERM.
	{name: "pidfd", launch: restrictWith("pidfd"), note: "pidfd_getfd on a real pidfd failed"},
	// No namespaces can be made (clone/unshare namespace flags EPERM):
	// Debian's sysctl.
	{name: "ns", launch: restrictWith("ns"), note: "no private mount namespace", capture: true},
	// Ubuntu 24.04's AppArmor restriction, as an unprivileged user meets it.
	{name: "ns-unprivileged", launch: restrictWith("ns,user"), user: true, note: "user namespaces unavailable to this user", capture: true},
	// Docker's and Podman's default profile, capabilities and read-only
	// cgroupfs, as root in the container.
	{name: "docker", launch: restrictWith("docker"), note: "pidfd_getfd on a real pidfd failed"},
	// The same container, as a non-root user in it.
	{name: "docker-unprivileged", launch: restrictWith("docker,user"), user: true, note: "pidfd_getfd on a real pidfd failed"},
	// No cgroup at all (read-only cgroupfs): the full level runs, with a
	// PID namespace for the tree, and says the whole tree's memory bound
	// is lost.
	{name: "no-cgroups", launch: restrictWith("nocgroup"), note: "no writable cgroup", fullRuns: true, capture: true},
	// bwrap --unshare-pid with the outer /proc, as it is often used.
	{name: "bwrap-pid", launch: func(t *testing.T, e *restrictedEnv) launcher {
		bw, err := exec.LookPath("bwrap")
		if err != nil {
			t.Skip("bwrap is not installed: the row with a PID namespace and the outer /proc is not reproduced")
		}
		return withPrefix(e, []string{bw, "--unshare-pid", "--bind", "/", "/", "--dev-bind", "/dev", "/dev"})
	}, note: "a PID namespace with the outer /proc"},
	// lite-agent inside lite-agent's own sandbox (its default level):
	// namespaces, mounts and ptrace refused by the outer seccomp program,
	// and the outer command's capture listener in the filter chain.
	{name: "nested-lite-agent", launch: func(t *testing.T, e *restrictedEnv) launcher {
		return withPrefix(e, []string{binary, "sandbox", "run", "--workspace", e.base, "--allow-read", filepath.Dir(e.bin), "--"})
	}, note: "installing a listener failed"},
	// An OCI runtime (runc) running a container over the host's files
	// with Docker's default capabilities, a seccomp profile refusing what
	// Docker's refuses, a read-only cgroupfs and the host's network, as
	// root and as a user in it.
	{name: "runc", launch: runcLauncher(false), note: "pidfd_getfd on a real pidfd failed"},
	{name: "runc-unprivileged", launch: runcLauncher(true), user: true, note: "pidfd_getfd on a real pidfd failed"},
}

func TestRestrictedHosts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the rows are made as root (restriction wrapper, bwrap, setuid to 65534); an unprivileged run would check user namespaces only")
	}
	for _, row := range restrictedRows {
		t.Run(row.name, func(t *testing.T) {
			e := newRestrictedEnv(t, row.user)
			prefix := row.launch(t, e)

			// The check: never "fully enforced" here; the reason; the
			// container level's line from its own trial.
			out, stderr, code := e.run(t, prefix, "sandbox", "check")
			if code != 0 {
				t.Fatalf("sandbox check exit %d: %s", code, stderr)
			}
			lines := presetLines(out)
			if len(lines) != 3 {
				t.Fatalf("no preset lines in:\n%s", out)
			}
			for name, l := range lines {
				if strings.Contains(l, "fully enforced") {
					t.Errorf("%s: %q, but what the README promises does not all hold here", name, l)
				}
			}
			if !strings.Contains(out, row.note) {
				t.Errorf("the check does not give the reason %q:\n%s", row.note, out)
			}
			if !strings.Contains(out, "--sandbox-level container: runs, without:") {
				t.Errorf("the check does not say the container level runs here:\n%s", out)
			}

			// The full level: runs (and says what it loses), or is
			// refused with exit 3, on stderr and in the result, naming
			// what to do.
			events, stderr, code := e.session(t, prefix, "")
			results := eventsOf(events, "result")
			switch {
			case row.fullRuns:
				if code != 0 || !strings.Contains(stderr, "runs commands here without") {
					t.Errorf("full level: exit %d, stderr %q", code, stderr)
				}
				os.Remove(filepath.Join(e.ws, "f.txt"))
			case code != 3:
				t.Errorf("full level: exit %d, want 3 (the sandbox cannot run commands here); stderr: %s", code, stderr)
			case !strings.Contains(stderr, "--sandbox-level container"):
				t.Errorf("the refusal does not say what to do: %q", stderr)
			case len(results) != 1 || results[0]["is_error"] != true || !strings.Contains(fmt.Sprint(results[0]["error"]), "sandbox"):
				t.Errorf("the stream-json result does not say why: %v", results)
			}
			if !row.fullRuns {
				if _, err := os.Stat(filepath.Join(e.ws, "f.txt")); err == nil {
					t.Errorf("f.txt exists although the run was refused")
				}
			}

			// The container level: the session works, confined, and says
			// at the start what it runs without.
			events, stderr, code = e.session(t, prefix, "container")
			if code != 0 {
				t.Fatalf("container level: exit %d; stderr: %s", code, stderr)
			}
			if b, err := os.ReadFile(filepath.Join(e.ws, "f.txt")); err != nil || string(b) != "hi\n" {
				t.Errorf("the write did not land: %q %v", b, err)
			}
			var output string
			for _, r := range eventsOf(events, "tool_result") {
				output += fmt.Sprint(r["content"])
			}
			if !strings.Contains(output, "SECRET-REFUSED") || strings.Contains(output, "s3cret") {
				t.Errorf("the secret beside the workspace was readable: %s", output)
			}
			if !strings.Contains(output, "NET-REFUSED") {
				t.Errorf("a loopback listener outside was reachable: %s", output)
			}
			start := eventsOf(events, "session_start")
			if len(start) != 1 || start[0]["sandbox_level"] != "container" {
				t.Fatalf("session_start: %v", start)
			}
			if !strings.Contains(stderr, "the sandbox (level container) runs commands here without:") || !strings.Contains(stderr, "read-only mounts outside the read-write roots") {
				t.Errorf("the start does not say what the container level gives up: %q", stderr)
			}
			if lost := fmt.Sprint(start[0]["sandbox_lost"]); row.capture == strings.Contains(lost, "rewind of the changes commands make") {
				t.Errorf("capture runs: %v, but the lost list says %s", row.capture, lost)
			}
			if !row.capture {
				return
			}
			// Rewind: the write is undone.
			id := fmt.Sprint(start[0]["session_id"])
			if _, stderr, code := e.run(t, prefix, "rewind", "--state-dir", e.state, id, "--to", "0", "--files-only"); code != 0 {
				t.Fatalf("rewind: exit %d: %s", code, stderr)
			}
			if _, err := os.Stat(filepath.Join(e.ws, "f.txt")); err == nil {
				t.Errorf("f.txt is still there after rewind --to 0")
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

// TestCommandThatCannotStartExits3: a session whose sandbox cannot start
// the agent's command mid-session (bash is not on the PATH the sandbox
// gives commands) tells the person on stderr, carries a sandbox event and
// the reason in the stream-json result, and exits 3 — it exited 0 with
// the work undone, the failure known to the model alone.
func TestCommandThatCannotStartExits3(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [{"id": "b", "name": "bash", "input": {"command": "echo hi > f.txt"}}]},
	  {"text": "done"}]}`)
	cmd := exec.Command(binary, "run", "--workspace", ws, "--state-dir", state, "--output-format", "stream-json",
		"--script", script, "--allowed-tools", "bash", "write it")
	cmd.Env = append(os.Environ(), "PATH=/nonexistent")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 3 {
		t.Fatalf("exit %d, want 3; stderr: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "a command could not be started") {
		t.Errorf("stderr does not tell the person: %q", errb.String())
	}
	var sawEvent, sawResult bool
	for _, line := range strings.Split(out.String(), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch ev["type"] {
		case "sandbox":
			sawEvent = strings.Contains(fmt.Sprint(ev["error"]), "executable file not found")
		case "result":
			sawResult = ev["is_error"] == true && strings.Contains(fmt.Sprint(ev["error"]), "the sandbox could not start a command")
		}
	}
	if !sawEvent || !sawResult {
		t.Errorf("stream-json: sandbox event %v, result says why %v:\n%s", sawEvent, sawResult, out.String())
	}
}
