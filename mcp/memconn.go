package mcp

import (
	"context"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An in-process server and its client exchange JSON-RPC messages over a
// pair of channels. The go-sdk's own in-memory transports go through a
// net.Pipe with newline-delimited JSON, and each decode allocates a 32 KiB
// buffer — most of the cost of an in-process call. The messages here are
// the same jsonrpc.Message values both sessions produce and consume (their
// params and results are already JSON), handed over without the framing.

// memTransport is one end of a channel pair.
type memTransport struct{ conn *memConn }

func (t memTransport) Connect(context.Context) (sdk.Connection, error) { return t.conn, nil }

// memTransports returns two connected transports: client and server end.
func memTransports() (client, server sdk.Transport) {
	a2b, b2a := make(chan jsonrpc.Message, 16), make(chan jsonrpc.Message, 16)
	done := make(chan struct{})
	var once sync.Once
	closeBoth := func() { once.Do(func() { close(done) }) }
	c := &memConn{in: b2a, out: a2b, done: done, close: closeBoth}
	s := &memConn{in: a2b, out: b2a, done: done, close: closeBoth}
	return memTransport{c}, memTransport{s}
}

// memConn is a sdk.Connection over channels. Closing either end closes
// both, as closing one end of a pipe does.
type memConn struct {
	in, out chan jsonrpc.Message
	done    chan struct{}
	close   func()
}

func (c *memConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *memConn) Write(ctx context.Context, m jsonrpc.Message) error {
	select {
	case <-c.done:
		return io.ErrClosedPipe
	default:
	}
	select {
	case c.out <- m:
		return nil
	case <-c.done:
		return io.ErrClosedPipe
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *memConn) Close() error {
	c.close()
	return nil
}

func (c *memConn) SessionID() string { return "" }
