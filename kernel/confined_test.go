package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

func TestMain(m *testing.M) {
	// A confined handler runs in a re-execution of this test binary, which
	// runs only the tools handed over here (all built at package level).
	confined.Serve(confinedTestTools()...)
	// The external MCP server of mcp_test.go is this binary too.
	if os.Getenv(mcpServerEnv) != "" {
		os.Exit(serveMCPStdio())
	}
	os.Exit(m.Run())
}

// confinedTestTools are the tools of this package's tests that run
// confined; a test that runs another one confined is refused at Query
// (CheckConfinedTools) with the tool's name.
func confinedTestTools() []*tools.Tool {
	ts := []*tools.Tool{benchNoop, benchPlainTool, probeWorkspace, probeNoFS, probeLoopback, probeRoot, probeNet, twinA, twinB}
	ts = append(ts, ExternalConfinedTools...)
	ts = append(ts, benchMCPServer.Tools()...)
	ts = append(ts, loopbackServer.Tools()...)
	return append(ts, orders.Tools()...)
}

type probeIn struct {
	Read  string `json:"read,omitempty"`
	Dial  string `json:"dial,omitempty"`
	Write string `json:"write,omitempty"`
	// SetID: make this workspace file setuid (chmod 4755 through the
	// workspace root), the privilege-planting attack of issue 11.
	SetID string `json:"setid,omitempty"`
	// ProxyGet: GET these URLs through the domain proxy the handler's
	// environment names (HTTP_PROXY), or directly when it names none.
	ProxyGet []string `json:"proxy_get,omitempty"`
}

// probe tries what a handler might: read a file, dial an address, write a
// workspace file (recording its pre-image first), and emit an event.
func probe(c *tools.Context, in probeIn) (map[string]string, error) {
	out := map[string]string{}
	if in.Read != "" {
		out["read"] = readOrErr(in.Read)
	}
	if in.Dial != "" {
		conn, err := net.Dial("tcp", in.Dial)
		if err != nil {
			out["dial"] = "err: " + err.Error()
		} else {
			conn.Close()
			out["dial"] = "ok"
		}
	}
	if in.Write != "" {
		if c.Root == nil {
			out["write"] = "err: no workspace"
		} else if err := c.RecordSnapshot(in.Write); err != nil {
			out["write"] = "err: " + err.Error()
		} else if err := c.Root.WriteFile(in.Write, []byte("written"), 0o644); err != nil {
			out["write"] = "err: " + err.Error()
		} else {
			out["write"] = "ok"
		}
	}
	if in.SetID != "" && c.Root != nil {
		out["setid"] = "ok"
		if err := c.Root.WriteFile(in.SetID, []byte("#!/bin/sh\n"), 0o755); err != nil {
			out["setid"] = "err: " + err.Error()
		} else if err := c.Root.Chmod(in.SetID, 0o755|os.ModeSetuid); err != nil {
			out["setid"] = "err: " + err.Error()
		}
	}
	for i, u := range in.ProxyGet {
		tr := &http.Transport{}
		if p := os.Getenv("HTTP_PROXY"); p != "" {
			pu, err := url.Parse(p)
			if err != nil {
				return nil, err
			}
			tr.Proxy = http.ProxyURL(pu)
		}
		key := "proxy_get" + strconv.Itoa(i)
		resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get(u)
		switch {
		case err != nil:
			out[key] = "err: " + err.Error()
		case resp.StatusCode != http.StatusOK:
			out[key] = "err: " + resp.Status
		default:
			out[key] = "ok"
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	c.Emit("probed", map[string]int{"checks": len(out)})
	return out, nil
}

func readOrErr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "err: " + err.Error()
	}
	return "ok: " + string(b)
}

var (
	probeWorkspace = tools.Must(tools.New("probe_ws", "probes its confinement", probe, &tools.Options{
		Security: &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsWorkspace}}))
	probeNoFS = tools.Must(tools.New("probe_nofs", "probes its confinement", probe, &tools.Options{
		Security: &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemNone}}))
)

type snapshotLog struct {
	mu    sync.Mutex
	paths []string
}

func (s *snapshotLog) RecordSnapshot(p string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, p)
	return nil
}

// TestCustomHandlersRunConfined runs the same handler in-process (where the
// attacks work, so the test proves something) and confined (where they are
// blocked), under the profile its Security declares.
func TestCustomHandlersRunConfined(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY 0xC0FFEE"), 0o600); err != nil {
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
	input := func(write string) string {
		b, _ := json.Marshal(probeIn{Read: secret, Dial: ln.Addr().String(), Write: write, SetID: "planted"})
		return string(b)
	}
	run := func(inProcess bool, tool string, write string) (map[string]string, []Event, *snapshotLog) {
		t.Helper()
		e := newEnv(t)
		o := e.opts(script(t, `{"turns": [{"tool_calls": [{"id": "p", "name": "`+tool+`", "input": `+input(write)+`}]}, {"text": "done"}]}`))
		o.InProcessHandlers = inProcess
		o.CustomTools = []*tools.Tool{probeWorkspace, probeNoFS}
		o.AllowedTools = []string{"probe_*"}
		snaps := &snapshotLog{}
		o.Snapshots = snaps
		evs, err := collect(t, context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		res := byType(evs, EventToolResult)[0]
		if res.ToolResult.IsError {
			t.Fatalf("%s (inProcess=%v) failed: %s", tool, inProcess, resultText(res))
		}
		var out map[string]string
		if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
			t.Fatalf("result %q: %v", resultText(res), err)
		}
		return out, evs, snaps
	}

	free, _, _ := run(true, "probe_ws", "")
	if free["read"] != "ok: PRIVATE KEY 0xC0FFEE" || free["dial"] != "ok" || free["setid"] != "ok" {
		t.Fatalf("in-process the attacks must work, or this test proves nothing: %v", free)
	}

	got, evs, snaps := run(false, "probe_ws", "out.txt")
	if !refusedOutside(got["read"]) {
		t.Errorf("confined read of a secret outside the workspace: %q", got["read"])
	}
	if !strings.HasPrefix(got["dial"], "err:") {
		t.Errorf("confined dial with network none: %q", got["dial"])
	}
	if got["write"] != "ok" {
		t.Errorf("workspace write declared workspace: %q", got["write"])
	}
	if !strings.Contains(got["setid"], "operation not permitted") {
		t.Errorf("confined chmod 4755 of a workspace file: %q", got["setid"])
	}
	// Twice: the handler's own RecordSnapshot (proxied from the child),
	// then the sandbox's change capture when the handler opens the file.
	// (Then "planted", which the handler creates for the chmod attack.)
	if len(snaps.paths) < 2 || snaps.paths[0] != "out.txt" || snaps.paths[1] != "out.txt" {
		t.Errorf("RecordSnapshot from the child and its capture reached the parent as %v", snaps.paths)
	}
	if c := byType(evs, EventCustom); len(c) != 1 || c[0].Custom.Name != "probed" {
		t.Errorf("custom events from the child: %+v", c)
	}

	nofs, _, _ := run(false, "probe_nofs", "x.txt")
	if !strings.HasPrefix(nofs["write"], "err:") || !refusedOutside(nofs["read"]) {
		t.Errorf("a handler declaring no filesystem access: %v", nofs)
	}
}

var (
	probeLoopback = tools.Must(tools.New("probe_lo", "probes its confinement", probe, &tools.Options{
		Security: &tools.Security{Network: tools.NetworkLoopback, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsWorkspace}}))
	probeRoot = tools.Must(tools.New("probe_root", "probes its confinement", probe, &tools.Options{
		Security: &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemUnrestricted}}))
)

// TestHandlerDeclarationOnlyNarrows: a custom tool's declared Security
// narrows the session's sandbox and never widens it. Each attack is run
// twice: under a session policy that grants what the tool declares (the
// probe reaches it: the test proves something) and under one that does
// not (the declaration alone must not get it there). A declared network
// the session does not grant goes no further than the session's start: it
// is refused there, naming the tool, rather than narrowed in silence.
func TestHandlerDeclarationOnlyNarrows(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("OUTSIDE THE WORKSPACE"), 0o644); err != nil {
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
	probes := map[string]*tools.Tool{"probe_ws": probeWorkspace, "probe_lo": probeLoopback, "probe_root": probeRoot}
	query := func(tool string, sb, ceiling *sandbox.Policy, in probeIn) ([]Event, error) {
		t.Helper()
		e := newEnv(t)
		b, _ := json.Marshal(in)
		o := e.opts(script(t, `{"turns": [{"tool_calls": [{"id": "p", "name": "`+tool+`", "input": `+string(b)+`}]}, {"text": "done"}]}`))
		o.InProcessHandlers = false
		o.CustomTools = []*tools.Tool{probes[tool]}
		o.AllowedTools = []string{"probe_*"}
		o.Sandbox, o.HandlerCeiling = sb, ceiling
		evs, err := collect(t, context.Background(), o)
		if errors.Is(err, sandbox.ErrUnsupported) {
			t.Skipf("the sandbox cannot run here (%v); this test would have checked that a declared Security never widens the session's sandbox", err)
		}
		return evs, err
	}
	run := func(tool string, sb, ceiling *sandbox.Policy, in probeIn) map[string]string {
		t.Helper()
		evs, err := query(tool, sb, ceiling, in)
		if err != nil {
			t.Fatal(err)
		}
		res := byType(evs, EventToolResult)[0]
		var out map[string]string
		if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
			t.Fatalf("%s: result %q: %v", tool, resultText(res), err)
		}
		return out
	}
	dial := probeIn{Dial: ln.Addr().String()}
	read := probeIn{Read: outside}
	none := &sandbox.Policy{Network: sandbox.NetworkNone}
	loopback := &sandbox.Policy{Network: sandbox.NetworkLoopback}
	rootReadable := &sandbox.Policy{ReadOnlyPaths: []string{"/"}}

	// Network: the narrower of the session's and the declaration wins.
	if got := run("probe_lo", loopback, nil, dial); got["dial"] != "ok" {
		t.Fatalf("with the session at loopback the probe must connect, or this test proves nothing: %v", got)
	}
	evs, err := query("probe_lo", none, nil, dial)
	if err == nil || !strings.Contains(err.Error(), `the probe_lo tool cannot run confined: it declares network "loopback", beyond the "none" its handler ceiling allows`) {
		t.Errorf("a tool declaring loopback under a session with network none: %v", err)
	}
	if len(byType(evs, EventToolResult)) > 0 {
		t.Errorf("the session refused at its start still ran a tool: %v", byType(evs, EventToolResult))
	}
	// A ceiling named on purpose lets handlers reach more than commands.
	if got := run("probe_lo", none, loopback, dial); got["dial"] != "ok" {
		t.Errorf("with HandlerCeiling at loopback a tool declaring loopback must connect: %v", got)
	}
	// ... and a declaration still narrows under it.
	if got := run("probe_ws", none, loopback, dial); !strings.HasPrefix(got["dial"], "err:") {
		t.Errorf("a tool declaring network none connected under a loopback ceiling: %v", got)
	}

	// Filesystem: "/" is readable only if the session already grants it.
	if got := run("probe_root", rootReadable, nil, read); got["read"] != "ok: OUTSIDE THE WORKSPACE" {
		t.Fatalf("with \"/\" readable the probe must read the file, or this test proves nothing: %v", got)
	}
	if got := run("probe_root", nil, nil, read); !refusedOutside(got["read"]) {
		t.Errorf("a tool declaring filesystem unrestricted read outside the workspace the session confines it to: %v", got)
	}
	// A tool declaring the workspace does not get the session's "/".
	if got := run("probe_ws", rootReadable, nil, read); !refusedOutside(got["read"]) {
		t.Errorf("a tool declaring filesystem workspace read outside it: %v", got)
	}
}

var probeNet = tools.Must(tools.New("probe_net", "probes its confinement", probe, &tools.Options{
	Security: &tools.Security{Network: tools.NetworkUnrestricted, Filesystem: tools.FilesystemNone}}))

// TestHandlerNetworkNoneGetsNoProxy: a session that grants a domain (so
// its sandboxes run the domain proxy) and asks about unknown ones. A
// handler declaring unrestricted network reaches the granted server and
// asks about another through the proxy: the route works, so the test
// proves something. A handler declaring network none reaches neither and
// never puts a question to the person. (Before, HandlerPolicy kept the
// ceiling's domains and asker for every handler: probe_nofs got the
// proxy, fetched the granted server and asked about the other.)
func TestHandlerNetworkNoneGetsNoProxy(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go http.Serve(other, srv.Config.Handler)
	granted, unknown := srv.Listener.Addr().String(), other.Addr().String()

	var asked atomic.Int32
	run := func(tool string) map[string]string {
		t.Helper()
		e := newEnv(t)
		b, _ := json.Marshal(probeIn{ProxyGet: []string{"http://" + granted + "/", "http://" + unknown + "/"}})
		o := e.opts(script(t, `{"turns": [{"tool_calls": [{"id": "p", "name": "`+tool+`", "input": `+string(b)+`}]}, {"text": "done"}]}`))
		o.InProcessHandlers = false
		o.CustomTools = []*tools.Tool{probeNet, probeNoFS}
		o.AllowedTools = []string{"probe_*"}
		o.Sandbox = &sandbox.Policy{Network: sandbox.NetworkNone, AllowDomains: []string{granted}}
		o.OnUnknownDomain = func(context.Context, sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
			asked.Add(1)
			return sandbox.DomainRefuse, nil
		}
		evs, err := collect(t, context.Background(), o)
		if errors.Is(err, sandbox.ErrUnsupported) {
			t.Skipf("the sandbox cannot run here (%v); this test would have checked that a handler declaring network none gets no domain proxy", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		res := byType(evs, EventToolResult)[0]
		var out map[string]string
		if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
			t.Fatalf("%s: result %q: %v", tool, resultText(res), err)
		}
		return out
	}
	if got := run("probe_net"); got["proxy_get0"] != "ok" || hits.Load() != 1 || asked.Load() != 1 {
		t.Fatalf("a handler declaring unrestricted network must reach the granted server and be asked about the other through the proxy, or this test proves nothing: %v (server hit %d times, asked %d)", got, hits.Load(), asked.Load())
	}
	got := run("probe_nofs")
	if !strings.HasPrefix(got["proxy_get0"], "err:") || !strings.HasPrefix(got["proxy_get1"], "err:") || hits.Load() != 1 {
		t.Errorf("a handler declaring network none reached a server: %v (server hit %d times)", got, hits.Load())
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("a handler declaring network none put %d questions to the person", n-1)
	}
}

// refusedOutside says whether a confined read of a file outside the grants
// failed as the sandbox makes it fail: not there at all under the root
// skeleton (ENOENT), or refused by Landlock where there is no mount
// namespace (EACCES). Each caller first shows the read working unconfined.
func refusedOutside(s string) bool {
	return strings.Contains(s, "no such file or directory") || strings.Contains(s, "permission denied")
}
