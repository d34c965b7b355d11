package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/kernel"
)

const guardScript = `input=$(cat)
case "$input" in
  *blocked.txt*) echo '{"decision": "deny", "reason": "blocked.txt is protected by guard"}' ;;
  *exit2.txt*) echo "exit two says no" >&2; exit 2 ;;
  *badjson.txt*) echo 'this is not json' ;;
  *unknownkey.txt*) echo '{"decison": "allow"}' ;;
  *slow.txt*) sleep 10 ;;
  *fail.txt*) echo "guard crashed" >&2; exit 1 ;;
  *allow.txt*) echo '{"decision": "allow", "additional_context": "guard looked"}' ;;
esac
`

const postScript = `cat > /dev/null
touch hooked.txt 2>/dev/null && echo '{"additional_context": "the hook could write!"}' && exit 0
echo '{"additional_context": "post hook ran read-only"}'
`

const hookPolicy = `[[hooks]]
event = "PreToolUse"
matcher = "write_file"
command = "bash .lite-agent/hooks/guard.sh"
timeout = "2s"
name = "guard"

[[hooks]]
event = "PostToolUse"
matcher = "write_file(allow.txt)"
command = "bash .lite-agent/hooks/post.sh"
`

func hookWorkspace(t *testing.T) string {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".lite-agent/hooks"), 0o755)
	os.WriteFile(filepath.Join(ws, ".lite-agent/hooks/guard.sh"), []byte(guardScript), 0o644)
	os.WriteFile(filepath.Join(ws, ".lite-agent/hooks/post.sh"), []byte(postScript), 0o644)
	os.WriteFile(filepath.Join(ws, ".lite-agent/policy.toml"), []byte(hookPolicy), 0o644)
	return ws
}

func writeCall(id, path string) string {
	return `{"id": "` + id + `", "name": "write_file", "input": {"path": "` + path + `", "content": "x"}}`
}

// TestCommandHooks: hooks from a policy file run as commands in the
// sandbox, JSON in and out; every way of failing denies, never allows.
func TestCommandHooks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: the sandbox runs unprivileged (user namespaces); this test still runs")
	}
	for _, preset := range []string{"standard", "strict"} {
		t.Run(preset, func(t *testing.T) {
			ws := hookWorkspace(t)
			calls := []string{}
			for _, p := range []string{"blocked", "exit2", "badjson", "unknownkey", "slow", "fail", "allow", "other"} {
				calls = append(calls, writeCall(p, p+".txt"))
			}
			a, err := New(Config{
				Preset: preset, Workspace: ws, StateDir: t.TempDir(), PolicyFiles: noFiles,
				Model: model(t, `{"turns": [{"tool_calls": [`+strings.Join(calls, ",")+`]}, {"text": "done"}]}`),
			})
			if err != nil {
				t.Fatal(err)
			}
			perm, res, hookEvents := map[string]kernel.Event{}, map[string]kernel.Event{}, map[string]kernel.Event{}
			for ev, err := range a.Query(context.Background(), "write") {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Type {
				case kernel.EventPermission:
					perm[ev.ID] = ev
				case kernel.EventToolResult:
					res[ev.ID] = ev
				case kernel.EventHook:
					hookEvents[ev.ID] = ev
				}
			}
			text := func(id string) string {
				var s string
				for _, c := range res[id].Content {
					s += c.Text
				}
				return s
			}
			check := func(id, decision, by, fragment string) {
				t.Helper()
				p := perm[id]
				if p.Decision != decision || p.DecidedBy != by || !strings.Contains(text(id), fragment) {
					t.Errorf("%s: %s by %s, model saw %q; want %s by %s with %q", id, p.Decision, p.DecidedBy, text(id), decision, by, fragment)
				}
			}
			check("blocked", "deny", "hook", "blocked.txt is protected by guard")
			check("exit2", "deny", "hook", "exit two says no")
			check("badjson", "deny", "hook", "not the JSON a hook prints")
			check("unknownkey", "deny", "hook", "decison")
			check("slow", "deny", "hook", "timed out")
			check("fail", "deny", "hook", "guard crashed")
			check("other", "deny", "headless", "needs approval")
			if preset == "standard" {
				check("allow", "allow", "hook", "guard looked")
				if s := text("allow"); !strings.Contains(s, "post hook ran read-only") {
					t.Errorf("post hook context: %q", s)
				}
			} else {
				// The workspace's file is not trusted to loosen under strict:
				// its hook may deny, but its allow counts for nothing.
				check("allow", "deny", "headless", "needs approval")
			}
			for _, id := range []string{"badjson", "unknownkey", "slow", "fail"} {
				if e, ok := hookEvents[id]; !ok || e.Hook != "guard" || e.Error == "" {
					t.Errorf("%s: hook event %+v", id, e)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "hooked.txt")); err == nil {
				t.Error("a hook command wrote to the workspace")
			}
			for _, f := range []string{"blocked", "exit2", "badjson", "unknownkey", "slow", "fail", "other"} {
				if _, err := os.Stat(filepath.Join(ws, f+".txt")); err == nil {
					t.Errorf("%s.txt was written", f)
				}
			}
		})
	}
}
