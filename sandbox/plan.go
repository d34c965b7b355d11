package sandbox

import "os"

// PlanMessages are the lines the CLI prints about a run, which the C
// runner prints in its place. Each is a whole line (or, for the dropped
// output, the text before and after the byte count).
type PlanMessages struct {
	Preamble       string // before the command runs (warnings)
	Timeout        string
	MemoryExceeded string
	ProcessLimit   string
	TruncatedA     string
	TruncatedB     string
	Interrupt      string // SIGINT
	Terminate      string // SIGTERM
	Hangup         string // SIGHUP
}

// PlansDisabled reports whether the environment turns plans off
// (LITE_AGENT_SANDBOX_PLANS=off).
func PlansDisabled() bool { return os.Getenv("LITE_AGENT_SANDBOX_PLANS") == "off" }

// PlanTrace appends what to the file named by LITE_AGENT_SANDBOX_TRACE, if
// set: the tests' way to see which path ran (the C runner writes "fast").
func PlanTrace(what string) {
	name := os.Getenv("LITE_AGENT_SANDBOX_TRACE")
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	f.WriteString(what + "\n")
	f.Close()
}
