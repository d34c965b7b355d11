package confined

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// confinedCallEnv marks a process started to run one confined tool call.
const confinedCallEnv = "LITE_AGENT_CONFINED_CALL"

// handshakeTimeout bounds how long the parent waits for a child to show it
// serves confined calls: a program whose main does not call Serve would
// otherwise run its own main in the child.
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
	Call      *tools.Call     `json:"call,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Deadline  time.Time       `json:"deadline,omitzero"`

	// emit
	Name string          `json:"name,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`

	// snapshot
	Path string `json:"path,omitempty"`

	// approval, input
	Approval *tools.ApprovalRequest `json:"approval,omitempty"`
	Question string                 `json:"question,omitempty"`

	// reply
	OK     bool   `json:"ok,omitempty"`
	Error  string `json:"error,omitempty"`
	Answer string `json:"answer,omitempty"`

	// result
	Result *tools.Result `json:"result,omitempty"`
}

// Call runs t's handler in a child process confined by sb: the program
// re-executes itself, the child (which called Serve(t, ...) at the start
// of main) runs the handler and sends the result back; a t that Serve was
// not handed is refused before any process starts (Check). Input is
// validated here first, so bad input never starts a process. Emit,
// RecordSnapshot, approvals and user input reach the parent over the same
// channel. When the call's context ends, the whole process tree of the
// child is killed.
//
// workspace is what the child's Context.Workspace and Root are opened on
// (empty when the tool declared no filesystem access); whether it is
// writable is the sandbox's business, not the child's.
func Call(ctx *tools.Context, t *tools.Tool, sb *sandbox.Sandbox, workspace string) *tools.Result {
	if ctx == nil {
		ctx = &tools.Context{}
	}
	// Before anything starts: a child that would not find t (or a program
	// that never serves confined calls) fails here at once, not after a
	// process start and a handshake.
	if err := Check(t); err != nil {
		return tools.Errorf("%v", err)
	}
	prepared, errResult := t.PrepareInput(ctx.Call.Input)
	if errResult != nil {
		return errResult
	}
	parent := ctx.Context()
	if t.Timeout() > 0 {
		var cancel context.CancelFunc
		parent, cancel = context.WithTimeout(parent, t.Timeout())
		defer cancel()
	}
	exe, err := os.Executable()
	if err != nil {
		return tools.Errorf("the %s tool could not start its confined child: %v", t.Name(), err)
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
		Writers:       Writers(ctx),
	})
	if err != nil {
		return tools.Errorf("the %s tool could not start in the sandbox: %v", t.Name(), err)
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

	res := converse(ctx, t.Name(), parent, bufio.NewReader(childOut), childIn, &wireMsg{
		Kind: "call", Tool: t.Name(), SessionID: ctx.SessionID, Workspace: workspace,
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
		return tools.Errorf("the %s tool's confined child failed: %v", t.Name(), waitErr)
	case status.TimedOut || parent.Err() != nil:
		return tools.Errorf("the %s tool did not finish before its deadline and was killed", t.Name())
	case status.MemoryExceeded:
		return tools.Errorf("the %s tool was killed: it exceeded the sandbox's memory limit", t.Name())
	}
	return tools.Errorf("the %s tool's confined child exited (code %d) without a result%s", t.Name(), status.Code, stderr.tail())
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// converse runs the parent's side of the protocol for the tool named
// name. It returns nil when the child ended without a result.
func converse(ctx *tools.Context, name string, callCtx context.Context, r *bufio.Reader, w io.Writer, call *wireMsg) *tools.Result {
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
	// serving confined calls (its main lacks Serve).
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
			return tools.Errorf("the %s tool's confined child does not speak the protocol (%v): the program must call confined.Serve(its tools...) first thing in main, before anything that may block", name, f.err)
		}
		if f.m.Kind != "ready" {
			return tools.Errorf("the %s tool's confined child spoke out of turn (%q); is confined.Serve called at the start of main?", name, f.m.Kind)
		}
	case <-timer.C:
		return tools.Errorf("the %s tool's confined child did not answer within %s: the program must call confined.Serve(its tools...) first thing in main, before anything that may block", name, handshakeTimeout)
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
				return tools.Errorf("the %s tool's confined child sent an empty result", name)
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
			return tools.Errorf("the %s tool's confined child sent an unknown message %q", name, m.Kind)
		}
		if err := enc.Encode(reply); err != nil {
			return nil
		}
	}
}

// Serve makes this program able to run the handlers of ts confined, and
// only those. Call it once, first thing in main, with every custom tool
// the program may run confined (an in-process MCP server's tools too:
// srv.Tools()...): in a normal run it records ts and returns at once; in
// a process started by Call it records the same ts, runs the one
// requested handler and exits, never returning. A program with no custom
// tool (its agent uses built-in tools, hooks and external MCP servers
// only) does not call it.
//
// Why: Landlock and seccomp confine threads, and a Go closure cannot be
// sent to another process, so a confined handler runs in a fresh copy of
// the program, already confined before its first instruction, and finds
// its handler by the tool's name among ts. Because the parent records the
// same set, a tool the child would not find (not in ts, two tools of one
// name, no call at all) is refused when the session starts (Check), not
// at its first call. The handler sees only what that copy of the program
// has: state built in main after this call is not there.
//
// It panics — a programmer error, reported where it is made — when
// called twice, with a nil tool, or with no tool at all: a call that
// hands over nothing would let the program start and then refuse every
// custom tool when a session starts.
func Serve(ts ...*tools.Tool) {
	serve(ts)
	if os.Getenv(confinedCallEnv) != "1" {
		return
	}
	os.Unsetenv(confinedCallEnv)
	os.Exit(serveConfinedCall())
}

// InChild reports whether this process was started to serve one confined
// tool call. A program that gets here with it true has not called Serve
// first (the kernel refuses to run an agent then).
func InChild() bool { return os.Getenv(confinedCallEnv) == "1" }

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
