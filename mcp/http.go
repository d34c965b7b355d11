package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/tools"
)

// ErrNetworkRefused is wrapped by the error of a connection to an address
// outside a server's declared network.
var ErrNetworkRefused = errors.New("address outside the declared network")

// connectHTTP initialises a session with a streamable HTTP (or SSE) server.
// Every connection the client makes is checked against the server's
// network mode after name resolution, so a host name that resolves
// somewhere unexpected is refused, not reached.
func (c *conn) connectHTTP(ctx context.Context) (*sdk.ClientSession, error) {
	base := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, Control: dialControl(c.sec.Network)}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if c.sec.Network == tools.NetworkUnrestricted {
		// A proxy is a connection elsewhere than the URL: only where the
		// network is not restricted anyway.
		base.Proxy = http.ProxyFromEnvironment
	}
	client := &http.Client{Transport: &headerTransport{base: base, headers: c.cfg.Headers}}
	c.mu.Lock()
	c.httpDone = base.CloseIdleConnections
	c.mu.Unlock()
	if c.kind == TypeSSE {
		// The SSE transport keeps the context it connects with for its
		// event stream, which must outlive this connection attempt (the
		// streamable transport detaches it itself). It gets one that ends
		// with the attempt only if the attempt fails, and otherwise with
		// the manager.
		life, endLife := context.WithCancel(c.m.procCtx)
		stop := context.AfterFunc(ctx, endLife)
		c.mu.Lock()
		c.httpDone = func() { endLife(); base.CloseIdleConnections() }
		c.mu.Unlock()
		cs, err := c.m.client.Connect(ctx, &lifetimeTransport{&sdk.SSEClientTransport{Endpoint: c.cfg.URL, HTTPClient: client}, life}, nil)
		if !stop() || err != nil {
			endLife()
		}
		return cs, err
	}
	// No standalone SSE stream: this client takes no server-initiated
	// requests, and a stream that reconnects forever to a dead server is
	// what must not happen.
	t := &sdk.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: client, DisableStandaloneSSE: true, MaxRetries: 2}
	return c.m.client.Connect(ctx, t, nil)
}

// lifetimeTransport connects its transport with ctx instead of the
// context of the connection attempt.
type lifetimeTransport struct {
	sdk.Transport
	ctx context.Context
}

func (t *lifetimeTransport) Connect(context.Context) (sdk.Connection, error) {
	return t.Transport.Connect(t.ctx)
}

// dialControl refuses connections to addresses outside mode.
func dialControl(mode tools.Network) func(network, address string, _ syscall.RawConn) error {
	if mode == tools.NetworkUnrestricted {
		return nil
	}
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot parse %q", ErrNetworkRefused, address)
		}
		if !mode.Reaches(ap.Addr()) {
			return fmt.Errorf("%w: %s is not %s", ErrNetworkRefused, ap.Addr(), mode)
		}
		return nil
	}
}
