package sandboxrun

import "fmt"

// ExitError is a failure of `sandbox run` with the exit code the process
// ends with: 2 for a usage error, the Exit* codes below, or the command's
// own. Msg, when not empty, is printed on stderr after "lite-agent: ".
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }
func (e *ExitError) ExitCode() int { return e.Code }

func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: 2, Msg: fmt.Sprintf(format, args...)}
}

func failf(format string, args ...any) error {
	return &ExitError{Code: 1, Msg: fmt.Sprintf(format, args...)}
}
