package sandboxrun

import (
	"errors"
	"syscall"

	"github.com/lite-agent/lite-agent/sandbox"
)

// execFailureCode tells a command that could not be executed (the last
// step of the confined spawn) from a sandbox that could not be set up: 127
// when the program does not exist, 126 when it exists but cannot be run —
// not executable, or not executable inside the sandbox (Landlock's EACCES).
func execFailureCode(err error) (int, bool) {
	var se *sandbox.SpawnError
	if !errors.As(err, &se) || se.Step != "executing the command" {
		return 0, false
	}
	switch se.Errno {
	case syscall.ENOENT, syscall.ENOTDIR:
		return ExitNotFound, true
	}
	return ExitCannotExec, true
}
