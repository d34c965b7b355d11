//go:build linux

package notify

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLiveProxiesRefusedToOthers: under loopback a live proxy of another
// sandbox is refused (its v4-mapped form too), the command's own proxy is
// not, and a closed proxy's address is loopback like any other.
func TestLiveProxiesRefusedToOthers(t *testing.T) {
	theirs := netip.MustParseAddrPort("127.0.0.1:41001")
	mine := netip.MustParseAddrPort("127.0.0.1:41002")
	unregisterTheirs := RegisterProxy(theirs)
	unregisterMine := RegisterProxy(mine)
	defer unregisterMine()
	s := &netSupervisorRun{opts: Options{Mode: ModeLoopback, Proxy: mine}}
	// Sockaddrs with the port in network order, as the kernel has them.
	inet4Port := func(ap netip.AddrPort) []byte {
		sa := inet4Sockaddr(ap.Addr().As4())
		binary.BigEndian.PutUint16(sa[2:], ap.Port())
		return sa
	}
	v6 := func(ap netip.AddrPort) []byte {
		sa := inet6Sockaddr(netip.AddrFrom16(ap.Addr().As16()).As16())
		binary.BigEndian.PutUint16(sa[2:], ap.Port())
		return sa
	}
	for _, tc := range []struct {
		name string
		sa   []byte
		want inetVerdict
	}{
		{"theirs", inet4Port(theirs), verdictDeny},
		{"theirs v4-mapped", v6(theirs), verdictDeny},
		{"mine", inet4Port(mine), verdictAllow},
		{"another loopback port", inet4Port(netip.MustParseAddrPort("127.0.0.1:41003")), verdictAllow},
	} {
		if v, _, _ := s.judgeDestination(judgeInetConnect, tc.sa, unix.SOCK_STREAM); v != tc.want {
			t.Errorf("%s: connect verdict %v, want %v", tc.name, v, tc.want)
		}
	}
	unregisterTheirs()
	unregisterTheirs() // idempotent
	if v, _, _ := s.judgeDestination(judgeInetConnect, inet4Port(theirs), unix.SOCK_STREAM); v != verdictAllow {
		t.Errorf("a closed proxy's address under loopback: %v, want allowed", v)
	}
}
