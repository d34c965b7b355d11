package sandbox

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
)

// Precompiled seccomp programs. libseccomp takes ~0.5 ms (more on a busy
// machine) to build and export the programs of one policy, and a
// `lite-agent sandbox run` pays that at every start. The programs depend
// only on the rules in seccomp_linux.go and notify.CaptureCalls and on the
// few inputs in their key (network mode, sealed thread, notified calls),
// not on the machine: so the programs every shape of New can ask for are
// compiled at `go generate` time (seccomp_programs.bin) and looked up
// here; any other input is compiled as before.
//
// Staleness is a test failure, never a silent difference:
// TestPrecompiledSeccompPrograms compiles every stored key afresh and
// requires the same bytes, and a change to a rule without
// `go generate ./sandbox` fails it. The file is embedded in the binary:
// nothing outside the build can change what a sandbox loads.

//go:generate go test -run ^TestPrecompiledSeccompPrograms$ -update-seccomp .

//go:embed seccomp_programs.bin
var seccompProgramsBin []byte

// seccompCompiles counts programs compiled at run time (misses of the
// table): the test that every preset's shape is precompiled reads it.
var seccompCompiles atomic.Int64

// precompiledPrograms parses seccomp_programs.bin once: a sequence of
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
func mainFilterKey(spec filterSpec) string {
	return programKey(fmt.Sprintf("%s main %#v", runtime.GOARCH, spec))
}
func childFilterKey(nsRules bool, notify notifySpec) string {
	return programKey(fmt.Sprintf("%s child %v %#v", runtime.GOARCH, nsRules, notify))
}

func programKey(desc string) string {
	sum := sha256.Sum256([]byte(desc))
	return string(sum[:])
}

// buildMainFilter returns the policy's main seccomp program.
func buildMainFilter(spec filterSpec) ([]byte, error) {
	if p, ok := precompiledPrograms()[mainFilterKey(spec)]; ok {
		return slices.Clone(p), nil
	}
	seccompCompiles.Add(1)
	return compileMainFilter(spec)
}

// buildChildFilter returns the program each child loads itself.
func buildChildFilter(nsRules bool, notify notifySpec) ([]byte, error) {
	if p, ok := precompiledPrograms()[childFilterKey(nsRules, notify)]; ok {
		return slices.Clone(p), nil
	}
	seccompCompiles.Add(1)
	return compileChildFilter(nsRules, notify)
}

// precompiledShapes lists the inputs New and confinement can pass: every
// network mode, with connect refused or not; a spawner thread sealed or
// not, with or without the notification server's calls (connect only, or
// every addressed call) in its main program; the
// child programs with and without namespace rules, for each supervisor,
// with change capture (exit_group notified or not) and without.
func precompiledShapes() (mains []filterSpec, children []struct {
	ns     bool
	notify notifySpec
}) {
	for _, mode := range []NetworkMode{NetworkNone, NetworkLoopback, NetworkPrivate, NetworkUnrestricted} {
		for _, deny := range []bool{false, true} {
			mains = append(mains,
				filterSpec{network: mode, denyConnect: deny},
				filterSpec{network: mode, denyConnect: deny, sealed: true},
				filterSpec{network: mode, denyConnect: deny, sealed: true, notify: connectOnly},
				filterSpec{network: mode, denyConnect: deny, sealed: true, notify: netSupervised})
		}
	}
	for _, ns := range []bool{false, true} {
		for _, n := range []notifySpec{{}, connectOnly, netSupervised} {
			for _, v := range []notifySpec{n, withCapture(n, false), withCapture(n, true)} {
				children = append(children, struct {
					ns     bool
					notify notifySpec
				}{ns, v})
			}
		}
	}
	return mains, children
}
