package test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/mcptest"
)

// byID returns the events of one type by their "id".
func byID(evs []event, typ string) map[string]event {
	out := map[string]event{}
	for _, ev := range evs {
		if ev["type"] == typ {
			if id, ok := ev["id"].(string); ok {
				out[id] = ev
			}
		}
	}
	return out
}

// mcpServers returns session_start's mcp_servers by name.
func mcpServers(t *testing.T, evs []event) map[string]map[string]any {
	t.Helper()
	if len(evs) == 0 || evs[0]["type"] != "session_start" {
		t.Fatalf("no session_start: %v", evs)
	}
	out := map[string]map[string]any{}
	list, _ := evs[0]["mcp_servers"].([]any)
	for _, s := range list {
		m := s.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

func stringList(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// TestMCPEverythingThroughTheCLI: the npm reference server, started over
// stdio inside the sandbox from a --mcp-config file: its tools are listed
// in session_start, one is called by its full name under an allow rule,
// and a resource is listed and read.
func TestMCPEverythingThroughTheCLI(t *testing.T) {
	bin := mcptest.Bin(t, "mcp-server-everything")
	ws, state := t.TempDir(), t.TempDir()
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	writeFile(t, cfg, fmt.Sprintf(`{"mcpServers": {"everything": {"command": %q, "args": ["stdio"]}}}`, bin))
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [
	  {"tool_calls": [
	    {"id": "echo", "name": "mcp__everything__echo", "input": {"message": "hi from the CLI"}},
	    {"id": "list", "name": "list_mcp_resources", "input": {"server": "everything"}},
	    {"id": "read", "name": "read_mcp_resource", "input": {"server": "everything", "uri": "demo://resource/static/document/features.md"}}]},
	  {"text": "done"}]}`)
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--mcp-config", cfg, "--allowed-tools", "mcp__everything__*", "use the server")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	srv := mcpServers(t, evs)["everything"]
	if srv == nil || srv["status"] != "connected" || srv["type"] != "stdio" {
		t.Fatalf("session_start mcp_servers: %v", evs[0]["mcp_servers"])
	}
	tools := stringList(srv["tools"])
	for _, want := range []string{"mcp__everything__echo", "mcp__everything__get-sum"} {
		if !slices.Contains(tools, want) || !slices.Contains(stringList(evs[0]["tools"]), want) {
			t.Errorf("%s is not among the server's tools %v or the session's", want, tools)
		}
	}
	results, perms := byID(evs, "tool_result"), byID(evs, "permission")
	if r := results["echo"]; r["is_error"] != false || contentText(r) != "Echo: hi from the CLI" {
		t.Errorf("echo: %v", r)
	}
	if p := perms["echo"]; p["decision"] != "allow" || p["by"] != "rule" || p["rule"] != "mcp__everything__*" {
		t.Errorf("echo's permission: %v", p)
	}
	if r := results["list"]; r["is_error"] != false || !strings.Contains(contentText(r), "features.md") {
		t.Errorf("list_mcp_resources: %.300v", r)
	}
	// A text resource comes back as an embedded resource block.
	var doc string
	for _, c := range results["read"]["content"].([]any) {
		if m := c.(map[string]any); m["type"] == "resource" {
			res := m["resource"].(map[string]any)
			if res["uri"] == "demo://resource/static/document/features.md" {
				doc, _ = res["text"].(string)
			}
		}
	}
	if results["read"]["is_error"] != false || !strings.HasPrefix(doc, "# Everything Server - Features") {
		t.Errorf("read_mcp_resource: %.300v", results["read"])
	}
}

// TestMCPFailingServersDoNotHangTheRun: a server that cannot start and one
// that never answers are reported failed in session_start, and the run
// goes on without waiting longer than the connect timeout.
func TestMCPFailingServersDoNotHangTheRun(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	writeFile(t, cfg, `{"mcpServers": {
	  "missing": {"command": "/nonexistent/mcp-server"},
	  "silent":  {"command": "sleep", "args": ["600"]}}}`)
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [{"tool_calls": [{"id": "t", "name": "mcp__silent__anything", "input": {}}]}, {"text": "carried on"}]}`)
	start := time.Now()
	evs, code, stderr := runAgent(t, ws, state, "--script", script, "--mcp-config", cfg, "--mcp-connect-timeout", "1s", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the run took %v with a 1s connect timeout", d)
	}
	servers := mcpServers(t, evs)
	if s := servers["missing"]; s["status"] != "failed" || !strings.Contains(fmt.Sprint(s["error"]), "nonexistent") {
		t.Errorf("missing: %v", s)
	}
	if s := servers["silent"]; s["status"] != "failed" || !strings.Contains(fmt.Sprint(s["error"]), "1s") {
		t.Errorf("silent: %v", s)
	}
	if r := byID(evs, "tool_result")["t"]; r["is_error"] != true || !strings.Contains(contentText(r), "no tool named") {
		t.Errorf("a call to the silent server's tool: %v", r)
	}
	if last := evs[len(evs)-1]; last["subtype"] != "success" || last["result"] != "carried on" {
		t.Errorf("result: %v", last)
	}
}

// TestMCPRemoteServerRefusedUnderStrict: under strict an MCP server may
// reach loopback at most; a remote HTTP server is refused before anything
// connects, naming the server and the field.
func TestMCPRemoteServerRefusedUnderStrict(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [{"text": "unreached"}]}`)
	_, code, stderr := runAgent(t, ws, state, "--script", script, "--mcp-config", `{"mcpServers": {"remote": {"type": "http", "url": "https://mcp.example.com/mcp"}}}`, "go")
	if code != 1 || !strings.Contains(stderr, `MCP server "remote": field network is "unrestricted"`) || !strings.Contains(stderr, "strict") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
