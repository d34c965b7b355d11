package kernel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lite-agent/lite-agent/policies"
)

// TestBypassDeniesWhatRulesCannotProve: a command the rules cannot prove
// clear of a deny rule asks — and in bypassPermissions mode, where nobody
// is asked, it is denied, even with a CanUseTool that would say yes. In an
// asking mode the same CanUseTool approves it (a person's decision). A
// command that could only hide an ask rule is not denied by bypass: ask
// rules ask, as before.
func TestBypassDeniesWhatRulesCannotProve(t *testing.T) {
	e := newEnv(t)
	yes := func(context.Context, string, json.RawMessage, ToolUseInfo) (PermissionResult, error) {
		return PermissionResult{Allow: true}, nil
	}
	unproven := []string{
		`source ./x.sh`,        // bash code from a file
		`trap "$X" EXIT`,       // a handler that is not a fixed string
		`$CMD arg`,             // a command name only known when it runs
		`python3 -c 'print()'`, // inline code in another language
	}
	for _, mode := range []PermissionMode{PermissionBypass, PermissionDefault} {
		t.Run(string(mode), func(t *testing.T) {
			o := e.opts(nil)
			o.Rules = []policies.Rule{policies.MustParseRule(policies.Deny, "bash(marker:*)")}
			o.PermissionMode = mode
			o.AllowDangerouslySkipPermissions = mode == PermissionBypass
			o.CanUseTool = yes
			var calls []string
			for i, c := range unproven {
				calls = append(calls, bash(string(rune('a'+i)), c))
			}
			got, _ := runCalls(t, o, calls...)
			for i, c := range unproven {
				id := string(rune('a' + i))
				if mode == PermissionBypass {
					got[id].want(t, id, "deny", byRule, "bypassPermissions mode asks nobody")
					if got[id].perm.Permission.Rule != "bash(marker:*)" {
						t.Errorf("%q: the denial names rule %q, want the deny rule that could match", c, got[id].perm.Permission.Rule)
					}
				} else if got[id].perm.Permission.Decision != "allow" || got[id].perm.Permission.DecidedBy != byCanUseTool {
					t.Errorf("%q in %s mode: %s by %s, want CanUseTool asked and allowing", c, mode, got[id].perm.Permission.Decision, got[id].perm.Permission.DecidedBy)
				}
			}
		})
	}
	t.Run("an ask rule alone", func(t *testing.T) {
		o := e.opts(nil)
		o.Rules = []policies.Rule{policies.MustParseRule(policies.Ask, "bash(marker:*)")}
		o.PermissionMode, o.AllowDangerouslySkipPermissions = PermissionBypass, true
		o.CanUseTool = yes
		got, _ := runCalls(t, o, bash("a", `$CMD arg`))
		if got["a"].perm.Permission.Decision != "allow" || got["a"].perm.Permission.DecidedBy != byCanUseTool {
			t.Errorf("bypass with only an ask rule: %s by %s, want CanUseTool asked", got["a"].perm.Permission.Decision, got["a"].perm.Permission.DecidedBy)
		}
	})
}
