package sandboxrun

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestPaired: lite-agent-sandbox takes a command from a lite-agent built
// from the same sources only, and proof of "the same" is a version stamp,
// a released version or an unmodified revision — equal settings alone
// are not (two builds of one work tree with different edits).
func TestPaired(t *testing.T) {
	bi := func(version string, kv ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{Main: debug.Module{Path: "github.com/lite-agent/lite-agent", Version: version}}
		for i := 0; i+1 < len(kv); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return b
	}
	const rev = "0123456789abcdef"
	for _, c := range []struct {
		name string
		a, b *debug.BuildInfo
		ok   bool
	}{
		{"make build: one stamp", bi("(devel)", "-ldflags", "-X main.version=dev+5e308a4de058", "vcs.revision", rev, "vcs.modified", "true"),
			bi("(devel)", "-ldflags", "-X main.version=dev+5e308a4de058", "vcs.revision", rev, "vcs.modified", "true"), true},
		{"make build: stamps differ (sources edited between)", bi("(devel)", "-ldflags", "-X main.version=dev+5e308a4de058"),
			bi("(devel)", "-ldflags", "-X main.version=dev+77aa00000000"), false},
		{"-X=main.version form", bi("(devel)", "-ldflags", "-X=main.version=1.4"), bi("(devel)", "-ldflags", "-X=main.version=1.4"), true},
		{"stamp \"dev\" proves nothing", bi("(devel)", "-ldflags", "-X main.version=dev", "vcs.revision", rev, "vcs.modified", "true"),
			bi("(devel)", "-ldflags", "-X main.version=dev", "vcs.revision", rev, "vcs.modified", "true"), false},
		{"go install @version", bi("v1.2.3"), bi("v1.2.3"), true},
		{"go install, two versions", bi("v1.2.3"), bi("v1.2.4"), false},
		{"go build, clean checkout", bi("(devel)", "vcs.revision", rev, "vcs.modified", "false"), bi("(devel)", "vcs.revision", rev, "vcs.modified", "false"), true},
		{"go build, edited work tree", bi("(devel)", "vcs.revision", rev, "vcs.modified", "true"), bi("(devel)", "vcs.revision", rev, "vcs.modified", "true"), false},
		{"go build, two revisions", bi("(devel)", "vcs.revision", rev, "vcs.modified", "false"), bi("(devel)", "vcs.revision", "fedcba", "vcs.modified", "false"), false},
		{"other build tags", bi("v1.2.3", "-tags", "x"), bi("v1.2.3"), false},
		{"no build information at all", bi(""), bi(""), false},
	} {
		err := Paired(c.a, c.b)
		if (err == nil) != c.ok {
			t.Errorf("%s: Paired = %v, want paired %v", c.name, err, c.ok)
		}
		if err != nil && strings.TrimSpace(err.Error()) == "" {
			t.Errorf("%s: an empty reason", c.name)
		}
	}
}
