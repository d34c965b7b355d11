package spawn

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestProbeNamespacesAgreesWithEachProbe: the one child of
// ProbeNamespaces says what the probes one by one say — the namespaces a
// command may get (PID for root; user+PID otherwise; mount), and whether
// the sandbox's own devpts and /proc can be mounted in them — as root and
// again as uid 65534 (re-executed with setpriv), whose namespaces and
// /proc are made differently. When the one child fails, the sandbox asks
// each probe on its own (the probes themselves), so only agreement on
// success needs a host that has them.
func TestProbeNamespacesAgreesWithEachProbe(t *testing.T) {
	u := User{Root: os.Geteuid() == 0, UID: os.Getuid(), GID: os.Getgid()}
	devpts, proc, ok := ProbeNamespaces(u)
	var ns error
	if u.Root {
		ns = errors.Join(ProbePIDNS(), ProbeMountNS(u))
	} else {
		ns = errors.Join(ProbeUserNS(u.UID, u.GID), ProbeMountNS(u))
	}
	oneDevpts, oneProc := probeDevpts(u), probeProc(u)
	t.Logf("uid %d: together ok=%v devpts=%v proc=%v; one by one: namespaces %v, devpts %v, proc %v", u.UID, ok, devpts, proc, ns, oneDevpts, oneProc)
	switch {
	case ok && ns != nil:
		t.Errorf("the one child had every namespace, the probes one by one did not: %v", ns)
	case ok && (devpts == nil) != (oneDevpts == nil):
		t.Errorf("devpts: together %v, alone %v", devpts, oneDevpts)
	case ok && (proc == nil) != (oneProc == nil):
		t.Errorf("proc: together %v, alone %v", proc, oneProc)
	case !ok && ns == nil && oneDevpts == nil && oneProc == nil:
		t.Errorf("the one child failed where every probe on its own works")
	}
	if !ok {
		t.Logf("this host has not every namespace (the one-by-one path decides): %v", errors.Join(ns, oneDevpts, oneProc))
	}

	if !u.Root || os.Getenv("LITE_AGENT_SPAWN_UNPRIVILEGED") != "" {
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not installed: would compare the probes again as uid 65534")
	}
	// The test binary's build directory is root's: a copy in a
	// directory that user can reach.
	dir, err := os.MkdirTemp("", "lite-agent-spawn-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "spawn.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", "env", "-i",
		"LITE_AGENT_SPAWN_UNPRIVILEGED=1", "TMPDIR=/tmp", bin, "-test.run", "^TestProbeNamespacesAgreesWithEachProbe$", "-test.v").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Errorf("as uid 65534: %v\n%s", err, out)
	}
	t.Logf("as uid 65534:\n%s", out)
}

// BenchmarkProbeNamespaces: what a process's first sandbox pays to learn
// its namespaces, with one child (together) and with one per probe (one
// by one), alternated in each iteration; the medians are reported.
//
//	go test ./sandbox/internal/spawn -run '^$' -bench ProbeNamespaces -benchtime 200x
func BenchmarkProbeNamespaces(b *testing.B) {
	u := User{Root: os.Geteuid() == 0, UID: os.Getuid(), GID: os.Getgid()}
	if _, _, ok := ProbeNamespaces(u); !ok {
		b.Skip("this host has not every namespace: the one-by-one path is taken anyway")
	}
	var together, alone []time.Duration
	for b.Loop() {
		t0 := time.Now()
		ProbeNamespaces(u)
		t1 := time.Now()
		if u.Root {
			ProbePIDNS()
		} else {
			ProbeUserNS(u.UID, u.GID)
		}
		ProbeMountNS(u)
		probeDevpts(u)
		probeProc(u)
		together, alone = append(together, t1.Sub(t0)), append(alone, time.Since(t1))
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	b.ReportMetric(med(together), "µs-together")
	b.ReportMetric(med(alone), "µs-one-by-one")
}
