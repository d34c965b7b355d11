package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrTrialFailed is wrapped by Trial's error: the sandbox could be
// prepared, but a command in it did not do what the policy promises.
var ErrTrialFailed = errors.New("sandbox: trial command failed")

// Trial proves that commands under p's mechanisms work here, before
// anyone relies on them, and returns what that sandbox enforces. It
// prepares a sandbox like p over a scratch workspace (default system
// paths, no grants, no domains) — which starts its spawner thread — and
// runs one command there that must:
//
//   - write a file and read it back, and the file be there outside;
//   - have its changes captured with their pre-images (p.CaptureChanges,
//     where the sandbox keeps capture): a file it overwrites and one it
//     creates are announced before the change, and the pre-images seen
//     then restore the scratch workspace exactly (a rewind);
//   - fail to read a file beside the workspace (outside every grant);
//   - fail to reach a loopback listener outside (every mode but
//     unrestricted: the trial runs under none);
//   - leave nothing running: a daemon that left the command's session is
//     gone when the command is (unless Enforcement.Lost says the tree is
//     not killed as a whole here).
//
// What the probe asks the kernel cannot see everything (an outer
// sandbox's /proc, a seccomp profile refusing a call only some of the
// time): a failing trial names the step that failed. New's refusal is
// returned as it is (wrapping ErrUnsupported); every other failure wraps
// ErrTrialFailed.
func Trial(p Policy) (Enforcement, error) {
	return trialOn(p, host())
}

// trialOn is Trial on host h (newOnHost).
func trialOn(p Policy, h *hostInfo) (Enforcement, error) {
	dir, err := os.MkdirTemp("", "lite-agent-trial-")
	if err != nil {
		return Enforcement{}, fmt.Errorf("%w: a scratch workspace: %v", ErrTrialFailed, err)
	}
	defer removeAll(dir)
	scratch := filepath.Join(dir, "workspace")
	secret := filepath.Join(dir, "outside")
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return Enforcement{}, fmt.Errorf("%w: a scratch workspace: %v", ErrTrialFailed, err)
	}
	if err := os.WriteFile(secret, []byte("outside\n"), 0o600); err != nil {
		return Enforcement{}, fmt.Errorf("%w: a scratch workspace: %v", ErrTrialFailed, err)
	}
	existing := filepath.Join(scratch, "existing")
	if err := os.WriteFile(existing, []byte("before\n"), 0o644); err != nil {
		return Enforcement{}, fmt.Errorf("%w: a scratch workspace: %v", ErrTrialFailed, err)
	}
	q := Policy{
		Workspace:      scratch,
		Network:        p.Network,
		Limits:         p.Limits,
		CaptureChanges: p.CaptureChanges,
		GitWritable:    p.GitWritable,
		BestEffort:     p.BestEffort,
		Level:          p.Level,
	}
	if q.Network != NetworkNone && q.Network != NetworkUnrestricted {
		q.Network = NetworkNone // no grant is needed to write a file
	}
	if q.Limits.WallTime == 0 || q.Limits.WallTime > 10*time.Second {
		q.Limits.WallTime = 10 * time.Second
	}
	sb, err := newOnHost(q, h)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return Enforcement{}, err
		}
		return Enforcement{}, fmt.Errorf("%w: preparing it: %v", ErrTrialFailed, err)
	}
	defer sb.Close()
	enf := sb.Enforcement()
	failed := func(format string, args ...any) (Enforcement, error) {
		return enf, fmt.Errorf("%w: %s", ErrTrialFailed, fmt.Sprintf(format, args...))
	}

	// The script. bash's /dev/tcp reaches the network without another
	// program; without bash the network step is not tried (and the
	// bash tool, which needs it, would fail the write step's twin).
	shell := "/bin/sh"
	netStep := ""
	if q.Network != NetworkUnrestricted {
		if bash, err := lookPath("bash", sb.commandEnv(nil, scratch), scratch); err == nil {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return failed("a loopback listener to try the network against: %v", err)
			}
			defer ln.Close()
			shell = bash
			netStep = fmt.Sprintf("(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo TRIAL-NETWORK-REACHED\n", ln.Addr().(*net.TCPAddr).Port)
		}
	}
	killsTree := !slices.ContainsFunc(append(slices.Clone(enf.Lost), enf.Missing...), func(s string) bool {
		return strings.HasPrefix(s, "killing the whole process tree")
	})
	// The daemon: it leaves the command's session (a background job of a
	// shell without job control is no group leader, so setsid(1) calls
	// setsid itself and execs sleep, keeping the pid), and the sandbox
	// must end it with the command. The steps use shell builtins but for
	// these two programs (absolute, as found on the commands' PATH):
	// without them the step is not tried.
	env := sb.commandEnv(nil, scratch)
	setsid, err1 := lookPath("setsid", env, scratch)
	sleep, err2 := lookPath("sleep", env, scratch)
	daemonStep := ""
	killsTree = killsTree && err1 == nil && err2 == nil
	if killsTree {
		daemonStep = fmt.Sprintf("%s %s 30 </dev/null >/dev/null 2>&1 &\necho daemon $!\n", setsid, sleep)
	}
	script := "echo after > existing && echo trial > written && read line < written && echo \"$line\" || exit 3\n" +
		"(read x < ../outside) 2>/dev/null && echo TRIAL-READ-OUTSIDE\n" +
		netStep + daemonStep + "exit 0\n"

	var out, errOut bytes.Buffer
	cmd := &Command{Path: shell, Args: []string{filepath.Base(shell), "-c", script}, Stdout: &out, Stderr: &errOut}
	// Capture is tried where the sandbox has it (best effort and the
	// container level may go without, and Enforcement then says so):
	// the pre-image of each path is kept as the hook first sees it.
	type preImage struct {
		data   []byte
		absent bool
	}
	var mu sync.Mutex
	pre := map[string]preImage{}
	if sb.capture {
		cmd.BeforeChange = func(paths []string) error {
			mu.Lock()
			defer mu.Unlock()
			for _, path := range paths {
				if _, ok := pre[path]; ok {
					continue
				}
				b, err := os.ReadFile(path)
				pre[path] = preImage{data: b, absent: errors.Is(err, os.ErrNotExist)}
			}
			return nil
		}
	}
	st, err := sb.Run(context.Background(), cmd)
	switch {
	case err != nil:
		return failed("starting %s: %v", shell, err)
	case st.Code != 0:
		return failed("a write in the workspace, exit %d: %s", st.Code, bytes.TrimSpace(errOut.Bytes()))
	case !strings.HasPrefix(out.String(), "trial\n"):
		return failed("the file written was read back as %q", out.String())
	case strings.Contains(out.String(), "TRIAL-READ-OUTSIDE"):
		return failed("a file beside the workspace, outside every grant, was readable")
	case strings.Contains(out.String(), "TRIAL-NETWORK-REACHED"):
		return failed("a loopback listener outside the sandbox was reachable in network mode %s", q.Network)
	}
	written := filepath.Join(scratch, "written")
	if b, err := os.ReadFile(written); err != nil || string(b) != "trial\n" {
		return failed("the file the command wrote is not in the workspace outside (%v)", err)
	}
	if killsTree {
		_, after, _ := strings.Cut(out.String(), "daemon ")
		pid, err := strconv.Atoi(strings.TrimSpace(after))
		switch {
		case err != nil:
			return failed("the daemon the command started did not report its pid (%q)", out.String())
		case alive(pid, "setsid", "sleep"):
			unix.Kill(pid, unix.SIGKILL) // the trial's own daemon
			return failed("a daemon that left the command's session outlived the command (pid %d)", pid)
		}
	}
	if !sb.capture {
		return enf, nil
	}
	real, _ := filepath.EvalSymlinks(scratch)
	existingReal, writtenReal := filepath.Join(real, "existing"), filepath.Join(real, "written")
	mu.Lock()
	defer mu.Unlock()
	switch {
	case !slices.Contains(mapKeys(pre), writtenReal) || !slices.Contains(mapKeys(pre), existingReal):
		return failed("the writes were not captured (announced %q)", mapKeys(pre))
	case string(pre[existingReal].data) != "before\n" || !pre[writtenReal].absent:
		return failed("the pre-images were not seen before the change (existing %q, written absent %v)", pre[existingReal].data, pre[writtenReal].absent)
	}
	// The rewind: every announced path back to its pre-image.
	for path, img := range pre {
		var err error
		if img.absent {
			err = os.Remove(path)
		} else {
			err = os.WriteFile(path, img.data, 0o644)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return failed("restoring %s: %v", path, err)
		}
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "before\n" {
		return failed("the rewind did not restore the file the command overwrote (%q, %v)", b, err)
	}
	if _, err := os.Stat(written); err == nil {
		return failed("the rewind did not remove the file the command created")
	}
	return enf, nil
}

// alive reports whether pid is a live process named one of names (the
// trial's daemon, between setsid and sleep; not a process that reused its
// pid). A killed one may still be a zombie until whoever inherited it
// reaps it: that is not alive.
func alive(pid int, names ...string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || len(s) < end+3 {
		return false
	}
	state := s[end+2]
	return slices.Contains(names, s[open+1:end]) && state != 'Z' && state != 'X'
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ErrWorkspaceUnwritable is wrapped by CheckWorkspace's error (with
// ErrTrialFailed): this process can write the workspace, its commands
// cannot.
var ErrWorkspaceUnwritable = errors.New("the workspace is not writable from inside the sandbox")

// CheckWorkspace tries, from inside s, whether its commands may write the
// policy's workspace when this process may: a command runs `test -w` there
// (access(2), which sees the mount's flags and file permissions as the
// command has them, without capabilities). The two differ for root
// outside a directory it does not own (its DAC override is dropped
// inside), and on a mount made read-only for the sandbox: the agent's
// file tools would then write what its commands cannot, and the person
// must know before the session starts. A workspace this process cannot
// write either is a read-only session, not a failure: nil.
func (s *Sandbox) CheckWorkspace(ctx context.Context) error {
	ws := s.pol.Workspace
	if ws == "" || unix.Access(ws, unix.W_OK) != nil {
		return nil
	}
	var errOut bytes.Buffer
	st, err := s.Run(ctx, &Command{Path: "/bin/sh", Args: []string{"sh", "-c", `test -w "$1"`, "sh", ws}, Dir: ws, Stderr: &errOut})
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: starting the check: %v", ErrTrialFailed, ws, err)
	case st.Code != 0:
		why := "a read-only mount, or permissions that only a capability the sandbox drops overrides (root writing a directory it does not own)"
		return fmt.Errorf("%w: %w: %s (%s; this process could write it, so the agent's file tools would, and its commands would fail)", ErrTrialFailed, ErrWorkspaceUnwritable, ws, why)
	}
	return nil
}
