package local

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// TestQueryOptionReachesOnlyTheSession: a QueryOption cannot touch the
// options New checked. Before, QueryOption was func(*kernel.Options), so
// func(o *kernel.Options){ o.PermissionMode = bypassPermissions;
// o.AllowDangerouslySkipPermissions = true } ran bash unasked under
// strict; the first part shows that those options do exactly that when
// they reach the kernel, the second that no QueryOption can set them.
func TestQueryOptionReachesOnlyTheSession(t *testing.T) {
	ws := t.TempDir()
	newAgent := func() *Agent {
		a, err := New(Config{PolicyFiles: noFiles, NoCheckpoints: true,
			Agent: kernel.Agent{Workspace: ws, StateDir: t.TempDir(),
				Model: model(t, `{"turns": [{"tool_calls": [{"id": "b", "name": "bash", "input": {"command": "echo pwned > pwned.txt"}}]}, {"text": "done"}]}`),
			}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// The attack, as the old QueryOption applied it (to a copy of the
	// agent's options, then kernel.Query).
	o := newAgent().Options()
	o.Prompt, o.PermissionMode, o.AllowDangerouslySkipPermissions = "go", kernel.PermissionBypass, true
	for _, err := range kernel.Query(context.Background(), o) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned.txt")); err != nil {
		t.Fatalf("with bypassPermissions the bash call must run, or this test proves nothing: %v", err)
	}
	os.Remove(filepath.Join(ws, "pwned.txt"))

	// The type: a QueryOption works on an unexported struct, and no
	// function over *kernel.Options converts to one.
	qt := reflect.TypeOf(QueryOption(nil))
	if reflect.TypeOf(func(*kernel.Options) {}).ConvertibleTo(qt) || qt.In(0) == reflect.TypeOf(&kernel.Options{}) {
		t.Fatalf("QueryOption is %v: it can reach kernel.Options", qt)
	}
	param := qt.In(0).Elem()
	if param.PkgPath() != reflect.TypeOf(Agent{}).PkgPath() || param.Name() == "" || param.Name()[0] < 'a' || param.Name()[0] > 'z' {
		t.Errorf("QueryOption's parameter %v is not an unexported type of package local", param)
	}
	// Its fields are only the session's choices.
	for i := range param.NumField() {
		f := param.Field(i)
		if f.IsExported() || (f.Name != "resume" && f.Name != "sessionID") {
			t.Errorf("queryOptions.%s: a per-query option may only choose the session", f.Name)
		}
		// A query's own field of kernel.Options: not one of its Agent's
		// or Confinement's (those sit at depth two).
		if o, ok := reflect.TypeOf(kernel.Options{}).FieldByName(strings.ToUpper(f.Name[:1]) + f.Name[1:]); !ok || len(o.Index) != 1 {
			t.Errorf("queryOptions.%s sets no query field of kernel.Options", f.Name)
		}
	}
	// The query's fields of kernel.Options are exactly the ones a
	// QueryOption (or Query's prompt) sets: TestConfigCannotExpressConfinement.

	// Through the agent, with every option there is: bash still asks
	// (headless: denied), and nothing ran.
	a := newAgent()
	var perm kernel.Event
	for ev, err := range a.Query(context.Background(), "go", SessionID("chosen-id"), Resume("")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == kernel.EventPermission {
			perm = ev
		}
		if ev.Type == kernel.EventSessionStart && ev.SessionID != "chosen-id" {
			t.Errorf("SessionID did not apply: %s", ev.SessionID)
		}
	}
	if perm.Permission.Decision != "deny" || perm.Permission.DecidedBy != "headless" {
		t.Errorf("bash under strict: %+v", perm)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned.txt")); err == nil {
		t.Error("bash ran unasked under strict")
	}
}

// TestAgentOptionsCannotBeChangedLater: what New checked cannot be
// changed afterwards through shared memory — neither through the copy
// Options returns (its sandbox policy is a pointer, its rules and hooks
// slices) nor through the Config's slices and maps the caller keeps. A
// shallow copy would share them: writing o.Sandbox.Network or o.Rules[0]
// would change the agent itself.
// okTool is handed to TestMain's confined.Serve, as New requires.
var okTool = tool("ok_tool", &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace})

func TestAgentOptionsCannotBeChangedLater(t *testing.T) {
	ws := t.TempDir()
	cfg := Config{PolicyFiles: noFiles, NoCheckpoints: true,
		MCPServers: map[string]mcp.ServerConfig{},
		Agent: kernel.Agent{Workspace: ws, StateDir: t.TempDir(),
			CustomTools: []*tools.Tool{okTool},
			Agents:      map[string]kernel.AgentDefinition{"helper": {Description: "d", Prompt: "p", Tools: []string{"read_file"}}},
			Model:       model(t, `{"turns": [{"tool_calls": [{"id": "w", "name": "write_file", "input": {"path": ".lite-agent/policy.toml", "content": "x"}}]}, {"text": "done"}]}`),
		}}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := a.Options()

	// Through the copy.
	o := a.Options()
	o.Sandbox.Network = sandbox.NetworkUnrestricted
	o.Sandbox.ReadWritePaths = append(o.Sandbox.ReadWritePaths[:0], "/")
	o.HandlerCeiling.Network = sandbox.NetworkUnrestricted
	for i := range o.Rules {
		o.Rules[i] = policies.MustParseRule(policies.Allow, "write_file")
	}
	o.Agents["helper"] = kernel.AgentDefinition{PermissionMode: kernel.PermissionBypass}
	// Through the Config.
	cfg.CustomTools[0] = tool("wide_tool", &tools.Security{Network: tools.NetworkUnrestricted, Filesystem: tools.FilesystemUnrestricted})
	cfg.MCPServers["evil"] = mcp.ServerConfig{Command: "nc", Network: tools.NetworkUnrestricted}
	cfg.Agents["helper"] = kernel.AgentDefinition{PermissionMode: kernel.PermissionBypass}

	after := a.Options()
	if after.Sandbox.Network != sandbox.NetworkNone || len(after.Sandbox.ReadWritePaths) != 0 || after.HandlerCeiling.Network != sandbox.NetworkLoopback {
		t.Errorf("the agent's sandbox changed: %+v / %+v", after.Sandbox, after.HandlerCeiling)
	}
	if !reflect.DeepEqual(after.Rules, before.Rules) {
		t.Errorf("the agent's rules changed: %v", after.Rules)
	}
	if after.CustomTools[0].Name() != "ok_tool" || len(after.Toolsets) != 0 || len(a.MCPServers()) != 0 || after.Agents["helper"].PermissionMode != "" {
		t.Errorf("the Config's later changes reached the agent: %s, %v %v, %+v", after.CustomTools[0].Name(), after.Toolsets, a.MCPServers(), after.Agents)
	}
	// And the rules still hold in a query: the preset's deny on
	// .lite-agent/ was not replaced by the allow written into the copy.
	var perm kernel.Event
	for ev, err := range a.Query(context.Background(), "go") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == kernel.EventPermission {
			perm = ev
		}
	}
	if perm.Permission.Decision != "deny" || perm.Permission.DecidedBy != "rule" || !strings.Contains(perm.Permission.Rule, ".lite-agent") {
		t.Errorf("write into .lite-agent/: %+v", perm)
	}
}

// TestWebSearchDomainsCannotBeWidenedLater: the web-search grant is a
// pointer with a slice inside; New and Options copy it, so neither the
// Config nor a copy can widen its domains afterwards.
func TestWebSearchDomainsCannotBeWidenedLater(t *testing.T) {
	cfg := Config{PolicyFiles: noFiles, NoCheckpoints: true,
		Agent: kernel.Agent{Workspace: t.TempDir(), StateDir: t.TempDir(),
			WebSearch: &provider.WebSearch{AllowedDomains: []string{"docs.example.com"}},
			Model:     model(t, `{"turns": [{"text": "done"}]}`),
		}}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.WebSearch.AllowedDomains[0] = "*"
	o := a.Options()
	o.WebSearch.AllowedDomains[0] = "*"
	if got := a.Options().WebSearch.AllowedDomains; len(got) != 1 || got[0] != "docs.example.com" {
		t.Errorf("the web-search domains changed after New: %v", got)
	}
}
