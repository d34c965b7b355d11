package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// The property: whatever sequence of file operations is recorded (each
// recorded through RecordSnapshot before it happens, as the tools and a
// capturer do), rewinding to any checkpoint — including checkpoints that
// are themselves rewinds — gives back exactly the tree that was there,
// byte for byte, modes and symlinks included.

// chooser is the source of decisions: a PRNG (the randomized test and the
// crash helper) or the fuzzer's bytes.
type chooser interface{ IntN(n int) int }

// byteChooser turns fuzz input into decisions; once exhausted it says 0.
type byteChooser struct{ data []byte }

func (b *byteChooser) IntN(n int) int {
	if len(b.data) == 0 || n <= 1 {
		return 0
	}
	v := int(b.data[0])
	b.data = b.data[1:]
	return v % n
}

// model performs random workspace operations, recording first.
type model struct {
	t   testing.TB
	ws  string
	rec *Recorder
	rnd chooser
	n   int
}

// modelNames include two names that differ only in bytes that are not
// UTF-8, and a valid non-ASCII one: the log must keep them apart.
var modelNames = []string{"a", "b", "c.txt", "d1", "d2", "x\xff", "x\xfe", "é"}

func (m *model) abs(p string) string { return filepath.Join(m.ws, filepath.FromSlash(p)) }

func (m *model) randPath() string {
	parts := make([]string, 1+m.rnd.IntN(3))
	for i := range parts {
		parts[i] = modelNames[m.rnd.IntN(len(modelNames))]
	}
	return strings.Join(parts, "/")
}

// existing returns the paths in the workspace, sorted.
func (m *model) existing() []string {
	var out []string
	filepath.WalkDir(m.ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != m.ws {
			rel, _ := filepath.Rel(m.ws, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func (m *model) pick() (string, bool) {
	ex := m.existing()
	if len(ex) == 0 {
		return "", false
	}
	return ex[m.rnd.IntN(len(ex))], true
}

// parents returns the missing ancestors of p, top-down; ok is false when
// an ancestor exists but is not a real directory.
func (m *model) parents(p string) (missing []string, ok bool) {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		fi, err := os.Lstat(m.abs(d))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append([]string{d}, missing...)
		case err != nil || !fi.IsDir():
			return nil, false
		}
	}
	return missing, true
}

func (m *model) record(paths ...string) {
	if os.Getenv("MODEL_DEBUG") != "" {
		m.t.Logf("record %v", paths)
	}
	if m.rec == nil {
		return // setting up the workspace before the session
	}
	for _, p := range paths {
		if err := m.rec.RecordSnapshot(p); err != nil {
			m.t.Fatalf("RecordSnapshot(%s): %v", p, err)
		}
	}
}

func (m *model) content() []byte {
	m.n++
	if m.rnd.IntN(40) == 39 {
		// Now and then a large file: a loose object.
		b := make([]byte, looseThreshold+m.rnd.IntN(4096))
		randBytes(b, uint64(m.n))
		return b
	}
	lines := m.rnd.IntN(6)
	var b strings.Builder
	for i := range lines {
		fmt.Fprintf(&b, "line %d of write %d\n", i, m.n)
	}
	if m.rnd.IntN(4) == 0 {
		b.WriteString("no newline at the end")
	}
	return []byte(b.String())
}

func (m *model) lstat(p string) (fs.FileInfo, bool) {
	fi, err := os.Lstat(m.abs(p))
	return fi, err == nil
}

// step performs one random operation.
func (m *model) step() {
	op := m.rnd.IntN(10)
	if os.Getenv("MODEL_DEBUG") != "" {
		m.t.Logf("op %d", op)
	}
	switch op {
	case 0, 1, 2: // write (create or overwrite), creating parents
		p := m.randPath()
		missing, ok := m.parents(p)
		if !ok {
			return
		}
		fi, exists := m.lstat(p)
		if exists && fi.IsDir() {
			return
		}
		m.record(missing...)
		m.record(p)
		for _, d := range missing {
			if err := os.Mkdir(m.abs(d), 0o755); err != nil {
				m.t.Fatal(err)
			}
		}
		if exists && fi.Mode()&fs.ModeSymlink != 0 {
			os.Remove(m.abs(p)) // replace the link, not its target
		}
		c := m.content()
		if err := os.WriteFile(m.abs(p), c, 0o644); err != nil {
			m.t.Fatal(err)
		}
		if m.rec != nil {
			if err := m.rec.RecordWrite(p, c); err != nil {
				m.t.Fatalf("RecordWrite(%s): %v", p, err)
			}
		}
	case 3: // rm -rf
		if p, ok := m.pick(); ok {
			m.record(p)
			os.RemoveAll(m.abs(p))
		}
	case 4: // mv, over whatever is at the destination
		p, ok := m.pick()
		if !ok {
			return
		}
		q := m.randPath()
		if paths.Within(q, p) || paths.Within(p, q) {
			return
		}
		missing, ok := m.parents(q)
		if !ok {
			return
		}
		m.record(missing...)
		m.record(p, q)
		for _, d := range missing {
			os.Mkdir(m.abs(d), 0o755)
		}
		if _, exists := m.lstat(q); exists {
			os.RemoveAll(m.abs(q))
		}
		if err := os.Rename(m.abs(p), m.abs(q)); err != nil {
			m.t.Fatal(err)
		}
	case 5: // chmod
		p, ok := m.pick()
		if !ok {
			return
		}
		fi, _ := m.lstat(p)
		if fi == nil || fi.Mode()&fs.ModeSymlink != 0 {
			return
		}
		modes := []fs.FileMode{0o600, 0o644, 0o755, 0o640}
		if fi.IsDir() {
			modes = []fs.FileMode{0o700, 0o750, 0o755, 0o711}
		}
		m.record(p)
		os.Chmod(m.abs(p), modes[m.rnd.IntN(len(modes))])
	case 6: // ln -sf
		p := m.randPath()
		missing, ok := m.parents(p)
		if !ok {
			return
		}
		if fi, exists := m.lstat(p); exists && fi.IsDir() {
			return
		}
		m.record(missing...)
		m.record(p)
		for _, d := range missing {
			os.Mkdir(m.abs(d), 0o755)
		}
		os.Remove(m.abs(p))
		target := modelNames[m.rnd.IntN(len(modelNames))]
		if m.rnd.IntN(3) == 0 {
			target = "../" + target
		}
		if err := os.Symlink(target, m.abs(p)); err != nil {
			m.t.Fatal(err)
		}
	case 7: // mkdir -p
		p := m.randPath()
		missing, ok := m.parents(p)
		if !ok {
			return
		}
		if _, exists := m.lstat(p); exists {
			return
		}
		m.record(missing...)
		m.record(p)
		if err := os.MkdirAll(m.abs(p), 0o750); err != nil {
			m.t.Fatal(err)
		}
	case 8: // write through a symlink to a file in the workspace
		p, ok := m.pick()
		if !ok {
			return
		}
		fi, _ := m.lstat(p)
		if fi == nil || fi.Mode()&fs.ModeSymlink == 0 {
			return
		}
		real, err := filepath.EvalSymlinks(m.abs(p))
		if err != nil {
			return
		}
		if rel, err := filepath.Rel(m.ws, real); err != nil || strings.HasPrefix(rel, "..") {
			return
		}
		if tfi, err := os.Stat(real); err != nil || !tfi.Mode().IsRegular() {
			return
		}
		m.record(p)
		if err := os.WriteFile(m.abs(p), m.content(), 0o644); err != nil {
			m.t.Fatal(err)
		}
	case 9: // an edit of an existing file
		p, ok := m.pick()
		if !ok {
			return
		}
		if fi, _ := m.lstat(p); fi == nil || !fi.Mode().IsRegular() {
			return
		}
		m.record(p)
		f, err := os.OpenFile(m.abs(p), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			m.t.Fatal(err)
		}
		fmt.Fprintf(f, "appended %d\n", m.n)
		f.Close()
	}
}

// runModel interleaves random operations, seals and rewinds, and checks
// every rewind against the copy of the tree taken at its checkpoint.
func runModel(t testing.TB, ch chooser, steps int) {
	e := newEnv(t, nil)
	m := &model{t: t, ws: e.ws, rnd: ch}
	for range ch.IntN(4) {
		m.step() // some content before the session's first change
	}
	m.rec = e.rec
	states := map[int]map[string]node{0: snapshotTree(t, e.ws)}
	var numbers []int // sealed checkpoints, for picking targets
	numbers = append(numbers, 0)
	seal := func() {
		reason := ReasonToolCall
		if ch.IntN(4) == 0 {
			reason = ReasonUserTurn
		}
		cp, err := e.rec.Seal(SealInfo{Reason: reason, UserTurn: len(numbers)})
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("MODEL_DEBUG") != "" {
			t.Logf("seal %s -> %v", reason, cp)
		}
		if cp != nil {
			if _, dup := states[cp.Number]; dup && cp.Number != 0 {
				t.Fatalf("checkpoint %d sealed twice", cp.Number)
			}
			states[cp.Number] = snapshotTree(t, e.ws)
			if cp.Number != 0 {
				numbers = append(numbers, cp.Number)
			}
		}
	}
	rewind := func(to int) {
		rep, err := e.rec.Rewind(to, RewindOptions{})
		if os.Getenv("MODEL_DEBUG") != "" {
			t.Logf("rewind to %d: %+v", to, rep)
		}
		if err != nil {
			t.Fatalf("rewind to %d: %v; conflicts %+v", to, err, rep)
		}
		if d := treeDiff(states[to], snapshotTree(t, e.ws)); d != "" {
			t.Fatalf("after rewind to %d the tree differs:\n%s", to, d)
		}
		if rep.Checkpoint >= 0 {
			states[rep.Checkpoint] = states[to]
			numbers = append(numbers, rep.Checkpoint)
		}
	}
	for range steps {
		switch ch.IntN(10) {
		case 0, 1:
			seal()
		case 2:
			seal() // what is open, so that the state is known
			rewind(numbers[ch.IntN(len(numbers))])
		default:
			m.step()
		}
	}
	seal()
	for range min(8, len(numbers)) {
		rewind(numbers[ch.IntN(len(numbers))])
	}
	if rep, err := Verify(e.state); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

func TestRandomOperationsAndRewinds(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			runModel(t, rand.New(rand.NewPCG(uint64(seed), 0xc4ec)), 80)
		})
	}
}

// FuzzRewind is the same property driven by the fuzzer:
//
//	go test ./checkpoint -run '^$' -fuzz FuzzRewind -fuzztime 1m
//
// Each input byte is a decision (which operation, which path, which
// checkpoint to rewind to).
func FuzzRewind(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 2, 1})
	f.Add([]byte("write, seal, rewind, write through a link, mv, chmod, rm"))
	f.Add([]byte{7, 3, 3, 3, 0, 4, 4, 1, 2, 2, 2, 0, 6, 6, 0, 0, 2, 9, 9, 1, 0, 5, 5, 8, 8, 2, 0})
	f.Add([]byte{250, 13, 77, 4, 201, 99, 2, 42, 42, 42, 180, 9, 33, 1, 0, 120, 66, 6, 3, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 400 {
			data = data[:400]
		}
		runModel(t, &byteChooser{data: data}, len(data)/2)
	})
}
