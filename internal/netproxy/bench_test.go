package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The proxy's cost, side by side with the direct path, against a loopback
// server (BENCHMARKS.md has the command and the figures):
//
//	go test ./internal/netproxy -run '^$' -bench . -count 6 | benchstat -col /path -
//
// Download: 200 MB per operation (MB/s). Request: one small GET on a
// kept-alive connection; p50-ns is the median of the iterations.

const downloadSize = 200 << 20

var zeros = make([]byte, 1<<20)

// drain reads r to the end with 256 KiB reads, as a downloader does
// (io.Discard's own 8 KiB reads would measure the client's syscalls).
func drain(r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func downloadServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := downloadSize
		if r.URL.Path == "/small" {
			n = 64
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		for n > 0 {
			k := min(n, len(zeros))
			w.Write(zeros[:k])
			n -= k
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchProxy(b *testing.B, srv *httptest.Server) *Proxy {
	r, err := NewRules(Options{Allow: []Grant{{Pattern: srv.Listener.Addr().String()}}})
	if err != nil {
		b.Fatal(err)
	}
	p, err := Start(r, func(Event) {})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

func clientFor(p *Proxy) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	if p != nil {
		u, _ := url.Parse(p.URL())
		tr.Proxy = http.ProxyURL(u)
	}
	return &http.Client{Transport: tr}
}

func BenchmarkDownload(b *testing.B) {
	srv := downloadServer(b)
	p := benchProxy(b, srv)
	for _, path := range []string{"direct", "proxy-http", "proxy-connect"} {
		b.Run("path="+path, func(b *testing.B) {
			b.SetBytes(downloadSize)
			for b.Loop() {
				var body io.Reader
				var closer io.Closer
				switch path {
				case "direct", "proxy-http":
					var c *http.Client
					if path == "direct" {
						c = clientFor(nil)
					} else {
						c = clientFor(p)
					}
					resp, err := c.Get(srv.URL + "/big")
					if err != nil {
						b.Fatal(err)
					}
					body, closer = resp.Body, resp.Body
				case "proxy-connect":
					// A tunnel, as TLS clients use it (plain HTTP inside,
					// so that the figure is the proxy's, not TLS's).
					conn, br := connectTunnel(b, p, srv.Listener.Addr().String())
					fmt.Fprintf(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						b.Fatal(err)
					}
					body, closer = resp.Body, conn
				}
				n, err := drain(body)
				closer.Close()
				if err != nil || n != downloadSize {
					b.Fatalf("read %d bytes: %v", n, err)
				}
			}
		})
	}
}

func connectTunnel(b *testing.B, p *Proxy, target string) (net.Conn, *bufio.Reader) {
	conn, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\n\r\n", target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("CONNECT: %v %v", resp, err)
	}
	return conn, br
}

func BenchmarkRequest(b *testing.B) {
	srv := downloadServer(b)
	p := benchProxy(b, srv)
	for _, path := range []string{"direct", "proxy-http", "proxy-connect-new"} {
		b.Run("path="+path, func(b *testing.B) {
			var c *http.Client
			switch path {
			case "direct":
				c = clientFor(nil)
			case "proxy-http":
				c = clientFor(p)
			}
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				if c != nil {
					resp, err := c.Get(srv.URL + "/small")
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				} else {
					// A new tunnel per request: the proxy's whole
					// per-connection cost (accept, CONNECT, check, dial).
					conn, br := connectTunnel(b, p, srv.Listener.Addr().String())
					fmt.Fprintf(conn, "GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					conn.Close()
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
		})
	}
}

// BenchmarkDownloadSideBySide runs the three paths in turn within each
// iteration, so that they share the machine's load, and reports each
// path's median throughput and the proxy paths' ratios to direct.
func BenchmarkDownloadSideBySide(b *testing.B) {
	srv := downloadServer(b)
	p := benchProxy(b, srv)
	direct, viaHTTP := clientFor(nil), clientFor(p)
	get := func(c *http.Client) {
		resp, err := c.Get(srv.URL + "/big")
		if err != nil {
			b.Fatal(err)
		}
		n, err := drain(resp.Body)
		resp.Body.Close()
		if err != nil || n != downloadSize {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
	tunnel := func() {
		conn, br := connectTunnel(b, p, srv.Listener.Addr().String())
		defer conn.Close()
		fmt.Fprintf(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := drain(resp.Body); err != nil || n != downloadSize {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
	// Wall time, and the CPU time of the whole process (server, proxy
	// and client are all in it): the CPU figure does not depend on how
	// busy the machine is, and its difference between a proxy path and
	// direct is what the proxy costs per download.
	var td, th, tc, cd, ch, cc []time.Duration
	timed := func(ts, cs *[]time.Duration, f func()) {
		c0 := cpuTime()
		start := time.Now()
		f()
		*ts = append(*ts, time.Since(start))
		*cs = append(*cs, cpuTime()-c0)
	}
	for b.Loop() {
		timed(&td, &cd, func() { get(direct) })
		timed(&th, &ch, func() { get(viaHTTP) })
		timed(&tc, &cc, tunnel)
	}
	med := func(ts []time.Duration) float64 {
		slices.Sort(ts)
		return ts[len(ts)/2].Seconds()
	}
	md, mh, mc := med(td), med(th), med(tc)
	b.ReportMetric(downloadSize/md/1e6, "direct-MB/s")
	b.ReportMetric(downloadSize/mh/1e6, "http-MB/s")
	b.ReportMetric(downloadSize/mc/1e6, "connect-MB/s")
	b.ReportMetric(md/mh, "http-ratio")
	b.ReportMetric(md/mc, "connect-ratio")
	b.ReportMetric(med(cd)*1e3, "direct-cpu-ms")
	b.ReportMetric(med(ch)*1e3, "http-cpu-ms")
	b.ReportMetric(med(cc)*1e3, "connect-cpu-ms")
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRequestSideBySide: one 64-byte GET direct, one through the
// proxy on a kept-alive connection (still decided per request), and one
// through a new CONNECT tunnel (accept, CONNECT, decision, dial), in turn
// within each iteration; it reports each path's median and the medians'
// differences to direct (what the proxy adds per request).
func BenchmarkRequestSideBySide(b *testing.B) {
	srv := downloadServer(b)
	p := benchProxy(b, srv)
	direct, viaHTTP := clientFor(nil), clientFor(p)
	get := func(c *http.Client) {
		resp, err := c.Get(srv.URL + "/small")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	tunnel := func() {
		conn, br := connectTunnel(b, p, srv.Listener.Addr().String())
		defer conn.Close()
		fmt.Fprintf(conn, "GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
	}
	var td, th, tc []time.Duration
	timed := func(ts *[]time.Duration, f func()) {
		start := time.Now()
		f()
		*ts = append(*ts, time.Since(start))
	}
	for b.Loop() {
		timed(&td, func() { get(direct) })
		timed(&th, func() { get(viaHTTP) })
		timed(&tc, tunnel)
	}
	med := func(ts []time.Duration) float64 {
		slices.Sort(ts)
		return float64(ts[len(ts)/2].Microseconds())
	}
	md, mh, mc := med(td), med(th), med(tc)
	b.ReportMetric(md, "direct-p50-us")
	b.ReportMetric(mh, "http-p50-us")
	b.ReportMetric(mc, "connect-new-p50-us")
	b.ReportMetric(mh-md, "http-added-us")
	b.ReportMetric(mc-md, "connect-new-added-us")
}
