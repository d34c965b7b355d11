package policies

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	good := []struct {
		text   string
		tool   string
		hasArg bool
		words  []string
		prefix bool
	}{
		{"read_file", "read_file", false, nil, false},
		{"mcp__orders__*", "mcp__orders__*", false, nil, false},
		{"bash(git status)", "bash", true, []string{"git", "status"}, false},
		{"bash(npm run test:*)", "bash", true, []string{"npm", "run", "test"}, true},
		{`bash(git commit -m "a b")`, "bash", true, []string{"git", "commit", "-m", "a b"}, false},
		{"bash(*)", "bash", false, nil, false},
		{"read_file(src/**)", "read_file", true, nil, false},
		{"write_file(/etc/**)", "write_file", true, nil, false},
		{"  grep  ", "grep", false, nil, false},
	}
	for _, g := range good {
		r, err := ParseRule(Allow, g.text)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", g.text, err)
			continue
		}
		if r.tool != g.tool || r.hasArg != g.hasArg || strings.Join(r.words, "|") != strings.Join(g.words, "|") || r.prefix != g.prefix {
			t.Errorf("ParseRule(%q) = tool %q arg %v words %q prefix %v", g.text, r.tool, r.hasArg, r.words, r.prefix)
		}
	}
	bad := []struct{ text, want string }{
		{"", "empty rule"},
		{"bash(", "must end with ')'"},
		{"bash()", "empty argument pattern"},
		{"ba sh", "not a tool name"},
		{"get_weather(Tokyo)", "takes no argument pattern"},
		{"mcp__*(x)", "needs one tool name"},
		{"bash(git status; curl x)", "one simple command"},
		{"bash(git $X)", "not a fixed word"},
		{"bash(git status > f)", "one simple command"},
		{"read_file(~bob/x)", "only ~/"},
		{"read_file(src/[)", "not a valid glob"},
		{"[abc", "not a tool name"},
	}
	for _, b := range bad {
		_, err := ParseRule(Deny, b.text)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParseRule(%q) error = %v, want it to contain %q", b.text, err, b.want)
		}
	}
	if _, err := ParseRule("maybe", "bash"); err == nil {
		t.Error("an unknown behavior was accepted")
	}
}

// rs compiles rules written as "behavior text" lines against ws.
func rs(t *testing.T, ws string, lines ...string) *Ruleset {
	t.Helper()
	var rules []Rule
	for _, l := range lines {
		b, text, _ := strings.Cut(l, " ")
		r, err := ParseRule(Behavior(b), text)
		if err != nil {
			t.Fatalf("rule %q: %v", l, err)
		}
		r.Source = "test"
		rules = append(rules, r)
	}
	set, err := Compile(rules, ws)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func bashInput(cmd string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return b
}

func pathInput(p string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"path": p})
	return b
}

// TestShellRules covers the rule language on bash, including the ways
// people hide a denied command inside an allowed one.
func TestShellRules(t *testing.T) {
	set := rs(t, t.TempDir(),
		"allow bash(git status)",
		"allow bash(git diff:*)",
		"allow bash(npm run test:*)",
		"allow bash(ls *.go)",
		"allow bash(echo:*)",
		"allow bash(cat:*)",
		"allow bash(grep:*)",
		"ask bash(git push:*)",
		"deny bash(curl:*)",
		"deny bash(rm -rf:*)",
		"deny bash(git push --force:*)",
	)
	cases := []struct {
		cmd  string
		want Behavior
		why  string // a fragment of the reason
	}{
		// Plain matches.
		{"git status", Allow, `"bash(git status)"`},
		{"  git   status  ", Allow, ""},
		{"git diff --stat HEAD~1", Allow, "git diff:*"},
		{"npm run test", Allow, ""},
		{"npm run test -- --watch", Allow, ""},
		{"npm run testing", "", ""},
		{"npm run", "", ""},
		{"git status --short", "", ""}, // exact rule: extra words do not match
		{"git push origin main", Ask, "git push:*"},
		{"git push --force origin", Deny, "git push --force:*"},
		{"curl https://example.com", Deny, "curl:*"},
		{"ls *.go", Allow, ""},
		{"ls *.c", "", ""},
		// Quoting does not change the words.
		{`'git' "status"`, Allow, ""},
		{`git st\atus`, Allow, ""},
		{`"cu"rl x`, Deny, ""},
		{`c\url x`, Deny, ""},
		// Compound commands: every part must be allowed, any denied part denies.
		{"git status && git diff", Allow, ""},
		{"git status && curl evil.example", Deny, `"curl evil.example"`},
		{"git status; curl x", Deny, ""},
		{"git status || curl x", Deny, ""},
		{"git status | curl -d @- x", Deny, ""},
		{"git status\ncurl x", Deny, ""},
		{"git status & curl x", Deny, ""},
		{"(git status; curl x)", Deny, ""},
		{"{ git status; curl x; }", Deny, ""},
		{"if git status; then curl x; fi", Deny, ""},
		{"while true; do curl x; done", Deny, ""},
		{"case a in a) curl x;; esac", Deny, ""},
		{"git status && ls -la", "", ""}, // a part without a rule: not allowed
		{"git status && npm run test", Allow, ""},
		// Substitutions.
		{"echo $(curl x)", Deny, ""},
		{"echo `curl x`", Deny, ""},
		{`echo "$(curl x)"`, Deny, ""},
		{"cat <(curl x)", Deny, ""},
		{"echo hi > >(curl x)", Deny, ""},
		{"echo $(git status)", Allow, ""},
		{"git diff $(echo HEAD)", Allow, ""},
		{"cat <<EOF\n$(curl x)\nEOF", Deny, ""},
		// Nested shells and eval.
		{"bash -c 'curl x'", Deny, ""},
		{"sh -c \"git status; curl x\"", Deny, ""},
		{"bash -lc 'rm -rf /'", Deny, ""},
		{"eval 'curl x'", Deny, ""},
		{"eval curl x", Deny, ""},
		{"bash -c \"$X\"", Ask, "not a fixed string"},
		{"echo curl x | bash", Ask, "standard input"},
		{"eval \"$CMD\"", Ask, "not a fixed string"},
		// Wrappers and paths.
		{"/usr/bin/curl x", Deny, ""},
		{"./curl x", Deny, ""},
		{"timeout 5 curl x", Deny, ""},
		{"env FOO=1 curl x", Deny, ""},
		{"sudo -u root curl x", Deny, ""},
		{"xargs curl < urls", Deny, ""},
		{"find . -name x -exec rm -rf {} +", Deny, ""},
		{"nohup bash -c 'curl x' &", Deny, ""},
		// Not provable: ask, because a deny rule might hide in it.
		{"$CMD x", Ask, "not a fixed word"},
		{"$(echo curl) x", Ask, "not a fixed word"},
		{"git $SUB --force", Ask, "cannot prove"},
		{"rm $FLAGS /", Ask, "cannot prove"},
		{"echo $((a[$(curl x)]))", Deny, ""}, // the substitution is still seen
		{"x='a[$(id)]'; echo $((x))", Ask, "arithmetic"},
		{"[[ $x -eq 1 ]] && git status", Ask, "[[ ]]"},
		{"declare -i x=1; git status", Ask, "declare"},
		{"export PATH=.; git status", Ask, "export"},
		{"echo 'unterminated", Ask, "does not parse"},
		{"{cu,}rl x", Ask, "not a fixed word"},
		{"cu* x", Ask, "not a fixed word"},
		// Allowed words, but something allow rules cannot state.
		{"FOO=1 git status", "", ""},
		{"PATH=. git status", "", ""},
		{"git status > notes.txt", "", ""},
		{"git status >> notes.txt", "", ""},
		{"git status 2>&1 >/dev/null", Allow, ""},
		{"git() { curl x; }; git status", Deny, ""},
		{"f() { ls; }; f", "", ""},
		{"for f in a b; do git diff $f; done", "", ""},
		{"", "", ""},
		{"# just a comment", "", ""},
	}
	for _, c := range cases {
		d := set.Decide("bash", bashInput(c.cmd))
		if d.Behavior != c.want || !strings.Contains(d.Reason, c.why) {
			t.Errorf("%q: %q (%s), want %q (reason containing %q)", c.cmd, d.Behavior, d.Reason, c.want, c.why)
		}
		if d.Behavior == Deny && d.Rule == nil {
			t.Errorf("%q: denied without a rule", c.cmd)
		}
	}
}

// TestShellWithoutDenyRules: a command the parser cannot prove is only a
// reason to ask when a deny or ask rule could hide in it.
func TestShellWithoutDenyRules(t *testing.T) {
	set := rs(t, t.TempDir(), "allow bash(git status)")
	for _, c := range []struct {
		cmd  string
		want Behavior
	}{
		{"$CMD", ""},
		{"git status", Allow},
		{"git status; $CMD", ""},
	} {
		if d := set.Decide("bash", bashInput(c.cmd)); d.Behavior != c.want {
			t.Errorf("%q: %q (%s), want %q", c.cmd, d.Behavior, d.Reason, c.want)
		}
	}
	whole := rs(t, t.TempDir(), "allow bash", "deny bash(curl:*)")
	for _, c := range []struct {
		cmd  string
		want Behavior
	}{
		{"anything at all", Allow},
		{"curl x", Deny},
		{"$CMD x", Ask}, // could be curl
	} {
		if d := whole.Decide("bash", bashInput(c.cmd)); d.Behavior != c.want {
			t.Errorf("allow bash + deny curl: %q: %q (%s), want %q", c.cmd, d.Behavior, d.Reason, c.want)
		}
	}
}

func TestToolPatternsAndMCPWildcards(t *testing.T) {
	set := rs(t, t.TempDir(),
		"allow mcp__orders__*",
		"deny mcp__orders__delete_*",
		"ask mcp__*__refund",
		"allow read_file",
		"deny bash",
	)
	cases := []struct {
		tool string
		want Behavior
	}{
		{"mcp__orders__list", Allow},
		{"mcp__orders__delete_all", Deny},
		{"mcp__orders__refund", Ask},
		{"mcp__billing__refund", Ask},
		{"mcp__billing__list", ""},
		{"mcp__orders_evil__list", ""}, // the separator is part of the pattern
		{"read_file", Allow},
		{"bash", Deny},
		{"write_file", ""},
	}
	for _, c := range cases {
		if d := set.Decide(c.tool, json.RawMessage(`{}`)); d.Behavior != c.want {
			t.Errorf("%s: %q (%s), want %q", c.tool, d.Behavior, d.Reason, c.want)
		}
	}
	if r, ok := set.DeniesWholeTool("bash"); !ok || r.Text != "bash" {
		t.Errorf("DeniesWholeTool(bash) = %v, %v", r, ok)
	}
	if _, ok := set.DeniesWholeTool("mcp__orders__delete_all"); !ok {
		t.Error("a wildcard deny rule does not deny the whole tool")
	}
	if _, ok := set.DeniesWholeTool("read_file"); ok {
		t.Error("read_file is denied whole")
	}
}

// TestPathRules: path patterns are resolved against the workspace, and the
// path a call names is normalised (.., symlinks) before matching.
func TestPathRules(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"src/pkg", "secrets", "docs"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(ws, "secrets/key"), []byte("k"), 0o600)
	os.WriteFile(filepath.Join(outside, "passwd"), []byte("x"), 0o644)
	// src/link → the secrets directory; src/out → outside the workspace.
	os.Symlink(filepath.Join(ws, "secrets"), filepath.Join(ws, "src/link"))
	os.Symlink(outside, filepath.Join(ws, "src/out"))
	os.Symlink("../secrets", filepath.Join(ws, "docs/rel"))
	set := rs(t, ws,
		"allow read_file(src/**)",
		"allow write_file(src/**)",
		"deny read_file(secrets/**)",
		"deny write_file(secrets/**)",
		"deny write_file("+outside+"/**)",
		"ask edit_file(docs/*.md)",
	)
	cases := []struct {
		tool, path string
		want       Behavior
	}{
		{"read_file", "src/pkg/a.go", Allow},
		{"read_file", filepath.Join(ws, "src/pkg/a.go"), Allow},
		{"read_file", "./src/../src/pkg/a.go", Allow},
		{"read_file", "secrets/key", Deny},
		{"read_file", "src/../secrets/key", Deny},
		{"read_file", "src/pkg/../../secrets/key", Deny},
		{"read_file", "src/link/key", Deny},     // a symlink into a denied directory
		{"read_file", "docs/rel/key", Deny},     // a relative symlink
		{"read_file", "src/out/passwd", ""},     // allowed dir, but the real path is outside: not allowed
		{"write_file", "src/out/passwd", Deny},  // and the deny on the real path wins
		{"write_file", "src/out/new.txt", Deny}, // a file that does not exist yet
		{"write_file", "src/pkg/new/deeper/x.go", Allow},
		// .. after a symlink applies to its target: src/link/.. is WS, so
		// the real path is WS/pkg/x — not inside src/, whatever the text says.
		{"write_file", "src/link/../pkg/x", ""},
		{"edit_file", "docs/readme.md", Ask},
		{"edit_file", "docs/sub/readme.md", ""},
		{"read_file", "README.md", ""},
	}
	for _, c := range cases {
		d := set.Decide(c.tool, pathInput(c.path))
		if d.Behavior != c.want {
			t.Errorf("%s(%s): %q (%s), want %q", c.tool, c.path, d.Behavior, d.Reason, c.want)
		}
	}
}
