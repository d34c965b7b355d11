//go:build linux

package notify

// Test harness for the network supervisor, independent of the spawn path.
//
// The test binary re-executes itself (-test.run=^TestHelperNetChild$ with
// LA_NETSUP_CHILD=1) as a child that loads a seccomp filter trapping
// connect, bind, listen, sendto, sendmsg and sendmmsg with
// SECCOMP_RET_USER_NOTIF for all its threads, prints the listener's fd
// number, waits for the parent to take it (pidfd_getfd) and closes its own
// copy. Then it performs the operations the test sends it, one JSON line
// each, with raw system calls, and answers with a JSON line.
//
// Network targets are loopback or a host inside a network namespace the
// test creates (testNet); nothing else is ever addressed.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

const netChildMarker = "NETCHILD "

// netReq is one operation for the child.
type netReq struct {
	Op       string   `json:"op"`
	FD       int      `json:"fd,omitempty"`
	FD2      int      `json:"fd2,omitempty"`
	Domain   string   `json:"domain,omitempty"` // inet, inet6, unix
	Type     string   `json:"type,omitempty"`   // stream, dgram, seqpacket
	Proto    int      `json:"proto,omitempty"`
	Nonblock bool     `json:"nonblock,omitempty"`
	Addr     string   `json:"addr,omitempty"`  // see encodeAddr
	Addr2    string   `json:"addr2,omitempty"` // race: the other address
	Data     []byte   `json:"data,omitempty"`
	Datas    [][]byte `json:"datas,omitempty"`
	Flags    int      `json:"flags,omitempty"`
	Iovs     int      `json:"iovs,omitempty"`
	Cmsg     string   `json:"cmsg,omitempty"`
	Bad      string   `json:"bad,omitempty"` // which argument to make malformed
	N        int      `json:"n,omitempty"`
	Size     int      `json:"size,omitempty"`
	Timeout  int      `json:"timeout,omitempty"` // ms
	Level    int      `json:"level,omitempty"`
	Opt      int      `json:"opt,omitempty"`
	Val      []byte   `json:"val,omitempty"`
	Path     string   `json:"path,omitempty"`
}

// netResp is the child's answer. Errno is 0 on success.
type netResp struct {
	FD     int            `json:"fd,omitempty"`
	FD2    int            `json:"fd2,omitempty"`
	N      int            `json:"n,omitempty"`
	Errno  int            `json:"errno,omitempty"`
	Data   []byte         `json:"data,omitempty"`
	Addr   string         `json:"addr,omitempty"`
	Lens   []int          `json:"lens,omitempty"`
	FDs    []int          `json:"fds,omitempty"`
	Counts map[string]int `json:"counts,omitempty"`
	NS     int64          `json:"ns,omitempty"`
	Err    string         `json:"err,omitempty"` // harness failure, not a syscall result
}

func (r netResp) errno() unix.Errno { return unix.Errno(r.Errno) }

// TestHelperNetChild is not a test: it is the child process of the
// network supervisor tests (see the file comment).
func TestHelperNetChild(t *testing.T) {
	if os.Getenv("LA_NETSUP_CHILD") != "1" {
		t.Skip("helper process of the network supervisor tests; runs only when re-executed by them")
	}
	runNetChild()
}

func runNetChild() {
	out := bufio.NewWriter(os.Stdout)
	emit := func(v any) {
		b, _ := json.Marshal(v)
		out.WriteString(netChildMarker)
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	if d := os.Getenv("LA_NETSUP_DIR"); d != "" {
		if err := os.Chdir(d); err != nil {
			emit(netResp{Err: err.Error()})
			os.Exit(2)
		}
	}
	if u := os.Getenv("LA_NETSUP_UMASK"); u != "" {
		m, _ := strconv.ParseInt(u, 8, 32)
		unix.Umask(int(m))
	}
	listener, err := loadNotifyFilter(os.Getenv("LA_NETSUP_FILTER"))
	if err != nil {
		emit(netResp{Err: "load filter: " + err.Error()})
		os.Exit(2)
	}
	emit(netResp{FD: listener, N: os.Getpid()})
	in := bufio.NewReader(os.Stdin)
	if line, err := in.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ack" {
		os.Exit(2)
	}
	if listener >= 0 {
		// The parent holds it now. Keeping it would let this process
		// answer its own notifications.
		unix.Close(listener)
	}
	dec := json.NewDecoder(in)
	for {
		var req netReq
		if err := dec.Decode(&req); err != nil {
			os.Exit(0)
		}
		emit(childOp(req))
	}
}

// loadNotifyFilter installs the notify filter on every thread and returns
// the listener. kind "none" installs nothing (benchmark baseline);
// "waitkill" loads libseccomp's BPF with seccomp(2) directly, adding
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (libseccomp 2.5 cannot).
func loadNotifyFilter(kind string) (int, error) {
	if kind == "none" {
		return -1, nil
	}
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return -1, err
	}
	defer f.Release()
	for _, name := range []string{"connect", "bind", "listen", "sendto", "sendmsg", "sendmmsg"} {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			return -1, err
		}
		if err := f.AddRule(sc, seccomp.ActNotify); err != nil {
			return -1, err
		}
	}
	if kind != "waitkill" {
		// NewFilter already asks for TSYNC (all threads) and sets
		// no_new_privs on Load.
		if err := f.Load(); err != nil {
			return -1, err
		}
		fd, err := f.GetNotifFd()
		return int(fd), err
	}
	// ExportBPFMem needs libseccomp 2.6; export through a memfd instead.
	mfd, err := unix.MemfdCreate("bpf", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, err
	}
	mf := os.NewFile(uintptr(mfd), "bpf")
	defer mf.Close()
	if err := f.ExportBPF(mf); err != nil {
		return -1, err
	}
	prog, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", mfd))
	if err != nil || len(prog) == 0 || len(prog)%8 != 0 {
		return -1, fmt.Errorf("exported BPF: %d bytes, %v", len(prog), err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	flags := unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC |
		unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(flags), uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// encodeAddr builds sockaddr bytes:
//
//	"1.2.3.4:80", "[::1]:80"  inet / inet6
//	"unix:PATH"               pathname
//	"abstract:NAME"           abstract namespace
//	"autobind"                {AF_UNIX} only (bind: autobind)
//	"unspec"                  AF_UNSPEC, 16 bytes of zeros
//	"unspec4:1.2.3.4:80"      AF_UNSPEC with an IPv4 address in sin_addr
func encodeAddr(s string) []byte {
	put16 := func(b []byte, v uint16) { binary.NativeEndian.PutUint16(b, v) }
	switch {
	case s == "":
		return nil
	case s == "autobind":
		b := make([]byte, 2)
		put16(b, unix.AF_UNIX)
		return b
	case s == "unspec":
		return make([]byte, 16)
	case strings.HasPrefix(s, "unspec4:"):
		b := encodeAddr(strings.TrimPrefix(s, "unspec4:"))
		put16(b, unix.AF_UNSPEC)
		return b
	case strings.HasPrefix(s, "unix:"):
		p := strings.TrimPrefix(s, "unix:")
		b := make([]byte, 2+len(p)+1)
		put16(b, unix.AF_UNIX)
		copy(b[2:], p)
		return b
	case strings.HasPrefix(s, "abstract:"):
		p := strings.TrimPrefix(s, "abstract:")
		b := make([]byte, 3+len(p))
		put16(b, unix.AF_UNIX)
		copy(b[3:], p)
		return b
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		panic("bad test address " + s)
	}
	if ap.Addr().Is4() {
		b := make([]byte, unix.SizeofSockaddrInet4)
		put16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		a := ap.Addr().As4()
		copy(b[4:], a[:])
		return b
	}
	b := make([]byte, unix.SizeofSockaddrInet6)
	put16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a := ap.Addr().As16()
	copy(b[8:], a[:])
	return b
}

func decodeAddr(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrUnix:
		return "unix:" + a.Name
	}
	return fmt.Sprintf("%T", sa)
}

func ptrOf(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

// badPtr is an address that is never mapped.
const badPtr = 8

func childOp(r netReq) (resp netResp) {
	defer func() {
		if p := recover(); p != nil {
			resp = netResp{Err: fmt.Sprint("panic: ", p)}
		}
	}()
	errno := func(e error) int {
		if e == nil {
			return 0
		}
		if en, ok := e.(unix.Errno); ok {
			return int(en)
		}
		return -1
	}
	switch r.Op {
	case "socket":
		typ := map[string]int{"stream": unix.SOCK_STREAM, "dgram": unix.SOCK_DGRAM, "seqpacket": unix.SOCK_SEQPACKET}[r.Type]
		dom := map[string]int{"inet": unix.AF_INET, "inet6": unix.AF_INET6, "unix": unix.AF_UNIX}[r.Domain]
		if r.Nonblock {
			typ |= unix.SOCK_NONBLOCK
		}
		fd, err := unix.Socket(dom, typ|unix.SOCK_CLOEXEC, r.Proto)
		return netResp{FD: fd, Errno: errno(err)}
	case "socketpair":
		typ := map[string]int{"stream": unix.SOCK_STREAM, "dgram": unix.SOCK_DGRAM, "seqpacket": unix.SOCK_SEQPACKET}[r.Type]
		fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		return netResp{FD: fds[0], FD2: fds[1], Errno: errno(err)}
	case "connect", "bind":
		sa := encodeAddr(r.Addr)
		p, l := ptrOf(sa), uint64(len(sa))
		switch r.Bad {
		case "addr":
			p = badPtr
		case "addrlen-neg":
			l = 0xffffffff
		case "addrlen-big":
			sa = append(sa, make([]byte, 200)...)
			p, l = ptrOf(sa), 200
		}
		nr := uintptr(unix.SYS_CONNECT)
		if r.Op == "bind" {
			nr = unix.SYS_BIND
		}
		_, _, e := unix.Syscall(nr, uintptr(r.FD), uintptr(p), uintptr(l))
		runtime.KeepAlive(sa)
		return netResp{Errno: int(e)}
	case "listen":
		return netResp{Errno: errno(unix.Listen(r.FD, r.N))}
	case "getsockname":
		sa, err := unix.Getsockname(r.FD)
		if err != nil {
			return netResp{Errno: errno(err)}
		}
		return netResp{Addr: decodeAddr(sa)}
	case "accept":
		if e := pollFD(r.FD, unix.POLLIN, r.Timeout); e != 0 {
			return netResp{Errno: int(e)}
		}
		fd, _, err := unix.Accept4(r.FD, unix.SOCK_CLOEXEC)
		return netResp{FD: fd, Errno: errno(err)}
	case "close":
		return netResp{Errno: errno(unix.Close(r.FD))}
	case "write":
		n, err := unix.Write(r.FD, r.Data)
		return netResp{N: n, Errno: errno(err)}
	case "sendto":
		sa := encodeAddr(r.Addr)
		data := r.Data
		dp, sp := ptrOf(data), ptrOf(sa)
		switch r.Bad {
		case "data":
			dp = badPtr
		case "addr":
			sp = badPtr
		}
		n, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(r.FD), uintptr(dp), uintptr(len(data)), uintptr(r.Flags), uintptr(sp), uintptr(len(sa)))
		runtime.KeepAlive(sa)
		runtime.KeepAlive(data)
		return netResp{N: int(n), Errno: int(e)}
	case "sendmsg":
		if r.Size > 0 {
			r.Data = make([]byte, r.Size)
		}
		hdr, keep := buildMsghdr(r, r.Data, r.FD2)
		p := ptrOf(hdr)
		if r.Bad == "msg" {
			p = badPtr
		}
		start := time.Now()
		n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(r.FD), uintptr(p), uintptr(r.Flags))
		elapsed := time.Since(start)
		runtime.KeepAlive(keep)
		runtime.KeepAlive(hdr)
		return netResp{N: int(n), Errno: int(e), NS: int64(elapsed)}
	case "sendmmsg":
		vec := make([]byte, 64*len(r.Datas))
		var keep []any
		for i, d := range r.Datas {
			hdr, k := buildMsghdr(r, d, r.FD2)
			copy(vec[64*i:], hdr)
			keep = append(keep, k, hdr)
		}
		p := ptrOf(vec)
		if r.Bad == "vec" {
			p = badPtr
		}
		n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(r.FD), uintptr(p), uintptr(len(r.Datas)), uintptr(r.Flags), 0, 0)
		runtime.KeepAlive(keep)
		runtime.KeepAlive(vec)
		resp := netResp{N: int(n), Errno: int(e)}
		for i := range r.Datas {
			resp.Lens = append(resp.Lens, int(binary.NativeEndian.Uint32(vec[64*i+56:])))
		}
		return resp
	case "recv":
		if e := pollFD(r.FD, unix.POLLIN, r.Timeout); e != 0 {
			return netResp{Errno: int(e)}
		}
		buf := make([]byte, max(r.N, 1))
		oob := make([]byte, 256)
		n, oobn, _, from, err := unix.Recvmsg(r.FD, buf, oob, unix.MSG_DONTWAIT)
		resp := netResp{N: n, Errno: errno(err)}
		if err == nil {
			resp.Data = buf[:n]
			if from != nil {
				resp.Addr = decodeAddr(from)
			}
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					if fds, err := unix.ParseUnixRights(&m); err == nil {
						resp.FDs = append(resp.FDs, fds...)
					}
				}
			}
		}
		return resp
	case "readall":
		// Read exactly N bytes (blocking with a deadline).
		var got []byte
		deadline := time.Now().Add(time.Duration(r.Timeout) * time.Millisecond)
		buf := make([]byte, 64<<10)
		for len(got) < r.N {
			if e := pollFD(r.FD, unix.POLLIN, int(time.Until(deadline)/time.Millisecond)); e != 0 {
				return netResp{N: len(got), Errno: int(e), Data: got}
			}
			n, err := unix.Read(r.FD, buf)
			if err != nil || n == 0 {
				return netResp{N: len(got), Errno: errno(err), Data: got}
			}
			got = append(got, buf[:n]...)
		}
		return netResp{N: len(got), Data: got}
	case "poll":
		fds := []unix.PollFd{{Fd: int32(r.FD), Events: int16(r.Flags)}}
		n, err := unix.Poll(fds, r.Timeout)
		return netResp{N: n, FD: int(fds[0].Revents), Errno: errno(err)}
	case "sockerr":
		v, err := unix.GetsockoptInt(r.FD, unix.SOL_SOCKET, unix.SO_ERROR)
		return netResp{N: v, Errno: errno(err)}
	case "setsockopt":
		_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(r.FD), uintptr(r.Level), uintptr(r.Opt), uintptr(ptrOf(r.Val)), uintptr(len(r.Val)), 0)
		runtime.KeepAlive(r.Val)
		return netResp{Errno: int(e)}
	case "open":
		fd, err := unix.Open(r.Path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return netResp{FD: fd, Errno: errno(err)}
	case "race":
		return childRace(r)
	case "storm":
		return childStorm(r)
	case "bench":
		return childBench(r)
	case "sendall":
		return childSendAll(r)
	case "epipe":
		return childEPIPE(r)
	}
	return netResp{Err: "unknown op " + r.Op}
}

func pollFD(fd int, events int16, timeout int) unix.Errno {
	if timeout <= 0 {
		timeout = 5000
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
	for {
		n, err := unix.Poll(fds, timeout)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err.(unix.Errno)
		}
		if n == 0 {
			return unix.ETIMEDOUT
		}
		return 0
	}
}

// buildMsghdr lays out a struct msghdr (and what it points to) for r,
// with the malformations r.Bad asks for.
func buildMsghdr(r netReq, data []byte, rightsFD int) (hdr []byte, keep []any) {
	name := encodeAddr(r.Addr)
	iovs := max(r.Iovs, 1)
	iov := make([]byte, 16*iovs)
	per := (len(data) + iovs - 1) / iovs
	for i := 0; i < iovs; i++ {
		lo, hi := min(i*per, len(data)), min((i+1)*per, len(data))
		seg := data[lo:hi]
		binary.NativeEndian.PutUint64(iov[16*i:], ptrOf(seg))
		binary.NativeEndian.PutUint64(iov[16*i+8:], uint64(len(seg)))
	}
	ctl := buildCmsg(r.Cmsg, rightsFD)
	hdr = make([]byte, 56)
	put := func(off int, v uint64) { binary.NativeEndian.PutUint64(hdr[off:], v) }
	put(0, ptrOf(name))
	binary.NativeEndian.PutUint32(hdr[8:], uint32(len(name)))
	put(16, ptrOf(iov))
	put(24, uint64(iovs))
	put(32, ptrOf(ctl))
	put(40, uint64(len(ctl)))
	switch r.Bad {
	case "name":
		put(0, badPtr)
	case "iov":
		put(16, badPtr)
	case "iovbase":
		binary.NativeEndian.PutUint64(iov, badPtr)
	case "ctl":
		put(32, badPtr)
		put(40, 64)
	case "iovlen":
		put(24, 5000)
	case "namelen-neg":
		binary.NativeEndian.PutUint32(hdr[8:], 0xffffffff)
	case "namelen-big":
		big := append(append([]byte{}, name...), make([]byte, 300)...)
		name = big
		put(0, ptrOf(big))
		binary.NativeEndian.PutUint32(hdr[8:], uint32(len(big)))
	case "ctllen-huge":
		put(40, 1<<40)
	case "iovlen-neg":
		binary.NativeEndian.PutUint64(iov[8:], 1<<63)
	}
	return hdr, []any{name, iov, ctl, data}
}

func cmsg(level, typ int, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = int32(level), int32(typ)
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func buildCmsg(kind string, rightsFD int) []byte {
	i32 := func(v int) []byte { b := make([]byte, 4); binary.NativeEndian.PutUint32(b, uint32(v)); return b }
	switch kind {
	case "":
		return nil
	case "tos":
		return cmsg(unix.SOL_IP, unix.IP_TOS, i32(0x10))
	case "tclass":
		return cmsg(unix.SOL_IPV6, unix.IPV6_TCLASS, i32(0x10))
	case "retopts": // IPv4 loose source route via 10.0.0.1 (never sent: refused)
		return cmsg(unix.SOL_IP, unix.IP_RETOPTS, []byte{1, 0x83, 7, 4, 10, 0, 0, 1})
	case "rthdr":
		return cmsg(unix.SOL_IPV6, unix.IPV6_RTHDR, make([]byte, 24))
	case "pktinfo":
		b := make([]byte, 12)
		copy(b[4:], []byte{127, 0, 0, 1})
		return cmsg(unix.SOL_IP, unix.IP_PKTINFO, b)
	case "pktinfo-if":
		b := make([]byte, 12)
		binary.NativeEndian.PutUint32(b, 1)
		return cmsg(unix.SOL_IP, unix.IP_PKTINFO, b)
	case "rights":
		return unix.UnixRights(rightsFD)
	case "creds":
		return unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
	case "garbage":
		b := cmsg(unix.SOL_IP, unix.IP_TOS, i32(0))
		binary.NativeEndian.PutUint64(b, 4096)
		return b
	case "tos+rights":
		return append(cmsg(unix.SOL_IP, unix.IP_TOS, i32(0)), unix.UnixRights(rightsFD)...)
	}
	panic("unknown cmsg " + kind)
}

// childRace connects N fresh sockets to r.Addr while another thread keeps
// flipping the sockaddr's IP between r.Addr's and r.Addr2's with atomic
// stores. Counts the outcomes.
func childRace(r netReq) netResp {
	good, bad := encodeAddr(r.Addr), encodeAddr(r.Addr2)
	sa := make([]uint32, 8) // 32 bytes, 4-aligned
	b := unsafe.Slice((*byte)(unsafe.Pointer(&sa[0])), 16)
	copy(b, good)
	ipGood := binary.NativeEndian.Uint32(good[4:])
	ipBad := binary.NativeEndian.Uint32(bad[4:])
	var stop atomic.Bool
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for !stop.Load() {
			atomic.StoreUint32(&sa[1], ipBad)
			atomic.StoreUint32(&sa[1], ipGood)
			flips.Add(1)
		}
	}()
	counts := map[string]int{}
	runtime.LockOSThread()
	for i := 0; i < r.N; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			counts["socket:"+err.Error()]++
			continue
		}
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), 16)
		counts[errnoName(e)]++
		unix.Close(fd)
	}
	runtime.UnlockOSThread()
	stop.Store(true)
	wg.Wait()
	counts["flips"] = int(flips.Load())
	return netResp{Counts: counts}
}

func errnoName(e unix.Errno) string {
	if e == 0 {
		return "ok"
	}
	return unix.ErrnoName(e)
}

// childStorm sends N records of Size bytes on the blocking stream r.FD with
// sendmsg (performed by the supervisor) while another goroutine keeps
// sending SIGURG (the Go runtime's preemption signal, SA_RESTART) to the
// sending thread. Each record starts with its sequence number. Short
// writes and EINTR are handled as a careful program would.
func childStorm(r netReq) netResp {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	pid := os.Getpid()
	var stop atomic.Bool
	var signals atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			unix.Tgkill(pid, tid, unix.SIGURG)
			signals.Add(1)
			for i := 0; i < 200; i++ { // a few µs between signals
				runtime.Gosched()
			}
		}
	}()
	counts := map[string]int{}
	rec := make([]byte, r.Size)
	for i := 0; i < r.N; i++ {
		binary.BigEndian.PutUint64(rec, uint64(i))
		for off := 0; off < len(rec); {
			msg := netReq{Iovs: 2}
			hdr, keep := buildMsghdr(msg, rec[off:], 0)
			n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(r.FD), uintptr(ptrOf(hdr)), 0)
			runtime.KeepAlive(keep)
			runtime.KeepAlive(hdr)
			if e == unix.EINTR {
				counts["eintr"]++
				continue
			}
			if e != 0 {
				stop.Store(true)
				wg.Wait()
				counts["err:"+unix.ErrnoName(e)]++
				return netResp{Counts: counts, Errno: int(e)}
			}
			if int(n) < len(rec)-off {
				counts["short"]++
			}
			off += int(n)
		}
	}
	stop.Store(true)
	wg.Wait()
	counts["signals"] = int(signals.Load())
	return netResp{Counts: counts}
}

// childEPIPE sends on r.FD (whose peer has reset) with flags r.Flags until
// EPIPE, and counts the SIGPIPEs this process receives.
func childEPIPE(r netReq) netResp {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, unix.SIGPIPE)
	defer signal.Stop(ch)
	counts := map[string]int{}
	for i := 0; i < 10; i++ {
		hdr, keep := buildMsghdr(netReq{}, []byte("x"), 0)
		_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(r.FD), uintptr(ptrOf(hdr)), uintptr(r.Flags))
		runtime.KeepAlive(keep)
		counts[errnoName(e)]++
		if e == unix.EPIPE {
			break
		}
	}
	n := 0
	timeout := time.After(300 * time.Millisecond)
	for {
		select {
		case <-ch:
			n++
		case <-timeout:
			return netResp{N: n, Counts: counts}
		}
	}
}

// childSendAll sends r.Data (or r.Size zero bytes) on r.FD with sendmsg
// until all of it is sent, reporting each call's count.
func childSendAll(r netReq) netResp {
	if r.Size > 0 {
		r.Data = make([]byte, r.Size) // large payloads are made here, not sent as JSON
	}
	var lens []int
	for off := 0; off < len(r.Data); {
		hdr, keep := buildMsghdr(netReq{Iovs: r.Iovs}, r.Data[off:], 0)
		n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(r.FD), uintptr(ptrOf(hdr)), uintptr(r.Flags))
		runtime.KeepAlive(keep)
		if e != 0 {
			return netResp{Lens: lens, Errno: int(e), N: off}
		}
		lens = append(lens, int(n))
		off += int(n)
	}
	return netResp{Lens: lens, N: len(r.Data)}
}

// childBench times N operations: "connect" (socket, connect to r.Addr,
// close), "sendto" (UDP sendto with address), "sendmsg" (UDP sendmsg with
// address), "send" (sendto without address on the connected r.FD).
func childBench(r netReq) netResp {
	sa := encodeAddr(r.Addr)
	data := make([]byte, max(r.Size, 1))
	start := time.Now()
	switch r.Type {
	case "connect":
		for i := 0; i < r.N; i++ {
			fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(ptrOf(sa)), uintptr(len(sa)))
			unix.Close(fd)
			if e != 0 {
				return netResp{Errno: int(e)}
			}
		}
	case "sendto", "send":
		fd := r.FD
		sp, sl := ptrOf(sa), len(sa)
		if r.Type == "send" {
			sp, sl = 0, 0
		}
		for i := 0; i < r.N; i++ {
			_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(ptrOf(data)), uintptr(len(data)), 0, uintptr(sp), uintptr(sl))
			if e != 0 {
				return netResp{Errno: int(e)}
			}
		}
	case "sendmsg":
		hdr, keep := buildMsghdr(netReq{Addr: r.Addr}, data, 0)
		for i := 0; i < r.N; i++ {
			_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(r.FD), uintptr(ptrOf(hdr)), 0)
			if e != 0 {
				return netResp{Errno: int(e)}
			}
		}
		runtime.KeepAlive(keep)
	}
	runtime.KeepAlive(sa)
	return netResp{NS: int64(time.Since(start))}
}

// netChild is the parent's handle on a supervised child.
type netChild struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
	sup    *netSupervisorRun
	pidfd  int
	pid    int

	mu   sync.Mutex
	logs []string
}

type netChildConfig struct {
	Mode   Mode
	Unix   func(UnixRequest) bool
	Filter string // "libseccomp" (default), "waitkill", "none"
	Dir    string // working directory of the child
	Umask  string // octal
	// DirectGrant and OnDirect are Options'.
	DirectGrant func(netip.AddrPort) (string, bool)
	OnDirect    func(netip.AddrPort, string)
}

// startNetChild starts a child under the notify filter and supervises it.
// Cleanup kills the child (the process this test started) and stops the
// supervisor.
func startNetChild(t testing.TB, cfg netChildConfig) *netChild {
	t.Helper()
	if cfg.Filter == "" {
		cfg.Filter = "libseccomp"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNetChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LA_NETSUP_CHILD=1", "LA_NETSUP_FILTER="+cfg.Filter, "LA_NETSUP_DIR="+cfg.Dir, "LA_NETSUP_UMASK="+cfg.Umask)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &netChild{t: t, cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout), stderr: &bytes.Buffer{}, pidfd: -1}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.pid = cmd.Process.Pid
	t.Cleanup(c.close)
	hello := c.read()
	if hello.Err != "" {
		t.Fatalf("child: %s\n%s", hello.Err, c.stderr)
	}
	if cfg.Filter != "none" {
		if c.pidfd, err = unix.PidfdOpen(c.pid, 0); err != nil {
			t.Fatalf("pidfd_open: %v", err)
		}
		lfd, err := unix.PidfdGetfd(c.pidfd, hello.FD, 0)
		if err != nil {
			t.Fatalf("pidfd_getfd: %v", err)
		}
		c.sup, err = startNetSupervisor(lfd, c.pidfd, c.pid, Options{Mode: cfg.Mode, Unix: cfg.Unix, Logf: c.logf,
			DirectGrant: cfg.DirectGrant, OnDirect: cfg.OnDirect, Refused: refusesNothing})
		if err != nil {
			t.Fatalf("startNetSupervisor: %v", err)
		}
	}
	if _, err := io.WriteString(stdin, "ack\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *netChild) logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, fmt.Sprintf(format, args...))
}

func (c *netChild) close() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
	if c.sup != nil {
		c.sup.Stop()
	}
	if c.pidfd >= 0 {
		unix.Close(c.pidfd)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.logs {
		c.t.Errorf("supervisor log: %s", l)
	}
}

func (c *netChild) read() netResp {
	c.t.Helper()
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			c.t.Fatalf("child output: %v\nstderr:\n%s", err, c.stderr)
		}
		if !strings.HasPrefix(line, netChildMarker) {
			continue
		}
		var r netResp
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, netChildMarker)), &r); err != nil {
			c.t.Fatalf("child output %q: %v", line, err)
		}
		return r
	}
}

// do runs one operation in the child and returns its result. A harness
// failure (not a syscall error) fails the test.
func (c *netChild) do(r netReq) netResp {
	c.t.Helper()
	b, _ := json.Marshal(r)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("child input: %v\nstderr:\n%s", err, c.stderr)
	}
	resp := c.read()
	if resp.Err != "" {
		c.t.Fatalf("child %s: %s", r.Op, resp.Err)
	}
	return resp
}

// must runs r and fails the test unless it succeeded.
func (c *netChild) must(r netReq) netResp {
	c.t.Helper()
	resp := c.do(r)
	if resp.Errno != 0 {
		c.t.Fatalf("%s %s: %v", r.Op, r.Addr, resp.errno())
	}
	return resp
}

// expect runs r and fails the test unless it failed with want.
func (c *netChild) expect(want unix.Errno, r netReq) netResp {
	c.t.Helper()
	resp := c.do(r)
	if resp.errno() != want {
		c.t.Fatalf("%s %s (bad=%q cmsg=%q): got errno %d (%v), want %v", r.Op, r.Addr, r.Bad, r.Cmsg, resp.Errno, resp.errno(), want)
	}
	return resp
}

func (c *netChild) socket(domain, typ string, proto int) int {
	c.t.Helper()
	return c.must(netReq{Op: "socket", Domain: domain, Type: typ, Proto: proto}).FD
}

// testNet is a network namespace made by a test, reached through a veth
// pair: the only non-loopback hosts the tests ever address.
type testNet struct {
	name                string
	host4, peer4        netip.Addr
	host6, peer6        netip.Addr
	hostIf              string
	accepted, datagrams atomic.Int64
}

// awaitDatagram waits (polled, 5 s at most) for the host to count a
// datagram more than before, failing with why if none arrives: UDP gives
// the sender no word of delivery to wait on.
func (n *testNet) awaitDatagram(t *testing.T, before int64, why string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); n.datagrams.Load() == before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
	}
}

var testNetSeq atomic.Int64

// newTestNet makes the namespace, or skips the test (saying what it would
// have checked) when not root or without iproute2.
func newTestNet(t *testing.T, wouldCheck string) *testNet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to create a network namespace; would have checked: %s", wouldCheck)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("needs iproute2 (ip) to create a network namespace; would have checked: %s", wouldCheck)
	}
	seq := testNetSeq.Add(1)
	id := fmt.Sprintf("%d-%d", os.Getpid(), seq)
	octet := byte(os.Getpid() % 250)
	last := byte(seq*4) & 0xfc
	n := &testNet{
		name:   "la-test-" + id,
		hostIf: fmt.Sprintf("lan%dh%d", os.Getpid()%100000, seq),
		host4:  netip.AddrFrom4([4]byte{10, 234, octet, last + 1}),
		peer4:  netip.AddrFrom4([4]byte{10, 234, octet, last + 2}),
		host6:  netip.MustParseAddr(fmt.Sprintf("fd00:234:%x:%x::1", os.Getpid()&0xffff, seq)),
		peer6:  netip.MustParseAddr(fmt.Sprintf("fd00:234:%x:%x::2", os.Getpid()&0xffff, seq)),
	}
	peerIf := fmt.Sprintf("lan%dp%d", os.Getpid()%100000, seq)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", n.name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.name).Run() })
	ip("link", "add", n.hostIf, "type", "veth", "peer", "name", peerIf)
	t.Cleanup(func() { exec.Command("ip", "link", "del", n.hostIf).Run() })
	ip("link", "set", peerIf, "netns", n.name)
	ip("addr", "add", n.host4.String()+"/30", "dev", n.hostIf)
	ip("-6", "addr", "add", n.host6.String()+"/64", "dev", n.hostIf, "nodad")
	ip("link", "set", n.hostIf, "up")
	ip("-n", n.name, "addr", "add", n.peer4.String()+"/30", "dev", peerIf)
	ip("-n", n.name, "-6", "addr", "add", n.peer6.String()+"/64", "dev", peerIf, "nodad")
	ip("-n", n.name, "link", "set", peerIf, "up")
	ip("-n", n.name, "link", "set", "lo", "up")
	return n
}

// inside runs f on an OS thread that entered the namespace; sockets made
// there live in the namespace. The thread is never unlocked, so it ends
// with f.
func (n *testNet) inside(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+n.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// serve starts TCP and UDP servers on the peer's addresses at port inside
// the namespace: TCP echoes what it reads, prefixed with "echo:"; every
// accepted connection and datagram is counted.
func (n *testNet) serve(t *testing.T, port int) {
	t.Helper()
	var lns []net.Listener
	var pcs []net.PacketConn
	err := n.inside(func() error {
		for _, a := range []netip.Addr{n.peer4, n.peer6} {
			ln, err := net.Listen("tcp", netip.AddrPortFrom(a, uint16(port)).String())
			if err != nil {
				return err
			}
			lns = append(lns, ln)
			pc, err := net.ListenPacket("udp", netip.AddrPortFrom(a, uint16(port)).String())
			if err != nil {
				return err
			}
			pcs = append(pcs, pc)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listen in netns: %v", err)
	}
	for _, ln := range lns {
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				n.accepted.Add(1)
				go func() {
					defer conn.Close()
					buf := make([]byte, 4096)
					for {
						k, err := conn.Read(buf)
						if err != nil {
							return
						}
						conn.Write(append([]byte("echo:"), buf[:k]...))
					}
				}()
			}
		}()
	}
	for _, pc := range pcs {
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 65536)
			for {
				_, _, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				n.datagrams.Add(1)
			}
		}()
	}
}

// received returns the namespace's count of unicast IP packets received
// (IPv4 plus IPv6 minus multicast), and its TCP segments: a refused
// operation must leave both unchanged.
func (n *testNet) received(t *testing.T) (packets, tcpSegs int64) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", n.name, "cat", "/proc/net/snmp", "/proc/net/snmp6").Output()
	if err != nil {
		t.Fatalf("read netns counters: %v", err)
	}
	vals := map[string]int64{}
	lines := strings.Split(string(out), "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		if len(f) == 2 && !strings.HasSuffix(f[0], ":") {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			vals[f[0]] = v
			continue
		}
		if len(f) > 1 && strings.HasSuffix(f[0], ":") && i+1 < len(lines) {
			g := strings.Fields(lines[i+1])
			if len(g) == len(f) && g[0] == f[0] {
				for j := 1; j < len(f); j++ {
					v, _ := strconv.ParseInt(g[j], 10, 64)
					vals[f[0]+f[j]] = v
				}
				i++
			}
		}
	}
	return vals["Ip:InReceives"] + vals["Ip6InReceives"] - vals["Ip6InMcastPkts"], vals["Tcp:InSegs"]
}

// loopbackServer is a TCP server on addr ("127.0.0.1:0", "[::1]:0") in
// the test's own namespace that echoes with the prefix "echo:".
func loopbackServer(t *testing.T, network, addr string) (net.Listener, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s (%v); would have checked connections to it", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	var count atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			count.Add(1)
			go func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				for {
					k, err := conn.Read(buf)
					if err != nil {
						return
					}
					conn.Write(append([]byte("echo:"), buf[:k]...))
				}
			}()
		}
	}()
	return ln, &count
}

func portOf(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

func mptcpAvailable() bool {
	b, err := os.ReadFile("/proc/sys/net/mptcp/enabled")
	if err != nil || strings.TrimSpace(string(b)) != "1" {
		return false
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// refusesNothing is Options.Refused for the harness's programs, which
// carry no refusal set (the sandbox's tests run the real one).
func refusesNothing(int32, [6]uint64) (Refusal, bool) { return Refusal{}, false }
