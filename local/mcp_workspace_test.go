package local

import (
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/tools"
)

// TestUntrustedEntryMayNotVouchForItself: an entry from an untrusted
// workspace file may not set trustAnnotations (its server's readOnlyHint
// would pass plan mode and run as a read); the same entry from the
// user's own file may.
func TestUntrustedEntryMayNotVouchForItself(t *testing.T) {
	for _, name := range []string{"standard", "strict"} {
		preset, err := policies.PresetByName(name)
		if err != nil {
			t.Fatal(err)
		}
		entry := mcp.ServerConfig{Command: "/bin/true", Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsWorkspace, TrustAnnotations: true}
		if err := CheckMCPServers(preset, map[string]mcp.ServerConfig{"s": entry}); err != nil {
			t.Fatalf("%s: the user's own entry with trustAnnotations: %v", name, err)
		}
		entry.FromWorkspace = true
		err = CheckMCPServers(preset, map[string]mcp.ServerConfig{"s": entry})
		if err == nil || !strings.Contains(err.Error(), "field trustAnnotations") {
			t.Errorf("%s: an untrusted workspace entry with trustAnnotations: %v, want a refusal naming the field", name, err)
		}
	}
}
