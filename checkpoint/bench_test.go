package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"github.com/lite-agent/lite-agent/sandbox"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Checkpoints against the shadow-git approach (`git add -A && git commit`
// into a separate GIT_DIR whose work tree is the workspace), side by side in
// one run, on a generated workspace:
//
//	go test ./checkpoint -run '^$' -bench . -benchtime 20x
//	LITE_AGENT_CKPT_BENCH_FILES=20000 go test ./checkpoint -run '^$' -bench . -benchtime 5x -timeout 60m
//
// The tree has LITE_AGENT_CKPT_BENCH_FILES source-like files (default 2,000;
// 20,000 is the issue's ~230 MB workspace) in nested directories, sizes
// mostly 1-12 KB with a tail to 250 KB, generated once, deterministically,
// into $TMPDIR/lite-agent-ckpt-bench-N-v1 and copied for each benchmark.
//
//   - SessionStart: Open + Watch (every directory watched) vs git init +
//     the first `git add -A && git commit`;
//   - CheckpointOneFileEdit: RecordSnapshot (what the capturer does before
//     bash writes) + the edit + Seal, with the watcher running, vs the edit
//     + `git add -A && git commit`;
//   - Rewind100: rewinding 100 edited files (checkpoint.Rewind, what
//     `lite-agent rewind` runs: open the session, check every path for
//     conflicts, verify the objects, record what is overwritten, restore,
//     seal) vs `git reset --hard` to the commit before the edits;
//   - StoreSize50: 50 checkpoints of one small edit each; the store's size
//     (apparent, and on disk in 512-byte blocks) against the unique bytes a
//     rewind must be able to give back (the 50 distinct pre-images), vs the
//     growth of the git directory over the same 50 commits.

const benchVersion = "v1"

func benchFiles() int {
	if n, err := strconv.Atoi(os.Getenv("LITE_AGENT_CKPT_BENCH_FILES")); err == nil && n > 0 {
		return n
	}
	return 2000
}

var benchWords = strings.Fields(`request response handler config server client context buffer reader writer
	session token cache index query result value record stream channel worker queue event status error
	message payload header router service store model schema policy manager registry parser encoder decoder`)

var benchTrees sync.Map // file count -> tree path

// benchTree returns the generated tree of n files (made once, cached).
func benchTree(b *testing.B, n int) string {
	if p, ok := benchTrees.Load(n); ok {
		return p.(string)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("lite-agent-ckpt-bench-%d-%s", n, benchVersion))
	tree := filepath.Join(dir, "tree")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		os.RemoveAll(dir)
		for i := range n {
			r := rand.New(rand.NewPCG(uint64(i), 0xbe4c))
			rel := fmt.Sprintf("pkg%02d/mod%02d/part%d/file%05d.go", r.IntN(16), r.IntN(8), r.IntN(6), i)
			if i%7 == 0 {
				rel = fmt.Sprintf("pkg%02d/file%05d.go", r.IntN(16), i)
			}
			size := 1000 + r.IntN(11000)
			if r.IntN(20) == 0 {
				size = 20000 + r.IntN(230000)
			}
			var buf bytes.Buffer
			for buf.Len() < size {
				fmt.Fprintf(&buf, "func %s%s(%s %s) error {\n\treturn %s.%s()\n}\n\n",
					benchWords[r.IntN(len(benchWords))], strings.ToUpper(benchWords[r.IntN(len(benchWords))][:1]),
					benchWords[r.IntN(len(benchWords))], benchWords[r.IntN(len(benchWords))],
					benchWords[r.IntN(len(benchWords))], benchWords[r.IntN(len(benchWords))])
			}
			p := filepath.Join(tree, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644)
	}
	benchTrees.Store(n, tree)
	return tree
}

// benchWorkspace copies the tree into a fresh workspace and lists its files.
func benchWorkspace(b *testing.B) (ws string, files []string) {
	tree := benchTree(b, benchFiles())
	ws = filepath.Join(b.TempDir(), "ws")
	if out, err := exec.Command("cp", "-a", tree, ws).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v: %s", err, out)
	}
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(ws, p)
			files = append(files, rel)
		}
		return nil
	})
	return ws, files
}

// shadowGit runs git with a separate GIT_DIR and the workspace as work tree.
type shadowGit struct {
	b       *testing.B
	gitDir  string
	ws      string
	commits []string
}

func newShadowGit(b *testing.B, ws string) *shadowGit {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	return &shadowGit{b: b, gitDir: filepath.Join(b.TempDir(), "shadow.git"), ws: ws}
}

func (g *shadowGit) run(script string) string {
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "GIT_DIR="+g.gitDir, "GIT_WORK_TREE="+g.ws,
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
	cmd.Dir = g.ws
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.b.Fatalf("%s: %v: %s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (g *shadowGit) commit() {
	g.run("git add -A && git commit -q --allow-empty -m checkpoint")
	g.commits = append(g.commits, g.run("git rev-parse HEAD"))
}

// edit changes one line in the middle of a file and returns its content
// before the edit.
func edit(b *testing.B, path string, n int) []byte {
	old, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	i := bytes.IndexByte(old[len(old)/2:], '\n')
	if i < 0 {
		i = 0
	}
	mid := len(old)/2 + i + 1
	nw := append(append(append([]byte(nil), old[:mid]...), fmt.Sprintf("// edit %d\n", n)...), old[mid:]...)
	if err := os.WriteFile(path, nw, 0o644); err != nil {
		b.Fatal(err)
	}
	return old
}

func BenchmarkSessionStart(b *testing.B) {
	ws, files := benchWorkspace(b)
	b.Logf("workspace: %d files", len(files))
	b.Run("lite-agent", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			state := filepath.Join(b.TempDir(), strconv.Itoa(i))
			r, err := Open(state, "bench", ws, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := r.Watch(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			r.Close()
			b.StartTimer()
		}
	})
	b.Run("shadow-git", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			g := newShadowGit(b, ws)
			b.StartTimer()
			g.run("git init -q")
			g.commit()
		}
	})
}

func BenchmarkCheckpointOneFileEdit(b *testing.B) {
	b.Run("lite-agent", func(b *testing.B) {
		ws, files := benchWorkspace(b)
		// As a session runs it: the command joins the session's writers,
		// which every seal pauses.
		w := sandbox.NewWriters()
		defer w.Close()
		r, err := Open(b.TempDir(), "bench", ws, &Options{Writers: w})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		if err := r.Watch(context.Background()); err != nil {
			b.Fatal(err)
		}
		rnd := rand.New(rand.NewPCG(1, 1))
		n := 0
		for b.Loop() {
			n++
			f := files[rnd.IntN(len(files))]
			if err := r.RecordSnapshot(f); err != nil {
				b.Fatal(err)
			}
			edit(b, filepath.Join(ws, f), n)
			if cp, err := r.Seal(SealInfo{Reason: ReasonToolCall, ToolName: "bash", UserTurn: 0}); err != nil || cp == nil {
				b.Fatal(cp, err)
			}
		}
	})
	b.Run("shadow-git", func(b *testing.B) {
		ws, files := benchWorkspace(b)
		g := newShadowGit(b, ws)
		g.run("git init -q")
		g.commit()
		rnd := rand.New(rand.NewPCG(1, 1))
		n := 0
		for b.Loop() {
			n++
			edit(b, filepath.Join(ws, files[rnd.IntN(len(files))]), n)
			g.commit()
		}
	})
}

// BenchmarkCheckpointBashEdit is the one-file edit made by a real bash
// command in the sandbox: "bash-alone" is the confined command without
// capture (what any sandboxed agent pays), "lite-agent" the same command
// with change capture feeding RecordSnapshot, then the Seal — so the
// checkpoint's cost is lite-agent minus bash-alone — and "shadow-git" the
// confined command followed by `git add -A && git commit`.
func BenchmarkCheckpointBashEdit(b *testing.B) {
	if c := sandbox.Probe(); c.LandlockABI == 0 || !c.SeccompUserNotify {
		b.Skip("no Landlock or seccomp user notification here: nothing to capture with")
	}
	bashEdit := func(b *testing.B, sb *sandbox.Sandbox, ws, f string, n int, hook sandbox.ChangeFunc, w *sandbox.Writers) {
		var out strings.Builder
		st, err := sb.Run(context.Background(), &sandbox.Command{Path: "/bin/bash",
			Args: []string{"bash", "-c", fmt.Sprintf("echo 'edit %d' >> %q", n, f)}, Dir: ws,
			Stdout: &out, Stderr: &out, BeforeChange: hook, Writers: w})
		if err != nil || st.Code != 0 {
			b.Fatal(err, st, out.String())
		}
	}
	newSB := func(b *testing.B, ws string, capture bool) *sandbox.Sandbox {
		sb, err := sandbox.New(sandbox.Policy{Workspace: ws, CaptureChanges: capture})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sb.Close() })
		return sb
	}
	b.Run("bash-alone", func(b *testing.B) {
		ws, files := benchWorkspace(b)
		sb := newSB(b, ws, false)
		rnd := rand.New(rand.NewPCG(1, 1))
		n := 0
		for b.Loop() {
			n++
			bashEdit(b, sb, ws, files[rnd.IntN(len(files))], n, nil, nil)
		}
	})
	b.Run("lite-agent", func(b *testing.B) {
		ws, files := benchWorkspace(b)
		sb := newSB(b, ws, true)
		// As a session runs it: the command joins the session's writers,
		// which every seal pauses.
		w := sandbox.NewWriters()
		defer w.Close()
		r, err := Open(b.TempDir(), "bench", ws, &Options{Writers: w})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		if err := r.Watch(context.Background()); err != nil {
			b.Fatal(err)
		}
		real, _ := filepath.EvalSymlinks(ws)
		hook := func(paths []string) error {
			for _, p := range paths {
				rel, _ := filepath.Rel(real, p)
				if err := r.RecordSnapshot(rel); err != nil {
					return err
				}
			}
			return nil
		}
		rnd := rand.New(rand.NewPCG(1, 1))
		n := 0
		for b.Loop() {
			n++
			bashEdit(b, sb, ws, files[rnd.IntN(len(files))], n, hook, w)
			if cp, err := r.Seal(SealInfo{Reason: ReasonToolCall, ToolName: "bash"}); err != nil || cp == nil || len(cp.Files) != 1 {
				b.Fatal(cp, err)
			}
		}
	})
	b.Run("shadow-git", func(b *testing.B) {
		ws, files := benchWorkspace(b)
		sb := newSB(b, ws, false)
		g := newShadowGit(b, ws)
		g.run("git init -q")
		g.commit()
		rnd := rand.New(rand.NewPCG(1, 1))
		n := 0
		for b.Loop() {
			n++
			bashEdit(b, sb, ws, files[rnd.IntN(len(files))], n, nil, nil)
			g.commit()
		}
	})
}

func BenchmarkRewind100(b *testing.B) {
	const changed = 100
	b.Run("lite-agent", func(b *testing.B) {
		ws, files := benchWorkspace(b)
		state := b.TempDir()
		r, err := Open(state, "bench", ws, nil)
		if err != nil {
			b.Fatal(err)
		}
		rnd := rand.New(rand.NewPCG(2, 2))
		perm := rnd.Perm(len(files))[:changed]
		for i, k := range perm {
			if err := r.RecordSnapshot(files[k]); err != nil {
				b.Fatal(err)
			}
			edit(b, filepath.Join(ws, files[k]), i)
		}
		if _, err := r.Seal(SealInfo{Reason: ReasonToolCall, ToolName: "bash", UserTurn: 0}); err != nil {
			b.Fatal(err)
		}
		r.Close()
		// Every timed rewind starts from the same two-checkpoint history:
		// the log is put back after each. (Reading a long history back
		// costs about 10 µs per recorded path change, on top.)
		lp := logPath(state, "bench")
		saved, err := os.ReadFile(lp)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			rep, err := Rewind(state, "bench", 0, RewindOptions{})
			if err != nil || len(rep.Changes) != changed {
				b.Fatalf("rewind: %v, %d changes", err, len(rep.Changes))
			}
			b.StopTimer()
			// Redo (itself a rewind of 100 files), untimed.
			if _, err := Rewind(state, "bench", rep.Checkpoint-1, RewindOptions{}); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(lp, saved, 0o600); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("shadow-git", func(b *testing.B) {
		ws, files := benchWorkspace(b)
		g := newShadowGit(b, ws)
		g.run("git init -q")
		g.commit()
		rnd := rand.New(rand.NewPCG(2, 2))
		for i, k := range rnd.Perm(len(files))[:changed] {
			edit(b, filepath.Join(ws, files[k]), i)
		}
		g.commit()
		for b.Loop() {
			g.run("git reset -q --hard " + g.commits[0])
			b.StopTimer()
			g.run("git reset -q --hard " + g.commits[1])
			b.StartTimer()
		}
	})
}

// diskUsage returns the apparent size and the allocated size (st_blocks)
// of everything below dir.
func diskUsage(dir string) (apparent, disk int64) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			disk += st.Blocks * 512
		}
		if fi.Mode().IsRegular() {
			apparent += fi.Size()
		}
		return nil
	})
	return apparent, disk
}

func BenchmarkStoreSize50(b *testing.B) {
	const edits = 50
	b.Run("lite-agent", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			ws, files := benchWorkspace(b)
			state := b.TempDir()
			b.StartTimer()
			r, err := Open(state, "bench", ws, nil)
			if err != nil {
				b.Fatal(err)
			}
			rnd := rand.New(rand.NewPCG(3, 3))
			unique := map[[32]byte]int64{}
			for i := range edits {
				f := files[rnd.IntN(len(files))]
				if err := r.RecordSnapshot(f); err != nil {
					b.Fatal(err)
				}
				old := edit(b, filepath.Join(ws, f), i)
				unique[sha256.Sum256(old)] = int64(len(old))
				if _, err := r.Seal(SealInfo{Reason: ReasonToolCall, ToolName: "bash", UserTurn: 0}); err != nil {
					b.Fatal(err)
				}
			}
			r.Close()
			b.StopTimer()
			var u int64
			for _, n := range unique {
				u += n
			}
			apparent, disk := diskUsage(filepath.Join(state, "checkpoints"))
			b.ReportMetric(float64(u), "unique-B")
			b.ReportMetric(float64(apparent), "store-B")
			b.ReportMetric(float64(disk), "store-disk-B")
			b.ReportMetric(float64(apparent)/float64(u), "ratio")
			b.ReportMetric(float64(disk)/float64(u), "disk-ratio")
			b.StartTimer()
		}
	})
	b.Run("shadow-git", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			ws, files := benchWorkspace(b)
			g := newShadowGit(b, ws)
			g.run("git init -q")
			g.commit()
			base, baseDisk := diskUsage(g.gitDir)
			b.StartTimer()
			rnd := rand.New(rand.NewPCG(3, 3))
			unique := map[[32]byte]int64{}
			for i := range edits {
				old := edit(b, filepath.Join(ws, files[rnd.IntN(len(files))]), i)
				unique[sha256.Sum256(old)] = int64(len(old))
				g.commit()
			}
			b.StopTimer()
			var u int64
			for _, n := range unique {
				u += n
			}
			apparent, disk := diskUsage(g.gitDir)
			b.ReportMetric(float64(u), "unique-B")
			b.ReportMetric(float64(apparent-base), "store-B")
			b.ReportMetric(float64(disk-baseDisk), "store-disk-B")
			b.ReportMetric(float64(apparent-base)/float64(u), "ratio")
			b.ReportMetric(float64(disk-baseDisk)/float64(u), "disk-ratio")
			b.ReportMetric(float64(apparent), "total-B")
			b.StartTimer()
		}
	})
}

// BenchmarkSealWithHeldFile is what a seal costs while a background
// command of the session holds a file open for writing (a dev server's
// log): "idle" is a seal of a tool call that changed nothing with the
// command running but holding nothing open, "held" the same seal with the
// command holding a 64 KiB file open (the writers paused: every capture
// quiesced, the tree stopped and continued, the file read once and
// carried into the next checkpoint).
//
//	go test ./checkpoint -run '^$' -bench SealWithHeldFile -benchtime 200x
func BenchmarkSealWithHeldFile(b *testing.B) {
	if c := sandbox.Probe(); c.LandlockABI == 0 || !c.SeccompUserNotify {
		b.Skip("no Landlock or seccomp user notification here: nothing to capture with")
	}
	for _, held := range []bool{false, true} {
		b.Run(map[bool]string{false: "idle", true: "held"}[held], func(b *testing.B) {
			ws, _ := filepath.EvalSymlinks(b.TempDir())
			if err := os.WriteFile(filepath.Join(ws, "server.log"), bytes.Repeat([]byte("log line\n"), 64<<10/9), 0o644); err != nil {
				b.Fatal(err)
			}
			sb, err := sandbox.New(sandbox.Policy{Workspace: ws, CaptureChanges: true})
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close()
			w := sandbox.NewWriters()
			defer w.Close()
			r, err := Open(b.TempDir(), "bench", ws, &Options{Writers: w})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			script := "echo ready > ready.fifo; sleep 1000"
			if held {
				script = "exec 3>>server.log; " + script
			}
			if err := syscall.Mkfifo(filepath.Join(ws, "ready.fifo"), 0o600); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := sb.Start(ctx, &sandbox.Command{Path: "/bin/bash", Args: []string{"bash", "-c", script}, Dir: ws,
				BeforeChange: func(paths []string) error {
					for _, q := range paths {
						if err := r.RecordSnapshot(q); err != nil {
							return err
						}
					}
					return nil
				}, Writers: w})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Wait()
			defer p.Kill()
			if _, err := os.ReadFile(filepath.Join(ws, "ready.fifo")); err != nil {
				b.Fatal(err)
			}
			r.Seal(SealInfo{Reason: ReasonToolCall, ToolName: "bash"})
			for b.Loop() {
				if cp, err := r.Seal(SealInfo{Reason: ReasonToolCall, ToolName: "read_file"}); err != nil || cp != nil {
					b.Fatal(cp, err)
				}
			}
		})
	}
}

// BenchmarkRecordSnapshotRepeat: the hook's cost for a path already
// recorded in the open checkpoint (a build rewriting its outputs, a test
// suite reopening its database), for a new file (every file of an
// extraction), and for the same file once 20000 paths are recorded and
// the agent's edit tool has reported a write in the checkpoint (each
// change announced looks through the reported writes, not every path).
//
//	go test ./checkpoint -run '^$' -bench RecordSnapshotRepeat
func BenchmarkRecordSnapshotRepeat(b *testing.B) {
	for _, kind := range []string{"same-file", "new-files", "after-agent-write"} {
		b.Run(kind, func(b *testing.B) {
			ws, files := benchWorkspace(b)
			r, err := Open(b.TempDir(), "bench", ws, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			f := filepath.Join(ws, files[0])
			if err := r.RecordSnapshot(f); err != nil {
				b.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(ws, "out"), 0o755); err != nil {
				b.Fatal(err)
			}
			if kind == "after-agent-write" {
				for i := range 20000 {
					if err := r.RecordSnapshot(filepath.Join(ws, "gen", "g"+strconv.Itoa(i))); err != nil {
						b.Fatal(err)
					}
				}
				if err := r.RecordWrite(f, []byte("edited")); err != nil {
					b.Fatal(err)
				}
				f = filepath.Join(ws, files[1])
			}
			n := 0
			for b.Loop() {
				p := f
				if kind == "new-files" {
					n++
					p = filepath.Join(ws, "out", "f"+strconv.Itoa(n))
				}
				if err := r.RecordSnapshot(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckpointCapturedFiles is BenchmarkCapturePerFile of the
// sandbox (its testdata/capture_bench.c: 500 files created, rewritten
// with O_TRUNC, removed, timed inside the command) in a session as the
// bash tool runs it: change capture feeding RecordSnapshot, the
// session's writers, the writer watch reporting to RecordForeignChange,
// the checkpoint watcher running, a Seal after each run — against the
// same program unconfined and confined without capture. Reported per
// file, in ns. As root the workspace and the state directory are on a
// tmpfs mounted for the benchmark, so the disk's latency does not hide
// the capture's.
//
//	go test ./checkpoint -run '^$' -bench CheckpointCapturedFiles -benchtime 10x
func BenchmarkCheckpointCapturedFiles(b *testing.B) {
	if c := sandbox.Probe(); c.LandlockABI == 0 || !c.SeccompUserNotify {
		b.Skip("no Landlock or seccomp user notification here: nothing to capture with")
	}
	if _, err := exec.LookPath("cc"); err != nil {
		b.Skip("no C compiler: would time change capture per file in a session")
	}
	bin := filepath.Join(b.TempDir(), "capture_bench")
	if out, err := exec.Command("cc", "-O2", "-o", bin, "../sandbox/testdata/capture_bench.c").CombinedOutput(); err != nil {
		b.Fatalf("cc: %v\n%s", err, out)
	}
	base := b.TempDir()
	if os.Geteuid() == 0 {
		if err := syscall.Mount("tmpfs", base, "tmpfs", 0, "size=256m"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { syscall.Unmount(base, syscall.MNT_DETACH) })
	}
	run := func(b *testing.B, do func(dir string) string) {
		var sum [3]float64
		n := 0
		for b.Loop() {
			var v [3]float64
			if _, err := fmt.Sscanf(do(fmt.Sprintf("d%d", n)), "create %g rewrite %g unlink %g", &v[0], &v[1], &v[2]); err != nil {
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
	for _, mode := range []string{"unconfined", "confined", "session"} {
		b.Run(mode, func(b *testing.B) {
			ws, err := os.MkdirTemp(base, "ws")
			if err != nil {
				b.Fatal(err)
			}
			ws, _ = filepath.EvalSymlinks(ws)
			command := func(sb *sandbox.Sandbox, cmd *sandbox.Command) string {
				var out, errb bytes.Buffer
				cmd.Path, cmd.Stdout, cmd.Stderr = bin, &out, &errb
				st, err := sb.Run(context.Background(), cmd)
				if err != nil || st.Code != 0 {
					b.Fatal(err, st, errb.String())
				}
				return out.String()
			}
			switch mode {
			case "unconfined":
				run(b, func(dir string) string {
					os.Mkdir(filepath.Join(ws, dir), 0o755)
					out, err := exec.Command(bin, filepath.Join(ws, dir), "500").Output()
					if err != nil {
						b.Fatal(err)
					}
					return string(out)
				})
			case "confined":
				sb, err := sandbox.New(sandbox.Policy{Workspace: ws, ReadOnlyPaths: []string{filepath.Dir(bin)}, GitWritable: true})
				if err != nil {
					b.Fatal(err)
				}
				defer sb.Close()
				run(b, func(dir string) string {
					os.Mkdir(filepath.Join(ws, dir), 0o755)
					return command(sb, &sandbox.Command{Args: []string{"capture_bench", filepath.Join(ws, dir), "500"}})
				})
			case "session":
				sb, err := sandbox.New(sandbox.Policy{Workspace: ws, ReadOnlyPaths: []string{filepath.Dir(bin)}, CaptureChanges: true})
				if err != nil {
					b.Fatal(err)
				}
				defer sb.Close()
				w := sandbox.NewWriters()
				defer w.Close()
				state, err := os.MkdirTemp(base, "state")
				if err != nil {
					b.Fatal(err)
				}
				r, err := Open(state, "bench", ws, &Options{Writers: w})
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				if err := r.Watch(context.Background()); err != nil {
					b.Fatal(err)
				}
				hook := func(paths []string) error { // as tools.Context.BeforeChange
					for _, p := range paths {
						rel, err := filepath.Rel(ws, p)
						if err != nil || rel == "." || strings.HasPrefix(rel, "../") {
							continue
						}
						if err := r.RecordSnapshot(filepath.ToSlash(rel)); err != nil {
							return err
						}
					}
					return nil
				}
				run(b, func(dir string) string {
					os.Mkdir(filepath.Join(ws, dir), 0o755)
					out := command(sb, &sandbox.Command{Args: []string{"capture_bench", filepath.Join(ws, dir), "500"},
						BeforeChange: hook, ForeignChange: r.RecordForeignChange, Writers: w})
					if _, err := r.Seal(SealInfo{Reason: ReasonToolCall, ToolName: "bash"}); err != nil {
						b.Fatal(err)
					}
					return out
				})
			}
		})
	}
}
