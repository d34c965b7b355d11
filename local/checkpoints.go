package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/kernel"
)

// recorder adapts a checkpoint.Recorder to kernel.Checkpointer: the kernel
// says when checkpoints begin and end, the store says how they are kept.
type recorder struct{ *checkpoint.Recorder }

func (r recorder) Checkpoint(_ context.Context, c kernel.CheckpointCause) (any, error) {
	cp, err := r.Seal(checkpoint.SealInfo{Reason: c.Reason, ToolCallID: c.ToolCallID, ToolName: c.ToolName, UserTurn: c.UserTurn})
	if cp == nil {
		// A nil *Checkpoint in an interface would not be nil.
		return nil, err
	}
	return cp, err
}

// Checkpoints returns the kernel's checkpointer factory for a state
// directory ("" is kernel.DefaultStateDir()). The watcher notices changes
// made outside the agent while the session runs, so that a rewind never
// silently destroys them.
func Checkpoints(stateDir string) kernel.CheckpointerFunc {
	return checkpointsCapped(stateDir, 0)
}

// checkpointsCapped is Checkpoints with a store cap (Config.CheckpointMaxSize)
// whose messages go to stderr.
func checkpointsCapped(stateDir string, maxStoreSize int64) kernel.CheckpointerFunc {
	copts := &checkpoint.Options{MaxStoreSize: maxStoreSize, OnStoreCap: func(msg string) {
		fmt.Fprintln(os.Stderr, "lite-agent:", msg)
	}}
	return func(ctx context.Context, sessionID, workspace string) (kernel.Checkpointer, error) {
		dir := stateDir
		if dir == "" {
			d, err := kernel.DefaultStateDir()
			if err != nil {
				return nil, err
			}
			dir = d
		}
		dir, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		rec, err := checkpoint.Open(dir, sessionID, workspace, copts)
		if err != nil {
			return nil, err
		}
		if err := rec.Watch(ctx); err != nil {
			rec.Close()
			return nil, err
		}
		return recorder{rec}, nil
	}
}
