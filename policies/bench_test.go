package policies

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDecide200Rules measures Ruleset.Decide alone (the rules part of
// the gate) with 200 rules; kernel's BenchmarkGate200Rules measures the
// whole gate.
func BenchmarkDecide200Rules(b *testing.B) {
	ws := b.TempDir()
	os.MkdirAll(filepath.Join(ws, "src/pkg"), 0o755)
	os.WriteFile(filepath.Join(ws, "src/pkg/main.go"), []byte("package main\n"), 0o644)
	var rules []Rule
	for i := 0; len(rules) < 196; i++ {
		bh := Allow
		if i%5 == 0 {
			bh = Deny
		} else if i%10 == 1 {
			bh = Ask
		}
		texts := []string{
			fmt.Sprintf("bash(tool%d run:*)", i), fmt.Sprintf("bash(git sub%d --flag)", i),
			fmt.Sprintf("read_file(dir%d/**/*.go)", i), fmt.Sprintf("write_file(/abs%d/**)", i),
			fmt.Sprintf("mcp__server%d__*", i), fmt.Sprintf("edit_file(src%d/*.txt)", i),
		}
		rules = append(rules, MustParseRule(bh, texts[i%6]))
	}
	rules = append(rules, MustParseRule(Allow, "bash(git status)"), MustParseRule(Allow, "bash(npm run test:*)"),
		MustParseRule(Deny, "bash(curl:*)"), MustParseRule(Allow, "read_file(src/**)"))
	set, err := Compile(rules, ws)
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name, tool, input string
		want              Behavior
	}{
		{"bash_compound", "bash", `{"command": "git status && npm run test -- --watch=false 2>&1 >/dev/null"}`, Allow},
		{"bash_simple", "bash", `{"command": "git status"}`, Allow},
		{"bash_hidden_deny", "bash", `{"command": "git status; echo $(curl -s http://example.com)"}`, Deny},
		{"read_file_path", "read_file", `{"path": "src/pkg/../pkg/main.go"}`, Allow},
		{"mcp_by_name", "mcp__server4__list", `{}`, Allow},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			in := json.RawMessage(c.input)
			if d := set.Decide(c.tool, in); d.Behavior != c.want {
				b.Fatalf("%s: %q (%s), want %q", c.name, d.Behavior, d.Reason, c.want)
			}
			b.ReportAllocs()
			for range b.N {
				set.Decide(c.tool, in)
			}
		})
	}
}
