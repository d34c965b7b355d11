package policies

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/paths"
)

func TestParseFile(t *testing.T) {
	f, err := ParseFile("p.toml", []byte(`# a comment
[permissions]
default_mode = "acceptEdits"
allow = [
  "bash(git status)",   # trailing comment
  'read_file(src/**)',
]
ask = ["bash(git push:*)"]
deny = ["bash(curl:*)", "mcp__orders__delete_*"]

[[hooks]]
event = "PreToolUse"
matcher = "bash(git push:*)"
command = "python3 guard.py"
timeout = "10s"

[[hooks]]
event = "SessionEnd"
command = "true"
timeout = 5
name = "bye"
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.DefaultMode != ModeAcceptEdits || f.ModeSource != "p.toml:3" {
		t.Errorf("mode %q from %q", f.DefaultMode, f.ModeSource)
	}
	var got []string
	for _, r := range f.Rules {
		got = append(got, string(r.Behavior)+" "+r.Text+" "+r.Source)
	}
	want := []string{"allow bash(git status) p.toml:5", "allow read_file(src/**) p.toml:6", "ask bash(git push:*) p.toml:8", "deny bash(curl:*) p.toml:9", "deny mcp__orders__delete_* p.toml:9"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rules:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(f.Hooks) != 2 {
		t.Fatalf("hooks: %+v", f.Hooks)
	}
	h := f.Hooks[0]
	if h.Event != "PreToolUse" || h.Matcher != "bash(git push:*)" || h.Command != "python3 guard.py" || h.Timeout != 10*time.Second || h.Source != "p.toml:11" || h.Name != "p.toml:11" {
		t.Errorf("hook 0: %+v", h)
	}
	if h := f.Hooks[1]; h.Timeout != 5*time.Second || h.Name != "bye" || h.Matcher != "" {
		t.Errorf("hook 1: %+v", h)
	}
}

// TestParseFileErrors: every mistake names the line and the reason.
func TestParseFileErrors(t *testing.T) {
	cases := []struct{ file, want string }{
		{"[permissions]\nallow = [\"bash(git status\"]\n", "p.toml:2: permissions.allow: rule \"bash(git status\": the argument pattern must end with ')'"},
		{"[permissions]\nallow = [\n  \"read_file\",\n  \"get_weather(Tokyo)\",\n]\n", "p.toml:4: permissions.allow: rule \"get_weather(Tokyo)\": the get_weather tool takes no argument pattern"},
		{"[permissions]\nallow = \"bash\"\n", "p.toml:2: permissions.allow must be an array of rule strings, not a string"},
		{"[permissions]\nallow = [1]\n", "p.toml:2: permissions.allow: every rule is a string, not an integer"},
		{"[permissions]\nalow = []\n", "p.toml:2: unknown key permissions.alow"},
		{"[permission]\n", "p.toml:1: unknown table [permission]"},
		{"[hooks]\n", "p.toml:1: write each hook as a [[hooks]] table"},
		// yolo is bypassPermissions, refused here like it.
		{"[permissions]\ndefault_mode = \"yolo\"\n", "p.toml:2: permissions.default_mode: bypassPermissions cannot be set in a policy file"},
		{"[permissions]\ndefault_mode = \"yollo\"\n", "p.toml:2: permissions.default_mode: unknown permission mode \"yollo\""},
		{"[permissions]\ndefault_mode = \"bypassPermissions\"\n", "p.toml:2: permissions.default_mode: bypassPermissions cannot be set in a policy file"},
		{"[permissions]\ndeny = []\ndeny = []\n", "p.toml:3: permissions.deny is given twice (first on line 2)"},
		{"[permissions]\n[permissions]\n", "p.toml:2: [permissions] is given twice"},
		{"[[hooks]]\ncommand = \"x\"\n", "p.toml:1: the hook has no event"},
		{"[[hooks]]\nevent = \"BeforeAll\"\ncommand = \"x\"\n", "p.toml:2: hooks.event: unknown event \"BeforeAll\""},
		{"[[hooks]]\nevent = \"Stop\"\nmatcher = \"bash\"\ncommand = \"x\"\n", "p.toml:1: a matcher only applies to tool events"},
		{"[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"ba sh\"\ncommand = \"x\"\n", "p.toml:3: hooks.matcher: rule \"ba sh\""},
		{"[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"x\"\ntimeout = \"soon\"\n", "p.toml:4: hooks.timeout: time: invalid duration"},
		{"[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"x\"\ntimeout = \"1h\"\n", "p.toml:4: hooks.timeout must be between 0 and 10m"},
		{"[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"\"\n", "p.toml:3: hooks.command is empty"},
		{"[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"x\"\nretries = 3\n", "p.toml:4: unknown key hooks.retries"},
		{"[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"x\"\n[[hooks]]\nevent = \"Stop\"\n", "p.toml:4: the hook has no command"},
		{"[permissions]\nallow = [\"bash\"\n", "p.toml:"},
		{"[permissions\n", "p.toml:1: not valid TOML"},
	}
	for _, c := range cases {
		_, err := ParseFile("p.toml", []byte(c.file))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.file, err, c.want)
		}
	}
}

func TestLoadMergesInOrder(t *testing.T) {
	ws, cfg := t.TempDir(), t.TempDir()
	user := filepath.Join(cfg, "policy.toml")
	os.WriteFile(user, []byte("[permissions]\ndefault_mode = \"acceptEdits\"\nallow = [\"bash(make:*)\"]\n[[hooks]]\nevent = \"Stop\"\ncommand = \"true\"\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
	wsFile := WorkspaceFile(ws)
	os.WriteFile(wsFile, []byte("[permissions]\ndefault_mode = \"plan\"\ndeny = [\"bash(make deploy:*)\"]\n[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"true\"\n"), 0o644)
	strict, _ := PresetByName("strict")
	pol, err := Load(strict, ws, &LoadOptions{UserFile: user})
	if err != nil {
		t.Fatal(err)
	}
	if pol.Mode != ModePlan || pol.ModeSource != wsFile+":2" {
		t.Errorf("mode %q from %q: the workspace's file is the later layer", pol.Mode, pol.ModeSource)
	}
	n := len(strict.Rules)
	if len(pol.Rules) != n+2 || pol.Rules[n].Text != "bash(make:*)" || pol.Rules[n+1].Text != "bash(make deploy:*)" {
		t.Errorf("rules: %+v", pol.Rules)
	}
	if len(pol.Hooks) != 2 || pol.Hooks[0].Event != "Stop" || pol.Hooks[0].DenyOnly || !pol.Hooks[1].DenyOnly {
		t.Errorf("hooks (the untrusted workspace's are deny-only under strict): %+v", pol.Hooks)
	}
	if strings.Join(pol.Files, ",") != user+","+wsFile {
		t.Errorf("files: %v", pol.Files)
	}
	// The deny from the workspace beats the allow from the user's file.
	set, _ := Compile(pol.Rules, ws)
	if d := set.Decide("bash", bashInput("make deploy prod")); d.Behavior != Deny {
		t.Errorf("make deploy: %q", d.Behavior)
	}
	if d := set.Decide("bash", bashInput("make test")); d.Behavior != Allow {
		t.Errorf("make test: %q", d.Behavior)
	}
	standard, _ := PresetByName("standard")
	store := t.TempDir()
	trustFile(t, store, ws)
	pol, _ = Load(standard, ws, &LoadOptions{UserFile: user, TrustStore: store})
	if pol.Hooks[1].DenyOnly {
		t.Error("standard trusts the workspace's hooks")
	}
	// Strict refuses a workspace file that loosens.
	os.WriteFile(wsFile, []byte("[permissions]\ndefault_mode = \"auto\"\n"), 0o644)
	if _, err := Load(strict, ws, &LoadOptions{UserFile: "-"}); err == nil || !strings.Contains(err.Error(), wsFile+":2: default_mode \"auto\"") {
		t.Errorf("strict with a loosening mode: %v", err)
	}
	// Nor may it undo a stricter mode the user chose: "default" loosens a
	// user's "plan" (the attack: under standard, which trusts the
	// workspace's file, the same pair loads as default).
	planUser := filepath.Join(t.TempDir(), "user.toml")
	os.WriteFile(planUser, []byte("[permissions]\ndefault_mode = \"plan\"\nallow = [\"bash(make:*)\"]\n"), 0o644)
	os.WriteFile(wsFile, []byte("[permissions]\ndefault_mode = \"default\"\n"), 0o644)
	trustFile(t, store, ws)
	if pol, err := Load(standard, ws, &LoadOptions{UserFile: planUser, TrustStore: store}); err != nil || pol.Mode != ModeDefault {
		t.Fatalf("standard: the trusted workspace file sets the mode: %v, %v", pol, err)
	}
	if _, err := Load(strict, ws, &LoadOptions{UserFile: planUser}); err == nil || !strings.Contains(err.Error(), wsFile+":2: default_mode \"default\": the mode in force is \"plan\"") {
		t.Errorf("strict with a workspace mode looser than the user's: %v", err)
	}
	// A stricter one is fine, and so is the same one.
	for _, m := range []string{"plan", "dontAsk"} {
		os.WriteFile(wsFile, []byte("[permissions]\ndefault_mode = \""+m+"\"\n"), 0o644)
		if pol, err := Load(strict, ws, &LoadOptions{UserFile: "-"}); err != nil || string(pol.Mode) != m {
			t.Errorf("strict, workspace mode %s over default: %v, %v", m, pol, err)
		}
	}
	os.WriteFile(wsFile, []byte("[permissions]\ndefault_mode = \"dontAsk\"\n"), 0o644)
	if _, err := Load(strict, ws, &LoadOptions{UserFile: planUser}); err == nil {
		t.Error("strict: dontAsk is not stricter than the user's plan (it runs allowed edits), yet it was accepted")
	}
	// Missing files are skipped; XDG_CONFIG_HOME names the user's file.
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if p, _ := UserFile(); p != filepath.Join(cfg, "lite-agent", "policy.toml") {
		t.Errorf("UserFile = %s", p)
	}
	pol, err = Load(standard, t.TempDir(), nil)
	if err != nil || len(pol.Files) != 0 || pol.Mode != ModeDefault {
		t.Errorf("no files: %+v, %v", pol, err)
	}
}

func TestMatcher(t *testing.T) {
	ws := t.TempDir()
	for _, c := range []struct {
		pattern, tool, input string
		want                 bool
	}{
		{"", "anything", `{}`, true},
		{"bash", "bash", `{"command": "ls"}`, true},
		{"bash", "read_file", `{"path": "x"}`, false},
		{"mcp__*", "mcp__a__b", `{}`, true},
		{"bash(git push:*)", "bash", `{"command": "git status && git push"}`, true},
		{"bash(git push:*)", "bash", `{"command": "git status"}`, false},
		{"bash(git push:*)", "bash", `{"command": "git $X"}`, true}, // might be: a guard runs when in doubt
		{"write_file(src/**)", "write_file", `{"path": "src/a.go", "content": ""}`, true},
		{"write_file(src/**)", "write_file", `{"path": "docs/a.md", "content": ""}`, false},
	} {
		m, err := NewMatcher(c.pattern, ws)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Match(c.tool, []byte(c.input)); got != c.want {
			t.Errorf("%q on %s %s = %v", c.pattern, c.tool, c.input, got)
		}
	}
	if _, err := NewMatcher("bash(", ws); err == nil {
		t.Error("a bad matcher was accepted")
	}
}

func TestSuggest(t *testing.T) {
	ws := t.TempDir()
	set, _ := Compile(nil, ws)
	for _, c := range []struct {
		tool, input, want string
	}{
		{"bash", `{"command": "git status && npm test"}`, "bash(git status),bash(npm test)"},
		{"bash", `{"command": "git commit -m 'a b'"}`, "bash(git commit -m 'a b')"},
		{"bash", `{"command": "echo $X"}`, ""},
		{"bash", `{"command": "ls > out"}`, ""},
		{"write_file", `{"path": "src/a.go"}`, "write_file(src/a.go)"},
		{"write_file", `{"path": "src/*.go"}`, ""},
		{"get_weather", `{}`, "get_weather"},
	} {
		got := strings.Join(set.Call(c.tool, []byte(c.input)).Suggest(), ",")
		if got != c.want {
			t.Errorf("%s %s: %q, want %q", c.tool, c.input, got, c.want)
		}
		// A suggestion allows the call it was made for.
		if got != "" && c.tool == "bash" {
			rules, err := ParseRules(Allow, "s", strings.Split(got, ",")...)
			if err != nil {
				t.Fatal(err)
			}
			s2, _ := Compile(rules, ws)
			if d := s2.Decide(c.tool, []byte(c.input)); d.Behavior != Allow {
				t.Errorf("%s: the suggestion %q does not allow it: %q", c.input, got, d.Behavior)
			}
		}
	}
}

func TestRealPath(t *testing.T) {
	d := t.TempDir()
	real, _ := filepath.EvalSymlinks(d)
	os.MkdirAll(filepath.Join(real, "a/b"), 0o755)
	os.Symlink("a/b", filepath.Join(real, "l"))
	os.Symlink(filepath.Join(real, "loop2"), filepath.Join(real, "loop1"))
	os.Symlink(filepath.Join(real, "loop1"), filepath.Join(real, "loop2"))
	for _, c := range []struct{ in, want string }{
		{real + "/a/b/c", real + "/a/b/c"},
		{real + "/l/x", real + "/a/b/x"},
		{real + "/l/../y", real + "/a/y"},                      // .. after a symlink: the target's parent
		{real + "/missing/../../z", filepath.Dir(real) + "/z"}, // beyond what exists: cleaned
		{real + "/loop1/x", real + "/loop1/x"},                 // a loop ends the resolution
	} {
		if got := paths.Real(c.in); got != c.want {
			t.Errorf("paths.Real(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
