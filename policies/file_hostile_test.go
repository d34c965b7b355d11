package policies

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/safefile"
)

// callWithin runs f and fails the test if it has not returned within d: a
// hang is reported as a failure instead of stalling the test binary.
func callWithin[T any](t *testing.T, d time.Duration, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("%s has not returned after %v: it hangs", what, d)
		panic("unreachable")
	}
}

// plantFIFO makes path a FIFO with no writer.
func plantFIFO(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFIFOPolicyFileHangsOSReadFileButNotLoad shows the attack of a FIFO
// planted as the workspace's policy file: os.ReadFile (what LoadFile used)
// blocks in open(2) for as long as nobody writes, while Load returns at
// once with an error naming the file. The proof does not sleep: Load has
// returned while the os.ReadFile goroutine is still blocked (its channel
// is empty), and only our own open of the FIFO for writing releases it.
func TestFIFOPolicyFileHangsOSReadFileButNotLoad(t *testing.T) {
	ws := t.TempDir()
	os.Mkdir(filepath.Join(ws, ".lite-agent"), 0o755)
	fifo := WorkspaceFile(ws)
	plantFIFO(t, fifo)

	unguarded := make(chan error, 1)
	go func() {
		_, err := os.ReadFile(fifo)
		unguarded <- err
	}()

	strict, _ := PresetByName("strict")
	err := callWithin(t, 10*time.Second, "Load with a FIFO as policy file", func() error {
		_, err := Load(strict, ws, &LoadOptions{UserFile: "-"})
		return err
	})
	if !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("Load error = %v, want one naming %s as a FIFO", err, fifo)
	}
	select {
	case err := <-unguarded:
		t.Fatalf("os.ReadFile of the FIFO returned (%v) before anybody wrote: the attack would not hang, this test proves nothing", err)
	default:
		// Still blocked: the hang the fix removes.
	}
	// Release the blocked reader: opening for writing completes its open,
	// closing gives it end of file.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-unguarded; err != nil {
		t.Fatalf("os.ReadFile after the writer closed: %v", err)
	}
}

// TestHostilePolicyFiles: each thing an agent's bash can make of
// .lite-agent/policy.toml (or of .lite-agent itself) is refused quickly with
// an error naming the file — first shown to work against an unguarded read.
func TestHostilePolicyFiles(t *testing.T) {
	outside := t.TempDir()
	// A file the user never chose: it would tighten nothing and could,
	// under a trusting preset, allow everything.
	secret := filepath.Join(outside, "other.toml")
	os.WriteFile(secret, []byte("[permissions]\nask = [\"bash(outside-marker)\"]\n"), 0o644)

	cases := []struct {
		name string
		// plant makes the hostile file in ws and returns the path to name
		// in the error.
		plant func(t *testing.T, ws string) string
		// unguarded shows the attack on a plain read (os.ReadFile, or a
		// bounded read where a plain one would never end).
		unguarded func(t *testing.T, path string)
		want      error
	}{
		{
			name: "symlink to /dev/zero",
			plant: func(t *testing.T, ws string) string {
				p := WorkspaceFile(ws)
				os.Symlink("/dev/zero", p)
				return p
			},
			unguarded: func(t *testing.T, p string) {
				// os.ReadFile would read until memory runs out; reading
				// 2 MiB through the link shows the stream does not end.
				f, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if n, _ := io.Copy(io.Discard, io.LimitReader(f, 2<<20)); n != 2<<20 {
					t.Fatalf("read %d bytes through the link to /dev/zero", n)
				}
			},
			want: safefile.ErrNotRegular,
		},
		{
			name: "symlink to a file outside",
			plant: func(t *testing.T, ws string) string {
				p := WorkspaceFile(ws)
				os.Symlink(secret, p)
				return p
			},
			unguarded: func(t *testing.T, p string) {
				if data, err := os.ReadFile(p); err != nil || !strings.Contains(string(data), "outside-marker") {
					t.Fatalf("os.ReadFile through the link: %q, %v", data, err)
				}
			},
			want: safefile.ErrNotRegular,
		},
		{
			name: ".lite-agent a symlink to a directory outside",
			plant: func(t *testing.T, ws string) string {
				os.Remove(filepath.Join(ws, ".lite-agent"))
				os.Symlink(outside, filepath.Join(ws, ".lite-agent"))
				os.WriteFile(filepath.Join(outside, "policy.toml"), []byte("[permissions]\nask = [\"bash(outside-marker)\"]\n"), 0o644)
				return WorkspaceFile(ws)
			},
			unguarded: func(t *testing.T, p string) {
				if data, err := os.ReadFile(p); err != nil || !strings.Contains(string(data), "outside-marker") {
					t.Fatalf("os.ReadFile through the linked directory: %q, %v", data, err)
				}
			},
			want: safefile.ErrNotRegular,
		},
		{
			name: "larger than 1 MiB",
			plant: func(t *testing.T, ws string) string {
				p := WorkspaceFile(ws)
				// A valid file: only its size is wrong.
				var b strings.Builder
				b.WriteString("[permissions]\nask = [\n")
				for i := 0; b.Len() <= safefile.DefaultLimit; i++ {
					fmt.Fprintf(&b, "  \"bash(tool%d:*)\",\n", i)
				}
				b.WriteString("]\n")
				os.WriteFile(p, []byte(b.String()), 0o644)
				return p
			},
			unguarded: func(t *testing.T, p string) {
				if data, err := os.ReadFile(p); err != nil || len(data) <= safefile.DefaultLimit {
					t.Fatalf("os.ReadFile: %d bytes, %v", len(data), err)
				}
			},
			want: safefile.ErrTooLarge,
		},
	}
	strict, _ := PresetByName("strict")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			os.Mkdir(filepath.Join(ws, ".lite-agent"), 0o755)
			p := c.plant(t, ws)
			c.unguarded(t, p)
			err := callWithin(t, 10*time.Second, "Load", func() error {
				_, err := Load(strict, ws, &LoadOptions{UserFile: "-"})
				return err
			})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Load error = %v, want %v naming %s", err, c.want, p)
			}
			if !strings.Contains(err.Error(), "replace it with a regular file") {
				t.Errorf("the error does not say what to do: %v", err)
			}
		})
	}
}

// TestUserPolicyFileIsReadSafely: the user's own file may be a symlink
// (dotfile managers link it) but what it leads to must be a small regular
// file; a FIFO is an error, not a hang.
func TestUserPolicyFileIsReadSafely(t *testing.T) {
	cfg := t.TempDir()
	real := filepath.Join(cfg, "dotfiles.toml")
	os.WriteFile(real, []byte("[permissions]\ndeny = [\"bash(rm:*)\"]\n"), 0o644)
	link := filepath.Join(cfg, "policy.toml")
	os.Symlink(real, link)
	f, err := LoadFile(link)
	if err != nil || f == nil || len(f.Rules) != 1 {
		t.Fatalf("a symlinked user file: %+v, %v", f, err)
	}
	fifo := filepath.Join(cfg, "fifo.toml")
	plantFIFO(t, fifo)
	err = callWithin(t, 10*time.Second, "LoadFile of a FIFO", func() error { _, err := LoadFile(fifo); return err })
	if !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
		t.Fatalf("LoadFile of a FIFO: %v", err)
	}
	zero := filepath.Join(cfg, "zero.toml")
	os.Symlink("/dev/zero", zero)
	err = callWithin(t, 10*time.Second, "LoadFile of /dev/zero", func() error { _, err := LoadFile(zero); return err })
	if !errors.Is(err, safefile.ErrNotRegular) {
		t.Fatalf("LoadFile of a link to /dev/zero: %v", err)
	}
	if f, err := LoadFile(filepath.Join(cfg, "none.toml")); f != nil || err != nil {
		t.Fatalf("a missing user file is skipped: %+v, %v", f, err)
	}
}

// manyRules is a policy file with n rules, one per line.
func manyRules(n int) []byte {
	var b strings.Builder
	b.WriteString("[permissions]\ndeny = [\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  \"bash(tool%d run:*)\",\n", i)
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

// parseAndCompile returns the CPU time (user and system, all threads) that
// parsing and compiling data took: on a shared machine the wall time
// measures the other processes too.
func parseAndCompile(t testing.TB, data []byte) time.Duration {
	ws := os.TempDir()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	f, err := ParseFile("p.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(f.Rules, ws); err != nil {
		t.Fatal(err)
	}
	return cpu() - start
}

// TestManyRulesLoadInLinearTime: 200,000 rules used to take over 30 s (the
// TOML parser's Shape counts lines from the start of the file for every
// rule). Now loading is linear: 200,000 rules take well under a second
// of CPU (CPU time, not wall time: the machine may be shared),
// and ten times the rules take about ten times as long, not a hundred.
// (A workspace file is capped at 1 MiB, about 50,000 rules; the parser is
// measured on its own so that the cap does not hide a quadratic cost.)
func TestManyRulesLoadInLinearTime(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: would have checked that 200,000 rules parse in well under a second")
	}
	small, big := manyRules(20_000), manyRules(200_000)
	parseAndCompile(t, small) // warm up
	ts := parseAndCompile(t, small)
	// The best of two runs: the machine is shared, and a quadratic parse
	// is slow every time.
	tb := callWithin(t, 60*time.Second, "parsing 200,000 rules", func() time.Duration { return min(parseAndCompile(t, big), parseAndCompile(t, big)) })
	t.Logf("20,000 rules: %v; 200,000 rules: %v (ratio %.1f)", ts, tb, float64(tb)/float64(ts))
	limit := time.Second
	if raceEnabled {
		limit = 10 * time.Second
	}
	if tb > limit {
		t.Errorf("200,000 rules took %v, want under %v", tb, limit)
	}
	// Quadratic would be ×100; allow noise from a shared machine.
	if r := float64(tb) / float64(ts); r > 30 {
		t.Errorf("10× the rules took %.0f× as long: loading is not linear", r)
	}
	// Line numbers are still right at the end of a big file.
	f, _ := ParseFile("p.toml", big)
	if last := f.Rules[len(f.Rules)-1]; last.Source != "p.toml:200002" {
		t.Errorf("the last rule's source is %q, want p.toml:200002", last.Source)
	}
}

// BenchmarkParsePolicyFile200000Rules measures parsing and compiling a
// policy file of 200,000 rules.
func BenchmarkParsePolicyFile200000Rules(b *testing.B) {
	data := manyRules(200_000)
	b.SetBytes(int64(len(data)))
	for range b.N {
		parseAndCompile(b, data)
	}
}

// TestPlainWordsAgreesWithTheParser: the fast path for plain rule patterns
// gives the same words, or leaves the pattern to the shell parser.
func TestPlainWordsAgreesWithTheParser(t *testing.T) {
	for _, pat := range []string{
		"git status", "npm run test", "  go   test ./...  ", "a\tb", "make -j4 all", "curl", "rm -rf /",
		"x=1", "a=b c", "time ls", "if", "declare -x a", "let a", "coproc x", "function f", "for",
		"echo a,b", "user@host", "100%", "a+b", "ls ~", "ls *", "echo $x", "echo 'a b'", "a#b", "!",
		"[[", "{", "done", "in", "select", "nameref x", "export A", "local a", "readonly a", "typeset a",
	} {
		fast, ok := plainWords(pat)
		if !ok {
			continue
		}
		slow, err := parsedWords(pat)
		if err != nil || strings.Join(slow, "\x00") != strings.Join(fast, "\x00") {
			t.Errorf("%q: plain words %q, the parser %q (%v)", pat, fast, slow, err)
		}
	}
}
