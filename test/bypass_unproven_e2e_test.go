package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBypassHoldsDenyRulesThroughTheCLI: with --dangerously-skip-permissions
// nothing asks, so a command whose code the rules cannot read — or that
// runs the denied program from a trap handler, a prompt variable or an
// alias — must be denied by a deny rule, not run. (That each of these
// constructs really runs the program under bash is shown, unconfined, by
// policies.TestBashRunsCodeFrom.) Each call would write a file in the
// workspace if it ran; none may appear.
func TestBypassHoldsDenyRulesThroughTheCLI(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "x.sh"), "touch ran-source\n")
	cmds := map[string]string{
		"trap":   `trap 'touch ran-trap' EXIT`,
		"ps4":    `PS4='$(touch ran-ps4)'; set -x; :`,
		"source": `source ./x.sh`,
		"alias":  "shopt -s expand_aliases; alias e='eval '\ne touch ran-alias",
		"ok":     `echo fine`,
	}
	var calls []string
	for id, c := range cmds {
		in, _ := json.Marshal(map[string]string{"command": c})
		calls = append(calls, fmt.Sprintf(`{"id": %q, "name": "bash", "input": %s}`, id, in))
	}
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [{"tool_calls": [`+strings.Join(calls, ",")+`]}, {"text": "done"}]}`)
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--preset", "standard",
		"--dangerously-skip-permissions", "--disallowed-tools", "bash(touch:*)", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	perms := byID(evs, "permission")
	for id := range cmds {
		p := perms[id]
		if id == "ok" {
			if p["decision"] != "allow" {
				t.Errorf("echo fine under bypass: %v", p)
			}
			continue
		}
		if p["decision"] != "deny" || p["rule"] != "bash(touch:*)" {
			t.Errorf("%s (%q) under bypass: %v, want denied with the rule bash(touch:*)", id, cmds[id], p)
		}
	}
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "ran-") {
			t.Errorf("%s exists: a denied program ran", e.Name())
		}
	}
}
