package machine

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lite-agent/lite-agent/policies"
)

// BenchmarkSandboxPolicyShimsOnPATH: the policy of `sandbox run` (the
// default preset, toolchains auto) on this host with a PATH that names a
// version manager's shims directory — 150 scripts and 20 links, as pyenv
// or rbenv leave — beside /usr/bin and /bin. What every `sandbox run` and
// every session pays before New:
//
//	go test ./internal/machine -run '^$' -bench SandboxPolicyShims -benchtime 300x
func BenchmarkSandboxPolicyShimsOnPATH(b *testing.B) {
	home := b.TempDir()
	shims := filepath.Join(home, ".manager", "shims")
	if err := os.MkdirAll(shims, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 150 {
		if err := os.WriteFile(filepath.Join(shims, "tool"+strconv.Itoa(i)), []byte("#!/bin/sh\n"), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		if err := os.Symlink("/bin/true", filepath.Join(shims, "link"+strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
	env := map[string]string{"HOME": home, "PATH": shims + ":/usr/bin:/bin"}
	h := &Host{CacheRoot: b.TempDir(), Env: func(n string) string { return env[n] }}
	ws := b.TempDir()
	preset, err := policies.PresetByName(policies.DefaultPreset)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := (&policies.Policy{Preset: preset}).SandboxPolicy(ws, policies.SandboxSettings{}, h); err != nil {
			b.Fatal(err)
		}
	}
}
