//go:build linux

package sandbox

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// The spawn benchmarks run side by side in one `go test -bench` so that
// their ratio is measured under the same load:
//
//	go test -c -o /tmp/sandbox.test ./sandbox
//	for i in $(seq 10); do /tmp/sandbox.test -test.run '^$' -test.bench 'Spawn' -test.count 1; done | tee spawn.txt
//	go run golang.org/x/perf/cmd/benchstat@latest spawn.txt
//
// BenchmarkSpawnConfinedTrue is the full Go API path (Sandbox.Run: Landlock,
// seccomp, capabilities, cgroups or namespaces, the notification server; nil
// writers need no output pipes); BenchmarkSpawnPlainExecTrue is
// exec.Command("/bin/true").Run(). On a shared machine the means of both
// swing with the load; BenchmarkSpawnSideBySide alternates the two on every
// iteration and reports their medians and its ratio, which load shifts
// much less.

func BenchmarkSpawnConfinedTrue(b *testing.B) {
	sb, err := New(Policy{Workspace: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	ctx := context.Background()
	cmd := &Command{Path: "/bin/true"}
	for b.Loop() {
		st, err := sb.Run(ctx, cmd)
		if err != nil || st.Code != 0 {
			b.Fatal(err, st)
		}
	}
}

func BenchmarkSpawnPlainExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSpawnSideBySide(b *testing.B) {
	spawnSideBySide(b, Policy{Workspace: b.TempDir()}, nil)
}

// BenchmarkSpawnCapturedSideBySide is BenchmarkSpawnSideBySide for a
// command under change capture, as the agent's bash runs them: a
// listener and a child program with the capture calls (and the seccomp
// refusal set) per command.
func BenchmarkSpawnCapturedSideBySide(b *testing.B) {
	spawnSideBySide(b, Policy{Workspace: b.TempDir(), CaptureChanges: true}, func([]string) error { return nil })
}

// spawnSideBySide alternates a confined spawn of /bin/true (under p, with
// before as its BeforeChange) and a plain one in every iteration, and
// reports the median of each and their ratio.
func spawnSideBySide(b *testing.B, p Policy, before ChangeFunc) {
	sb, err := New(p)
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	ctx := context.Background()
	cmd := &Command{Path: "/bin/true", BeforeChange: before}
	var confined, plain []time.Duration
	for b.Loop() {
		t0 := time.Now()
		st, err := sb.Run(ctx, cmd)
		confined = append(confined, time.Since(t0))
		if err != nil || st.Code != 0 {
			b.Fatal(err, st)
		}
		t0 = time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		plain = append(plain, time.Since(t0))
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2])
	}
	c, pl := median(confined), median(plain)
	b.ReportMetric(c, "confined-median-ns")
	b.ReportMetric(pl, "plain-median-ns")
	b.ReportMetric(c/pl, "ratio")
}
