package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/mcptest"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

func TestNPMEverything(t *testing.T) {
	requireSandbox(t, "the npm server-everything over stdio inside the sandbox")
	bin := mcptest.Bin(t, "mcp-server-everything")
	// A variable that looks like a secret must not reach the server; one
	// given in the entry must.
	t.Setenv("LITE_AGENT_TEST_API_TOKEN", "do-not-leak")
	m := newManager(t, &Options{Servers: map[string]ServerConfig{
		"everything": {Command: bin, Args: []string{"stdio"}, Env: map[string]string{"GREETING": "hello-from-config"}},
	}})
	st := m.Connect(context.Background())[0]
	if st.State != StateConnected {
		t.Fatalf("%+v", st)
	}
	if !strings.Contains(st.ServerInfo, "everything") {
		t.Errorf("server info %q", st.ServerInfo)
	}
	for _, want := range []string{"echo", "get-sum", "get-tiny-image", "get-resource-reference", "get-env"} {
		if !slices.Contains(st.Tools, ToolName("everything", want)) {
			t.Errorf("no %s among %v", want, st.Tools)
		}
	}
	if r := call(t, m, "mcp__everything__echo", `{"message": "hi there"}`); r.IsError || r.TextOf() != "Echo: hi there" {
		t.Errorf("echo: %+v", r)
	}
	if r := call(t, m, "mcp__everything__get-sum", `{"a": 2, "b": 40}`); r.IsError || !strings.Contains(r.TextOf(), "42") {
		t.Errorf("get-sum: %+v", r)
	}
	// Our validation runs first, with the server's (zod-generated) schema.
	if r := call(t, m, "mcp__everything__get-sum", `{"a": "two", "b": 40}`); !r.IsError || !strings.Contains(r.TextOf(), "a") {
		t.Errorf("get-sum with a string: %+v", r)
	}
	img := call(t, m, "mcp__everything__get-tiny-image", `{}`)
	var sawImage bool
	for _, c := range img.Content {
		if c.Type == tools.ContentImage && c.MIMEType == "image/png" && len(c.Data) > 8 && string(c.Data[1:4]) == "PNG" {
			sawImage = true
		}
	}
	if img.IsError || !sawImage {
		t.Errorf("get-tiny-image: %+v", img)
	}
	ref := call(t, m, "mcp__everything__get-resource-reference", `{"resourceType": "Text", "resourceId": 3}`)
	var embedded *tools.ResourceContents
	for _, c := range ref.Content {
		if c.Type == tools.ContentResource {
			embedded = c.Resource
		}
	}
	if ref.IsError || embedded == nil || !strings.Contains(embedded.URI, "3") || embedded.Text == "" {
		t.Errorf("get-resource-reference: %+v", ref)
	}
	env := call(t, m, "mcp__everything__get-env", `{}`).TextOf()
	if !strings.Contains(env, "hello-from-config") || strings.Contains(env, "do-not-leak") {
		t.Errorf("environment of the server: %s", env)
	}

	// Resources: listed with pagination by server, read through the tool.
	lr := call(t, m, ListResourcesTool, `{}`)
	if lr.IsError {
		t.Fatalf("list: %s", lr.TextOf())
	}
	var lists []ResourceList
	if err := json.Unmarshal([]byte(lr.TextOf()), &lists); err != nil || len(lists) != 1 || lists[0].Server != "everything" || len(lists[0].Resources) == 0 {
		t.Fatalf("list: %v %s", err, lr.TextOf())
	}
	var doc string
	for _, r := range lists[0].Resources {
		if strings.HasSuffix(r.URI, "/features.md") {
			doc = r.URI
		}
	}
	if doc == "" {
		t.Fatalf("no features.md among %d resources", len(lists[0].Resources))
	}
	// The static documents are files in the package: reading one shows the
	// server can read its own installation inside the sandbox.
	rr := call(t, m, ReadResourceTool, fmt.Sprintf(`{"server": "everything", "uri": %q}`, doc))
	if rr.IsError || !strings.Contains(rr.TextOf(), "Everything Server - Features") {
		t.Errorf("read %s: %.300s", doc, rr.TextOf())
	}
	if lists[0].NextCursor != "" {
		next := call(t, m, ListResourcesTool, fmt.Sprintf(`{"server": "everything", "cursor": %q}`, lists[0].NextCursor))
		if next.IsError || next.TextOf() == lr.TextOf() {
			t.Errorf("second page: %.300s", next.TextOf())
		}
	}
}

func TestNPMFilesystem(t *testing.T) {
	requireSandbox(t, "the npm server-filesystem over stdio inside the sandbox")
	bin := mcptest.Bin(t, "mcp-server-filesystem")
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("buy milk"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, &Options{
		Servers: map[string]ServerConfig{
			// The server's own rule allows ws; the sandbox gives it ws
			// read-write (fs) or read-only (fsro).
			"fs":   {Command: bin, Args: []string{ws}, Filesystem: tools.FilesystemWorkspace},
			"fsro": {Command: bin, Args: []string{ws}, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsNone},
		},
		Sandbox: &sandbox.Policy{Workspace: ws},
	})
	for _, st := range m.Connect(context.Background()) {
		if st.State != StateConnected {
			t.Fatalf("%+v", st)
		}
		if !slices.Contains(st.Tools, ToolName(st.Name, "read_text_file")) || !slices.Contains(st.Tools, ToolName(st.Name, "write_file")) {
			t.Errorf("%s tools: %v", st.Name, st.Tools)
		}
	}
	path := func(name string) string { return filepath.Join(ws, name) }
	if r := call(t, m, "mcp__fs__read_text_file", fmt.Sprintf(`{"path": %q}`, path("notes.txt"))); r.IsError || r.TextOf() != "buy milk" {
		t.Errorf("read: %+v", r)
	}
	if r := call(t, m, "mcp__fs__list_directory", fmt.Sprintf(`{"path": %q}`, ws)); r.IsError || !strings.Contains(r.TextOf(), "notes.txt") {
		t.Errorf("list: %+v", r)
	}
	if r := call(t, m, "mcp__fs__write_file", fmt.Sprintf(`{"path": %q, "content": "hello"}`, path("new.txt"))); r.IsError {
		t.Errorf("write: %+v", r)
	}
	if b, err := os.ReadFile(path("new.txt")); err != nil || string(b) != "hello" {
		t.Errorf("the file written: %q %v", b, err)
	}
	// Outside its directories the server refuses by its own rules...
	if r := call(t, m, "mcp__fs__read_text_file", `{"path": "/etc/hostname"}`); !r.IsError {
		t.Errorf("read outside: %+v", r)
	}
	// ...and where its rules would allow a write, the sandbox still says no.
	r := call(t, m, "mcp__fsro__write_file", fmt.Sprintf(`{"path": %q, "content": "nope"}`, path("ro.txt")))
	// EACCES from Landlock, or EROFS from the read-only mount namespace,
	// which answers first where the path is not a read-write root.
	refused := func(text string) bool {
		text = strings.ToLower(text)
		return strings.Contains(text, "eacces") || strings.Contains(text, "permission denied") || strings.Contains(text, "erofs")
	}
	if !r.IsError || !refused(r.TextOf()) {
		t.Errorf("a write through the read-only server: %+v", r)
	}
	if _, err := os.Stat(path("ro.txt")); !os.IsNotExist(err) {
		t.Errorf("the read-only server wrote ro.txt (%v)", err)
	}
	if r := call(t, m, "mcp__fsro__read_text_file", fmt.Sprintf(`{"path": %q}`, path("notes.txt"))); r.IsError || r.TextOf() != "buy milk" {
		t.Errorf("read through the read-only server: %+v", r)
	}
}
