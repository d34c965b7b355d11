package confined

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/lite-agent/lite-agent/tools"
)

// serveConfinedCall is the child's side: it keeps the real stdout for the
// protocol and points fd 1 at stderr, so that a handler printing to stdout
// cannot corrupt the channel.
func serveConfinedCall() int {
	protoFD, err := syscall.Dup(1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lite-agent confined child:", err)
		return 125
	}
	if err := syscall.Dup3(2, 1, 0); err != nil {
		fmt.Fprintln(os.Stderr, "lite-agent confined child:", err)
		return 125
	}
	out := os.NewFile(uintptr(protoFD), "protocol")
	ch := &childChannel{enc: json.NewEncoder(out), in: bufio.NewReader(os.Stdin)}
	if err := ch.send(&wireMsg{Kind: "ready"}); err != nil {
		return 125
	}
	call, err := ch.read()
	if err != nil || call.Kind != "call" || call.Call == nil {
		fmt.Fprintln(os.Stderr, "lite-agent confined child: no call received:", err)
		return 125
	}
	res := runInChild(ch, call)
	if err := ch.send(&wireMsg{Kind: "result", Result: res}); err != nil {
		return 125
	}
	return 0
}

func runInChild(ch *childChannel, call *wireMsg) *tools.Result {
	// The parent checked the same set before the session started (Check);
	// this is the child's own refusal, for a parent that skipped the
	// check.
	t, ambiguous := lookupServed(call.Tool)
	if t == nil {
		return tools.Errorf("the %s tool is not among the tools handed to confined.Serve in the confined child: add it to that call", call.Tool)
	}
	if ambiguous {
		return tools.Errorf("two different tools named %s were handed to confined.Serve; the confined child cannot tell which one to run", call.Tool)
	}
	ctx := context.Background()
	if !call.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, call.Deadline)
		defer cancel()
	}
	tctx := &tools.Context{
		Ctx:       ctx,
		SessionID: call.SessionID,
		Workspace: call.Workspace,
		Call:      *call.Call,
		EmitFunc: func(name string, data any) {
			b, err := json.Marshal(data)
			if err != nil {
				b, _ = json.Marshal(fmt.Sprint(data))
			}
			_ = ch.send(&wireMsg{Kind: "emit", Name: name, Data: b})
		},
		Snapshots: remoteSnapshots{ch},
		Approval: func(_ context.Context, req tools.ApprovalRequest) (bool, error) {
			r, err := ch.ask(&wireMsg{Kind: "approval", Approval: &req})
			if err != nil {
				return false, err
			}
			return r.OK, nil
		},
		UserInput: func(_ context.Context, q string) (string, error) {
			r, err := ch.ask(&wireMsg{Kind: "input", Question: q})
			if err != nil {
				return "", err
			}
			if !r.OK {
				return "", fmt.Errorf("%s", r.Error)
			}
			return r.Answer, nil
		},
	}
	if call.Workspace != "" {
		root, err := os.OpenRoot(call.Workspace)
		if err != nil {
			return tools.Errorf("the %s tool's confined child cannot open the workspace: %v", call.Tool, err)
		}
		defer root.Close()
		tctx.Root = root
		if err := os.Chdir(call.Workspace); err != nil {
			return tools.Errorf("the %s tool's confined child cannot enter the workspace: %v", call.Tool, err)
		}
	}
	// The input was validated by the parent; Call validates it again so
	// that the child trusts nothing it was sent.
	return t.Call(tctx, call.Input)
}

// childChannel serialises the child's messages; ask waits for the reply.
type childChannel struct {
	mu  sync.Mutex
	enc *json.Encoder
	in  *bufio.Reader
}

func (c *childChannel) send(m *wireMsg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enc.Encode(m)
}

func (c *childChannel) read() (*wireMsg, error) {
	line, err := c.in.ReadBytes('\n')
	if err != nil {
		return nil, errNoParent
	}
	var m wireMsg
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("malformed message from the parent: %v", err)
	}
	return &m, nil
}

// ask sends a request and reads its reply. Requests are answered in order
// and the handler's goroutines are serialised here, so one reply is read per
// request.
func (c *childChannel) ask(m *wireMsg) (*wireMsg, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enc.Encode(m); err != nil {
		return nil, errNoParent
	}
	line, err := c.in.ReadBytes('\n')
	if err != nil {
		return nil, errNoParent
	}
	var r wireMsg
	if err := json.Unmarshal(line, &r); err != nil || r.Kind != "reply" {
		return nil, fmt.Errorf("malformed reply from the parent")
	}
	return &r, nil
}

type remoteSnapshots struct{ ch *childChannel }

func (s remoteSnapshots) RecordSnapshot(path string) error {
	r, err := s.ch.ask(&wireMsg{Kind: "snapshot", Path: path})
	if err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("recording the pre-image of %s: %s", path, r.Error)
	}
	return nil
}
