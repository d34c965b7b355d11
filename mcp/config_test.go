package mcp

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/tools"
)

func TestParseConfig(t *testing.T) {
	t.Setenv("MCP_CFG_TOKEN", "s3cret")
	t.Setenv("MCP_CFG_EMPTY", "")
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
	  "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"LEVEL": "${MCP_CFG_LEVEL:-debug}"}},
	  "fs":   {"command": "mcp-server-filesystem", "args": ["/work"], "filesystem": "workspace", "sideEffects": "none", "network": "loopback", "alwaysAllow": ["x"]},
	  "api":  {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${MCP_CFG_TOKEN}"}},
	  "lan":  {"type": "streamable-http", "url": "http://192.168.1.20:8080/mcp"},
	  "local": {"url": "http://localhost:3000/mcp", "sideEffects": "none", "trustAnnotations": true},
	  "old":  {"type": "sse", "url": "http://127.0.0.1:9000/sse", "headers": {"X-Empty": "${MCP_CFG_EMPTY:-fallback}"}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kind string
		sec        tools.Security
		readOnly   bool
	}{
		{"everything", TypeStdio, tools.Security{Network: "none", Filesystem: "none", SideEffects: "none"}, true},
		{"fs", TypeStdio, tools.Security{Network: "loopback", Filesystem: "workspace", SideEffects: "none"}, false},
		{"api", TypeHTTP, tools.Security{Network: "unrestricted", Filesystem: "none", SideEffects: "external"}, false},
		{"lan", TypeHTTP, tools.Security{Network: "private", Filesystem: "none", SideEffects: "external"}, false},
		{"local", TypeHTTP, tools.Security{Network: "loopback", Filesystem: "none", SideEffects: "none"}, true},
		{"old", TypeSSE, tools.Security{Network: "loopback", Filesystem: "none", SideEffects: "external"}, false},
	} {
		sc := cfg.Servers[tc.name]
		if sc.kind() != tc.kind || sc.security() != tc.sec || sc.readOnlyTrusted() != tc.readOnly {
			t.Errorf("%s: kind %s security %+v readOnly %v; want %s %+v %v", tc.name, sc.kind(), sc.security(), sc.readOnlyTrusted(), tc.kind, tc.sec, tc.readOnly)
		}
	}
	if got := cfg.Servers["api"].Headers["Authorization"]; got != "Bearer s3cret" {
		t.Errorf("header %q", got)
	}
	if got := cfg.Servers["everything"].Env["LEVEL"]; got != "debug" {
		t.Errorf("default %q", got)
	}
	if got := cfg.Servers["old"].Headers["X-Empty"]; got != "fallback" {
		t.Errorf("empty variable with default: %q", got)
	}
	if !reflect.DeepEqual(cfg.Servers["everything"].Args, []string{"-y", "@modelcontextprotocol/server-everything"}) {
		t.Errorf("args %q", cfg.Servers["everything"].Args)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "mcp.json")
	os.WriteFile(p, []byte(`{"mcpServers": {"x": {"command": "true"}}}`), 0o644)
	if c, err := LoadConfig(p); err != nil || c.Servers["x"].Command != "true" {
		t.Errorf("LoadConfig: %v %+v", err, c)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("LoadConfig of a missing file")
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{}`, `no "mcpServers"`},
		{`{"mcpServers": {"a__b": {"command": "x"}}}`, `no "__"`},
		{`{"mcpServers": {"a": {}}}`, "needs a command"},
		{`{"mcpServers": {"a": {"type": "ws", "url": "ws://x"}}}`, `unknown type "ws"`},
		{`{"mcpServers": {"a": {"type": "http"}}}`, "needs a url"},
		{`{"mcpServers": {"a": {"type": "http", "url": "ftp://x"}}}`, "want an http:// or https:// URL"},
		{`{"mcpServers": {"a": {"type": "http", "url": "http://127.0.0.1/", "network": "none"}}}`, "network none leaves no way"},
		{`{"mcpServers": {"a": {"type": "http", "url": "http://10.0.0.1/", "network": "loopback"}}}`, "outside the declared network"},
		{`{"mcpServers": {"a": {"type": "http", "url": "http://127.0.0.1/", "filesystem": "workspace"}}}`, "filesystem applies to stdio"},
		{`{"mcpServers": {"a": {"type": "http", "url": "http://127.0.0.1/", "command": "x"}}}`, "are for stdio servers"},
		{`{"mcpServers": {"a": {"command": "x", "url": "http://127.0.0.1/"}}}`, "are for http and sse servers"},
		{`{"mcpServers": {"a": {"command": "x", "network": "internet"}}}`, `security.network: unknown value "internet"`},
		{`{"mcpServers": {"a": {"command": "x", "filesystem": "home"}}}`, `security.filesystem: unknown value "home"`},
		{`{"mcpServers": {"a": {"command": "x", "readOnlyPaths": ["rel/dir"]}}}`, "not an absolute path"},
		{`{"mcpServers": {"a": {"command": "${MCP_CFG_UNSET_VAR}"}}}`, "${MCP_CFG_UNSET_VAR} is not set"},
		{`{"mcpServers": {"a": {"type": "sdk"}}}`, "needs an in-process Server"},
		{`{"mcpServers": []}`, "mcp config"},
	} {
		_, err := ParseConfig([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.json, err, tc.want)
		}
	}
	// The in-process entry must carry the server's own name.
	srv := NewServer("orders", "1")
	sc := ServerConfig{Server: srv}
	if err := sc.Check("shop"); err == nil || !strings.Contains(err.Error(), `named "orders"`) {
		t.Errorf("mismatched name: %v", err)
	}
	if _, err := NewManager(&Options{Servers: map[string]ServerConfig{"x": {}}}); err == nil {
		t.Error("NewManager accepted an entry without a command")
	}
	if _, err := NewManager(&Options{MaxNetwork: "lan"}); err == nil {
		t.Error("NewManager accepted an unknown MaxNetwork")
	}
}

func TestProgramPaths(t *testing.T) {
	dir := t.TempDir()
	nm := filepath.Join(dir, "prefix", "node_modules")
	pkg := filepath.Join(nm, "@scope", "server", "dist")
	os.MkdirAll(pkg, 0o755)
	os.MkdirAll(filepath.Join(nm, ".bin"), 0o755)
	script := filepath.Join(pkg, "index.js")
	os.WriteFile(script, []byte("#!/usr/bin/env node\n"), 0o755)
	os.Symlink("../@scope/server/dist/index.js", filepath.Join(nm, ".bin", "server"))
	own := filepath.Join(dir, "own-server")
	os.WriteFile(own, []byte("#!/bin/sh\n"), 0o755)
	data := filepath.Join(dir, "server.py")
	os.WriteFile(data, []byte(""), 0o644)
	system := []string{"/usr", "/bin"}
	for _, tc := range []struct {
		cfg  ServerConfig
		want []string
	}{
		// A node_modules bin brings its whole tree (its dependencies).
		{ServerConfig{Command: filepath.Join(nm, ".bin", "server")}, []string{nm}},
		// Found in PATH, outside the system paths: the file itself.
		{ServerConfig{Command: "own-server", Env: map[string]string{"PATH": dir}}, []string{own}},
		// An interpreter from the system paths and its script.
		{ServerConfig{Command: "/usr/bin/python3", Args: []string{data, "--port", "/nonexistent"}}, []string{data}},
		{ServerConfig{Command: "/usr/bin/node", Args: []string{script}}, []string{nm}},
	} {
		if got := programPaths(&tc.cfg, system); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %q: %q, want %q", tc.cfg.Command, tc.cfg.Args, got, tc.want)
		}
	}
}
