package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ErrTrialFailed is wrapped by Trial's error: the sandbox could be
// prepared, but a command in it did not run, write or get its change
// captured as the policy promises.
var ErrTrialFailed = fmt.Errorf("sandbox: trial command failed")

// Trial proves that commands under p's mechanisms work here, before anyone
// relies on them: it prepares a sandbox like p over a scratch workspace
// (default system paths, no grants, no domains), starts its spawner and
// runs one shell command that writes a file and reads it back. With
// p.CaptureChanges (where the sandbox could keep it) the write must also have been announced to
// BeforeChange. What the probe asks the kernel cannot see everything (an
// outer sandbox's /proc, a seccomp profile refusing a call only some of
// the time): a failing trial names the step that failed.
func Trial(p Policy) error {
	scratch, err := os.MkdirTemp("", "lite-agent-trial-")
	if err != nil {
		return fmt.Errorf("%w: a scratch workspace: %v", ErrTrialFailed, err)
	}
	defer os.RemoveAll(scratch)
	q := Policy{
		Workspace:      scratch,
		Network:        p.Network,
		Limits:         p.Limits,
		CaptureChanges: p.CaptureChanges,
		GitWritable:    p.GitWritable,
		BestEffort:     p.BestEffort,
	}
	if q.Network != NetworkNone && q.Network != NetworkUnrestricted {
		q.Network = NetworkNone // no grant is needed to write a file
	}
	if q.Limits.WallTime == 0 || q.Limits.WallTime > 10*time.Second {
		q.Limits.WallTime = 10 * time.Second
	}
	sb, err := New(q)
	if err != nil {
		return fmt.Errorf("%w: preparing it: %v", ErrTrialFailed, err)
	}
	defer sb.Close()
	var out, errOut bytes.Buffer
	var announced []string
	cmd := &Command{
		Path:   "/bin/sh",
		Args:   []string{"sh", "-c", "echo trial > written && cat written"},
		Stdout: &out, Stderr: &errOut,
	}
	// Capture is tried where the sandbox has it (best effort may have
	// dropped it, and Enforcement then says so).
	capturing := sb.captureChild != nil
	if capturing {
		cmd.BeforeChange = func(paths []string) error {
			announced = append(announced, paths...)
			return nil
		}
	}
	st, err := sb.Run(context.Background(), cmd)
	switch {
	case err != nil:
		return fmt.Errorf("%w: starting /bin/sh: %v", ErrTrialFailed, err)
	case st.Code != 0:
		return fmt.Errorf("%w: a write in the workspace, exit %d: %s", ErrTrialFailed, st.Code, bytes.TrimSpace(errOut.Bytes()))
	case out.String() != "trial\n":
		return fmt.Errorf("%w: the file written was read back as %q", ErrTrialFailed, out.String())
	}
	written := filepath.Join(scratch, "written")
	if b, err := os.ReadFile(written); err != nil || string(b) != "trial\n" {
		return fmt.Errorf("%w: the file the command wrote is not in the workspace outside (%v)", ErrTrialFailed, err)
	}
	if capturing && !slices.Contains(announced, written) {
		return fmt.Errorf("%w: the write was not captured (announced %q)", ErrTrialFailed, announced)
	}
	return nil
}
