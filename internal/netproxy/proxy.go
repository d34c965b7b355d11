package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Event is one connection (a CONNECT tunnel or one plain-HTTP request)
// decided by the proxy.
type Event struct {
	Host      string
	Port      int
	Allow     bool
	Rule      string
	BytesUp   int64 // client to server
	BytesDown int64 // server to client
}

// Proxy is a running domain proxy.
type Proxy struct {
	rules   *Rules
	onEvent func(Event)
	ln      net.Listener
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
}

// Start listens on 127.0.0.1 (a port the kernel picks) and serves until
// Close. onEvent, if set, is called once per decided connection, from the
// proxy's goroutines.
func Start(rules *Rules, onEvent func(Event)) (*Proxy, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{rules: rules, onEvent: onEvent, ln: ln, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() netip.AddrPort {
	return p.ln.Addr().(*net.TCPAddr).AddrPort()
}

// Rules are the proxy's decision (what Start was given), for the checks
// made around it (Rules.Direct).
func (p *Proxy) Rules() *Rules { return p.rules }

// URL is the proxy as HTTP_PROXY wants it.
func (p *Proxy) URL() string { return "http://" + p.Addr().String() }

// Close stops listening, ends every connection and waits for the
// goroutines. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

func (p *Proxy) emit(e Event) {
	if p.onEvent != nil {
		p.onEvent(e)
	}
}

// counter counts the bytes read from or written to a client connection.
type counter struct {
	net.Conn
	in, out atomic.Int64
}

func (c *counter) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *counter) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.out.Add(int64(n))
	return n, err
}

// requestTimeout bounds how long a client may take to send a request
// head: an idle kept-alive client holds a goroutine, not more.
const requestTimeout = 5 * time.Minute

// handle serves one client connection: requests one after the other, each
// decided on its own (so a second request on a kept-alive connection is
// checked like the first), until a CONNECT turns it into a tunnel.
func (p *Proxy) handle(raw net.Conn) {
	c := &counter{Conn: raw}
	br := bufio.NewReaderSize(c, maxHead)
	var up *upstream // the plain-HTTP upstream this client rides on
	defer func() {
		if up != nil {
			up.conn.Close()
		}
	}()
	for {
		// What this exchange adds to the counters is its size.
		in0, out0 := c.in.Load()-int64(br.Buffered()), c.out.Load()
		raw.SetReadDeadline(time.Now().Add(requestTimeout))
		hosts, err := peekHostHeaders(br)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				writeError(c, http.StatusRequestHeaderFieldsTooLarge, "lite-agent sandbox proxy: request head over 64 KiB\n")
			}
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				writeError(c, http.StatusBadRequest, "lite-agent sandbox proxy: cannot read the request: "+err.Error()+"\n")
			}
			return
		}
		raw.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			p.tunnel(c, br, req)
			return
		}
		var keep bool
		up, keep = p.forward(c, br, req, hosts, up, in0, out0)
		if !keep {
			return
		}
	}
}

// tunnel serves CONNECT host:port: decide, dial the checked address,
// answer 200 and copy both ways until either side ends.
func (p *Proxy) tunnel(c *counter, br *bufio.Reader, req *http.Request) {
	host, port, ok := splitAuthority(req.RequestURI, 0)
	if !ok {
		writeError(c, http.StatusBadRequest, "lite-agent sandbox proxy: CONNECT needs host:port, got "+strconv.Quote(req.RequestURI)+"\n")
		return
	}
	upc, d, err := p.rules.Dial(p.ctx, host, port)
	if err != nil {
		p.refuse(c, host, port, d, err)
		return
	}
	defer upc.Close()
	if !p.track(upc) {
		return
	}
	defer p.untrack(upc)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	var up, down int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer closeWrite(upc)
		// Bytes the client sent after the CONNECT head (a TLS
		// ClientHello sent eagerly) are in br: send them first, then
		// copy socket to socket. (A MultiReader over both would hide
		// the *net.TCPConn from ReadFrom, and every byte uploaded
		// would go through a 32 KiB user-space buffer.)
		if k := br.Buffered(); k > 0 {
			b, _ := br.Peek(k)
			n, err := upc.Write(b)
			up += int64(n)
			if err != nil {
				return
			}
		}
		n, _ := io.Copy(upc, c.Conn)
		up += n
	}()
	// Copy straight between the sockets (splice on Linux), counting the
	// result rather than every chunk.
	down, _ = io.Copy(c.Conn, upc)
	closeWrite(c.Conn)
	wg.Wait()
	p.emit(Event{Host: canonicalName(host), Port: port, Allow: true, Rule: d.Rule, BytesUp: up, BytesDown: down})
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}

// upstream is the server connection plain-HTTP requests ride on.
type upstream struct {
	host string
	port int
	conn net.Conn
	br   *bufio.Reader
	rule string
}

// forward serves one absolute-URI plain-HTTP request. The host it names
// is decided like a CONNECT; its Host header must name the same host, or
// a server that routes by Host (a CDN, a shared front end) would take us
// elsewhere than the host we checked. It returns the upstream to reuse and
// whether the client connection stays open.
func (p *Proxy) forward(c *counter, br *bufio.Reader, req *http.Request, hostHeaders []string, up *upstream, in0, out0 int64) (*upstream, bool) {
	if req.URL == nil || !req.URL.IsAbs() || req.URL.Scheme != "http" {
		writeError(c, http.StatusBadRequest, "lite-agent sandbox proxy: only CONNECT host:port and absolute http:// URLs are proxied (use https through CONNECT); got "+strconv.Quote(req.RequestURI)+"\n")
		return up, false
	}
	host, port, ok := splitAuthority(req.URL.Host, 80)
	if !ok {
		writeError(c, http.StatusBadRequest, "lite-agent sandbox proxy: bad host in "+strconv.Quote(req.RequestURI)+"\n")
		return up, false
	}
	// net/http drops the Host line of an absolute-URI request (RFC 9112
	// says to ignore it); we refuse a mismatch rather than ignore it, so
	// that the model is told, and we send the URL's host either way.
	for _, hh := range hostHeaders {
		if !sameAuthority(hh, req.URL.Host, 80) {
			p.refuseMsg(c, host, port, "Host mismatch", fmt.Sprintf("lite-agent sandbox: request refused: its Host header %q differs from the host of its URL %q; a proxy checks the URL's host, so the two must agree\n", hh, req.URL.Host))
			return up, false
		}
	}
	if up == nil || up.host != canonicalName(host) || up.port != port {
		if up != nil {
			up.conn.Close()
			up = nil
		}
		conn, d, err := p.rules.Dial(p.ctx, host, port)
		if err != nil {
			// The refusal says "Connection: close": a request body,
			// if any, was not read, and the client is told why.
			p.refuse(c, host, port, d, err)
			return nil, false
		}
		up = &upstream{host: canonicalName(host), port: port, conn: conn, br: bufio.NewReader(conn), rule: d.Rule}
	}
	// The request as the server sees it: origin-form, the URL's host,
	// no proxy headers.
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Host = req.URL.Host
	req.Header.Del("Host")
	if err := req.Write(up.conn); err != nil {
		writeError(c, http.StatusBadGateway, "lite-agent sandbox proxy: "+hostPort(host, port)+": "+err.Error()+"\n")
		up.conn.Close()
		return nil, false
	}
	resp, err := http.ReadResponse(up.br, req)
	if err != nil {
		writeError(c, http.StatusBadGateway, "lite-agent sandbox proxy: "+hostPort(host, port)+": "+err.Error()+"\n")
		up.conn.Close()
		return nil, false
	}
	keep := !req.Close && !resp.Close
	reported := false
	report := func(pending int64) {
		reported = true
		p.emit(Event{Host: up.host, Port: port, Allow: true, Rule: up.rule, BytesUp: c.in.Load() - int64(br.Buffered()) - in0, BytesDown: c.out.Load() - out0 + pending})
	}
	werr := writeResponse(c, up, resp, report)
	if !reported {
		report(0)
	}
	if werr != nil || !keep {
		up.conn.Close()
		return nil, false
	}
	return up, true
}

// writeResponse sends resp to the client. A body of known length is
// copied socket to socket (splice on Linux) after what the reader had
// already buffered: a download through the proxy then costs about what a
// CONNECT tunnel costs. Other bodies (chunked, until close) go through
// net/http's writer.
//
// report is called before the response's last bytes are written, with
// their number: a client that waits for the whole response — the kernel,
// yielding a call's network events before its result — then has the
// exchange's event already. On an error before that point it is not
// called, and the caller reports what was written.
func writeResponse(c *counter, up *upstream, resp *http.Response, report func(pending int64)) error {
	tcp, ok := c.Conn.(*net.TCPConn)
	n := resp.ContentLength
	if !ok || n <= 0 || len(resp.TransferEncoding) > 0 || resp.Request.Method == http.MethodHead {
		// net/http's writer, with its last write held back until it has
		// returned: that is when the exchange is known to be complete
		// (the chunked body's terminator, or the head of a body-less
		// response), and the event goes out before it.
		hw := &holdLast{w: c}
		err := resp.Write(hw)
		resp.Body.Close()
		if err == nil {
			err = hw.err
		}
		if err != nil {
			return err
		}
		report(int64(len(hw.held)))
		_, err = c.Write(hw.held)
		return err
	}
	// The head as net/http would write it, without the body.
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	h := resp.Header.Clone()
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	if resp.Close {
		h.Set("Connection", "close")
	}
	h.Write(&head)
	head.WriteString("\r\n")
	if _, err := c.Write(head.Bytes()); err != nil {
		return err
	}
	// resp.Body reads from up.br: take its buffered bytes, then the rest
	// straight from the socket, all but the last byte. resp.Body is left
	// unread (and not closed: Close would drain from up.br the bytes we
	// took here).
	buffered := min(int64(up.br.Buffered()), n-1)
	if buffered > 0 {
		b, _ := up.br.Peek(int(buffered))
		if _, err := c.Write(b); err != nil {
			return err
		}
		up.br.Discard(int(buffered))
	}
	if rest := n - 1 - buffered; rest > 0 {
		// up.br is empty here: straight from the socket.
		m, err := tcp.ReadFrom(io.LimitReader(up.conn, rest))
		c.out.Add(m)
		if err == nil && m < rest {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
	}
	last, err := up.br.ReadByte()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	report(1)
	_, err = c.Write([]byte{last})
	return err
}

// holdLast passes writes on one behind: the last one stays in held until
// the caller sends it.
type holdLast struct {
	w    io.Writer
	held []byte
	err  error
}

func (h *holdLast) Write(b []byte) (int, error) {
	if h.err != nil {
		return 0, h.err
	}
	if len(h.held) > 0 {
		if _, h.err = h.w.Write(h.held); h.err != nil {
			return 0, h.err
		}
	}
	h.held = append(h.held[:0], b...)
	return len(b), nil
}

// refuse answers a refused or failed connection: 403 with the reason for
// a refusal, 502 when an allowed host could not be reached.
func (p *Proxy) refuse(c *counter, host string, port int, d Decision, err error) {
	var re *RefusedError
	if errors.As(err, &re) {
		p.refuseMsg(c, re.Host, port, re.Rule, re.Msg+"\n")
		return
	}
	// Reported before the client is answered: an observer that waits
	// for the answer (the kernel, yielding events before the tool's
	// result) then has the event already.
	p.emit(Event{Host: canonicalName(host), Port: port, Allow: true, Rule: d.Rule})
	writeError(c, http.StatusBadGateway, "lite-agent sandbox proxy: "+hostPort(host, port)+" is allowed ("+d.Rule+") but could not be reached: "+err.Error()+"\n")
}

func (p *Proxy) refuseMsg(c *counter, host string, port int, rule, msg string) {
	p.emit(Event{Host: canonicalName(strings.Trim(host, "[]")), Port: port, Allow: false, Rule: rule}) // before the answer, as above
	writeError(c, http.StatusForbidden, msg)
}

// writeError writes a complete response that ends the exchange. The
// X-Lite-Agent-Proxy header lets a program tell the proxy's refusal from
// the server's own 403.
func writeError(w io.Writer, code int, body string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nX-Lite-Agent-Proxy: refused\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

// maxHead bounds a request head (the request line and the headers).
const maxHead = 64 << 10

// peekHostHeaders waits for a whole request head in br, without consuming
// it, and returns the values of its Host lines (net/http's ReadRequest
// deletes them).
func peekHostHeaders(br *bufio.Reader) ([]string, error) {
	var head []byte
	for from := 0; ; {
		if _, err := br.Peek(from + 1); err != nil {
			return nil, err
		}
		buf, _ := br.Peek(br.Buffered())
		// net/http accepts bare LF line ends: the head ends at the
		// first empty line either way.
		if i := bytes.Index(buf[max(from-2, 0):], []byte("\n\r\n")); i >= 0 {
			head = buf[:max(from-2, 0)+i]
			break
		}
		if i := bytes.Index(buf[max(from-1, 0):], []byte("\n\n")); i >= 0 {
			head = buf[:max(from-1, 0)+i]
			break
		}
		if len(buf) >= maxHead {
			return nil, bufio.ErrBufferFull
		}
		from = len(buf)
	}
	var hosts []string
	lines := strings.Split(string(head), "\n")
	for _, l := range lines[1:] {
		name, val, ok := strings.Cut(strings.TrimRight(l, "\r"), ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "host") {
			hosts = append(hosts, strings.TrimSpace(val))
		}
	}
	return hosts, nil
}

// splitAuthority parses host:port (the port defaulting to def when def is
// not 0).
func splitAuthority(a string, def int) (string, int, bool) {
	h, ps, err := net.SplitHostPort(a)
	if err != nil {
		if def == 0 || strings.Contains(strings.Trim(a, "[]"), ":") && !strings.HasPrefix(a, "[") {
			return "", 0, false
		}
		h, ps = strings.Trim(a, "[]"), strconv.Itoa(def)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || h == "" {
		return "", 0, false
	}
	return h, port, true
}

// sameAuthority compares two host[:port] strings as the same destination.
func sameAuthority(a, b string, def int) bool {
	ha, pa, ok1 := splitAuthority(a, def)
	hb, pb, ok2 := splitAuthority(b, def)
	return ok1 && ok2 && pa == pb && canonicalName(ha) == canonicalName(hb)
}
