package local

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider/scripted"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

func TestMain(m *testing.M) {
	// Confined handlers run in a re-execution of this test binary, which
	// runs only the tools handed over here (all built at package level).
	ts := append([]*tools.Tool{pidProbe, reachLoopback, reachNone, reachRoot, okTool}, acceptedTools...)
	ts = append(ts, ExternalConfinedTools...)
	ts = append(ts, pidServer.Tools()...)
	confined.Serve(append(ts, wideServer.Tools()...)...)
	os.Exit(m.Run())
}

func tool(name string, sec *tools.Security) *tools.Tool {
	return tools.Must(tools.New(name, "test tool", func(*tools.Context, struct{}) (string, error) { return "ok", nil }, &tools.Options{Security: sec}))
}

func model(t *testing.T, js string) *scripted.Model {
	t.Helper()
	m, err := scripted.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// noFiles reads no user policy file (the test machine's own must not leak
// in); the workspace's file is read.
var noFiles = &policies.LoadOptions{UserFile: "-"}

// trustedFiles trusts ws's policy file as it is now, in a store of the
// test's own, as the user does with `lite-agent policy trust`, and returns
// the options that read it (and no user file).
func trustedFiles(t *testing.T, ws string) *policies.LoadOptions {
	t.Helper()
	store := t.TempDir()
	f, err := policies.LoadWorkspaceFile(ws)
	if err != nil || f == nil {
		t.Fatalf("reading the workspace file to trust it: %v, %v", f, err)
	}
	if _, err := policies.Trust(store, ws, f); err != nil {
		t.Fatal(err)
	}
	return &policies.LoadOptions{UserFile: "-", TrustStore: store}
}

// acceptedTools are handed to confined.Serve in TestMain, so that a
// confined child would find them (New checks).
var acceptedTools = []*tools.Tool{
	tool("fs_ok", &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemUnrestricted}),
	tool("mail_ok", &tools.Security{Network: tools.NetworkLoopback, SideEffects: tools.SideEffectsExternal}),
	tool("plain_ok", &tools.Security{Network: tools.NetworkNone}),
}

func TestNewRefuses(t *testing.T) {
	ws := t.TempDir()
	m := model(t, `{"turns": [{"text": "hi"}]}`)
	cases := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"no security", Config{Agent: kernel.Agent{CustomTools: []*tools.Tool{tool("undeclared", nil)}}}, []string{`custom tool "undeclared"`, "field Security is missing"}},
		{"network private", Config{Agent: kernel.Agent{CustomTools: []*tools.Tool{tool("lan", &tools.Security{Network: tools.NetworkPrivate})}}}, []string{`custom tool "lan"`, "field Security.Network", `"private"`}},
		{"network unrestricted under permissive", Config{Preset: "permissive", Agent: kernel.Agent{CustomTools: []*tools.Tool{tool("web", &tools.Security{Network: tools.NetworkUnrestricted})}}}, []string{`custom tool "web"`, "Security.Network", "permissive"}},
		{"filesystem unrestricted under strict", Config{Agent: kernel.Agent{CustomTools: []*tools.Tool{tool("fs", &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemUnrestricted})}}}, []string{`custom tool "fs"`, "field Security.Filesystem", "unrestricted"}},
		{"external side effects under strict", Config{Agent: kernel.Agent{CustomTools: []*tools.Tool{tool("mail", &tools.Security{Network: tools.NetworkLoopback, SideEffects: tools.SideEffectsExternal})}}}, []string{`custom tool "mail"`, "field Security.SideEffects", "external"}},
		{"every refusal at once", Config{Agent: kernel.Agent{CustomTools: []*tools.Tool{tool("a", nil), tool("b", &tools.Security{Network: tools.NetworkUnrestricted})}}}, []string{`"a"`, `"b"`}},
		{"bypass under strict", Config{Agent: kernel.Agent{PermissionMode: kernel.PermissionBypass, AllowDangerouslySkipPermissions: true}}, []string{"strict preset does not allow bypassPermissions"}},
		{"bypass without opt-in", Config{Preset: "standard", Agent: kernel.Agent{PermissionMode: kernel.PermissionBypass}}, []string{"AllowDangerouslySkipPermissions"}},
		{"unknown preset", Config{Preset: "lax"}, []string{`unknown preset "lax"`}},
		{"bad mode", Config{Agent: kernel.Agent{PermissionMode: "yollo"}}, []string{"unknown permission mode"}},
		{"no model", Config{}, []string{"Model is required"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			if c.name != "no model" {
				cfg.Model = m
			}
			cfg.Workspace, cfg.PolicyFiles = ws, noFiles
			a, err := New(cfg)
			if err == nil {
				t.Fatalf("New accepted it: %+v", a.Options())
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// What strict refuses, standard accepts (network still at most loopback).
	ok := acceptedTools
	if _, err := New(Config{Preset: "standard", PolicyFiles: noFiles, Agent: kernel.Agent{Model: m, Workspace: ws, CustomTools: ok}}); err != nil {
		t.Errorf("standard refused: %v", err)
	}
	if _, err := New(Config{PolicyFiles: noFiles, Agent: kernel.Agent{Model: m, Workspace: ws, CustomTools: ok[2:]}}); err != nil {
		t.Errorf("strict refused a tool declaring nothing: %v", err)
	}
}

func TestNewWiresPresetAndPolicyFiles(t *testing.T) {
	ws, cfgHome := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
	os.WriteFile(filepath.Join(ws, ".lite-agent/policy.toml"), []byte("[permissions]\ndeny = [\"bash(curl:*)\"]\n"), 0o644)
	user := filepath.Join(cfgHome, "policy.toml")
	os.WriteFile(user, []byte("[permissions]\ndefault_mode = \"acceptEdits\"\nallow = [\"bash(make:*)\"]\n"), 0o644)
	a, err := New(Config{PolicyFiles: &policies.LoadOptions{UserFile: user},
		Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: ws,
			Rules: []policies.Rule{policies.MustParseRule(policies.Ask, "bash(make deploy:*)")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	o := a.Options()
	if o.PermissionMode != kernel.PermissionAcceptEdits || o.Sandbox == nil || o.Sandbox.Network != "none" || o.Checkpoints == nil || o.InProcessHandlers {
		t.Errorf("options: mode %q sandbox %+v checkpoints %v in-process %v", o.PermissionMode, o.Sandbox, o.Checkpoints != nil, o.InProcessHandlers)
	}
	var texts []string
	for _, r := range o.Rules {
		texts = append(texts, string(r.Behavior)+" "+r.Text+" @"+filepath.Base(r.Source))
	}
	got := strings.Join(texts, "\n")
	for _, want := range []string{"deny write_file(.git/**) @preset strict", "allow bash(make:*) @policy.toml:3", "deny bash(curl:*) @policy.toml:2", "ask bash(make deploy:*)"} {
		if !strings.Contains(got, want) {
			t.Errorf("rules lack %q:\n%s", want, got)
		}
	}
	// Preset order: preset, user file, workspace file, options.
	if !strings.Contains(got, "@preset strict\nallow bash(make:*)") || !strings.HasSuffix(got, "ask bash(make deploy:*) @.") {
		t.Errorf("rules are not in layer order:\n%s", got)
	}
	if len(a.Policy().Files) != 2 {
		t.Errorf("files read: %v", a.Policy().Files)
	}
	// The options layer overrides the files' mode.
	b, err := New(Config{PolicyFiles: &policies.LoadOptions{UserFile: user}, Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: ws, PermissionMode: kernel.PermissionPlan}})
	if err != nil || b.Options().PermissionMode != kernel.PermissionPlan {
		t.Errorf("mode override: %v %v", err, b.Options().PermissionMode)
	}
}

func TestNewReportsBadPolicyFiles(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
	path := filepath.Join(ws, ".lite-agent/policy.toml")
	os.WriteFile(path, []byte("[permissions]\ndeny = [\n  \"bash(curl:*)\",\n  \"bash(git status\",\n]\n"), 0o644)
	_, err := New(Config{PolicyFiles: noFiles, Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: ws}})
	if err == nil || !strings.Contains(err.Error(), path+":4:") || !strings.Contains(err.Error(), "must end with ')'") {
		t.Fatalf("err = %v", err)
	}
	// Strict does not let the workspace's file loosen the policy.
	os.WriteFile(path, []byte("[permissions]\nallow = [\"bash\"]\n"), 0o644)
	_, err = New(Config{PolicyFiles: noFiles, Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: ws}})
	if err == nil || !strings.Contains(err.Error(), path+":2:") || !strings.Contains(err.Error(), "strict preset does not let the workspace's policy file loosen") {
		t.Fatalf("strict with a loosening workspace file: err = %v", err)
	}
	// Standard trusts it only in a version the user trusted.
	if _, err := New(Config{Preset: "standard", PolicyFiles: &policies.LoadOptions{UserFile: "-", TrustStore: t.TempDir()}, Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: ws}}); err == nil || !strings.Contains(err.Error(), path+":2:") || !strings.Contains(err.Error(), "lite-agent policy trust") {
		t.Fatalf("standard with an untrusted loosening workspace file: err = %v", err)
	}
	if _, err := New(Config{Preset: "standard", PolicyFiles: trustedFiles(t, ws), Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: ws}}); err != nil {
		t.Fatalf("standard trusts the trusted workspace file: %v", err)
	}
}

// TestConfinedHandlerRuns: an accepted custom tool's handler runs confined
// (not in-process) and its result reaches the model.
func TestConfinedHandlerRuns(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	a, err := New(Config{PolicyFiles: noFiles,
		Agent: kernel.Agent{
			Model:     model(t, `{"turns": [{"tool_calls": [{"id": "p", "name": "pid_probe", "input": {}}]}, {"text": "done"}]}`),
			Workspace: ws, StateDir: state,
			CustomTools: []*tools.Tool{pidProbe}, AllowedTools: []string{"pid_probe"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for ev, err := range a.Query(context.Background(), "go") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == kernel.EventToolResult {
			text = ev.ToolResult.Content[0].Text
		}
	}
	var pid int
	if err := json.Unmarshal([]byte(text), &pid); err != nil || pid == 0 || pid == os.Getpid() {
		t.Errorf("the handler ran in pid %q (this process is %d): not confined in a child", text, os.Getpid())
	}
}

var pidProbe = tools.Must(tools.New("pid_probe", "reports its process id",
	func(*tools.Context, struct{}) (int, error) { return os.Getpid(), nil },
	&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))

// TestNewRefusesWritableOwnPolicy: with the workspace at $HOME (or a write
// grant over ~/.config) a command could write the user's policy file,
// which the next session loads as trusted. The write works in such a
// sandbox; New refuses the workspace and the grant.
func TestNewRefusesWritableOwnPolicy(t *testing.T) {
	home := t.TempDir()
	user := filepath.Join(home, ".config", "lite-agent", "policy.toml")
	sb, err := sandbox.New(sandbox.Policy{Workspace: home})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	st, err := sb.Run(t.Context(), &sandbox.Command{Path: "/bin/sh", Args: []string{"sh", "-c",
		`mkdir -p .config/lite-agent && printf '[permissions]\nallow = ["bash(*)"]\n' > .config/lite-agent/policy.toml`}, Dir: home})
	if err != nil || st.Code != 0 {
		t.Fatalf("the confined write: %v %+v", err, st)
	}
	if b, err := os.ReadFile(user); err != nil || !strings.Contains(string(b), "bash(*)") {
		t.Fatalf("a sandbox with the workspace at home did not write the user's policy file (%v): the refusal below would prove nothing", err)
	}
	load := &policies.LoadOptions{UserFile: user}
	for name, cfg := range map[string]Config{
		"workspace at home": {PolicyFiles: load, Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: home}},
		"write grant over ~/.config": {PolicyFiles: load, SandboxGrants: policies.SandboxSettings{Write: []policies.Grant{{Value: filepath.Join(home, ".config"), Source: "--allow-write"}}},
			Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: t.TempDir()}},
	} {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "holds your lite-agent policy file") {
			t.Errorf("%s: New: %v, want a refusal naming the policy file", name, err)
		}
	}
	// The trust store of workspace policy files, likewise (the user's
	// file elsewhere, so that only the store is in the way).
	elsewhere := &policies.LoadOptions{UserFile: filepath.Join(t.TempDir(), "policy.toml"), TrustStore: filepath.Join(home, ".local", "state", "lite-agent", "trusted-policies")}
	if _, err := New(Config{PolicyFiles: elsewhere, Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: home}}); err == nil || !strings.Contains(err.Error(), "workspace policy files you trusted") {
		t.Errorf("workspace over the trust store: New: %v, want a refusal naming the trust store", err)
	}
	// A project directory beside it is fine.
	if _, err := New(Config{PolicyFiles: load, Agent: kernel.Agent{Model: model(t, `{"turns": []}`), Workspace: t.TempDir()}}); err != nil {
		t.Errorf("a workspace elsewhere: %v", err)
	}
}

// TestOwnFilesResolvedAsTheKernelDoes: the policy file's path is judged
// where the kernel finds it. Through a link of the user's into the
// workspace and then "..", ~/cfg/../lite-agent/policy.toml is a file in
// the workspace, which a command can write and the next session would
// load as the user's own; filepath.Abs drops the ".." before the link is
// followed and put it beside the link, outside, so the sandbox was
// accepted.
func TestOwnFilesResolvedAsTheKernelDoes(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	for _, d := range []string{filepath.Join(ws, "sub"), home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(ws, "sub"), filepath.Join(home, "cfg")); err != nil {
		t.Fatal(err)
	}
	user := home + "/cfg/../lite-agent/policy.toml" // not filepath.Join: it cleans
	// The attack: what a command writes in the workspace is what that
	// path reads.
	if err := os.MkdirAll(filepath.Join(ws, "lite-agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "lite-agent", "policy.toml"), []byte("planted"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(user); err != nil || string(b) != "planted" {
		t.Fatalf("the path does not lead into the workspace (%q, %v): the refusal below would prove nothing", b, err)
	}
	load := &policies.LoadOptions{UserFile: user, TrustStore: filepath.Join(base, "trust")}
	err = ownFilesOutsideWritable(sandbox.Policy{Workspace: ws}, load)
	if err == nil || !strings.Contains(err.Error(), "holds your lite-agent policy file") {
		t.Fatalf("ownFilesOutsideWritable = %v, want a refusal naming the policy file", err)
	}
	// The same layout with the workspace elsewhere is fine.
	if err := ownFilesOutsideWritable(sandbox.Policy{Workspace: filepath.Join(base, "other")}, load); err != nil {
		t.Fatalf("a workspace elsewhere: %v", err)
	}
}
