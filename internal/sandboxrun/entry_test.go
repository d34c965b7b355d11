package sandboxrun

import (
	"os"
	"os/exec"
	"path/filepath"
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

// TestEntryRunsHereUnlessHandedOverByPath: EntryEnv set to anything but
// an absolute path ("in-process", as a person sets it to keep `sandbox
// run` inside lite-agent) runs lite-agent-sandbox's own code. Taken as
// the caller's path, "in-process" was a file of the current directory,
// run unconfined: a cloned repository holding one ran it. The entry runs
// in a child (this test binary again), in a directory where such a file
// would leave a mark.
func TestEntryRunsHereUnlessHandedOverByPath(t *testing.T) {
	if os.Getenv("SANDBOXRUN_ENTRY_CHILD") == "1" {
		os.Exit(Entry([]string{ProgramName, "version"}, "v-test", os.Stdin, os.Stdout, os.Stderr))
	}
	for _, value := range []string{"in-process", "relative/lite-agent", ""} {
		dir := t.TempDir()
		mark := filepath.Join(dir, "ran")
		script := "#!/bin/sh\necho ran > " + mark + "\n"
		for _, name := range []string{"in-process", "relative/lite-agent"} {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestEntryRunsHereUnlessHandedOverByPath$")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SANDBOXRUN_ENTRY_CHILD=1", EntryEnv+"="+value)
		out, err := cmd.CombinedOutput()
		if _, statErr := os.Stat(mark); statErr == nil {
			t.Errorf("%s=%q ran a file of the current directory", EntryEnv, value)
		}
		if err != nil || !strings.Contains(string(out), ProgramName+" v-test") {
			t.Errorf("%s=%q: %v: %s; want lite-agent-sandbox's own version", EntryEnv, value, err, out)
		}
	}
}
