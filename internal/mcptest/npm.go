// Package mcptest finds the MCP reference servers from the npm registry
// that the tests of package mcp and the end-to-end tests run over stdio.
// Nothing is installed at test time: `make deps` (scripts/deps.sh)
// installs the pinned servers once, and a test without them skips saying
// so. It is test support, not API.
package mcptest

import (
	_ "embed"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// servers.txt pins the reference servers; scripts/deps.sh reads the same
// file, so the two cannot disagree on a version.
//
//go:embed servers.txt
var serversTxt string

// Servers are the pinned reference servers of servers.txt.
var Servers = func() (out []struct{ Pkg, Version, Bin string }) {
	for _, line := range strings.Split(serversTxt, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 3 {
			panic("internal/mcptest/servers.txt: want \"package version bin\": " + line)
		}
		out = append(out, struct{ Pkg, Version, Bin string }{f[0], f[1], f[2]})
	}
	return out
}()

// Dir is where the reference servers are installed: $LITE_AGENT_NPM_DIR,
// else $XDG_CACHE_HOME/lite-agent/npm (~/.cache/lite-agent/npm).
func Dir() string {
	if d := os.Getenv("LITE_AGENT_NPM_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "lite-agent", "npm")
}

// Bin returns the path of bin in the installed reference servers. It skips
// t, saying what the test would have checked and naming `make deps`, when
// node is missing or the pinned servers are not installed: a test never
// reaches a registry.
func Bin(t testing.TB, bin string) string {
	t.Helper()
	const what = "the npm reference servers (@modelcontextprotocol/server-everything and server-filesystem) over stdio inside the sandbox: list tools, call them, read resources"
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("node is not installed, so this test cannot run %s (install nodejs and npm, then run make deps)", what)
	}
	dir := Dir()
	for _, s := range Servers {
		var pj struct{ Version string }
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", s.Pkg, "package.json"))
		if err != nil || json.Unmarshal(b, &pj) != nil || pj.Version != s.Version {
			t.Skipf("%s@%s is not installed in %s (found %q), so this test cannot run %s: run make deps (scripts/deps.sh installs the servers pinned in internal/mcptest/servers.txt)", s.Pkg, s.Version, dir, pj.Version, what)
		}
	}
	return filepath.Join(dir, "node_modules", ".bin", bin)
}
