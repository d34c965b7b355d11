package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/sandbox"
)

// maxHookOutput bounds what a command hook may print.
const maxHookOutput = 1 << 20

// CommandHook turns a policy file's hook into a kernel hook. The command
// runs with bash -c in the sandbox: the preset's policy for commands
// (base), except that the workspace is read-only — a hook inspects, it
// does not change what checkpoints record — and it is the working
// directory. The hook's input is JSON on stdin (kernel.HookInput); it
// answers with JSON on stdout (kernel.HookOutput; empty output is no
// opinion). Exit code 2 is a refusal with stderr as the reason: a deny for
// PreToolUse, a block for UserPromptSubmit. Any other failure — another
// exit code, output that is not that JSON, a timeout, a sandbox that cannot
// start — is the hook failing, which the kernel treats as documented on
// kernel.Hook (never as an allow).
//
// Hook scripts are files an agent may have planted (python3
// .lite-agent/hooks/guard.py), but lite-agent itself never opens, stats
// or reads them: only the hook's bash does, inside the sandbox. So there
// is nothing here for safefile to guard, and each hostile form of the
// script is bounded by what confines the hook: a FIFO blocks the hook
// until its timeout (at most 10 minutes), /dev/zero is read until the
// timeout or the sandbox's limits, a symlink leads only where the
// sandbox lets the hook read — and each of those is a failing hook,
// which never allows. What is checked before anything runs is the policy
// file that names the hook (policies.LoadWorkspaceFile).
func CommandHook(spec policies.HookSpec, base sandbox.Policy) kernel.Hook {
	pol := base
	workspace := base.Workspace
	pol.Workspace = ""
	pol.ReadOnlyPaths = append(append([]string(nil), base.ReadOnlyPaths...), workspace)
	pol.ReadWritePaths = append([]string(nil), base.ReadWritePaths...)
	pol.Limits.OutputBytes = 2 * maxHookOutput
	return kernel.Hook{
		Event:    kernel.HookEvent(spec.Event),
		Matcher:  spec.Matcher,
		Name:     spec.Name,
		Timeout:  spec.Timeout,
		DenyOnly: spec.DenyOnly,
		Func: func(ctx context.Context, in *kernel.HookInput) (*kernel.HookOutput, error) {
			return runCommandHook(ctx, spec, pol, workspace, in)
		},
	}
}

func runCommandHook(ctx context.Context, spec policies.HookSpec, pol sandbox.Policy, dir string, in *kernel.HookInput) (*kernel.HookOutput, error) {
	input, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.New(pol)
	if err != nil {
		return nil, fmt.Errorf("the sandbox for the hook command cannot be prepared: %w", err)
	}
	defer sb.Close()
	var stdout, stderr limitedBuffer
	st, err := sb.Run(ctx, &sandbox.Command{
		Path:   "bash",
		Args:   []string{"bash", "-c", spec.Command},
		Dir:    dir,
		Stdin:  bytes.NewReader(input),
		Stdout: &stdout,
		Stderr: &stderr,
	})
	if err != nil {
		return nil, fmt.Errorf("the hook command could not start in the sandbox: %w", err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	errText := strings.TrimSpace(stderr.String())
	switch {
	case st.TimedOut:
		return nil, errors.New("the hook command timed out")
	case st.Code == 2:
		reason := errText
		if reason == "" {
			reason = fmt.Sprintf("refused by the hook %s", spec.Name)
		}
		switch kernel.HookEvent(spec.Event) {
		case kernel.HookPreToolUse:
			return &kernel.HookOutput{Decision: "deny", Reason: reason}, nil
		case kernel.HookUserPromptSubmit:
			return &kernel.HookOutput{Decision: "block", Reason: reason}, nil
		}
		return nil, fmt.Errorf("exit code 2 (a refusal) means nothing for a %s hook: %s", spec.Event, firstLine(reason))
	case st.Code != 0:
		return nil, fmt.Errorf("the hook command exited with code %d: %s", st.Code, firstLine(errText))
	}
	if stdout.over {
		return nil, fmt.Errorf("the hook command printed more than %d bytes", maxHookOutput)
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if len(out) == 0 {
		return &kernel.HookOutput{}, nil
	}
	var ho kernel.HookOutput
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ho); err != nil {
		return nil, fmt.Errorf("the hook command's output is not the JSON a hook prints (%v): %.200q", err, out)
	}
	if dec.More() {
		return nil, fmt.Errorf("the hook command printed more than one JSON value: %.200q", out)
	}
	return &ho, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if s == "" {
		return "(nothing on stderr)"
	}
	return s
}

// limitedBuffer keeps the first maxHookOutput bytes written to it.
type limitedBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxHookOutput - b.buf.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

func (b *limitedBuffer) String() string { return string(b.Bytes()) }
