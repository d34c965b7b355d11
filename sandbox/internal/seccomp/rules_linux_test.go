package seccomp

import (
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
	"golang.org/x/sys/unix"
)

// TestChildFilterNotifiesConnectInEveryMode pins the contract with the
// supervisors: in every network mode some supervisor sees connect(2), the
// only way a stream unix socket reaches a peer.
func TestChildFilterNotifiesConnectInEveryMode(t *testing.T) {
	for _, spec := range []NotifySpec{ConnectOnly, NetSupervised} {
		found := false
		for _, c := range spec.calls {
			found = found || c.name == "connect"
		}
		if !found {
			t.Errorf("a notification spec without connect: %+v", spec)
		}
	}
	if _, err := Child(ChildSpec{Namespaces: true, Notify: NetSupervised}); err != nil {
		t.Fatal(err)
	}
	if p, err := Main(MainSpec{Network: notify.ModeNone}); err != nil || len(p) < 8*20 {
		t.Fatalf("main filter: %d bytes, %v", len(p), err)
	}
}

// inetProtoRefused evaluates the socket protocol rules as the filter does
// (64-bit register values).
func inetProtoRefused(v uint64) bool {
	if v > inetProtocolMax {
		return true
	}
	for _, p := range inetProtosDenied {
		if v&p.mask == p.value {
			return true
		}
	}
	return false
}

// TestInetProtocolRules checks the bit patterns of inetProtosDenied: every
// protocol number up to 2^20 is refused unless it is 0, TCP, UDP or MPTCP,
// and so is any value with junk in the upper 32 bits (the kernel reads an
// int: junk over SCTP would be SCTP).
func TestInetProtocolRules(t *testing.T) {
	allowed := map[uint64]bool{0: true, unix.IPPROTO_TCP: true, unix.IPPROTO_UDP: true, unix.IPPROTO_MPTCP: true}
	for v := uint64(0); v < 1<<20; v++ {
		if inetProtoRefused(v) == allowed[v] {
			t.Errorf("protocol %d: refused=%v", v, inetProtoRefused(v))
		}
	}
	for _, lo := range []uint64{0, 6, 17, 132, 136, 262, 0xffffffff} {
		for _, hi := range []uint64{1, 0x80000000, 0xffffffff} {
			if v := hi<<32 | lo; !inetProtoRefused(v) {
				t.Errorf("protocol %#x (junk over %d) not refused", v, lo)
			}
		}
	}
	// The type rules: only SOCK_STREAM and SOCK_DGRAM pass, with any of
	// SOCK_NONBLOCK/SOCK_CLOEXEC.
	for typ := uint64(0); typ < 1<<20; typ++ {
		refused := false
		for _, r := range inetTypesDenied {
			refused = refused || typ&r.mask == r.value
		}
		base := typ & sockTypeMask
		if refused == (base == unix.SOCK_STREAM || base == unix.SOCK_DGRAM) {
			t.Errorf("socket type %#x: refused=%v", typ, refused)
		}
	}
}
