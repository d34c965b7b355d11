package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/sandbox"
)

// confinedCallEnv marks a process started to run one confined tool call.
const confinedCallEnv = "LITE_AGENT_CONFINED_CALL"

// handshakeTimeout bounds how long the parent waits for a child to show it
// serves confined calls: a program whose main does not call
// ServeConfinedCall would otherwise run its own main in the child.
const handshakeTimeout = 10 * time.Second

// wireMsg is one line of the parent↔child protocol (JSON lines on the
// child's stdin and stdout). Only the fields of Kind are set.
type wireMsg struct {
	// parent→child: "call", "reply"; child→parent: "ready", "emit",
	// "snapshot", "approval", "input", "result".
	Kind string `json:"kind"`

	// ready, call: the tool's name.
	Tool string `json:"tool,omitempty"`

	// call
	SessionID string          `json:"session_id,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
	Call      *Call           `json:"call,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Deadline  time.Time       `json:"deadline,omitzero"`

	// emit
	Name string          `json:"name,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`

	// snapshot
	Path string `json:"path,omitempty"`

	// approval, input
	Approval *ApprovalRequest `json:"approval,omitempty"`
	Question string           `json:"question,omitempty"`

	// reply
	OK     bool   `json:"ok,omitempty"`
	Error  string `json:"error,omitempty"`
	Answer string `json:"answer,omitempty"`

	// result
	Result *Result `json:"result,omitempty"`
}

// HandlerPolicy narrows ceiling to what a custom tool declared, for
// running its handler in a confined child. A declaration only ever
// narrows: the result is the intersection of ceiling (the most the
// session lets a handler have) and the declaration, never more than
// either.
//
//   - Network: the narrower of ceiling's and the declared mode (a tool
//     declaring loopback under a ceiling of none gets none); ceiling's
//     domain grants (the proxy) and its OnUnknownDomain only for a tool
//     declaring unrestricted: the proxy reaches the internet, and its
//     questions reach the person;
//   - Filesystem none: no workspace at all (the child works in an empty
//     private directory), no extra paths;
//   - Filesystem workspace: the workspace, read-only when SideEffects is
//     none, and ceiling's extra paths except a grant of "/" (the whole
//     filesystem is what "unrestricted" declares, not "workspace");
//   - Filesystem unrestricted: ceiling's paths as they are — "/" is
//     readable only if ceiling already grants it, writable only if
//     ceiling grants it read-write. It is never added here.
//
// An undeclared tool gets ceiling. The program's own executable is made
// readable, since the child is a re-execution of it.
func HandlerPolicy(ceiling sandbox.Policy, sec *Security) (sandbox.Policy, error) {
	exe, err := os.Executable()
	if err != nil {
		return sandbox.Policy{}, fmt.Errorf("locating this program to re-execute it: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	p := ceiling
	p.ReadOnlyPaths = append(append([]string(nil), ceiling.ReadOnlyPaths...), exe)
	p.ReadWritePaths = append([]string(nil), ceiling.ReadWritePaths...)
	if sec == nil {
		return p, nil
	}
	s := sec.Normalized()
	NarrowNetwork(&p, s.Network)
	switch s.Filesystem {
	case FilesystemNone:
		p.Workspace = ""
		p.ReadOnlyPaths = []string{exe}
		p.ReadWritePaths = nil
	case FilesystemWorkspace:
		p.ReadOnlyPaths = WithoutRoot(p.ReadOnlyPaths)
		p.ReadWritePaths = WithoutRoot(p.ReadWritePaths)
		if s.SideEffects == SideEffectsNone {
			ReadOnlyWorkspace(&p, ceiling.Workspace)
		}
	case FilesystemUnrestricted:
		// Nothing is added: ceiling decides how much of "/" there is.
	}
	return p, nil
}

// ReadOnlyWorkspace is what a declaration of filesystem "workspace" with
// side effects "none" gets, the one rule for custom handlers
// (HandlerPolicy) and sandboxed MCP servers: the workspace and every write
// grant of the ceiling (--allow-write, a toolchain cache) become
// read-only. Kept writable, the grants were writable through a sandbox
// with no workspace, where change capture — which refuses a new .git —
// does not run: a server declaring no side effects could plant a
// repository, hooks and all, in a write grant.
func ReadOnlyWorkspace(p *sandbox.Policy, workspace string) {
	if workspace != "" {
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, workspace)
	}
	p.ReadOnlyPaths = append(p.ReadOnlyPaths, p.ReadWritePaths...)
	p.Workspace = ""
	p.ReadWritePaths = nil
}

// NarrowNetwork narrows p's network to what declared allows, the one
// rule for custom handlers (HandlerPolicy) and sandboxed MCP servers:
// the narrower of the two modes, and the domain proxy (AllowDomains, and
// OnUnknownDomain, which asks the person about other hosts) only for a
// declaration of unrestricted network — the proxy is a way to the
// internet. Were the policy's grants kept, a handler declaring none (or
// loopback, or private) would get a proxy to the allowed domains, and the
// asker would let it put questions to the person about any other host. (Under loopback
// and private the handler could still reach another sandbox's proxy on
// 127.0.0.1 — the bash tool's, say — but the sandbox refuses every live
// proxy to all commands but its own: TestOtherSandboxesProxyRefused.) A
// mode this package does not know is not unrestricted (Within fails
// closed).
func NarrowNetwork(p *sandbox.Policy, declared Network) {
	p.Network = NarrowerNetwork(p.Network, declared)
	if !NetworkUnrestricted.Within(declared) {
		p.AllowDomains, p.DenyDomains, p.DomainSources = nil, nil, nil
		p.OnUnknownDomain = nil
	}
}

// NarrowerNetwork returns the narrower of two network modes (none <
// loopback < private < unrestricted; "" is none), the one rule by which a
// declaration meets the policy it runs under: sandbox.NetworkMode.Narrower,
// which a mode it does not know never wins.
func NarrowerNetwork(a, b sandbox.NetworkMode) sandbox.NetworkMode { return a.Narrower(b) }

// withoutRoot drops grants of the whole filesystem from paths.
func WithoutRoot(paths []string) []string {
	out := paths[:0:0]
	for _, p := range paths {
		if filepath.Clean(p) != "/" {
			out = append(out, p)
		}
	}
	return out
}

// CallConfined runs the tool's handler in a child process confined by sb:
// the program re-executes itself, the child (which must call
// ServeConfinedCall(t, ...) at the start of main) runs the handler and
// sends the result back; a t that ServeConfinedCall was not handed is
// refused before any process starts (CheckConfinable). Input is validated here first, so bad input never starts a
// process. Emit, RecordSnapshot, approvals and user input reach the parent
// over the same channel. When the call's context ends, the whole process
// tree of the child is killed.
//
// workspace is what the child's Context.Workspace and Root are opened on
// (empty when the tool declared no filesystem access); whether it is
// writable is the sandbox's business, not the child's.
func (t *Tool) CallConfined(ctx *Context, sb *sandbox.Sandbox, workspace string) *Result {
	if ctx == nil {
		ctx = &Context{}
	}
	// Before anything starts: a child that would not find t (or a program
	// that never serves confined calls) fails here at once, not after a
	// process start and a handshake.
	if err := CheckConfinable(t); err != nil {
		return Errorf("%v", err)
	}
	prepared, _, errResult := t.prepareInput(ctx.Call.Input)
	if errResult != nil {
		return errResult
	}
	parent := ctx.Context()
	if t.timeout > 0 {
		var cancel context.CancelFunc
		parent, cancel = context.WithTimeout(parent, t.timeout)
		defer cancel()
	}
	exe, err := os.Executable()
	if err != nil {
		return Errorf("the %s tool could not start its confined child: %v", t.name, err)
	}
	toChild, childIn := io.Pipe()
	childOut, fromChild := io.Pipe()
	var stderr cappedBuffer
	stderr.limit = 16 << 10
	proc, err := sb.Start(parent, &sandbox.Command{
		Path:   exe,
		Args:   []string{exe},
		Env:    []string{confinedCallEnv + "=1"},
		Stdin:  toChild,
		Stdout: fromChild,
		Stderr: &stderr,
		// Files the handler writes itself (os.WriteFile, ...) get their
		// pre-images recorded like a command's.
		BeforeChange:  ctx.BeforeChange(),
		ForeignChange: ctx.ForeignChange(),
		Writers:       ctx.Writers(),
	})
	if err != nil {
		return Errorf("the %s tool could not start in the sandbox: %v", t.name, err)
	}
	// When the child's tree is gone, end both pipes so that neither side
	// of the protocol below can block forever.
	waited := make(chan struct{})
	var status *sandbox.ExitStatus
	var waitErr error
	go func() {
		status, waitErr = proc.Wait()
		fromChild.Close()
		toChild.Close()
		close(waited)
	}()

	res := t.converse(ctx, parent, bufio.NewReader(childOut), childIn, &wireMsg{
		Kind: "call", Tool: t.name, SessionID: ctx.SessionID, Workspace: workspace,
		Call: &ctx.Call, Input: prepared, Deadline: deadlineOf(parent),
	})
	// The child has sent its result (and is exiting) or has broken the
	// protocol; either way nothing of its tree may outlive the call.
	proc.Kill()
	childIn.Close()
	childOut.Close()
	<-waited
	if res != nil {
		return res
	}
	switch {
	case waitErr != nil:
		return Errorf("the %s tool's confined child failed: %v", t.name, waitErr)
	case status.TimedOut || parent.Err() != nil:
		return Errorf("the %s tool did not finish before its deadline and was killed", t.name)
	case status.MemoryExceeded:
		return Errorf("the %s tool was killed: it exceeded the sandbox's memory limit", t.name)
	}
	return Errorf("the %s tool's confined child exited (code %d) without a result%s", t.name, status.Code, stderr.tail())
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// converse runs the parent's side of the protocol. It returns nil when the
// child ended without a result.
func (t *Tool) converse(ctx *Context, callCtx context.Context, r *bufio.Reader, w io.Writer, call *wireMsg) *Result {
	enc := json.NewEncoder(w)
	readMsg := func() (*wireMsg, error) {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var m wireMsg
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("malformed message from the child: %v", err)
		}
		return &m, nil
	}
	// The handshake: a child that does not send "ready" promptly is not
	// serving confined calls (its main lacks ServeConfinedCall).
	type first struct {
		m   *wireMsg
		err error
	}
	got := make(chan first, 1)
	go func() { m, err := readMsg(); got <- first{m, err} }()
	timer := time.NewTimer(handshakeTimeout)
	defer timer.Stop()
	select {
	case f := <-got:
		if errors.Is(f.err, io.EOF) || errors.Is(f.err, io.ErrClosedPipe) {
			return nil // the child ended; its exit status says why
		}
		if f.err != nil {
			return Errorf("the %s tool's confined child does not speak the protocol (%v): the program must call tools.ServeConfinedCall(its tools...) first thing in main, before anything that may block", t.name, f.err)
		}
		if f.m.Kind != "ready" {
			return Errorf("the %s tool's confined child spoke out of turn (%q); is ServeConfinedCall called at the start of main?", t.name, f.m.Kind)
		}
	case <-timer.C:
		return Errorf("the %s tool's confined child did not answer within %s: the program must call tools.ServeConfinedCall(its tools...) first thing in main, before anything that may block", t.name, handshakeTimeout)
	case <-callCtx.Done():
		return nil
	}
	if err := enc.Encode(call); err != nil {
		return nil
	}
	for {
		m, err := readMsg()
		if err != nil {
			return nil
		}
		reply := &wireMsg{Kind: "reply", OK: true}
		switch m.Kind {
		case "result":
			if m.Result == nil {
				return Errorf("the %s tool's confined child sent an empty result", t.name)
			}
			return m.Result
		case "emit":
			var data any
			_ = json.Unmarshal(m.Data, &data)
			ctx.Emit(m.Name, data)
			continue
		case "snapshot":
			if err := ctx.RecordSnapshot(m.Path); err != nil {
				reply.OK, reply.Error = false, err.Error()
			}
		case "approval":
			if ctx.Approval == nil || m.Approval == nil {
				reply.OK, reply.Error = false, "no approval handler (headless)"
			} else if ok, err := ctx.Approval(callCtx, *m.Approval); err != nil || !ok {
				reply.OK = false
				if err != nil {
					reply.Error = err.Error()
				}
			}
		case "input":
			if ctx.UserInput == nil {
				reply.OK, reply.Error = false, "no user-input handler (headless)"
			} else if ans, err := ctx.UserInput(callCtx, m.Question); err != nil {
				reply.OK, reply.Error = false, err.Error()
			} else {
				reply.Answer = ans
			}
		default:
			return Errorf("the %s tool's confined child sent an unknown message %q", t.name, m.Kind)
		}
		if err := enc.Encode(reply); err != nil {
			return nil
		}
	}
}

// ServeConfinedCall makes this program able to run the handlers of ts
// confined, and only those. Call it once, first thing in main, with every
// custom tool the program may run confined (an in-process MCP server's
// tools too: srv.Tools()...): in a normal run it records ts and returns at
// once; in a process started by CallConfined it records the same ts, runs
// the one requested handler and exits, never returning.
//
// Why: Landlock and seccomp confine threads, and a Go closure cannot be
// sent to another process, so a confined handler runs in a fresh copy of
// the program, already confined before its first instruction, and finds
// its handler by the tool's name among ts. Because the parent records the
// same set, a tool the child would not find (not in ts, two tools of one
// name, no call at all) is refused when the session starts
// (CheckConfinable), not at its first call. The handler sees only what
// that copy of the program has: state built in main after this call is
// not there.
//
// It panics when called twice or with a nil tool.
func ServeConfinedCall(ts ...*Tool) {
	serve(ts)
	if os.Getenv(confinedCallEnv) != "1" {
		return
	}
	os.Unsetenv(confinedCallEnv)
	os.Exit(serveConfinedCall())
}

// InConfinedChild reports whether this process was started to serve one
// confined tool call. A program that gets here with it true has not called
// ServeConfinedCall first (the kernel refuses to run an agent then).
func InConfinedChild() bool { return os.Getenv(confinedCallEnv) == "1" }

// cappedBuffer keeps the last bytes written, up to limit.
type cappedBuffer struct {
	mu    sync.Mutex
	buf   []byte
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

func (b *cappedBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(string(b.buf))
	if s == "" {
		return ""
	}
	return "; its stderr ends with:\n" + s
}

// errNoParent is returned by the child's remote services when the parent
// has gone away.
var errNoParent = errors.New("the parent process is gone")
