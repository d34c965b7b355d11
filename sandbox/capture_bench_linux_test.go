package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkCapturePerFile: what change capture costs one file operation
// (testdata/capture_bench.c: create, rewrite with O_TRUNC, unlink, 500
// files each, timed inside the command so that no spawn is counted), the
// same program run unconfined, confined without capture (GitWritable: no
// call trapped), and captured with a hook that records nothing; with
// absolute paths and with names relative to the working directory.
// Reported per file, in ns. As root the files are on a tmpfs mounted for the
// benchmark (the workspace with them), so that the disk's own latency,
// which varies by milliseconds on a shared machine, does not hide the
// capture's.
//
//	go test ./sandbox -run '^$' -bench CapturePerFile -benchtime 10x -count 6
func BenchmarkCapturePerFile(b *testing.B) {
	bin := testProgram(b, "capture_bench", "would time change capture per file", "-O2")
	const files = "500"
	base := b.TempDir()
	if os.Geteuid() == 0 {
		if err := unix.Mount("tmpfs", base, "tmpfs", 0, "size=64m"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { unix.Unmount(base, unix.MNT_DETACH) })
	}
	report := func(b *testing.B, run func(dir string) string) {
		b.Helper()
		var sum [3]float64
		n := 0
		for b.Loop() {
			dir, err := os.MkdirTemp(base, "d")
			if err != nil {
				b.Fatal(err)
			}
			var v [3]float64
			if _, err := fmt.Sscanf(run(dir), "create %g rewrite %g unlink %g", &v[0], &v[1], &v[2]); err != nil {
				b.Fatal(err)
			}
			for i := range v {
				sum[i] += v[i]
			}
			n++
		}
		b.ReportMetric(sum[0]/float64(n), "create-ns/file")
		b.ReportMetric(sum[1]/float64(n), "rewrite-ns/file")
		b.ReportMetric(sum[2]/float64(n), "unlink-ns/file")
	}
	sandboxes := map[bool]*Sandbox{}
	workspaces := map[bool]string{}
	for _, capture := range []bool{false, true} {
		ws, err := os.MkdirTemp(base, "ws")
		if err != nil {
			b.Fatal(err)
		}
		sb, err := New(Policy{Workspace: ws, Level: testLevel(), CaptureChanges: capture, GitWritable: !capture,
			ReadOnlyPaths: []string{filepath.Dir(bin)}})
		if err != nil {
			b.Fatal(err)
		}
		defer sb.Close()
		sandboxes[capture], workspaces[capture] = sb, ws
	}
	for _, names := range []string{"abs", "rel"} {
		b.Run(names+"/unconfined", func(b *testing.B) {
			report(b, func(dir string) string {
				out, err := exec.Command(bin, dir, files, names).Output()
				if err != nil {
					b.Fatal(err)
				}
				return string(out)
			})
		})
		for _, capture := range []bool{false, true} {
			name := names + "/confined"
			var hook ChangeFunc
			if capture {
				name = names + "/captured"
				hook = func([]string) error { return nil }
			}
			b.Run(name, func(b *testing.B) {
				report(b, func(string) string {
					dir, err := os.MkdirTemp(workspaces[capture], "d")
					if err != nil {
						b.Fatal(err)
					}
					var out, errb bytes.Buffer
					st, err := sandboxes[capture].Run(context.Background(), &Command{Path: bin,
						Args: []string{"capture_bench", dir, files, names}, Stdout: &out, Stderr: &errb, BeforeChange: hook})
					if err != nil || st.Code != 0 {
						b.Fatal(err, st, errb.String())
					}
					return out.String()
				})
			})
		}
	}
}
