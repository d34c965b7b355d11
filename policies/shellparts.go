package policies

// ShellCommandView is what the rule parser found in a bash command line,
// for a person approving it: the simple commands the rules are matched
// against, and what the parser could not prove about the line.
type ShellCommandView struct {
	// Parts are the simple commands, in the order they appear (their
	// source text).
	Parts []string
	// Unproven says what the rules cannot see into or describe: code run
	// from elsewhere (bash -c of a variable, python -c, a sourced file),
	// redirections that write, assignments.
	Unproven []string
}

// ViewShellCommand parses cmd with the parser the permission rules use —
// the same analysis that decides whether a bash rule matches — so what an
// approval prompt shows is what the gate saw.
func ViewShellCommand(cmd string) ShellCommandView {
	a := analyzeShell(cmd)
	var v ShellCommandView
	for _, p := range a.parts {
		v.Parts = append(v.Parts, p.text)
	}
	v.Unproven = append(v.Unproven, a.problems...)
	v.Unproven = append(v.Unproven, a.opaque...)
	v.Unproven = append(v.Unproven, a.noAllow...)
	return v
}
