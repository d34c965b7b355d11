package confined

import (
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// WritersRecorder is implemented by a tools.SnapshotRecorder whose
// checkpoints account for commands that outlive a tool call (background
// tasks, stdio MCP servers): every command of the session is started with
// the session's Writers (sandbox.Command.Writers), so that a file such a
// command still holds open for writing at a seal is carried into the next
// checkpoint, and the commands are paused while the checkpoint is sealed.
//
// It lives here, not in package tools, because its value is the sandbox's
// own type: a tool that only declares itself need not link the sandbox.
type WritersRecorder interface {
	Writers() *sandbox.Writers
}

// Writers is the session's set of writers that every command a tool starts
// must be given (sandbox.Command.Writers), with ctx.BeforeChange; nil when
// ctx has no recorder or its recorder does not account for them
// (WritersRecorder).
func Writers(ctx *tools.Context) *sandbox.Writers {
	if ctx == nil || ctx.Snapshots == nil {
		return nil
	}
	if w, ok := ctx.Snapshots.(WritersRecorder); ok {
		return w.Writers()
	}
	return nil
}
