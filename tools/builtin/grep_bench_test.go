package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lite-agent/lite-agent/tools"
)

// The grep benchmark compares the grep tool with ripgrep on the same tree
// and the same query, in one run:
//
//	go test ./tools/builtin -run '^$' -bench 'Grep|Ripgrep' -count 6 | tee /tmp/grep-bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col .name /tmp/grep-bench.txt
//
// (-col .name puts the tool and rg side by side, with rg's time relative
// to the tool's.)
//
// The tree (20,000 source-like files in nested directories, about 150 MB)
// is generated once, deterministically, into $TMPDIR/lite-agent-grep-bench-v1
// and kept there for later runs; delete it to regenerate. It has no ignore
// files, no hidden files and no symlinks, and it is not in a git
// repository, so rg's and the tool's file selection rules agree; a few
// binary files (a NUL in the first bytes) that contain the query are
// skipped by both. Before timing, each benchmark checks that the tool and
// rg find the same files (and the same lines in content mode).

const (
	grepBenchFiles = 20000
	// grepBenchPattern needs the regexp (not just a literal): the tool
	// finds candidates with the literal "Handler(" and checks their lines.
	grepBenchPattern = `func \w+Handler\(`
	grepBenchVersion = "v1"
)

var grepBenchTree = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(os.TempDir(), "lite-agent-grep-bench-"+grepBenchVersion)
	tree := filepath.Join(dir, "tree")
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err == nil {
		return tree, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := grepBenchGenerate(tree); err != nil {
		return "", err
	}
	return tree, os.WriteFile(done, nil, 0o644)
})

var grepBenchWords = strings.Fields(`request response handler config server client context buffer reader writer
	session token cache index query result value record stream channel worker queue event status error
	message payload header router service store model schema policy manager registry parser encoder decoder
	user account order item product price amount total count limit offset cursor page filter sort key`)

var grepBenchExts = []string{"go", "ts", "py", "java", "rs", "js", "c", "md"}

// grepBenchGenerate writes the benchmark tree: deterministic, about 20,000
// files, most of them without a match.
func grepBenchGenerate(tree string) error {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	const parts = 4
	for part := range parts {
		wg.Go(func() {
			var buf bytes.Buffer
			for i := part; i < grepBenchFiles; i += parts {
				r := rand.New(rand.NewPCG(uint64(i), 0x5eed))
				rel := fmt.Sprintf("pkg%02d/mod%02d/part%d/file%05d.%s", r.IntN(16), r.IntN(8), r.IntN(6), i, grepBenchExts[r.IntN(len(grepBenchExts))])
				if i%7 == 0 { // some files higher up the tree
					rel = fmt.Sprintf("pkg%02d/file%05d.%s", r.IntN(16), i, grepBenchExts[r.IntN(len(grepBenchExts))])
				}
				buf.Reset()
				grepBenchContent(&buf, r, i)
				p := filepath.Join(tree, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					errs <- err
					return
				}
				if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// grepBenchContent writes source-like text. About 3% of files contain a
// real match, about 10% the literal "Handler(" without one (candidates the
// regexp must reject), and a few are binary.
func grepBenchContent(buf *bytes.Buffer, r *rand.Rand, i int) {
	w := func() string { return grepBenchWords[r.IntN(len(grepBenchWords))] }
	title := func(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
	if i%1000 == 999 {
		// Binary: a NUL near the start, then text with a match.
		buf.WriteString("\x7fELF\x02\x01\x01\x00\x00\x00")
		fmt.Fprintf(buf, "func %sHandler(w http.ResponseWriter) {}\n", title(w()))
	}
	// Sizes: mostly 1-12 KB, a tail up to ~250 KB.
	size := 1000 + r.IntN(11000)
	if r.IntN(20) == 0 {
		size = 20000 + r.IntN(230000)
	}
	matchAt, candAt := -1, -1
	if r.IntN(100) < 3 {
		matchAt = r.IntN(size)
	}
	if r.IntN(100) < 10 {
		candAt = r.IntN(size)
	}
	indent := 0
	for buf.Len() < size {
		tab := strings.Repeat("\t", indent)
		switch k := r.IntN(12); {
		case matchAt >= 0 && buf.Len() >= matchAt:
			fmt.Fprintf(buf, "func %s%sHandler(ctx context.Context, %s *%s) error {\n", w(), title(w()), w(), title(w()))
			matchAt = -1
			indent = 1
		case candAt >= 0 && buf.Len() >= candAt:
			fmt.Fprintf(buf, "%sh := New%sHandler(%s, %s)\n", tab, title(w()), w(), w())
			candAt = -1
		case k == 0:
			fmt.Fprintf(buf, "func (s *%s) %s%s(%s %s) (%s, error) {\n", title(w()), title(w()), title(w()), w(), title(w()), w())
			indent = 1
		case k == 1:
			fmt.Fprintf(buf, "%s// %s the %s %s before the %s is %s.\n", tab, title(w()), w(), w(), w(), w())
		case k == 2 && indent > 0:
			fmt.Fprintf(buf, "%sif err := %s.%s(%s); err != nil {\n%s\treturn fmt.Errorf(\"%s: %%w\", err)\n%s}\n", tab, w(), title(w()), w(), tab, w(), tab)
		case k == 3 && indent > 0:
			buf.WriteString("}\n\n")
			indent = 0
		case k == 4:
			fmt.Fprintf(buf, "%s%s := %s.%sHandler.%s(%d)\n", tab, w(), w(), w(), title(w()), r.IntN(10000))
		case k == 5:
			fmt.Fprintf(buf, "%sfor _, %s := range %s.%s {\n%s\t%s = append(%s, %s)\n%s}\n", tab, w(), w(), title(w()), tab, w(), w(), w(), tab)
		default:
			fmt.Fprintf(buf, "%s%s.%s = %s(%s, %q)\n", tab, w(), title(w()), w(), w(), w())
		}
	}
}

// grepBenchContext is a call context on the tree.
func grepBenchContext(b *testing.B, tree string) *tools.Context {
	root, err := os.OpenRoot(tree)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	return &tools.Context{Ctx: context.Background(), Workspace: tree, Root: root}
}

func grepBenchSetup(b *testing.B) string {
	tree, err := grepBenchTree()
	if err != nil {
		b.Fatalf("generating the benchmark tree: %v", err)
	}
	return tree
}

func grepBenchTool(b *testing.B, ctx *tools.Context, mode string) string {
	in, _ := json.Marshal(map[string]any{"pattern": grepBenchPattern, "output_mode": mode})
	r := Grep().Call(ctx, in)
	if r.IsError {
		b.Fatalf("grep tool: %s", r.TextOf())
	}
	return r.TextOf()
}

func grepBenchRipgrep(b *testing.B, tree string, args ...string) string {
	cmd := exec.Command("rg", append(args, "--no-messages", "--", grepBenchPattern, ".")...)
	cmd.Dir = tree
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("rg %v: %v", args, err)
	}
	return string(out)
}

// grepBenchLines returns the lines of out sorted, without rg's "./" prefix.
func grepBenchLines(out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "./")
	}
	slices.Sort(lines)
	return lines
}

// grepBenchSame fails b unless the tool and rg produced the same lines.
func grepBenchSame(b *testing.B, tool, rg string) {
	t, r := grepBenchLines(tool), grepBenchLines(rg)
	if strings.Contains(tool, "[Output truncated") || len(t) < 100 {
		b.Fatalf("the benchmark query must give 100 to 1000 result lines, got %d (truncated: %v)", len(t), strings.Contains(tool, "truncated"))
	}
	if !slices.Equal(t, r) {
		for i := 0; i < len(t) || i < len(r); i++ {
			var tl, rl string
			if i < len(t) {
				tl = t[i]
			}
			if i < len(r) {
				rl = r[i]
			}
			if tl != rl {
				b.Fatalf("the grep tool (%d lines) and rg (%d lines) disagree; first difference at line %d:\n tool: %q\n   rg: %q", len(t), len(r), i, tl, rl)
			}
		}
	}
}

func grepBenchNeedRipgrep(b *testing.B) {
	if _, err := exec.LookPath("rg"); err != nil {
		b.Skip("rg (ripgrep) is not on PATH: install it (apt-get install ripgrep) to compare the grep tool with it")
	}
}

// grepBenchCheck makes sure, once per mode, that the tool and rg agree.
var grepBenchChecked sync.Map

func grepBenchCheck(b *testing.B, tree, mode string) {
	if _, ok := grepBenchChecked.Load(mode); ok {
		return
	}
	grepBenchNeedRipgrep(b)
	ctx := grepBenchContext(b, tree)
	if mode == grepModeFiles {
		grepBenchSame(b, grepBenchTool(b, ctx, mode), grepBenchRipgrep(b, tree, "-l"))
	} else {
		grepBenchSame(b, grepBenchTool(b, ctx, mode), grepBenchRipgrep(b, tree, "-n", "--no-heading"))
	}
	grepBenchChecked.Store(mode, true)
}

func BenchmarkGrepTool(b *testing.B) {
	tree := grepBenchSetup(b)
	for _, mode := range []string{grepModeFiles, grepModeContent} {
		b.Run("mode="+mode, func(b *testing.B) {
			grepBenchCheck(b, tree, mode)
			ctx := grepBenchContext(b, tree)
			for b.Loop() {
				grepBenchTool(b, ctx, mode)
			}
		})
	}
}

func BenchmarkRipgrep(b *testing.B) {
	grepBenchNeedRipgrep(b)
	tree := grepBenchSetup(b)
	for _, tc := range []struct {
		mode string
		args []string
	}{
		{grepModeFiles, []string{"-l"}},
		{grepModeContent, []string{"-n", "--no-heading"}},
	} {
		b.Run("mode="+tc.mode, func(b *testing.B) {
			grepBenchCheck(b, tree, tc.mode)
			for b.Loop() {
				grepBenchRipgrep(b, tree, tc.args...)
			}
		})
	}
}
