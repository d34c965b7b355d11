package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxRunSaysWhatItRefused: `lite-agent sandbox run` tells the
// person on stderr, after the command's own output and marked as
// lite-agent's, what the sandbox refused the command by a rule (a user
// namespace, a read outside the grants) and what allows it, as the
// agent's bash result does; and, at the start, which of the person's own
// settings commands do not get (a TLS trust store they cannot read).
// Each refusal is shown to be the sandbox's: the same command works
// unconfined, or with the grant the note names.
func TestSandboxRunSaysWhatItRefused(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory for a file outside /tmp (the sandbox's /tmp is its own): %v", err)
	}
	outside, err := os.MkdirTemp(home, ".lite-agent-test-")
	if err != nil {
		t.Skipf("cannot make a directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	notes := filepath.Join(outside, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	run := func(env []string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"sandbox", "run", "--workspace", ws}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code = cmd.ProcessState.ExitCode()
		if code < 0 {
			t.Fatalf("sandbox run %v: %v", args, err)
		}
		return out.String(), errb.String(), code
	}
	lastLine := func(s string) string {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return lines[len(lines)-1]
	}

	// A read outside the grants: cat's own words, then the note.
	_, errOut, code := run(nil, "--", "cat", notes)
	if code == 0 {
		t.Fatalf("a file outside the grants was read")
	}
	if !strings.HasPrefix(errOut, "cat: ") || !strings.HasPrefix(lastLine(errOut), "lite-agent: sandbox: the sandbox refused read "+notes) ||
		!strings.Contains(lastLine(errOut), "--allow-read "+notes) {
		t.Errorf("cat of a file outside the grants, stderr:\n%s", errOut)
	}
	// An error line on stdout (go test and others print their failures
	// there) is read too.
	out, errOut, code := run(nil, "--", "sh", "-c", `cat "$0" 2>&1`, notes)
	if code == 0 || !strings.HasPrefix(out, "cat: ") || !strings.HasPrefix(lastLine(errOut), "lite-agent: sandbox: the sandbox refused read "+notes) {
		t.Errorf("an error line on stdout: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	// With the grant the note names, it is read, and nothing is said.
	out, errOut, code = run(nil, "--allow-read", outside, "--", "cat", notes)
	if code != 0 || out != "mine\n" || strings.Contains(errOut, "lite-agent:") {
		t.Errorf("with --allow-read: exit %d, %q, stderr %q", code, out, errOut)
	}

	// A refused system call, when it works unconfined.
	if free, err := exec.Command("unshare", "-U", "true").CombinedOutput(); err != nil {
		t.Logf("unshare -U fails unconfined here (%v: %s): the refused system call is not checked", err, free)
	} else {
		_, errOut, code = run(nil, "--", "unshare", "-U", "true")
		if code == 0 || !strings.HasPrefix(lastLine(errOut), "lite-agent: sandbox: the sandbox refused unshare CLONE_NEWUSER") ||
			!strings.Contains(errOut, "no setting allows it") {
			t.Errorf("unshare -U: exit %d, stderr:\n%s", code, errOut)
		}
	}

	// A trust store of the person's that commands cannot read: said at
	// the start, with the flag that passes it.
	ca := filepath.Join(outside, "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run([]string{"SSL_CERT_FILE=" + ca}, "--", "sh", "-c", `echo "[$SSL_CERT_FILE]"`)
	if code != 0 || out != "[]\n" || !strings.HasPrefix(errOut, "lite-agent: sandbox: not passing SSL_CERT_FILE="+ca) ||
		!strings.Contains(errOut, "--allow-read "+ca) {
		t.Errorf("an unreadable SSL_CERT_FILE: exit %d, %q, stderr:\n%s", code, out, errOut)
	}
	out, errOut, _ = run([]string{"SSL_CERT_FILE=" + ca}, "--allow-read", ca, "--", "sh", "-c", `echo "[$SSL_CERT_FILE]"`)
	if out != "["+ca+"]\n" || strings.Contains(errOut, "not passing") {
		t.Errorf("SSL_CERT_FILE with --allow-read: %q, stderr:\n%s", out, errOut)
	}
}
