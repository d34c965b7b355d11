package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/sandbox"
)

// recorder adapts a checkpoint.Recorder to kernel.Checkpointer: the kernel
// says when checkpoints begin and end, the store says how they are kept.
// writers are the session's commands that may write the workspace
// (confined.WritersRecorder): every command the session starts is given
// them, and the recorder pauses them at each seal.
type recorder struct {
	*checkpoint.Recorder
	writers *sandbox.Writers
}

// Writers implements confined.WritersRecorder.
func (r recorder) Writers() *sandbox.Writers { return r.writers }

// Close seals what is left and then releases the writers' registry: the
// kernel has ended every command by then.
func (r recorder) Close() error {
	err := r.Recorder.Close()
	r.writers.Close()
	return err
}

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
		// Each session its own writers (the copy keeps copts shared and
		// unchanged).
		writers := sandbox.NewWriters()
		opts := *copts
		opts.Writers = writers
		rec, err := checkpoint.Open(dir, sessionID, workspace, &opts)
		if err != nil {
			writers.Close()
			return nil, err
		}
		if err := rec.Watch(ctx); err != nil {
			rec.Close()
			writers.Close()
			return nil, err
		}
		return recorder{rec, writers}, nil
	}
}
