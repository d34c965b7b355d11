//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"
)

// On other systems there is no Landlock, no seccomp and no cgroup: New
// refuses (ErrUnsupported) unless the policy asks for best effort, and then
// commands run unconfined — with the environment filtered, the wall time and
// output bounded — and Enforcement().Missing says so.

// Sandbox is a policy prepared for this system.
type Sandbox struct {
	pol Policy
	enf Enforcement
	tmp string
}

// New checks p. Confinement is not available on this platform: it fails
// with ErrUnsupported unless p.BestEffort.
func New(p Policy) (*Sandbox, error) {
	q, err := normalizePolicy(p)
	if err != nil {
		return nil, err
	}
	missing := []string{
		"file-system confinement (Landlock is Linux-only)",
		"system-call filtering (seccomp is Linux-only)",
		"network confinement",
		"memory, process and file-size limits",
		"killing the whole process tree",
	}
	if !q.BestEffort {
		return nil, fmt.Errorf("%w: %s: nothing can be confined on %s", ErrUnsupported, missing[0], runtime.GOOS)
	}
	s := &Sandbox{pol: q, enf: Enforcement{NetworkMode: string(NetworkUnrestricted), Missing: missing, Unprivileged: os.Geteuid() != 0}}
	if q.TempDir == "" {
		if s.tmp, err = os.MkdirTemp("", "lite-agent-sandbox-"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Probe reports that nothing can be enforced here.
func Probe() Capabilities {
	return Capabilities{Kernel: runtime.GOOS, Root: os.Geteuid() == 0,
		Notes: []string{"no Landlock, seccomp or cgroups on " + runtime.GOOS + ": only BestEffort policies run, unconfined"}}
}

// Policy returns the normalized policy.
func (s *Sandbox) Policy() Policy { return s.pol }

// Enforcement says that nothing is enforced.
func (s *Sandbox) Enforcement() Enforcement {
	e := s.enf
	e.Missing = append([]string(nil), e.Missing...)
	return e
}

// HTTPProxy is "": there is no domain proxy here (domain grants are
// not enforced on this platform).
func (s *Sandbox) HTTPProxy() string { return "" }

// Close removes the temporary directory.
func (s *Sandbox) Close() error {
	if s.tmp != "" {
		return os.RemoveAll(s.tmp)
	}
	return nil
}

// Run starts cmd and waits for it.
func (s *Sandbox) Run(ctx context.Context, cmd *Command) (*ExitStatus, error) {
	p, err := s.Start(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return p.Wait()
}

// Process is a running command.
type Process struct {
	c        *exec.Cmd
	start    time.Time
	budget   *outputBudget
	timedOut bool
	mu       sync.Mutex
	done     chan struct{}
	status   *ExitStatus
	err      error
}

// Start starts cmd, unconfined (best effort).
func (s *Sandbox) Start(ctx context.Context, cmd *Command) (*Process, error) {
	if cmd == nil || cmd.Path == "" {
		return nil, errors.New("sandbox: no command")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tmp := s.pol.TempDir
	if tmp == "" {
		tmp = s.tmp
	}
	env := envSet(FilterEnv(os.Environ(), s.pol.Env, cmd.Env), "TMPDIR", tmp)
	c := exec.Command(cmd.Path)
	if len(cmd.Args) > 0 {
		c.Args = cmd.Args
	}
	c.Env = env
	c.Dir = cmd.Dir
	if c.Dir == "" {
		c.Dir = s.pol.Workspace
	}
	c.Stdin = cmd.Stdin
	p := &Process{c: c, start: time.Now(), budget: newOutputBudget(s.pol.Limits.OutputBytes), done: make(chan struct{})}
	if cmd.Stdout != nil {
		c.Stdout = budgetWriter{p.budget, cmd.Stdout}
	}
	if cmd.Stderr != nil {
		if sameWriter(cmd.Stdout, cmd.Stderr) {
			c.Stderr = c.Stdout
		} else {
			c.Stderr = budgetWriter{p.budget, cmd.Stderr}
		}
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	go func() {
		var timer <-chan time.Time
		if wt := s.pol.Limits.WallTime; wt > 0 {
			t := time.NewTimer(wt)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-ctx.Done():
		case <-timer:
		case <-p.done:
			return
		}
		p.mu.Lock()
		p.timedOut = true
		p.mu.Unlock()
		p.Kill()
	}()
	go p.wait()
	return p, nil
}

func (p *Process) wait() {
	err := p.c.Wait()
	st := &ExitStatus{Code: p.c.ProcessState.ExitCode(), Duration: time.Since(p.start)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.err = err
	}
	p.mu.Lock()
	st.TimedOut = p.timedOut
	p.mu.Unlock()
	st.DroppedBytes = p.budget.droppedBytes()
	st.OutputTruncated = st.DroppedBytes > 0
	p.status = st
	close(p.done)
}

// Pid is the command's pid.
func (p *Process) Pid() int { return p.c.Process.Pid }

// Kill kills the command (not its whole tree: not available here).
func (p *Process) Kill() { p.c.Process.Kill() }

// Wait waits for the command.
func (p *Process) Wait() (*ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

// budgetWriter applies an outputBudget to a writer os/exec copies into.
type budgetWriter struct {
	b *outputBudget
	w io.Writer
}

func (bw budgetWriter) Write(p []byte) (int, error) {
	bw.b.write(bw.w, p)
	return len(p), nil
}

// PlanKey: one-shot plans exist on Linux only.
func PlanKey(flagArgs []string) (string, error) {
	return "", errors.New("sandbox: no one-shot plans here")
}

// OneShotPlan: one-shot plans exist on Linux only.
func (s *Sandbox) OneShotPlan(dir string, msgs PlanMessages) ([]byte, error) {
	return nil, errors.New("sandbox: no one-shot plans here")
}

// StorePlan: one-shot plans exist on Linux only.
func StorePlan(key string, plan []byte) error { return errors.New("sandbox: no one-shot plans here") }

// ErrTooManyEntries: see links_linux.go.
var ErrTooManyEntries = errors.New("sandbox: too many files to find every name of a hard-linked file")

// HardLinkNames finds nothing on other systems: hard-link rule (c) is
// Linux-only, as the sandbox is (see links_linux.go).
func HardLinkNames(fsys fs.FS, name string) ([]string, error) { return nil, nil }

// RemoveStaleTempDirs removes nothing: no sandbox ran here.
func RemoveStaleTempDirs() ([]string, error) { return nil, nil }
