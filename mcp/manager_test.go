package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// requireSandbox skips, saying what would have been checked, when stdio
// servers cannot be confined here.
func requireSandbox(t *testing.T, what string) {
	t.Helper()
	sb, err := sandbox.New(sandbox.Policy{})
	if errors.Is(err, sandbox.ErrUnsupported) {
		t.Skipf("the sandbox cannot run here (%v); this test would have checked %s", err, what)
	}
	if err != nil {
		t.Fatal(err)
	}
	sb.Close()
}

// goServer is a stdio entry that re-executes this test binary as the
// go-sdk test server.
func goServer(mode string) ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return ServerConfig{Command: exe, Env: map[string]string{testServerEnv: mode}}
}

func newManager(t *testing.T, opts *Options) *Manager {
	t.Helper()
	m, err := NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func findTool(t *testing.T, m *Manager, name string) *tools.Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %v", name, toolNames(m.Tools()))
	return nil
}

func toolNames(ts []*tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

func call(t *testing.T, m *Manager, name, input string) *tools.Result {
	t.Helper()
	return findTool(t, m, name).Call(&tools.Context{Ctx: context.Background()}, json.RawMessage(input))
}

func statusOf(t *testing.T, m *Manager, name string) ServerStatus {
	t.Helper()
	for _, st := range m.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for %s", name)
	return ServerStatus{}
}

// wantBlocks is what the test server's "blocks" tool returns.
var wantBlocks = []tools.Content{
	tools.TextContent("hello"),
	tools.ImageContent(testPNG, "image/png"),
	tools.AudioContent([]byte("RIFF0000WAVE"), "audio/wav"),
	{Type: tools.ContentResourceLink, URI: "test://doc/1", Name: "doc1", Title: "Doc one", MIMEType: "text/plain", Size: 12},
	tools.EmbeddedResource(tools.ResourceContents{URI: "test://doc/2", MIMEType: "text/plain", Text: "inline text"}),
}

// checkTestServer exercises the go-sdk test server behind name: listing
// (several pages), calls, every block kind, isError, resources.
func checkTestServer(t *testing.T, m *Manager, name string) {
	t.Helper()
	st := statusOf(t, m, name)
	if st.State != StateConnected || st.ServerInfo != "gotest 1.2.3" {
		t.Fatalf("status %+v", st)
	}
	got, want := slices.Sorted(slices.Values(st.Tools)), slices.Sorted(slices.Values(testServerTools(name)))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tools %v, want %v (the server pages by 2: all pages must be read)", got, want)
	}
	if len(st.Skipped) != 1 || !strings.HasPrefix(st.Skipped[0], "dotted.name: ") {
		t.Errorf("skipped %q, want dotted.name with a reason", st.Skipped)
	}
	for _, tl := range m.Tools() {
		if !m.Traits(tl).Forwards {
			t.Errorf("%s is not marked as forwarding", tl.Name())
		}
	}
	if r := call(t, m, ToolName(name, "echo"), `{"text": "hi"}`); r.IsError || r.TextOf() != "echo: hi" {
		t.Errorf("echo: %+v", r)
	}
	if r := call(t, m, ToolName(name, "blocks"), `{}`); r.IsError || !reflect.DeepEqual(r.Content, wantBlocks) {
		g, _ := json.Marshal(r)
		t.Errorf("blocks: %s", g)
	}
	if r := call(t, m, ToolName(name, "fail"), `{}`); !r.IsError || r.TextOf() != "order not found" {
		t.Errorf("fail: %+v", r)
	}
	if r := call(t, m, ToolName(name, "echo"), `{"text": 3}`); !r.IsError || !strings.Contains(r.TextOf(), "text") {
		t.Errorf("bad input: %+v", r)
	}

	lr := call(t, m, ListResourcesTool, fmt.Sprintf(`{"server": %q}`, name))
	if lr.IsError || !strings.Contains(lr.TextOf(), "test://greeting") || !strings.Contains(lr.TextOf(), "test://logo") {
		t.Errorf("list resources: %+v", lr)
	}
	rr := call(t, m, ReadResourceTool, fmt.Sprintf(`{"server": %q, "uri": "test://greeting"}`, name))
	wantText := []tools.Content{tools.EmbeddedResource(tools.ResourceContents{URI: "test://greeting", MIMEType: "text/plain", Text: "hello from a resource"})}
	if rr.IsError || !reflect.DeepEqual(rr.Content, wantText) {
		t.Errorf("read text resource: %+v", rr)
	}
	rr = call(t, m, ReadResourceTool, fmt.Sprintf(`{"server": %q, "uri": "test://logo"}`, name))
	if rr.IsError || !reflect.DeepEqual(rr.Content, []tools.Content{tools.ImageContent(testPNG, "image/png")}) {
		t.Errorf("read image resource: %+v", rr)
	}
	if rr := call(t, m, ReadResourceTool, fmt.Sprintf(`{"server": %q, "uri": "test://nope"}`, name)); !rr.IsError {
		t.Errorf("reading a missing resource: %+v", rr)
	}
}

func TestManagerStdioGoServer(t *testing.T) {
	requireSandbox(t, "the go-sdk server over stdio inside the sandbox")
	m := newManager(t, &Options{Servers: map[string]ServerConfig{"go": goServer("stdio")}, Sandbox: &sandbox.Policy{Workspace: t.TempDir()}})
	sts := m.Connect(context.Background())
	if len(sts) != 1 {
		t.Fatalf("status %+v", sts)
	}
	checkTestServer(t, m, "go")
	st := statusOf(t, m, "go")
	if want := (tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsNone}); st.Security != want {
		t.Errorf("security %+v, want %+v", st.Security, want)
	}
	echo := findTool(t, m, "mcp__go__echo")
	if sec := echo.Security(); sec == nil || *sec != st.Security {
		t.Errorf("the tool declares %+v, the server %+v", sec, st.Security)
	}
	// With neither network nor side effects the sandbox makes readOnlyHint
	// true, so it is kept.
	if a := echo.Annotations(); !a.ReadOnlyHint || a.Title != "Echo" {
		t.Errorf("annotations %+v", a)
	}

	pid, err := strconv.Atoi(call(t, m, "mcp__go__pid", `{}`).TextOf())
	if err != nil || pid == os.Getpid() {
		t.Fatalf("pid %d, %v", pid, err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if pid > 1 {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the server process %d is still there after Close (%v)", pid, err)
		}
	}
	if st := statusOf(t, m, "go"); st.State != StateClosed {
		t.Errorf("after Close: %+v", st)
	}
	if r := echo.Call(nil, json.RawMessage(`{"text": "x"}`)); !r.IsError || !strings.Contains(r.TextOf(), "shut down") {
		t.Errorf("call after Close: %+v", r)
	}
	if other := newManager(t, nil); other.Traits(echo).Forwards {
		t.Error("another manager says echo forwards: the mark is its own manager's, not the process's")
	}
}

// TestManagerStdioConfinement shows that a stdio server runs under the
// network mode and file-system access its entry declares.
func TestManagerStdioConfinement(t *testing.T) {
	requireSandbox(t, "that stdio servers get the network and file access their config declares")
	ws := t.TempDir()
	data := filepath.Join(ws, "data.txt")
	if err := os.WriteFile(data, []byte("secret plans"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	with := func(f func(*ServerConfig)) ServerConfig {
		c := goServer("stdio")
		f(&c)
		return c
	}
	m := newManager(t, &Options{
		Servers: map[string]ServerConfig{
			"nonet": goServer("stdio"),
			"lonet": with(func(c *ServerConfig) { c.Network = tools.NetworkLoopback }),
			"wsro":  with(func(c *ServerConfig) { c.Filesystem, c.SideEffects = tools.FilesystemWorkspace, tools.SideEffectsNone }),
			"wsrw":  with(func(c *ServerConfig) { c.Filesystem = tools.FilesystemWorkspace }),
		},
		// The base is the most a server may have: loopback here, so that
		// "lonet" gets it and "nonet" is narrowed to none.
		Sandbox: &sandbox.Policy{Workspace: ws, Network: sandbox.NetworkLoopback},
	})
	for _, st := range m.Connect(context.Background()) {
		if st.State != StateConnected {
			t.Fatalf("%+v", st)
		}
	}
	dial := fmt.Sprintf(`{"addr": %q}`, ln.Addr().String())
	// A declaration never widens the base: under a base without network,
	// the same loopback server reaches nothing (with the base at loopback
	// it does, below: the probe works).
	narrow := newManager(t, &Options{
		Servers: map[string]ServerConfig{"lonet": with(func(c *ServerConfig) { c.Network = tools.NetworkLoopback })},
		Sandbox: &sandbox.Policy{Workspace: ws, Network: sandbox.NetworkNone},
	})
	for _, st := range narrow.Connect(context.Background()) {
		if st.State != StateConnected {
			t.Fatalf("%+v", st)
		}
	}
	if r := call(t, narrow, "mcp__lonet__dial", dial); !strings.HasPrefix(r.TextOf(), "dial error") {
		t.Errorf("a server declaring loopback under a base with network none reached a loopback listener: %+v", r)
	}
	// The narrowing is said, not silent: its status carries a note (the
	// CLI prints it), and a server given what it declares has none.
	if st := statusOf(t, narrow, "lonet"); len(st.Notes) != 1 || st.Notes[0] != `declares network "loopback" but runs with "none", the most the session's sandbox allows` {
		t.Errorf("a server narrowed to the session's network: notes %q", st.Notes)
	}
	for _, srv := range []string{"nonet", "lonet", "wsro"} {
		if st := statusOf(t, m, srv); len(st.Notes) != 0 {
			t.Errorf("%s runs with what it declares, yet has notes %q", srv, st.Notes)
		}
	}
	if r := call(t, m, "mcp__nonet__dial", dial); !strings.HasPrefix(r.TextOf(), "dial error") {
		t.Errorf("network none reached a loopback listener: %+v", r)
	}
	if r := call(t, m, "mcp__lonet__dial", dial); r.TextOf() != "connected" {
		t.Errorf("network loopback could not reach a loopback listener: %+v", r)
	}
	read := fmt.Sprintf(`{"path": %q}`, data)
	if r := call(t, m, "mcp__nonet__read_file", read); !strings.HasPrefix(r.TextOf(), "read error") {
		t.Errorf("filesystem none read the workspace: %+v", r)
	}
	if r := call(t, m, "mcp__wsro__read_file", read); r.TextOf() != "read: secret plans" {
		t.Errorf("filesystem workspace could not read it: %+v", r)
	}
	write := func(srv string) string {
		p := filepath.Join(ws, srv+".txt")
		return call(t, m, ToolName(srv, "write_file"), fmt.Sprintf(`{"path": %q, "data": "x"}`, p)).TextOf()
	}
	if r := write("wsro"); !strings.HasPrefix(r, "write error") {
		t.Errorf("side effects none wrote to the workspace: %s", r)
	}
	if r := write("wsrw"); r != "written" {
		t.Errorf("side effects workspace could not write: %s", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "wsrw.txt")); err != nil {
		t.Error(err)
	}

	for srv, want := range map[string]tools.Security{
		"nonet": {Network: tools.NetworkNone, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsNone},
		"lonet": {Network: tools.NetworkLoopback, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsExternal},
		"wsro":  {Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsNone},
		"wsrw":  {Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsWorkspace},
	} {
		if sec := findTool(t, m, ToolName(srv, "echo")).Security(); sec == nil || *sec != want {
			t.Errorf("%s declares %+v, want %+v", srv, sec, want)
		}
	}
	// The readOnlyHint of a server that could change something is not
	// believed without trustAnnotations.
	if findTool(t, m, "mcp__lonet__echo").ReadOnly() || findTool(t, m, "mcp__wsrw__echo").ReadOnly() {
		t.Error("an untrusted server's readOnlyHint was kept")
	}
	// The resource tools reach every server: they declare the widest.
	if sec := findTool(t, m, ReadResourceTool).Security(); sec == nil || *sec != (tools.Security{Network: tools.NetworkLoopback, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsExternal}) {
		t.Errorf("resource tools declare %+v", sec)
	}
}

func TestManagerServerDiesMidSession(t *testing.T) {
	requireSandbox(t, "that a stdio server dying mid-session turns calls into error results")
	m := newManager(t, &Options{Servers: map[string]ServerConfig{"go": goServer("stdio")}})
	if st := m.Connect(context.Background()); st[0].State != StateConnected {
		t.Fatalf("%+v", st)
	}
	echo := findTool(t, m, "mcp__go__echo")
	// A call in flight when the server dies must end too.
	inflight := make(chan *tools.Result, 1)
	go func() { inflight <- call(t, m, "mcp__go__sleep", `{"ms": 60000}`) }()
	time.Sleep(100 * time.Millisecond)

	t0 := time.Now()
	r := call(t, m, "mcp__go__exit", `{"code": 7}`)
	if !r.IsError || !strings.Contains(r.TextOf(), "exited with code 7") {
		t.Errorf("the call that killed the server: %+v", r)
	}
	select {
	case r := <-inflight:
		if !r.IsError {
			t.Errorf("in-flight call: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call in flight when the server died hangs")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the error took %v", d)
	}
	st := statusOf(t, m, "go")
	if st.State != StateFailed || !strings.Contains(st.Error, "exited with code 7 mid-session") || !strings.Contains(st.Error, "exiting on request") {
		t.Errorf("status %+v", st)
	}
	t0 = time.Now()
	if r := echo.Call(nil, json.RawMessage(`{"text": "still there?"}`)); !r.IsError || !strings.Contains(r.TextOf(), "not available") || time.Since(t0) > time.Second {
		t.Errorf("a call after the death: %+v (%v)", r, time.Since(t0))
	}
	if names := toolNames(m.Tools()); slices.Contains(names, "mcp__go__echo") {
		t.Errorf("a dead server's tools are still offered: %v", names)
	}
}

func TestManagerStartFailures(t *testing.T) {
	requireSandbox(t, "that servers failing to start are reported without holding up the others")
	const timeout = 2 * time.Second
	wide := goServer("stdio")
	wide.Network = tools.NetworkUnrestricted
	m := newManager(t, &Options{
		Servers: map[string]ServerConfig{
			"good":    goServer("stdio"),
			"missing": {Command: "/nonexistent/mcp-server"},
			"crash":   goServer("crash"),
			"hang":    goServer("hang"),
			"wide":    wide,
		},
		MaxNetwork:     tools.NetworkLoopback,
		ConnectTimeout: timeout,
	})
	t0 := time.Now()
	m.Connect(context.Background())
	if d := time.Since(t0); d > timeout+5*time.Second {
		t.Errorf("Connect took %v with a %v timeout", d, timeout)
	}
	for name, want := range map[string]string{
		"missing": "/nonexistent/mcp-server",
		"crash":   "exited with code 3 during start-up; its stderr ends with: test server: boom, cannot start",
		"hang":    "did not finish starting within 2s",
		"wide":    `declares network "unrestricted"; this session allows at most "loopback"`,
	} {
		st := statusOf(t, m, name)
		if st.State != StateFailed || !strings.Contains(st.Error, want) {
			t.Errorf("%s: %+v, want failed with %q", name, st, want)
		}
		if len(st.Tools) != 0 {
			t.Errorf("%s: a failed server lists tools", name)
		}
	}
	if st := statusOf(t, m, "good"); st.State != StateConnected {
		t.Errorf("good: %+v", st)
	}
	for _, n := range toolNames(m.Tools()) {
		if s, _, ok := ParseToolName(n); ok && s != "good" {
			t.Errorf("tool %s of a failed server offered", n)
		}
	}
	t0 = time.Now()
	if err := m.Close(); err != nil {
		t.Error(err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	for _, mode := range []string{"hang", "crash", "stdio"} {
		if n := testServerProcs(t, mode); n != 0 {
			t.Errorf("%d %s server processes left after Close", n, mode)
		}
	}
}

// authorized rejects requests without the expected bearer token.
func authorized(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func TestManagerHTTP(t *testing.T) {
	srv := newTestSDKServer()
	// Registered before the manager's cleanup, so they run after it: a
	// test server waits for its open streams when it closes.
	streamable := httptest.NewServer(authorized("t0k", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	t.Cleanup(streamable.Close)
	sse := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(sse.Close)

	t.Setenv("MCP_TEST_TOKEN", "t0k")
	cfg, err := ParseConfig(fmt.Appendf(nil, `{"mcpServers": {
		"web":    {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"}},
		"nokey":  {"type": "streamable-http", "url": %q},
		"legacy": {"type": "sse", "url": %q, "network": "loopback"}
	}}`, streamable.URL, streamable.URL, sse.URL))
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, &Options{Servers: cfg.Servers, ConnectTimeout: 10 * time.Second})
	m.Connect(context.Background())
	checkTestServer(t, m, "web")
	checkTestServer(t, m, "legacy")
	if st := statusOf(t, m, "nokey"); st.State != StateFailed || !strings.Contains(st.Error, "nauthorized") {
		t.Errorf("without the header: %+v", st)
	}
	want := tools.Security{Network: tools.NetworkLoopback, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsExternal}
	if st := statusOf(t, m, "web"); st.Security != want {
		t.Errorf("security %+v, want %+v (derived from a loopback URL)", st.Security, want)
	}
	if findTool(t, m, "mcp__web__echo").ReadOnly() {
		t.Error("an HTTP server's readOnlyHint was believed without trustAnnotations")
	}

	// The server goes away mid-session: calls fail, they do not hang.
	streamable.CloseClientConnections()
	streamable.Close()
	t0 := time.Now()
	if r := call(t, m, "mcp__web__echo", `{"text": "anyone?"}`); !r.IsError {
		t.Errorf("call to a closed server: %+v", r)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("the failed call took %v", d)
	}
}

func TestDialControl(t *testing.T) {
	for _, tc := range []struct {
		mode tools.Network
		addr string
		ok   bool
	}{
		{tools.NetworkLoopback, "127.0.0.1:80", true},
		{tools.NetworkLoopback, "127.9.9.9:80", true},
		{tools.NetworkLoopback, "[::1]:443", true},
		{tools.NetworkLoopback, "[::ffff:127.0.0.1]:443", true},
		{tools.NetworkLoopback, "10.1.2.3:80", false},
		{tools.NetworkLoopback, "93.184.216.34:443", false},
		{tools.NetworkPrivate, "192.168.1.1:80", true},
		{tools.NetworkPrivate, "[fd00::1]:80", true},
		{tools.NetworkPrivate, "127.0.0.1:80", true},
		{tools.NetworkPrivate, "8.8.8.8:53", false},
	} {
		err := dialControl(tc.mode)("tcp", tc.addr, nil)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrNetworkRefused)) {
			t.Errorf("%s %s: %v, want ok=%v", tc.mode, tc.addr, err, tc.ok)
		}
	}
	if dialControl(tools.NetworkUnrestricted) != nil {
		t.Error("unrestricted should not filter")
	}
}

func TestManagerInProcessEntry(t *testing.T) {
	srv := NewServer("docs", "1")
	AddTool(srv, tools.Must(tools.New("count", "Counts words.",
		func(ctx *tools.Context, in echoArgs) (int, error) { return len(strings.Fields(in.Text)), nil },
		&tools.Options{Security: &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace}})))
	srv.SDK().AddResource(&sdk.Resource{URI: "docs://readme", Name: "readme", MIMEType: "text/markdown"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Read me"}}}, nil
		})
	t.Cleanup(func() { srv.Close() })
	m := newManager(t, &Options{Servers: map[string]ServerConfig{"docs": {Server: srv}}})
	st := m.Connect(context.Background())
	if st[0].State != StateConnected || st[0].Type != TypeSDK || !reflect.DeepEqual(st[0].Tools, []string{"mcp__docs__count"}) {
		t.Fatalf("%+v", st)
	}
	ts := m.Tools()
	if len(ts) != 3 || ts[0] != srv.Tools()[0] {
		t.Fatalf("tools %v: the in-process server's own tool values must be returned", toolNames(ts))
	}
	if m.Traits(ts[0]).Forwards || !m.Traits(ts[1]).Forwards || !m.Traits(ts[2]).Forwards {
		t.Error("forwarding marks: the resource tools forward, the in-process server's own tool does not")
	}
	// The resource handler here is the caller's Go code, run in this
	// process: no read-only hint is trusted (a security review read
	// /etc/hostname through such a handler, allowed by default).
	if m.Traits(ts[0]).TrustedReadOnly || m.Traits(ts[1]).TrustedReadOnly || m.Traits(ts[2]).TrustedReadOnly {
		t.Error("an in-process server's resources: no read-only hint may be trusted")
	}
	if r := ts[0].Call(nil, json.RawMessage(`{"text": "one two three"}`)); r.TextOf() != "3" {
		t.Errorf("count: %+v", r)
	}
	r := call(t, m, ReadResourceTool, `{"server": "docs", "uri": "docs://readme"}`)
	if r.IsError || r.TextOf() != "[resource docs://readme]\n# Read me" {
		t.Errorf("read: %+v", r)
	}
	if sec := findTool(t, m, ListResourcesTool).Security(); sec == nil || sec.Filesystem != tools.FilesystemWorkspace {
		t.Errorf("resource tools declare %+v; want at least the server's tools' reach", sec)
	}
	if r := call(t, m, ReadResourceTool, `{"server": "nope", "uri": "x://y"}`); !r.IsError || !strings.Contains(r.TextOf(), `no MCP server named "nope"`) {
		t.Errorf("unknown server: %+v", r)
	}
	m.Close()
	// The in-process server belongs to the program, not the session.
	if r := ts[0].Call(nil, json.RawMessage(`{"text": "still works"}`)); r.IsError {
		t.Errorf("after the manager closed: %+v", r)
	}
}

// TestManagerConcurrentCalls runs many calls at once over one stdio
// session (and the race detector over the manager).
func TestManagerConcurrentCalls(t *testing.T) {
	requireSandbox(t, "concurrent calls over one stdio session")
	m := newManager(t, &Options{Servers: map[string]ServerConfig{"go": goServer("stdio")}})
	m.Connect(context.Background())
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := call(t, m, "mcp__go__echo", fmt.Sprintf(`{"text": "n%d"}`, i))
			if r.IsError || r.TextOf() != fmt.Sprintf("echo: n%d", i) {
				errs <- r.TextOf()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// testServerProcs counts live processes running the test server in mode.
func testServerProcs(t *testing.T, mode string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(env), "\x00"), testServerEnv+"="+mode) {
			n++
		}
	}
	return n
}

func TestManagerCloseWhileConnecting(t *testing.T) {
	requireSandbox(t, "that Close during start-up leaves no server process")
	// Closed before it was ever started: nothing to wait for.
	m, err := NewManager(&Options{Servers: map[string]ServerConfig{"go": goServer("stdio")}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { m.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close of a manager never started hangs")
	}
	if st := m.Status()[0]; st.State != StateClosed {
		t.Errorf("%+v", st)
	}

	// Closed while a server that never answers is starting.
	m = newManager(t, &Options{Servers: map[string]ServerConfig{"hang": goServer("hang"), "go": goServer("stdio")}, ShutdownGrace: 500 * time.Millisecond})
	m.Start(context.Background())
	deadline := time.Now().Add(5 * time.Second)
	for testServerProcs(t, "hang") == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if testServerProcs(t, "hang") == 0 {
		t.Fatal("the hanging server never started")
	}
	t0 := time.Now()
	m.Close()
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	if n := testServerProcs(t, "hang"); n != 0 {
		t.Errorf("%d hanging server processes left after Close", n)
	}
	for _, st := range m.Status() {
		if st.State != StateClosed {
			t.Errorf("%+v", st)
		}
	}
	if len(m.Tools()) != 0 {
		t.Errorf("tools after Close: %v", toolNames(m.Tools()))
	}
}

func TestManagerConnectCancelled(t *testing.T) {
	requireSandbox(t, "that ending the session's context abandons connection attempts")
	m := newManager(t, &Options{Servers: map[string]ServerConfig{"hang": goServer("hang")}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	m.Connect(ctx)
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("Connect took %v after its context ended", d)
	}
	deadline := time.Now().Add(3 * time.Second)
	for statusOf(t, m, "hang").State == StatePending && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := statusOf(t, m, "hang"); st.State != StateFailed || !strings.Contains(st.Error, "abandoned") {
		t.Errorf("%+v", st)
	}
}
