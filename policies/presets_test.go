package policies

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
)

func TestPresets(t *testing.T) {
	want := []struct {
		name       string
		network    sandbox.NetworkMode
		customTool sandbox.NetworkMode
	}{
		{"strict", sandbox.NetworkNone, sandbox.NetworkLoopback},
		{"standard", sandbox.NetworkNone, sandbox.NetworkLoopback},
		{"permissive", sandbox.NetworkUnrestricted, sandbox.NetworkLoopback},
	}
	got := Presets()
	if len(got) != len(want) {
		t.Fatalf("%d presets, want %d", len(got), len(want))
	}
	for i, w := range want {
		p := got[i]
		if p.Name != w.name || p.Sandbox.Network != w.network || p.CustomToolMaxNetwork != w.customTool {
			t.Errorf("preset %d = %s network %s custom tools %s, want %s %s %s", i, p.Name, p.Sandbox.Network, p.CustomToolMaxNetwork, w.name, w.network, w.customTool)
		}
		if p.Description == "" {
			t.Errorf("%s has no description", p.Name)
		}
		// A template: no workspace, no extra paths, the narrow system
		// paths and the default environment allowlist (nil), fail closed.
		s := p.Sandbox
		if s.Workspace != "" || s.ReadOnlyPaths != nil || s.ReadWritePaths != nil || s.SystemPaths != nil || s.Env != nil || s.BestEffort {
			t.Errorf("%s template widens the default confinement: %+v", p.Name, s)
		}
		if _, err := sandbox.ParseNetworkMode(string(s.Network)); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
}

func TestPresetByName(t *testing.T) {
	for _, name := range []string{"strict", "standard", "permissive"} {
		p, err := PresetByName(name)
		if err != nil || p.Name != name {
			t.Errorf("PresetByName(%q) = %q, %v", name, p.Name, err)
		}
	}
	if p, err := PresetByName(""); err != nil || p.Name != DefaultPreset || DefaultPreset != "strict" {
		t.Errorf(`PresetByName("") = %q, %v; want the strict default`, p.Name, err)
	}
	_, err := PresetByName("lax")
	if err == nil || !strings.Contains(err.Error(), `"lax"`) || !strings.Contains(err.Error(), "strict, standard, permissive") {
		t.Errorf("PresetByName(lax) error = %v, want one naming the value and the choices", err)
	}
}

// TestPresetPolicyIsACopy: filling in a workspace and appending to the
// result's paths never changes the preset a later caller gets.
func TestPresetPolicyIsACopy(t *testing.T) {
	p, _ := PresetByName("strict")
	p.Sandbox.ReadOnlyPaths = []string{"/opt/tool"}
	pol := p.Policy("/work/ws")
	if pol.Workspace != "/work/ws" || pol.Network != sandbox.NetworkNone {
		t.Fatalf("Policy = %+v", pol)
	}
	pol.ReadOnlyPaths[0] = "/"
	if p.Sandbox.ReadOnlyPaths[0] != "/opt/tool" {
		t.Error("Policy shares its ReadOnlyPaths with the template")
	}
	again, _ := PresetByName("strict")
	if again.Sandbox.ReadOnlyPaths != nil {
		t.Error("a change to one PresetByName result leaked into the next")
	}
}

// TestPresetsReadAsJSON: presets are data a user can read (the CLI prints
// them); the network fields keep their names.
func TestPresetsReadAsJSON(t *testing.T) {
	b, err := json.Marshal(Presets()[2])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"permissive"`, `"custom_tool_max_network":"loopback"`, `"Network":"unrestricted"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
}

// TestPresetPermissions: the permission half of each preset, as the issue
// states it for strict.
func TestPresetPermissions(t *testing.T) {
	want := map[string]struct {
		mode                  Mode
		bypass, trust, fs, ex bool
	}{
		"strict":     {ModeDefault, false, false, false, false},
		"standard":   {ModeDefault, true, true, true, true},
		"permissive": {ModeAcceptEdits, true, true, true, true},
	}
	ws := t.TempDir()
	for _, p := range Presets() {
		w := want[p.Name]
		if p.PermissionMode != w.mode || p.AllowBypassPermissions != w.bypass || p.TrustWorkspacePolicy != w.trust ||
			p.CustomToolUnrestrictedFilesystem != w.fs || p.CustomToolExternalSideEffects != w.ex {
			t.Errorf("%s: %+v", p.Name, p)
		}
		if !p.NetworkAllowed(sandbox.NetworkLoopback) || p.NetworkAllowed(sandbox.NetworkPrivate) || p.NetworkAllowed(sandbox.NetworkUnrestricted) {
			t.Errorf("%s: custom tools' network is not capped at loopback", p.Name)
		}
		set, err := Compile(p.Rules, ws)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		for _, path := range []string{".git/hooks/pre-commit", ".lite-agent/policy.toml", "sub/../.git/config"} {
			for _, tool := range []string{"write_file", "edit_file"} {
				if d := set.Decide(tool, pathInput(path)); d.Behavior != Deny || !strings.HasPrefix(d.Rule.Source, "preset ") {
					t.Errorf("%s: %s(%s) = %q", p.Name, tool, path, d.Behavior)
				}
			}
		}
		if d := set.Decide("write_file", pathInput("src/main.go")); d.Behavior != "" {
			t.Errorf("%s: write_file(src/main.go) = %q", p.Name, d.Behavior)
		}
		// Presets read back from their JSON match the same way.
		b, _ := json.Marshal(p)
		var back Preset
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		set2, err := Compile(back.Rules, ws)
		if err != nil || set2.Decide("write_file", pathInput(".git/config")).Behavior != Deny {
			t.Errorf("%s: rules read back from JSON do not deny (%v)", p.Name, err)
		}
	}
}
