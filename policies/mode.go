package policies

import (
	"fmt"
	"strings"
)

// Mode is a permission mode: what the gate does with a call that no rule,
// hook or option decided. The kernel applies it (kernel.PermissionMode is
// this type); it is defined here so that presets and policy files can name
// one.
type Mode string

const (
	// ModeDefault: read-only tools run, every other call asks.
	ModeDefault Mode = "default"
	// ModeAcceptEdits: like default, and the file edit tools (write_file,
	// edit_file) run without asking on paths inside the workspace.
	ModeAcceptEdits Mode = "acceptEdits"
	// ModePlan: no mutating tool runs — every tool that is not read-only
	// is denied, and the model is told to present a plan instead.
	ModePlan Mode = "plan"
	// ModeDontAsk: whatever would ask is denied instead (a headless run
	// that must never wait for a person, and says so to the model).
	ModeDontAsk Mode = "dontAsk"
	// ModeBypassPermissions: every call runs without asking, except what
	// deny rules, DisallowedTools, ask rules and hooks say. It requires
	// an explicit opt-in (kernel.Options.AllowDangerouslySkipPermissions)
	// and the sandbox still confines every call.
	ModeBypassPermissions Mode = "bypassPermissions"
	// ModeAuto: read-only tools and workspace edits run; the shell, tools
	// that reach the network and tools that declare effects outside the
	// workspace ask.
	ModeAuto Mode = "auto"
)

// ModeYolo is accepted by ParseMode as another name of
// ModeBypassPermissions (the Qoder Agent SDK's); it is never a Mode value.
const ModeYolo = "yolo"

// Modes lists every mode, in documentation order.
func Modes() []Mode {
	return []Mode{ModeDefault, ModeAcceptEdits, ModePlan, ModeDontAsk, ModeBypassPermissions, ModeAuto}
}

// ParseMode checks a mode given as text; "" is ModeDefault.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeDefault, nil
	}
	// "yolo" is the Qoder SDK's name of bypassPermissions. It is the same
	// mode, so it needs the same explicit opt-in: the check is on the
	// parsed mode, never on the text.
	if s == ModeYolo {
		return ModeBypassPermissions, nil
	}
	for _, m := range Modes() {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, 0, 7)
	for _, m := range Modes() {
		names = append(names, string(m))
	}
	names = append(names, ModeYolo)
	return "", fmt.Errorf("unknown permission mode %q (%s)", s, strings.Join(names, ", "))
}

// loosens reports whether choosing m instead of the default lets more
// calls run without a person saying yes.
func (m Mode) loosens() bool {
	switch m {
	case ModeDefault, ModePlan, ModeDontAsk, "":
		return false
	}
	return true
}

// atLeastAsStrict reports whether mode m lets no call run without a
// person's yes that cur would not: m is cur, or cur asks less (a loosening
// mode, or default against plan or dontAsk). plan and dontAsk refuse
// different things, so neither is stricter than the other.
func atLeastAsStrict(m, cur Mode) bool {
	if cur == "" {
		cur = ModeDefault
	}
	switch {
	case m == cur:
		return true
	case m.loosens():
		return false
	case cur.loosens():
		return true
	}
	return cur == ModeDefault // m is plan or dontAsk
}
