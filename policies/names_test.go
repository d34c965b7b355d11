package policies

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestClaudeNamesInRules: the rules a port of a Claude Code / Qoder
// configuration writes decide like the rules with our names. Without the
// alias table each of these matched nothing — "deny Bash" denied no bash
// call (the first case shows that the rule with the alias now denies
// exactly what "deny bash" denies).
func TestClaudeNamesInRules(t *testing.T) {
	ws := t.TempDir()
	cases := []struct {
		rule, tool, input string
		want              Behavior
	}{
		{"deny Bash", "bash", `{"command":"ls"}`, Deny},
		{"deny Write", "write_file", `{"path":"a","content":""}`, Deny},
		{"deny Edit", "edit_file", `{"path":"a"}`, Deny},
		{"allow Bash(git status)", "bash", `{"command":"git status"}`, Allow},
		{"allow Bash(git status)", "bash", `{"command":"git push"}`, ""},
		{"deny Bash(rm:*)", "bash", `{"command":"cd x && rm -rf /"}`, Deny},
		{"allow Read(src/**)", "read_file", `{"path":"src/a.go"}`, Allow},
		{"allow Read(src/**)", "read_file", `{"path":"etc/a"}`, ""},
		{"allow Grep", "grep", `{}`, Allow},
		{"allow Glob", "glob", `{}`, Allow},
		{"allow LS", "list_dir", `{}`, Allow},
		{"allow Agent", "agent", `{}`, Allow},
		{"allow Task", "agent", `{}`, Allow},
		{"deny KillShell", "kill_task", `{}`, Deny},
		{"deny BashOutput", "bash_output", `{}`, Deny},
	}
	for _, c := range cases {
		set := rs(t, ws, c.rule)
		if got := set.Decide(c.tool, json.RawMessage(c.input)).Behavior; got != c.want {
			t.Errorf("%s on %s %s: %q, want %q", c.rule, c.tool, c.input, got, c.want)
		}
		// The canonical name is what the rule reports; its text is kept.
		r := set.Rules()[0]
		if r.Tool() != c.tool || !strings.HasPrefix(c.rule, string(r.Behavior)+" "+r.Text) {
			t.Errorf("%s: Tool() %q Text %q", c.rule, r.Tool(), r.Text)
		}
	}
	if _, denied := rs(t, ws, "deny Bash").DeniesWholeTool("bash"); !denied {
		t.Error("deny Bash does not hide bash")
	}
}

func TestMatcherAliasesAndAlternatives(t *testing.T) {
	ws := t.TempDir()
	m, err := NewMatcher("Bash", ws)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Match("bash", json.RawMessage(`{"command":"rm -rf /"}`)) || m.Match("read_file", nil) {
		t.Error(`matcher "Bash" does not match bash calls only`)
	}
	m, err = NewMatcher("Write|Edit", ws)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Match("write_file", json.RawMessage(`{"path":"a"}`)) || !m.Match("edit_file", json.RawMessage(`{"path":"a"}`)) || m.Match("bash", nil) {
		t.Error(`matcher "Write|Edit" is wrong`)
	}
	if len(m.Rules()) != 2 || m.Rules()[0].Tool() != "write_file" {
		t.Errorf("Rules() = %v", m.Rules())
	}
	// The '|' of a command is the command's.
	rules, err := ParseMatcher(`bash(grep "a|b")|grep`)
	if err != nil || len(rules) != 2 || rules[0].Text != `bash(grep "a|b")` {
		t.Errorf("ParseMatcher: %v %v", rules, err)
	}
	if _, err := ParseMatcher("bash||grep"); err == nil {
		t.Error("an empty alternative is accepted")
	}
}

func TestUnknownToolMessages(t *testing.T) {
	known := []string{"read_file", "write_file", "edit_file", "bash", "glob", "grep", "list_dir", "mcp__orders__lookup_order"}
	cases := []struct{ name, want string }{
		{"raed_file", `did you mean "read_file"?`},
		{"Bsh", `did you mean "bash"?`},
		{"mcp__orders__lookup_ordr", `did you mean "mcp__orders__lookup_order"?`},
		{"WebSearch", "a Claude Code tool lite-agent does not have"},
		{"MultiEdit", "edit_file makes one replacement per call"},
		{"zzzzzzzzzz", "there is no such tool"},
	}
	for _, c := range cases {
		err := UnknownTool("DisallowedTools", c.name, c.name, known)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := UnknownTool("Tools", "zzzzzzzzzz", "zzzzzzzzzz", known); strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a far name gets a suggestion: %v", err)
	}
}

func TestYoloIsBypass(t *testing.T) {
	m, err := ParseMode("yolo")
	if err != nil || m != ModeBypassPermissions {
		t.Fatalf("ParseMode(yolo) = %q, %v", m, err)
	}
	if _, err := ParseMode("yollo"); err == nil || !strings.Contains(err.Error(), "yolo") {
		t.Errorf("unknown mode message does not list yolo: %v", err)
	}
}
