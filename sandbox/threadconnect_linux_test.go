package sandbox

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// threadConnectPy connects from a thread that is not the thread-group
// leader, as Go's resolver and dialer and libuv's pool do, and prints the
// outcome: "ok" or the errno name.
const threadConnectPy = `
import errno, socket, sys, threading
kind, addr = sys.argv[1], sys.argv[2]
out = []
def run():
    try:
        if kind == "unix":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(addr)
        else:
            host, port = addr.rsplit(":", 1)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if kind == "udp" else socket.SOCK_STREAM)
            s.connect((host, int(port)))
        out.append("ok")
    except OSError as e:
        out.append(errno.errorcode.get(e.errno, str(e.errno)))
t = threading.Thread(target=run)
t.start(); t.join()
print(out[0])
`

// TestConnectFromThreadInEveryMode: a seccomp notification names the
// calling thread. The connect supervisor used to open its pidfd with that
// id as if it were a process, which fails for any thread but the leader:
// with the network granted, every connect a program made from a thread of
// its own got EPERM (go mod download: "dial udp …:53: connect: operation
// not permitted"), and a unix-socket connect from a thread failed in mode
// none. Each mode must now give a thread what it gives the main thread.
func TestConnectFromThreadInEveryMode(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: would check connects from a non-main thread in every network mode")
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
	tcp := "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpAddr := udp.LocalAddr().String()

	forEachMode(t, func(t *testing.T, mode NetworkMode) {
		e := newEscapeEnv(t, func(p *Policy) { p.Network = mode })
		sock := filepath.Join(e.ws, "app.sock")
		unixServer(t, sock)
		inet := "ok"
		if mode == NetworkNone {
			inet = "EPERM" // no inet sockets at all in mode none: socket() fails
		}
		for _, tc := range []struct{ kind, addr, want string }{
			{"unix", sock, "ok"},
			{"tcp", tcp, inet},
			{"udp", udpAddr, inet},
		} {
			r := sh(t, e.sb, "python3 -c '"+threadConnectPy+"' "+tc.kind+" "+tc.addr)
			if got := strings.TrimSpace(r.out); got != tc.want {
				t.Errorf("network %s: %s connect to %s from a thread: %q (stderr %q), want %s", mode, tc.kind, tc.addr, got, r.err, tc.want)
			}
		}
	})
}
