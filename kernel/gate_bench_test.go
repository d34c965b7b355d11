package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/builtin"
)

// benchRules returns n rules of the kinds a real policy holds: shell
// prefixes and exact commands, path patterns for the file tools, MCP
// wildcards; a fifth of them deny, a tenth ask.
func benchRules(n int) []policies.Rule {
	var out []policies.Rule
	for i := 0; len(out) < n; i++ {
		b := policies.Allow
		switch {
		case i%5 == 0:
			b = policies.Deny
		case i%10 == 1:
			b = policies.Ask
		}
		var text string
		switch i % 6 {
		case 0:
			text = fmt.Sprintf("bash(tool%d run:*)", i)
		case 1:
			text = fmt.Sprintf("bash(git sub%d --flag)", i)
		case 2:
			text = fmt.Sprintf("read_file(dir%d/**/*.go)", i)
		case 3:
			text = fmt.Sprintf("write_file(/abs%d/**)", i)
		case 4:
			text = fmt.Sprintf("mcp__server%d__*", i)
		case 5:
			text = fmt.Sprintf("edit_file(src%d/*.txt)", i)
		}
		out = append(out, policies.MustParseRule(b, text))
	}
	// The rules the benchmark's calls hit, last, so every rule before them
	// is tried.
	// readOnlyHint is a hint, not a permission: the MCP tool needs its
	// allow rule like any custom tool.
	out[n-5] = policies.MustParseRule(policies.Allow, "mcp__orders__list")
	out[n-4] = policies.MustParseRule(policies.Allow, "bash(git status)")
	out[n-3] = policies.MustParseRule(policies.Allow, "bash(npm run test:*)")
	out[n-2] = policies.MustParseRule(policies.Deny, "bash(curl:*)")
	out[n-1] = policies.MustParseRule(policies.Allow, "read_file(src/**)")
	return out
}

// BenchmarkGate200Rules measures the permission gate's cost per call with
// 200 rules (issue #5 target: under 20 µs per call): deny rules, hooks
// (none here), allow rules, the mode — everything decide does, on inputs
// already validated, as the kernel calls it. Sub-benchmarks are the kinds
// of call: a compound shell command (parsed with the bash parser, every
// part matched), a file path (resolved with symlinks against the
// workspace), and a tool matched by name only.
func BenchmarkGate200Rules(b *testing.B) {
	ws := b.TempDir()
	os.MkdirAll(filepath.Join(ws, "src/pkg"), 0o755)
	os.WriteFile(filepath.Join(ws, "src/pkg/main.go"), []byte("package main\n"), 0o644)
	set, err := policies.Compile(benchRules(200), ws)
	if err != nil {
		b.Fatal(err)
	}
	mcp := tools.Must(tools.New("mcp__orders__list", "lists orders", func(*tools.Context, struct{}) (string, error) { return "", nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkLoopback}, Annotations: &tools.Annotations{ReadOnlyHint: true}}))
	g := &gate{rules: set, mode: PermissionDefault, hooks: &hookSet{}, sessionID: "bench", workspace: ws}
	cases := []struct {
		name  string
		tool  *tools.Tool
		input string
		allow bool
	}{
		{"bash_compound_asks", builtin.Bash(), `{"command": "git status && npm run test -- --watch=false | tee out.log 2>&1 >/dev/null"}`, false},
		{"bash_simple_allowed", builtin.Bash(), `{"command": "git status"}`, true},
		{"bash_hidden_deny", builtin.Bash(), `{"command": "git status; echo $(curl -s http://example.com)"}`, false},
		{"read_file_path", builtin.ReadFile(), `{"path": "src/pkg/../pkg/main.go"}`, true},
		{"mcp_by_name", mcp, `{}`, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			call := tools.Call{ID: "t", Name: c.tool.Name(), Input: json.RawMessage(c.input)}
			if d := g.decide(context.Background(), c.tool, call, func(Event) {}); d.allow != c.allow {
				b.Fatalf("decision %+v, want allow=%v", d, c.allow)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				g.decide(context.Background(), c.tool, call, func(Event) {})
			}
		})
	}
}
