// Package mcptest finds (and if need be installs) the MCP reference
// servers from the npm registry that the tests of package mcp and the
// end-to-end tests run over stdio. It is test support, not API.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The reference servers the tests run, pinned; scripts/deps.sh installs the
// same versions.
var Servers = []struct{ Pkg, Version, Bin string }{
	{"@modelcontextprotocol/server-everything", "2026.8.31", "mcp-server-everything"},
	{"@modelcontextprotocol/server-filesystem", "2026.8.31", "mcp-server-filesystem"},
}

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

var npmInstall struct {
	once sync.Once
	err  error
}

// Bin returns the path of bin in the installed reference servers,
// installing them with npm first if they are missing. It skips t only when
// node or npm is not installed, saying what the test would have checked.
func Bin(t testing.TB, bin string) string {
	t.Helper()
	const what = "the npm reference servers (@modelcontextprotocol/server-everything and server-filesystem) over stdio inside the sandbox: list tools, call them, read resources"
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("node is not installed, so this test cannot run %s", what)
	}
	dir := Dir()
	installed := func() bool {
		for _, s := range Servers {
			var pj struct{ Version string }
			b, err := os.ReadFile(filepath.Join(dir, "node_modules", s.Pkg, "package.json"))
			if err != nil || json.Unmarshal(b, &pj) != nil || pj.Version != s.Version {
				return false
			}
		}
		return true
	}
	if !installed() {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Skipf("npm is not installed and %s has no reference servers, so this test cannot run %s (scripts/deps.sh installs them)", dir, what)
		}
		npmInstall.once.Do(func() {
			args := []string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save"}
			for _, s := range Servers {
				args = append(args, s.Pkg+"@"+s.Version)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := os.MkdirAll(dir, 0o755); err != nil {
				npmInstall.err = err
				return
			}
			out, err := exec.CommandContext(ctx, "npm", args...).CombinedOutput()
			if err != nil {
				npmInstall.err = fmt.Errorf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
		if npmInstall.err != nil {
			t.Fatalf("installing the reference servers: %v", npmInstall.err)
		}
		if !installed() {
			t.Fatalf("npm install finished but %s lacks the pinned reference servers", dir)
		}
	}
	return filepath.Join(dir, "node_modules", ".bin", bin)
}
