package tools

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox/policy"
)

// Call is the raw tool call as the model sent it.
type Call struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ApprovalRequest asks a person whether something may happen.
type ApprovalRequest struct {
	ToolName string
	CallID   string
	Input    json.RawMessage
	// Reason says why approval is needed, in words for a person.
	Reason string
}

// ApprovalFunc answers an ApprovalRequest; an error counts as "no".
type ApprovalFunc func(ctx context.Context, req ApprovalRequest) (bool, error)

// UserInputFunc asks the user a question and returns the answer.
type UserInputFunc func(ctx context.Context, question string) (string, error)

// SnapshotRecorder saves the pre-image of a workspace path before a tool
// changes it. The checkpoint store implements it.
type SnapshotRecorder interface {
	RecordSnapshot(path string) error
}

// WriteRecorder is implemented by a SnapshotRecorder that also takes the
// post-image of a write made in-process: the content the tool itself has
// just written to path (after RecordSnapshot and the write). A file that
// differs from it when the call's checkpoint is sealed was written by
// someone else meanwhile (the user, another session), and a rewind then
// reports a conflict instead of discarding that edit. RecordWrite must
// not modify or keep content (it may be a string's bytes, lent).
type WriteRecorder interface {
	RecordWrite(path string, content []byte) error
}

// ForeignChangeRecorder is implemented by a SnapshotRecorder that can be
// told that a process other than the tool's confined command changed a
// path the command announced, while it ran (sandbox.Command.
// ForeignChange): the path's state at the seal is then not the agent's
// alone, and a rewind reports a conflict instead of discarding that edit.
type ForeignChangeRecorder interface {
	RecordForeignChange(path, why string)
}

// Sandbox is the session's sandbox as a tool sees it: the policy its
// commands run under. The kernel hands a *sandbox.Sandbox, and a tool that
// starts commands (package builtin's bash) asserts that type to reach its
// Start and Run; this package names only what it needs, so that defining
// or testing a tool does not link the sandbox's implementation.
type Sandbox interface {
	Policy() policy.Policy
}

// Context carries the per-call services the kernel provides to a handler.
// Every field may be zero in tests; the methods are safe on a zero Context.
type Context struct {
	// Ctx is cancelled when the call is abandoned (deadline, interrupt,
	// session end). Long handlers must watch it.
	Ctx context.Context
	// SessionID is the session the call belongs to.
	SessionID string
	// Workspace is the absolute path of the workspace.
	Workspace string
	// Root is an os.Root opened on Workspace. File access through it cannot
	// resolve outside the workspace (the kernel enforces RESOLVE_BENEATH),
	// which is why the built-in file tools use it rather than paths.
	Root *os.Root
	// Call is the raw call being executed.
	Call Call
	// Sandbox confines the commands a tool runs (the bash tool runs every
	// command through it); its Policy() is the active policy. It is nil
	// when no sandbox is active — tools that run commands then refuse to —
	// and always nil in a confined handler (every custom handler unless
	// kernel.Confinement.InProcessHandlers): that handler is already
	// inside its sandbox, and a command it starts (os/exec) is confined by
	// the same policy.
	Sandbox Sandbox
	// Tasks is the session's background-task registry. It is nil in a
	// confined handler (the tasks belong to the parent's session) and in
	// tests; built-in tools and in-process handlers get it.
	Tasks *Tasks
	// Approval and UserInput reach a person; nil when headless.
	Approval  ApprovalFunc
	UserInput UserInputFunc

	// EmitFunc delivers custom events into the stream; set by the kernel.
	EmitFunc func(name string, data any)
	// OutputFunc receives, as it comes, what the call writes to a writer
	// from Output; set by the kernel, which streams it as tool_output
	// events. It must not keep p.
	OutputFunc func(p []byte)
	// Snapshots records pre-images; nil until a checkpointer is active.
	Snapshots SnapshotRecorder
}

// Context returns the call's context.Context, never nil.
func (c *Context) Context() context.Context {
	if c == nil || c.Ctx == nil {
		return context.Background()
	}
	return c.Ctx
}

// Emit sends a custom event named name into the session's event stream.
// Without a stream it does nothing.
func (c *Context) Emit(name string, data any) {
	if c != nil && c.EmitFunc != nil {
		c.EmitFunc(name, data)
	}
}

// Output returns w, or, when the kernel streams the call's output live
// (OutputFunc), a writer that writes to w and hands the same bytes to
// OutputFunc. A writer that counts what a sandbox drops
// (sandbox.OutputOmitter) goes on counting through it.
func (c *Context) Output(w io.Writer) io.Writer {
	if c == nil || c.OutputFunc == nil {
		return w
	}
	return &liveWriter{w: w, live: c.OutputFunc}
}

type liveWriter struct {
	w    io.Writer
	live func([]byte)
}

func (l *liveWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	l.live(p[:n])
	return n, err
}

func (l *liveWriter) OmitOutput(n int64) {
	// sandbox.OutputOmitter, asked for by its method: this package does
	// not link the sandbox.
	if o, ok := l.w.(interface{ OmitOutput(int64) }); ok {
		o.OmitOutput(n)
	}
}

// RecordSnapshot records the pre-image of path (relative to the workspace)
// before the caller changes it, so that a rewind can undo the change. It is
// a no-op until a checkpointer is active. Call it before every write.
func (c *Context) RecordSnapshot(path string) error {
	if c == nil || c.Snapshots == nil {
		return nil
	}
	return c.Snapshots.RecordSnapshot(path)
}

// RecordWrite reports what the caller has just written to path (its whole
// new content), when the recorder takes post-images (WriteRecorder). The
// write has happened, so a failure is not the tool's: the checkpoint then
// takes the file as it finds it at the seal.
func (c *Context) RecordWrite(path string, content []byte) {
	if c == nil || c.Snapshots == nil {
		return
	}
	if w, ok := c.Snapshots.(WriteRecorder); ok {
		_ = w.RecordWrite(path, content)
	}
}

// ForeignChange is the hook that tells the checkpointer about writes by
// other processes to what a confined command is changing (see
// sandbox.Command.ForeignChange). nil when nothing records them.
func (c *Context) ForeignChange() policy.ForeignFunc {
	if c == nil || c.Snapshots == nil {
		return nil
	}
	if f, ok := c.Snapshots.(ForeignChangeRecorder); ok {
		return f.RecordForeignChange
	}
	return nil
}

// BeforeChange is the hook that gives confined processes' changes to the
// checkpointer: before a command or handler the tool runs changes a path
// in the workspace, the path's pre-image is recorded (see
// sandbox.Command.BeforeChange). nil when nothing records pre-images.
func (c *Context) BeforeChange() policy.ChangeFunc {
	if c == nil || c.Snapshots == nil || c.Workspace == "" {
		return nil
	}
	// The sandbox reports symlink-free paths; the workspace may have been
	// named through a link.
	ws := c.Workspace
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	snaps := c.Snapshots
	return func(changed []string) error {
		for _, p := range changed {
			rel, ok := paths.Rel(ws, p)
			if !ok || rel == "." {
				continue
			}
			if err := snaps.RecordSnapshot(filepath.ToSlash(rel)); err != nil {
				return err
			}
		}
		return nil
	}
}
