// Command rss measures the memory of a 2-turn headless session: the
// scripted model asks for one bash call (`true`, run confined, with a
// checkpoint), then answers. For each binary it runs the session N times
// twice — straight from the file given (as `go build` wrote it) and from
// a copy made as `make install` makes one (install -m 0755) — and samples
// /proc/PID/smaps_rollup every half millisecond while the session runs.
// It prints the medians of each run's peak:
//
//	maxrss   ru_maxrss of the process (what /usr/bin/time -f %M reports)
//	rss      Rss of smaps_rollup, its largest sample
//	anon     Anonymous: heap, stacks, the runtime's own memory
//	file     Rss - Anonymous: pages of files mapped, the executable's
//	pss      Pss: each page divided by the processes that map it
//	uss      Private_Clean + Private_Dirty: pages no other process maps
//
// Usage: go build -o bin/lite-agent ./cmd/lite-agent && go run ./bench/rss -runs 20 bin/lite-agent [OTHER...]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type sample struct{ maxrss, rss, anon, file, pss, uss int64 } // KiB

func main() {
	runs := flag.Int("runs", 20, "sessions per binary and copy")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/rss [-runs N] BINARY...")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "lite-agent-rss-")
	check(err)
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "two-turns.json")
	check(os.WriteFile(script, []byte(`{"turns": [
  {"text": "Running it.", "tool_calls": [{"id": "t1", "name": "bash", "input": {"command": "true"}}]},
  {"text": "Done."}
]}`), 0o644))
	fmt.Printf("%-34s %8s %8s %8s %8s %8s %8s   (MiB, medians of %d runs' peaks)\n", "binary", "maxrss", "rss", "anon", "file", "pss", "uss", *runs)
	for i, bin := range flag.Args() {
		installed := filepath.Join(dir, fmt.Sprintf("installed-%d", i), "lite-agent")
		check(os.MkdirAll(filepath.Dir(installed), 0o755))
		out, err := exec.Command("install", "-m", "0755", bin, installed).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "install: %v %s\n", err, out)
			os.Exit(1)
		}
		for _, c := range []struct{ name, path string }{{bin + " (as built)", bin}, {bin + " (installed copy)", installed}} {
			var ss []sample
			for r := 0; r < *runs; r++ {
				ss = append(ss, session(c.path, script, dir))
			}
			med := func(f func(sample) int64) float64 {
				v := make([]int64, len(ss))
				for i, s := range ss {
					v[i] = f(s)
				}
				slices.Sort(v)
				return float64(v[len(v)/2]) / 1024
			}
			fmt.Printf("%-34s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f\n", c.name,
				med(func(s sample) int64 { return s.maxrss }), med(func(s sample) int64 { return s.rss }),
				med(func(s sample) int64 { return s.anon }), med(func(s sample) int64 { return s.file }),
				med(func(s sample) int64 { return s.pss }), med(func(s sample) int64 { return s.uss }))
		}
	}
}

// session runs one 2-turn session and returns its peaks.
func session(bin, script, dir string) sample {
	ws, err := os.MkdirTemp(dir, "ws-")
	check(err)
	state, err := os.MkdirTemp(dir, "state-")
	check(err)
	defer os.RemoveAll(ws)
	defer os.RemoveAll(state)
	cmd := exec.Command(bin, "run", "--workspace", ws, "--state-dir", state, "--script", script, "--allowed-tools", "bash", "-p", "hi")
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	check(cmd.Start())
	var peak sample
	done := make(chan struct{})
	go func() {
		path := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/smaps_rollup"
		for {
			select {
			case <-done:
				return
			default:
			}
			if s, ok := rollup(path); ok {
				peak.rss = max(peak.rss, s.rss)
				peak.anon = max(peak.anon, s.anon)
				peak.file = max(peak.file, s.rss-s.anon)
				peak.pss = max(peak.pss, s.pss)
				peak.uss = max(peak.uss, s.uss)
			}
			time.Sleep(500 * time.Microsecond)
		}
	}()
	err = cmd.Wait()
	close(done)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", bin, err)
		os.Exit(1)
	}
	peak.maxrss = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	return peak
}

// rollup reads smaps_rollup (KiB); false once the process is gone.
func rollup(path string) (sample, bool) {
	f, err := os.Open(path)
	if err != nil {
		return sample{}, false
	}
	defer f.Close()
	var s sample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "Rss":
			s.rss = n
		case "Pss":
			s.pss = n
		case "Anonymous":
			s.anon = n
		case "Private_Clean", "Private_Dirty":
			s.uss += n
		}
	}
	return s, s.rss > 0
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
