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
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // the new file is trusted: not in the real store
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

// "Allow always" into the workspace's file, the user's own edit, keeps a
// trusted (or new) file trusted — under standard the next session would
// otherwise refuse the very rule the user approved — and never trusts a
// file that was not.
func TestAddRuleToWorkspaceFileKeepsTrust(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	standard, _ := PresetByName("standard")
	opts := &LoadOptions{UserFile: "-"}
	ws := t.TempDir()
	if _, err := AddRuleToWorkspaceFile(ws, Allow, "read_file"); err != nil {
		t.Fatal(err)
	}
	if pol, err := Load(standard, ws, opts); err != nil || !pol.WorkspaceTrusted {
		t.Fatalf("a new file with the approved rule: %v, %v", pol, err)
	}
	if _, err := AddRuleToWorkspaceFile(ws, Allow, "list_dir"); err != nil {
		t.Fatal(err)
	}
	if pol, err := Load(standard, ws, opts); err != nil || !pol.WorkspaceTrusted {
		t.Fatalf("a trusted file with one more approved rule: %v, %v", pol, err)
	}
	// The agent appends a rule: untrusted; the user's next approval must
	// not launder it.
	f := WorkspaceFile(ws)
	b, _ := os.ReadFile(f)
	os.WriteFile(f, append(b, "[sandbox]\nnetwork = \"unrestricted\"\n"...), 0o644)
	if _, err := AddRuleToWorkspaceFile(ws, Allow, "grep"); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(standard, ws, opts); err == nil || !strings.Contains(err.Error(), "not trusted in this version") {
		t.Fatalf("an approval trusted what the agent added: %v", err)
	}
}

// TestAddAllowDomain: "allow always" for a domain goes to [sandbox]
// allow_domains, the file edited in place (comments and other tables
// kept), and what it writes is read back as a grant with its file:line.
func TestAddAllowDomain(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"empty file", "", "[sandbox]\nallow_domains = [\"pkg.example\"]\n"},
		{"permissions only", "# mine\n[permissions]\nallow = [\"read_file\"]\n",
			"# mine\n[permissions]\nallow = [\"read_file\"]\n\n[sandbox]\nallow_domains = [\"pkg.example\"]\n"},
		{"sandbox without the key", "[sandbox]\nnetwork = \"none\" # off\n",
			"[sandbox]\nallow_domains = [\"pkg.example\"]\nnetwork = \"none\" # off\n"},
		{"append, comments kept", "[sandbox]\nallow_domains = [\n  \"@go\", # registries\n]\n[permissions]\nallow = [\"read_file\"]\n",
			"[sandbox]\nallow_domains = [\n  \"@go\", \"pkg.example\", # registries\n]\n[permissions]\nallow = [\"read_file\"]\n"},
		{"already there", "[sandbox]\nallow_domains = ['pkg.example']\n", "[sandbox]\nallow_domains = ['pkg.example']\n"},
		{"a permissions key of the same name is not it", "[permissions]\nallow = []\n[sandbox]\ndeny_domains = [\"x.example\"]\n",
			"[permissions]\nallow = []\n[sandbox]\nallow_domains = [\"pkg.example\"]\ndeny_domains = [\"x.example\"]\n"},
	} {
		got, err := AddAllowDomain("p.toml", []byte(c.in), "pkg.example")
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
			continue
		}
		f, err := ParseFile("p.toml", got)
		if err != nil {
			t.Errorf("%s: the result does not parse: %v", c.name, err)
			continue
		}
		var src string
		for _, g := range f.Sandbox.AllowDomains {
			if g.Value == "pkg.example" {
				src = g.Source
			}
		}
		if !strings.HasPrefix(src, "p.toml:") {
			t.Errorf("%s: the grant's source is %q, want p.toml:LINE", c.name, src)
		}
	}
	if _, err := AddAllowDomain("p.toml", nil, "bad host/"); err == nil {
		t.Error("a malformed pattern was added")
	}
	if _, err := AddAllowDomain("p.toml", []byte("[sandbox]\nallow_domains = 3\n"), "pkg.example"); err == nil || !strings.Contains(err.Error(), "p.toml:2") {
		t.Errorf("a broken file: %v, want an error at p.toml:2", err)
	}
	// The user's file: created, then appended to.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	path, err := AddAllowDomainToUserFile("127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddAllowDomainToUserFile("pkg.example"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "[sandbox]\nallow_domains = [\"127.0.0.1:8080\", \"pkg.example\"]\n" {
		t.Fatalf("user file: %q", data)
	}
}

// TestAddRuleTableNotFirst: a [permissions] table after another table
// gets the rule under it (the header's end was taken from the table
// node's Raw, which is empty: the rule went under the first line's table,
// and the re-parse refused the write).
func TestAddRuleTableNotFirst(t *testing.T) {
	in := "[sandbox]\nnetwork = \"none\"\n[permissions]\ndeny = [\"bash(curl:*)\"]\n"
	want := "[sandbox]\nnetwork = \"none\"\n[permissions]\nallow = [\"read_file\"]\ndeny = [\"bash(curl:*)\"]\n"
	if got, err := AddRule("p.toml", []byte(in), Allow, "read_file"); err != nil || string(got) != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}
