package policies

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAddRule(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"empty file", "", "[permissions]\nallow = [\"bash(go test:*)\"]\n"},
		{"no permissions table", "[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"true\"\n",
			"[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"true\"\n\n[permissions]\nallow = [\"bash(go test:*)\"]\n"},
		{"table without allow", "[permissions]\ndeny = [\"bash(curl:*)\"]\n",
			"[permissions]\nallow = [\"bash(go test:*)\"]\ndeny = [\"bash(curl:*)\"]\n"},
		{"append, comments kept", "# mine\n[permissions]\nallow = [\n  \"read_file\", # reads\n]\n",
			"# mine\n[permissions]\nallow = [\n  \"read_file\", \"bash(go test:*)\", # reads\n]\n"},
		{"empty array", "[permissions]\nallow = []\n", "[permissions]\nallow = [\"bash(go test:*)\"]\n"},
		{"already there", "[permissions]\nallow = ['bash(go test:*)']\n", "[permissions]\nallow = ['bash(go test:*)']\n"},
	} {
		got, err := AddRule("p.toml", []byte(c.in), Allow, "bash(go test:*)")
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	// A rule that does not parse, and a file that does not, are refused.
	if _, err := AddRule("p.toml", nil, Allow, "bash(unclosed"); err == nil {
		t.Error("a bad rule was added")
	}
	if _, err := AddRule("p.toml", []byte("[permissions\n"), Allow, "read_file"); err == nil || !strings.Contains(err.Error(), "fix the file") {
		t.Errorf("a broken file: %v", err)
	}
	// A rule holding quotes and backslashes is quoted right.
	got, err := AddRule("p.toml", nil, Allow, `bash(echo "a\b")`)
	if err != nil || !hasRule("p.toml", got, Allow, `bash(echo "a\b")`) {
		t.Errorf("quoting: %q %v", got, err)
	}
}

// TestAddRuleToWorkspaceFileRefusesSymlink: a .lite-agent/policy.toml the
// agent made a symlink to a directory outside the workspace is not
// written through: without os.Root, the joined path would read the victim
// through the links and write the new file into the outside directory.
func TestAddRuleToWorkspaceFileRefusesSymlink(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "bashrc")
	os.WriteFile(victim, []byte("echo hi\n"), 0o644)
	os.Symlink(outside, filepath.Join(ws, ".lite-agent"))
	os.Symlink(victim, filepath.Join(outside, "policy.toml"))
	if _, err := AddRuleToWorkspaceFile(ws, Allow, "read_file"); err == nil {
		t.Error("the rule was written through a symlinked .lite-agent")
	}
	if b, _ := os.ReadFile(victim); string(b) != "echo hi\n" {
		t.Errorf("the file outside changed: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 2 {
		t.Errorf("a file was written outside the workspace: %v", ents)
	}
	ws2 := t.TempDir()
	p, err := AddRuleToWorkspaceFile(ws2, Allow, "read_file")
	if b, _ := os.ReadFile(p); err != nil || !strings.Contains(string(b), `allow = ["read_file"]`) {
		t.Errorf("workspace file: %q %v", b, err)
	}
}
