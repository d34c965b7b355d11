package mcp

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

// extraSystemFiles are read-only files an interpreter needs at start-up
// that sandbox.DefaultSystemPaths does not list: node refuses to start
// when it cannot read the OpenSSL configuration. They hold no secrets.
var extraSystemFiles = []string{"/etc/ssl/openssl.cnf"}

// connectStdio starts the server inside its sandbox and initialises an MCP
// session over its stdin and stdout.
func (c *conn) connectStdio(ctx context.Context) (*sdk.ClientSession, error) {
	stdout, stdin, err := c.startProcess(ctx)
	if err != nil {
		close(c.exited)
		return nil, err
	}
	return c.m.client.Connect(ctx, &sdk.IOTransport{Reader: stdout, Writer: stdin}, nil)
}

// startProcess starts the server confined, its stdio connected to pipes,
// and a watcher that records how it ended. The returned reader and writer
// are the MCP transport.
func (c *conn) startProcess(ctx context.Context) (io.ReadCloser, io.WriteCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	pol, dir, err := c.m.stdioPolicy(&c.cfg, c.sec)
	if err != nil {
		return nil, nil, err
	}
	sb, err := sandbox.New(pol)
	if err != nil {
		return nil, nil, fmt.Errorf("its sandbox cannot be prepared: %w", err)
	}
	c.mu.Lock()
	c.sb = sb
	if !c.sec.Network.Within(pol.Network) {
		// Narrowed to the session's network (stdioPolicy), which
		// MaxNetwork does not refuse: the server runs, and the person
		// learns why its network calls fail.
		c.notes = append(c.notes, fmt.Sprintf("declares network %q but runs with %q, the most the session's sandbox allows", c.sec.Network, cmp.Or(pol.Network, tools.NetworkNone)))
	}
	c.stderr = &tailBuffer{limit: 8 << 10}
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return nil, nil, fmt.Errorf("the session ended before the server started")
	}

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	env := make([]string, 0, len(c.cfg.Env))
	for k, v := range c.cfg.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	// The process lives as long as the session, not as long as this
	// connection attempt: procCtx ends only after Close's graceful part.
	proc, err := sb.Start(c.m.procCtx, &sandbox.Command{
		Path:   c.cfg.Command,
		Args:   append([]string{c.cfg.Command}, c.cfg.Args...),
		Dir:    dir,
		Env:    env,
		Stdin:  stdinR,
		Stdout: stdoutW,
		Stderr: c.stderrBuf(),
		// Set only when the policy captures changes (see stdioPolicy).
		BeforeChange:  c.m.changeHook(pol),
		ForeignChange: c.m.foreignHook(pol),
		// A server lives across tool calls: what it holds open for
		// writing is carried from checkpoint to checkpoint.
		Writers: c.m.writers(pol),
	})
	if err != nil {
		stdinR.Close()
		stdoutW.Close()
		return nil, nil, fmt.Errorf("could not start %s in the sandbox: %w", c.cfg.Command, err)
	}
	c.mu.Lock()
	c.proc = proc
	c.mu.Unlock()
	go func() {
		st, werr := proc.Wait()
		why := describeExit(st, werr)
		c.mu.Lock()
		closing, state := c.closing, c.state
		c.mu.Unlock()
		if !closing {
			when := "during start-up"
			if state == StateConnected {
				when = "mid-session"
			}
			c.fail("the server process %s %s%s", why, when, c.stderrTail())
		}
		// Only now end the transport: a call that was waiting sees the
		// connection close, and finds the reason above.
		stdoutW.CloseWithError(fmt.Errorf("the MCP server process %s", why))
		stdinR.Close()
		close(c.exited)
	}()
	return stdoutR, stdinW, nil
}

func (c *conn) stderrBuf() *tailBuffer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr
}

func describeExit(st *sandbox.ExitStatus, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("ended (%v)", err)
	case st.MemoryExceeded:
		return "was killed for exceeding its memory limit"
	case st.TimedOut:
		return "was killed"
	case st.Signal != 0:
		return fmt.Sprintf("was killed by signal %d", st.Signal)
	}
	return fmt.Sprintf("exited with code %d", st.Code)
}

// stdioPolicy is the sandbox policy of a stdio server: the base policy
// narrowed to the server's network mode and file-system access (the same
// narrowing confined.HandlerPolicy applies to a custom tool's handler: a
// declaration never widens the base), its program and
// ReadOnlyPaths readable. dir is its working directory ("" for the
// sandbox's private temporary directory).
func (m *Manager) stdioPolicy(cfg *ServerConfig, sec tools.Security) (p sandbox.Policy, dir string, err error) {
	if m.opts.Sandbox != nil {
		p = *m.opts.Sandbox
	}
	ws := p.Workspace
	confined.NarrowNetwork(&p, sec.Network)
	p.ReadOnlyPaths = append([]string(nil), p.ReadOnlyPaths...)
	p.ReadWritePaths = append([]string(nil), p.ReadWritePaths...)
	if sec.Filesystem != tools.FilesystemUnrestricted {
		// "/" is what "unrestricted" declares; a narrower entry does not
		// get the base's.
		p.ReadOnlyPaths = confined.WithoutRoot(p.ReadOnlyPaths)
		p.ReadWritePaths = confined.WithoutRoot(p.ReadWritePaths)
	}
	switch sec.Filesystem {
	case tools.FilesystemNone:
		p.Workspace = ""
		p.ReadOnlyPaths = nil
		p.ReadWritePaths = nil
	case tools.FilesystemWorkspace:
		if ws == "" {
			return p, "", fmt.Errorf(`filesystem "workspace" needs a workspace, and the session has none`)
		}
		if sec.SideEffects == tools.SideEffectsNone {
			confined.ReadOnlyWorkspace(&p, ws)
		}
		dir = ws
	case tools.FilesystemUnrestricted:
		// The base decides how much of "/" there is; nothing is added.
		dir = ws
	}
	system := p.SystemPaths
	if system == nil {
		system = sandbox.DefaultSystemPaths()
	}
	for _, f := range extraSystemFiles {
		if _, err := os.Stat(f); err == nil {
			p.ReadOnlyPaths = append(p.ReadOnlyPaths, f)
		}
	}
	progs := programPaths(cfg, system)
	if cfg.FromWorkspace {
		// An agent-writable entry (local clears the flag under a preset
		// that trusts the workspace): only what is readable anyway, and
		// no ReadOnlyPaths of its own.
		progs = workspaceOnly(progs, ws)
	} else {
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, cfg.ReadOnlyPaths...)
	}
	p.ReadOnlyPaths = append(p.ReadOnlyPaths, progs...)
	p.ReadOnlyPaths = dedupe(p.ReadOnlyPaths)
	// The protocol runs over stdout: a cap on output would cut the session
	// mid-message, and a wall-time limit would kill a server that is merely
	// long-lived.
	p.Limits.OutputBytes = math.MaxInt64
	p.Limits.WallTime = 0
	// A server that may change the workspace has its changes captured,
	// when the manager was given somewhere to report them — and, while
	// .git is protected, in any case: change capture is what refuses a
	// new .git (the sandbox captures every command of a sandbox made
	// with CaptureChanges for that rule, with a no-op hook), as it does
	// for the agent's commands (kernel/confine.go). Without it a server a
	// workspace .mcp.json may start could make a .git the user's git
	// would run hooks from.
	p.CaptureChanges = p.Workspace != "" && (m.opts.BeforeChange != nil || !p.GitWritable)
	return p, dir, nil
}

// changeHook is the BeforeChange of a server started under pol.
func (m *Manager) changeHook(pol sandbox.Policy) sandbox.ChangeFunc {
	if !pol.CaptureChanges {
		return nil
	}
	return m.opts.BeforeChange
}

// writers is the Writers of a server started under pol.
func (m *Manager) writers(pol sandbox.Policy) *sandbox.Writers {
	if !pol.CaptureChanges {
		return nil
	}
	return m.opts.Writers
}

// foreignHook is the ForeignChange of a server started under pol.
func (m *Manager) foreignHook(pol sandbox.Policy) sandbox.ForeignFunc {
	if !pol.CaptureChanges {
		return nil
	}
	return m.opts.ForeignChange
}

// workspaceOnly keeps, of an agent-writable entry's program paths, those
// whose real path lies in the workspace's real path, as that real path:
// a path that is in the workspace as written but leads out of it through
// a symlink the agent planted (ws/k -> ~/.ssh/id_rsa, or a linked
// directory on the way) would otherwise be granted, for Landlock's rule
// follows the link to the file it names. The grant is the resolved path,
// so that it is what was checked.
func workspaceOnly(progs []string, ws string) []string {
	if ws == "" {
		return nil
	}
	wsReal, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil
	}
	var out []string
	for _, f := range progs {
		real, err := filepath.EvalSymlinks(f)
		if err == nil && paths.Within(real, wsReal) {
			out = append(out, real)
		}
	}
	return dedupe(out)
}

// programPaths are the paths the server's program needs to be read and run
// that the system paths do not cover: the executable (found in PATH like
// the sandbox does), and any absolute file argument (the script of
// `node /x/server.js`). A file inside a node_modules tree brings the whole
// tree, which holds its dependencies.
func programPaths(cfg *ServerConfig, system []string) []string {
	var files []string
	path := os.Getenv("PATH")
	if v, ok := cfg.Env["PATH"]; ok {
		path = v
	}
	if exe := lookPath(cfg.Command, path); exe != "" {
		files = append(files, exe)
	}
	for _, a := range cfg.Args {
		if filepath.IsAbs(a) {
			if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
				files = append(files, a)
			}
		}
	}
	var out []string
	for _, f := range files {
		cands := []string{f}
		if real, err := filepath.EvalSymlinks(f); err == nil && real != f {
			cands = append(cands, real)
		}
		for _, p := range cands {
			if slices.ContainsFunc(system, func(r string) bool { return paths.Within(p, r) }) {
				continue
			}
			if i := strings.Index(p, "/node_modules/"); i >= 0 {
				p = p[:i+len("/node_modules")]
			}
			out = append(out, p)
		}
	}
	return dedupe(out)
}

func lookPath(cmd, path string) string {
	if strings.Contains(cmd, "/") {
		if filepath.IsAbs(cmd) {
			return cmd
		}
		return ""
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, cmd)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(cmd); err == nil && filepath.IsAbs(p) {
		return p
	}
	return ""
}

func dedupe(ps []string) []string {
	seen := map[string]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// tailBuffer keeps the last bytes a server wrote to stderr, for failure
// reasons.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	limit int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// tail returns the last few lines, on one line.
func (b *tailBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(b.buf)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	s := strings.TrimSpace(strings.Join(lines, " | "))
	if len(s) > 1000 {
		s = "…" + s[len(s)-1000:]
	}
	return s
}
