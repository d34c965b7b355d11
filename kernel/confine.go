package kernel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

// handlerProfile is a custom tool's declared security, the key under which
// its sandbox is prepared: tools that declare the same get the same one.
type handlerProfile struct {
	declared bool
	security tools.Security
}

// prepareSandbox builds the session's sandbox once, before the first turn,
// so that a kernel that cannot confine commands fails the run at once
// instead of at the first bash call.
func (r *run) prepareSandbox() error {
	p := sandbox.Policy{}
	if r.opts.Sandbox != nil {
		p = *r.opts.Sandbox
	}
	if p.Workspace == "" {
		p.Workspace = r.workspace
	}
	// Checkpoints need the pre-images of what commands and handlers change
	// (tools.Context.BeforeChange).
	if r.opts.Checkpoints != nil || r.opts.Snapshots != nil {
		p.CaptureChanges = true
	}
	// The .git name rule (a command may not make a new .git: sandbox
	// Policy.GitWritable) is enforced by change capture, so a protected
	// .git needs it even without checkpoints.
	if !p.GitWritable {
		p.CaptureChanges = true
	}
	p.OnNetwork = r.network.observer(p.OnNetwork)
	p.OnUnknownDomain = r.network.asker(r.opts.OnUnknownDomain, p.OnUnknownDomain)
	p.OnStartFailure = r.startFailures.observer(p.OnStartFailure)
	// What New expects is tried once (sandbox.Trial, in a scratch
	// sandbox of its own, beside the session's New and workspace check):
	// a command that does not start, or whose writes do not land, would
	// otherwise fail every tool call of the session while the run looks
	// fine to the person.
	trial := make(chan error, 1)
	go func() {
		_, err := sandbox.Trial(p)
		trial <- err
	}()
	sb, err := sandbox.New(p)
	if err != nil {
		<-trial
		if errors.Is(err, sandbox.ErrUnsupported) {
			return fmt.Errorf("kernel: the sandbox cannot run here, and the agent's commands only run inside it: %w (`lite-agent sandbox check` shows what each level and preset would lose here)", err)
		}
		return fmt.Errorf("kernel: preparing the sandbox: %w", err)
	}
	// And the session's own workspace, from inside: writable to the
	// agent's file tools but not to its commands would fail every
	// command's write while the tools' writes land.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	werr := sb.CheckWorkspace(ctx)
	cancel()
	if err := <-trial; err != nil {
		sb.Close()
		return fmt.Errorf("kernel: the sandbox was prepared but cannot run the agent's commands here: %w (`lite-agent sandbox check` shows what holds)", err)
	}
	if werr != nil {
		sb.Close()
		return fmt.Errorf("kernel: %w (`lite-agent sandbox check --workspace DIR` shows the sandbox there)", werr)
	}
	r.sandboxEnforcement = sb.Enforcement()
	// Handlers are narrowed from the ceiling, which is the commands'
	// policy unless the caller named a wider one on purpose.
	ceiling := p
	if r.opts.HandlerCeiling != nil {
		ceiling = *r.opts.HandlerCeiling
		if ceiling.Workspace == "" {
			ceiling.Workspace = p.Workspace
		}
		if ceiling.Workspace != p.Workspace {
			sb.Close()
			return fmt.Errorf("kernel: HandlerCeiling.Workspace is %s, not the session's %s; leave it empty", ceiling.Workspace, p.Workspace)
		}
		ceiling.CaptureChanges = p.CaptureChanges
		// The level is what this host can give commands at all: a
		// handler gets no namespace the session's commands cannot have.
		ceiling.Level = p.Level
		ceiling.OnStartFailure = r.startFailures.observer(ceiling.OnStartFailure)
		ceiling.OnNetwork = r.network.observer(ceiling.OnNetwork)
		ceiling.OnUnknownDomain = r.network.asker(r.opts.OnUnknownDomain, ceiling.OnUnknownDomain)
	}
	r.basePolicy = p
	r.handlerCeiling = ceiling
	r.sandbox = sb
	r.handlerSandboxes = map[handlerProfile]*sandbox.Sandbox{}
	return nil
}

// handlerSandbox returns the sandbox a custom tool's handler runs in: the
// handler ceiling narrowed to its declared security (confined.HandlerPolicy;
// a declaration never widens, and one wider than the ceiling was refused
// when the session started: checkConfinable), and the
// workspace its Context sees ("" when it declared no filesystem access).
func (r *run) handlerSandbox(t *tools.Tool) (*sandbox.Sandbox, string, error) {
	sec := t.Security()
	key := handlerProfile{declared: sec != nil}
	if sec != nil {
		key.security = *sec
	}
	// A handler that declared no filesystem access gets no workspace; one
	// that declared the workspace without side effects sees it read-only
	// (the sandbox enforces that, the path is the same).
	workspace := r.workspace
	if sec != nil && sec.Filesystem == tools.FilesystemNone {
		workspace = ""
	}
	r.handlerMu.Lock()
	defer r.handlerMu.Unlock()
	if sb := r.handlerSandboxes[key]; sb != nil {
		return sb, workspace, nil
	}
	p, err := confined.HandlerPolicy(r.handlerCeiling, sec)
	if err != nil {
		return nil, "", err
	}
	sb, err := sandbox.New(p)
	if err != nil {
		return nil, "", fmt.Errorf("preparing its sandbox: %w", err)
	}
	r.handlerSandboxes[key] = sb
	return sb, workspace, nil
}

func (r *run) closeSandboxes() {
	r.handlerMu.Lock()
	defer r.handlerMu.Unlock()
	for k, sb := range r.handlerSandboxes {
		sb.Close()
		delete(r.handlerSandboxes, k)
	}
	if r.sandbox != nil {
		r.sandbox.Close()
		r.sandbox = nil
	}
}
