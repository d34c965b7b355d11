package seccomp

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Actions, as the kernel ranks them (include/uapi/linux/seccomp.h): of
// all the programs of a process, the lowest as a signed value wins.
const (
	retActionFull = 0xffff0000
	retErrno      = 0x00050000
	retUserNotif  = 0x7fc00000
	retAllow      = 0x7fff0000
)

// runProgram runs a classic BPF seccomp program on a call, as the kernel
// would on x86-64. x/net/bpf's machine loads words big-endian; the kernel
// loads struct seccomp_data's words in the host's order, so each word is
// stored big-endian here with the value the kernel would read.
func runProgram(t *testing.T, prog []byte, nr int32, args [6]uint64) uint32 {
	t.Helper()
	raw := make([]bpf.RawInstruction, len(prog)/8)
	for i := range raw {
		raw[i] = bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(prog[8*i:]),
			Jt: prog[8*i+2], Jf: prog[8*i+3],
			K: binary.NativeEndian.Uint32(prog[8*i+4:]),
		}
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("program does not disassemble")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], 0xc000003e) // AUDIT_ARCH_X86_64
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[20+8*i:], uint32(a>>32))
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

// chainAction is what the kernel does with a call under every program of
// a chain: the most restrictive action.
func chainAction(t *testing.T, progs [][]byte, nr int32, args [6]uint64) uint32 {
	best := uint32(retAllow)
	for _, p := range progs {
		if r := runProgram(t, p, nr, args); int32(r&retActionFull) < int32(best&retActionFull) {
			best = r
		}
	}
	return best
}

// refusalCases yields, for every call of the refusal set, argument
// vectors around each rule's tests (the rule's bits alone, with noise,
// one bit short) and random ones.
func refusalCases(yield func(nr int32, args [6]uint64)) {
	rng := rand.New(rand.NewPCG(1, 2))
	for nr, rs := range refusalsByNr() {
		yield(nr, [6]uint64{})
		yield(nr, [6]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)})
		for range 64 {
			var a [6]uint64
			for i := range a {
				a[i] = rng.Uint64() & (rng.Uint64() | rng.Uint64()<<32) // sparse bits
			}
			yield(nr, a)
		}
		for _, r := range rs {
			for range 16 {
				var a [6]uint64
				for i := range a {
					a[i] = rng.Uint64() & rng.Uint64()
				}
				for _, m := range r.args {
					a[m.arg] = a[m.arg]&^m.mask | m.value
				}
				yield(nr, a)
				for _, m := range r.args {
					b := a
					b[m.arg] &^= m.value // a required bit missing
					yield(nr, b)
				}
			}
		}
	}
}

// TestRefusedIsTheFilter: Refused, which the notification server asks,
// says "refused" for exactly the calls the programs refuse — checked
// against a program answering EPERM for the whole set, on the arguments
// each rule tests and on random ones.
func TestRefusedIsTheFilter(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the emulation feeds x86-64 numbers and AUDIT_ARCH_X86_64; on " + runtime.GOARCH + " the program kills the foreign architecture")
	}
	whole, err := compileMainFilter(MainSpec{Network: 3, Sealed: true}) // every rule EPERM
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	refusalCases(func(nr int32, args [6]uint64) {
		n++
		filter := runProgram(t, whole, nr, args) == retErrno|uint32(unix.EPERM)
		_, said := Refused(nr, args)
		if filter != said {
			t.Errorf("syscall %d args %#x: the program refuses=%v, Refused says %v", nr, args, filter, said)
		}
	})
	if n < 1000 {
		t.Fatalf("only %d cases", n)
	}
	// Calls outside the set are not refusals: a plain open, a chmod
	// without set-id bits, clone without namespace flags, read.
	for _, c := range []struct {
		nr   int32
		args [6]uint64
	}{
		{unix.SYS_OPENAT, [6]uint64{0, 0, unix.O_CREAT | unix.O_WRONLY, 0o644}},
		{unix.SYS_OPENAT, [6]uint64{0, 0, unix.O_RDONLY, 0o4755}}, // no O_CREAT: mode ignored
		{unix.SYS_FCHMODAT, [6]uint64{0, 0, 0o755}},
		{unix.SYS_CLONE, [6]uint64{unix.CLONE_VM | unix.CLONE_THREAD}},
		{unix.SYS_UNSHARE, [6]uint64{unix.CLONE_FILES}},
		{unix.SYS_READ, [6]uint64{}},
	} {
		if r, ok := Refused(c.nr, c.args); ok {
			t.Errorf("syscall %d %#o: refused as %+v", c.nr, c.args, r)
		}
	}
	// And a few by name, with what the record says.
	for _, c := range []struct {
		nr         int32
		args       [6]uint64
		op, target string
	}{
		{unix.SYS_PTRACE, [6]uint64{}, "ptrace", ""},
		{unix.SYS_FCHMODAT, [6]uint64{0, 0, 0o4755}, "fchmodat", "mode 04755"},
		{unix.SYS_UNSHARE, [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNS}, "unshare", ""},
		{unix.SYS_MKNODAT, [6]uint64{0, 0, unix.S_IFCHR | 0o600}, "mknodat", "mode 020600"},
		{unix.SYS_MOUNT, [6]uint64{}, "mount", ""},
	} {
		r, ok := Refused(c.nr, c.args)
		if !ok || r.Op != c.op || c.target != "" && r.Target != c.target || c.nr == unix.SYS_UNSHARE && r.Target == "" {
			t.Errorf("syscall %s %#o: %+v, %v", c.op, c.args, r, ok)
		}
	}
}

// TestRefusalsReachTheListener: in each chain the sandbox builds, a call
// of the refusal set is sent to the listener where the chain has one
// whose server knows the set (never allowed, never answered EPERM by a
// program, which would outrank the notification), and refused with EPERM
// where it has none or one that does not; a call outside the set is never
// answered EPERM by these rules.
func TestRefusalsReachTheListener(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the emulation feeds x86-64 numbers and AUDIT_ARCH_X86_64; on " + runtime.GOARCH + " the program kills the foreign architecture")
	}
	must := func(p []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	capture := WithCapture(NetSupervised, true)
	chains := []struct {
		name  string
		progs [][]byte
		named bool // refusals go to the listener
	}{
		{"pooled thread, child program with the network server", [][]byte{
			must(Main(MainSpec{Network: 1, RefusalsInChild: true})),
			must(Child(ChildSpec{Namespaces: true, Refusals: true, Notify: NetSupervised}))}, true},
		{"pooled thread, captured child", [][]byte{
			must(Main(MainSpec{Network: 1, RefusalsInChild: true})),
			must(Child(ChildSpec{Namespaces: true, Refusals: true, Notify: capture}))}, true},
		{"pooled thread, child program without a listener", [][]byte{
			must(Main(MainSpec{Network: 3, RefusalsInChild: true})),
			must(Child(ChildSpec{Namespaces: true, Refusals: true}))}, false},
		{"sealed thread with its listener", [][]byte{
			must(Main(MainSpec{Network: 1, Sealed: true, Notify: NetSupervised}))}, true},
		{"sealed thread without a listener", [][]byte{
			must(Main(MainSpec{Network: 3, Sealed: true}))}, false},
		{"sealed thread, captured child", [][]byte{
			must(Main(MainSpec{Network: 1, Sealed: true, RefusalsInChild: true})),
			must(Child(ChildSpec{Refusals: true, Notify: capture}))}, true},
		{"a re-executed child (confinement): its listener's server does not know the set", [][]byte{
			must(Main(MainSpec{Network: 1})),
			must(Child(ChildSpec{Namespaces: true, Notify: NetSupervised}))}, false},
		{"a captured command's own thread", [][]byte{
			must(Main(MainSpec{Network: 1, Sealed: true, RefusalsInChild: true})),
			must(Child(ChildSpec{Refusals: true, Notify: WithCapture(NetSupervised, false)}))}, true},
	}
	for _, c := range chains {
		refusedAs := uint32(retErrno | uint32(unix.EPERM))
		if c.named {
			refusedAs = retUserNotif
		}
		bad := 0
		refusalCases(func(nr int32, args [6]uint64) {
			got := chainAction(t, c.progs, nr, args)
			_, refused := Refused(nr, args)
			switch {
			case refused && got != refusedAs:
				bad++
				if bad < 5 {
					t.Errorf("%s: syscall %d %#x is refused, the chain answers %#x (want %#x)", c.name, nr, args, got, refusedAs)
				}
			case !refused && got == retErrno|uint32(unix.EPERM):
				bad++
				if bad < 5 {
					t.Errorf("%s: syscall %d %#x is no refusal, the chain answers EPERM", c.name, nr, args)
				}
			}
		})
	}
}

// TestNoListenerOfTheirOwn: in each chain with a listener, the program
// loaded last refuses seccomp(SECCOMP_SET_MODE_FILTER) with
// SECCOMP_FILTER_FLAG_NEW_LISTENER (junk in the registers' upper halves
// changes nothing: the kernel reads unsigned ints), and lets a filter
// without a listener through; and no thread program that a child program
// with a listener follows refuses it (the child's own load would fail).
// The sandbox's TestEscapeOwnListener shows the attack on a real kernel.
func TestNoListenerOfTheirOwn(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the emulation feeds x86-64 numbers and AUDIT_ARCH_X86_64; on " + runtime.GOARCH + " the program kills the foreign architecture")
	}
	must := func(p []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const nr = unix.SYS_SECCOMP
	listener := [6]uint64{unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER}
	cases := map[string][6]uint64{
		"with a listener":                 listener,
		"with a listener and TSYNC_ESRCH": {unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC | 1<<4},
		"junk in the upper halves":        {0xdead_0000_0000 | unix.SECCOMP_SET_MODE_FILTER, 0xbeef_0000_0000 | unix.SECCOMP_FILTER_FLAG_NEW_LISTENER},
	}
	plain := [6]uint64{unix.SECCOMP_SET_MODE_FILTER, 0}
	for _, c := range []struct {
		name  string
		last  []byte   // the chain's last program
		first [][]byte // loaded before it
	}{
		{"a child program with the network server", must(Child(ChildSpec{Namespaces: true, Refusals: true, Notify: NetSupervised})),
			[][]byte{must(Main(MainSpec{Network: 1, RefusalsInChild: true}))}},
		{"a captured child", must(Child(ChildSpec{Namespaces: true, Refusals: true, Notify: WithCapture(NetSupervised, true)})),
			[][]byte{must(Main(MainSpec{Network: 1, RefusalsInChild: true}))}},
		{"a captured command's own thread", must(Child(ChildSpec{Refusals: true, Notify: WithCapture(NetSupervised, false)})),
			[][]byte{must(Main(MainSpec{Network: 1, Sealed: true, RefusalsInChild: true}))}},
		{"a sealed thread with its listener", must(Main(MainSpec{Network: 1, Sealed: true, Notify: NetSupervised})), nil},
		{"a re-executed child", must(Child(ChildSpec{Namespaces: true, Notify: NetSupervised})), nil},
	} {
		for what, args := range cases {
			if got := chainAction(t, [][]byte{c.last}, nr, args); got != retErrno|uint32(unix.EPERM) {
				t.Errorf("%s: seccomp %s: %#x, want EPERM", c.name, what, got)
			}
		}
		if got := chainAction(t, [][]byte{c.last}, nr, plain); got != retAllow {
			t.Errorf("%s: a filter without a listener: %#x, want allowed", c.name, got)
		}
		for i, p := range c.first {
			if got := runProgram(t, p, nr, listener); got != retAllow {
				t.Errorf("%s: program %d before the last refuses the child program's own listener: %#x", c.name, i, got)
			}
		}
	}
}
