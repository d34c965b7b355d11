package sandbox

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEscapeOwnListener: a confined process that outlives its command
// (setsid, where only the command's session is killed: no cgroup, the
// container level) waits until the sandbox's seccomp listener is gone,
// then installs a filter of its own with a listener and answers CONTINUE
// to the calls the sandbox's programs notify — the refusal set, the
// network calls — which the kernel would otherwise answer ENOSYS. It
// must be refused that listener (a filter without one stays allowed),
// and a set-id mode stays refused. Unconfined, the same probe's listener
// makes the calls happen: the attack is real.
func TestEscapeOwnListener(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("cc not installed: cannot build the probe program (would check that a confined process cannot take over the sandbox's notified calls)")
	}
	dir, err := os.MkdirTemp("", "lite-agent-ownlistener-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "ownlistener")
	if out, err := exec.Command("cc", "-O1", "-o", bin, "testdata/ownlistener.c").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}

	// The attack works where nothing stops it.
	free := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(free, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "now", "-", free).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "own filter with a listener: ok") || !strings.Contains(string(out), "mode 4755") {
		t.Fatalf("unconfined, the probe's own listener does not make the calls happen (%v): the test proves nothing\n%s", err, out)
	}

	for _, capture := range []bool{false, true} {
		t.Run("capture="+strconv.FormatBool(capture), func(t *testing.T) {
			sb, ws := newMaskedSandbox(t, withoutCgroups, func(p *Policy) {
				p.Level, p.CaptureChanges = LevelContainer, capture
				p.ReadOnlyPaths = append(p.ReadOnlyPaths, dir)
			})
			if sb.notify != notifyNet {
				t.Skipf("no notification server here (%v): nothing notified to take over", sb.Enforcement().Notes)
			}
			target := filepath.Join(ws, "tool")
			if err := os.WriteFile(target, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			// The daemon reports on a socket it connects to while the
			// sandbox's server serves it.
			sock := filepath.Join(ws, "report.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var stdout bytes.Buffer
			cmd := &Command{Path: bin, Args: []string{"ownlistener", "daemon", sock, target}, Stdout: &stdout, Stderr: &stdout}
			if capture {
				cmd.BeforeChange = func([]string) error { return nil }
			}
			st, err := sb.Run(context.Background(), cmd)
			if err != nil || st.Code != 0 {
				t.Fatalf("the probe did not start its daemon: %v %+v %s", err, st, stdout.String())
			}
			if pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(stdout.String()), "daemon ")); err == nil && pid > 1 {
				// Ours to end, by its PID, whatever happens below (no
				// PID namespace at the container level).
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			}
			ln.(*net.UnixListener).SetDeadline(time.Now().Add(30 * time.Second))
			conn, err := ln.Accept()
			if err != nil {
				t.Fatalf("the daemon never reported: %v", err)
			}
			defer conn.Close()
			// Every listener of the sandbox goes: the daemon's cue.
			if err := sb.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			conn.SetReadDeadline(time.Now().Add(90 * time.Second))
			report, err := io.ReadAll(conn)
			if err != nil {
				t.Fatalf("reading the daemon's report: %v (so far %q)", err, report)
			}
			got := string(report)
			if !strings.Contains(got, "with the sandbox's listener gone: ENOSYS") {
				t.Fatalf("the daemon did not outlive the sandbox's listener: the test proves nothing\n%s", got)
			}
			for _, want := range []string{"own filter without a listener: ok", "own filter with a listener: EPERM", "mode 755\n", "done\n"} {
				if !strings.Contains(got, want) {
					t.Errorf("the daemon's report lacks %q:\n%s", want, got)
				}
			}
			if fi, err := os.Stat(target); err != nil || fi.Mode()&os.ModeSetuid != 0 {
				t.Errorf("the workspace file's mode: %v %v", fi.Mode(), err)
			}
		})
	}
}
