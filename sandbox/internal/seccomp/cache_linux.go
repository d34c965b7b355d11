package seccomp

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lite-agent/lite-agent/sandbox/internal/notify"
)

// Precompiled seccomp programs. libseccomp takes ~0.5 ms (more on a busy
// machine) to build and export the programs of one policy, and a
// `lite-agent sandbox run` pays that at every start. The programs depend
// only on the rules in rules_linux.go and notify.CaptureCalls and on the
// few inputs in their key (network mode, sealed thread, notified calls),
// not on the machine: so the programs every shape of the sandbox's New
// can ask for are compiled at `go generate` time (programs.bin) and
// looked up here; any other input is compiled as before.
//
// Staleness is a test failure, never a silent difference:
// TestPrecompiledSeccompPrograms compiles every stored key afresh and
// requires the same bytes, and a change to a rule without
// `go generate ./sandbox` (its directive is in the sandbox's doc.go)
// fails it. The file is embedded in the binary: nothing outside the build
// can change what a sandbox loads.

//go:embed programs.bin
var seccompProgramsBin []byte

// seccompCompiles counts programs compiled at run time (misses of the
// table): the test that every preset's shape is precompiled reads it.
var seccompCompiles atomic.Int64

// Compiles returns how many programs this process compiled at run time
// because the table did not have them.
func Compiles() int64 { return seccompCompiles.Load() }

// precompiledPrograms parses programs.bin once: a sequence of
// (u32 key length, key, u32 program length, program), little-endian.
var precompiledPrograms = sync.OnceValue(func() map[string][]byte {
	m, err := parsePrograms(seccompProgramsBin)
	if err != nil {
		// A corrupt table is a build defect: compile everything instead.
		return nil
	}
	return m
})

func parsePrograms(b []byte) (map[string][]byte, error) {
	m := map[string][]byte{}
	next := func() ([]byte, error) {
		if len(b) < 4 {
			return nil, fmt.Errorf("truncated")
		}
		n := binary.LittleEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-4) {
			return nil, fmt.Errorf("truncated")
		}
		v := b[4 : 4+n]
		b = b[4+n:]
		return v, nil
	}
	for len(b) > 0 {
		k, err := next()
		if err != nil {
			return nil, err
		}
		p, err := next()
		if err != nil {
			return nil, err
		}
		m[string(k)] = p
	}
	return m, nil
}

func encodePrograms(keys []string, progs map[string][]byte) []byte {
	var b bytes.Buffer
	for _, k := range keys {
		b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(k))))
		b.WriteString(k)
		b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(progs[k]))))
		b.Write(progs[k])
	}
	return b.Bytes()
}

// The keys name every input of a compile: the architecture the programs
// are for (a build for another one must not find amd64's) and a SHA-256
// of the spec's %#v, which prints every field, nested conditions
// included.
func mainFilterKey(spec MainSpec) string {
	return programKey(fmt.Sprintf("%s main %#v", runtime.GOARCH, spec))
}
func childFilterKey(spec ChildSpec) string {
	return programKey(fmt.Sprintf("%s child %#v", runtime.GOARCH, spec))
}

func programKey(desc string) string {
	sum := sha256.Sum256([]byte(desc))
	return string(sum[:])
}

// Main returns the policy's main seccomp program.
func Main(spec MainSpec) ([]byte, error) {
	if p, ok := precompiledPrograms()[mainFilterKey(spec)]; ok {
		return slices.Clone(p), nil
	}
	seccompCompiles.Add(1)
	return compileMainFilter(spec)
}

// Child returns the program each child loads itself.
func Child(spec ChildSpec) ([]byte, error) {
	if p, ok := precompiledPrograms()[childFilterKey(spec)]; ok {
		return slices.Clone(p), nil
	}
	seccompCompiles.Add(1)
	return compileChildFilter(spec)
}

// precompiledShapes lists the inputs New and confinement can pass: every
// network mode, with connect refused or not; a spawner thread sealed or
// not, with or without the notification server's calls (connect only, or
// every addressed call) in its main program, with the refusal set or
// without it (its children carry it); the child programs with and
// without namespace rules and the refusal set, for each supervisor, with
// change capture (exit_group notified or not) and without.
func precompiledShapes() (mains []MainSpec, children []ChildSpec) {
	for _, mode := range []notify.Mode{notify.ModeNone, notify.ModeLoopback, notify.ModePrivate, notify.ModeUnrestricted} {
		for _, deny := range []bool{false, true} {
			mains = append(mains,
				MainSpec{Network: mode, DenyConnect: deny},
				MainSpec{Network: mode, DenyConnect: deny, RefusalsInChild: true},
				MainSpec{Network: mode, DenyConnect: deny, Sealed: true},
				MainSpec{Network: mode, DenyConnect: deny, Sealed: true, RefusalsInChild: true},
				MainSpec{Network: mode, DenyConnect: deny, Sealed: true, Notify: ConnectOnly},
				MainSpec{Network: mode, DenyConnect: deny, Sealed: true, Notify: NetSupervised})
		}
	}
	for _, ns := range []bool{false, true} {
		for _, refusals := range []bool{false, true} {
			for _, n := range []NotifySpec{{}, ConnectOnly, NetSupervised} {
				for _, v := range []NotifySpec{n, WithCapture(n, false), WithCapture(n, true)} {
					children = append(children, ChildSpec{Namespaces: ns, Refusals: refusals, Notify: v})
				}
			}
		}
	}
	return mains, children
}
