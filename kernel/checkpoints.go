package kernel

import (
	"context"
	"strings"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/tools"
)

// Checkpointer records every change to the workspace so that a session can
// be rewound. The checkpoint package implements it; the kernel only says
// when a checkpoint begins and ends.
type Checkpointer interface {
	// RecordSnapshot saves a path's pre-image before a tool changes it.
	tools.SnapshotRecorder
	// Checkpoint seals what was recorded since the last checkpoint. It
	// returns a JSON-encodable description for the checkpoint event, or nil
	// when nothing was recorded (user-turn checkpoints are always kept, so
	// that every user turn is a rewind target).
	Checkpoint(ctx context.Context, cause CheckpointCause) (any, error)
	// Close seals what is left and releases the store.
	Close() error
}

// CheckpointCause says why a checkpoint is sealed.
type CheckpointCause struct {
	// Reason is "user_turn" or "tool_call".
	Reason string
	// ToolCallID and ToolName name the call(s) whose changes it holds,
	// comma-separated for a batch of concurrent calls.
	ToolCallID string
	ToolName   string
	// UserTurn is the index (from 0) of the user turn it belongs to.
	UserTurn int
}

// CheckpointerFunc opens the checkpointer of a session, once its id is
// known (new or resumed).
type CheckpointerFunc func(ctx context.Context, sessionID, workspace string) (Checkpointer, error)

// userTurns counts the user prompts in a conversation (tool results are
// user messages too, but carry no text block).
func userTurns(msgs []provider.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role != provider.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.Type == provider.BlockText {
				n++
				break
			}
		}
	}
	return n
}

// checkpoint seals a checkpoint and emits its event. A failure to seal is
// reported as an event and the run goes on: the changes stay recorded and
// go into the next checkpoint.
func (r *run) checkpoint(yield func(Event, error) bool, cause CheckpointCause) bool {
	if r.checkpointer == nil {
		return true
	}
	cp, err := r.checkpointer.Checkpoint(r.ctx, cause)
	switch {
	case err != nil:
		return yield(r.event(Event{Type: EventCheckpoint, Checkpoint: &CheckpointEvent{Error: "sealing the checkpoint failed: " + err.Error()}}), nil)
	case cp != nil:
		return yield(r.event(Event{Type: EventCheckpoint, Checkpoint: &CheckpointEvent{Checkpoint: cp}}), nil)
	}
	return true
}

func batchCause(calls []pendingCall, turn int) CheckpointCause {
	ids := make([]string, len(calls))
	names := make([]string, len(calls))
	for i, p := range calls {
		ids[i], names[i] = p.call.ID, p.call.Name
	}
	return CheckpointCause{Reason: "tool_call", ToolCallID: strings.Join(ids, ","), ToolName: strings.Join(names, ","), UserTurn: turn}
}
