package test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileConfigFilesThroughTheCLI: the agent's bash of an earlier
// session can make the workspace's .lite-agent/policy.toml, or a
// .mcp.json the user passes with --mcp-config, a FIFO (a read blocks until
// someone writes: the next `lite-agent run` would hang for ever, see
// policies.TestFIFOPolicyFileHangsOSReadFileButNotLoad for the proof on
// os.ReadFile), a symlink to /dev/zero (a read never ends) or a file over
// 1 MiB. `lite-agent run` exits with an error naming the file instead.
// The wait on the binary is bounded: a hang fails the test.
func TestHostileConfigFilesThroughTheCLI(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [{"text": "done"}]}`)
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	zero := func(p string) error { return os.Symlink("/dev/zero", p) }
	big := func(p string) error { return os.WriteFile(p, bytes.Repeat([]byte("#"), 1<<20+1), 0o644) }
	for _, c := range []struct {
		name  string
		file  string // relative to the workspace
		plant func(string) error
		args  []string
		want  string
	}{
		{"policy file a FIFO", ".lite-agent/policy.toml", fifo, nil, "a FIFO"},
		{"policy file a symlink to /dev/zero", ".lite-agent/policy.toml", zero, nil, "symlink"},
		{"policy file over 1 MiB", ".lite-agent/policy.toml", big, nil, "too large"},
		{"--mcp-config a FIFO", ".mcp.json", fifo, []string{"--mcp-config", ".mcp.json"}, "a FIFO"},
		{"--mcp-config a symlink to /dev/zero", ".mcp.json", zero, []string{"--mcp-config", ".mcp.json"}, "symlink"},
		{"--agents a FIFO", "agents.json", fifo, []string{"--agents", "agents.json"}, "a FIFO"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, state, cfg := t.TempDir(), t.TempDir(), t.TempDir()
			p := filepath.Join(ws, c.file)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := c.plant(p); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := append([]string{"run", "--workspace", ws, "--state-dir", state, "--script", script}, c.args...)
			cmd := exec.CommandContext(ctx, binary, append(args, "hello")...)
			// Relative flag paths are the user's, from the workspace.
			cmd.Dir = ws
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("lite-agent run did not exit within 60s: it hangs on %s", c.file)
			}
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() == 0 {
				t.Fatalf("lite-agent run: %v, want a failure; stderr: %s", err, stderr.String())
			}
			if msg := stderr.String(); !strings.Contains(msg, c.file) || !strings.Contains(msg, c.want) {
				t.Fatalf("stderr does not name %s (%s): %s", c.file, c.want, msg)
			}
		})
	}
}
