package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrTranscriptMoved: the transcript changed since the cut that
// RestoreTranscriptCut would undo, so putting the cut turns back would
// splice two histories together.
var ErrTranscriptMoved = errors.New("the conversation went on since the rewind")

// RestoreTranscriptCut undoes a TruncateTranscript: it appends the turns
// saved in saved (the name TruncateTranscript returned) back to the
// transcript at path, provided the transcript still has the size it had
// right after the cut (size); otherwise it changes nothing and the error
// wraps ErrTranscriptMoved. The saved file is removed once its turns are
// back. It locks the transcript as TruncateTranscript does (ErrSessionBusy
// while a run holds it).
func RestoreTranscriptCut(path, saved string, size int64) error {
	tail, err := os.ReadFile(saved)
	if err != nil {
		return fmt.Errorf("checkpoint: reading the cut turns: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("checkpoint: transcript %s: %w (a run holds it)", path, ErrSessionBusy)
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if fi.Size() != size {
		return fmt.Errorf("checkpoint: transcript %s: %w", path, ErrTranscriptMoved)
	}
	if _, err := f.WriteAt(tail, size); err != nil {
		// A partial write is cut off again: the transcript stays as the
		// rewind left it.
		_ = f.Truncate(size)
		return fmt.Errorf("checkpoint: restoring the cut turns: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("checkpoint: restoring the cut turns: %w", err)
	}
	_ = os.Remove(saved)
	return nil
}
