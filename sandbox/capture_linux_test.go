package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// preImages is a BeforeChange hook that notes, for every path, what it
// was when the hook first heard of it — which is what a checkpoint saves.
type preImages struct {
	mu    sync.Mutex
	ws    string
	seen  map[string]string // workspace-relative path -> state at first call
	order []string
	deny  string // refuse changes of this relative path
}

func newPreImages(ws string) *preImages {
	real, _ := filepath.EvalSymlinks(ws)
	return &preImages{ws: real, seen: map[string]string{}}
}

func describe(p string) string {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return "absent"
	case fi.Mode()&os.ModeSymlink != 0:
		t, _ := os.Readlink(p)
		return "symlink:" + t
	case fi.IsDir():
		return "dir"
	}
	b, _ := os.ReadFile(p)
	return fmt.Sprintf("file:%q:%o", b, fi.Mode().Perm())
}

func (h *preImages) hook(paths []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range paths {
		rel, err := filepath.Rel(h.ws, p)
		if err != nil || strings.HasPrefix(rel, "..") || !filepath.IsAbs(p) {
			return fmt.Errorf("hook got %q, not a path inside %s", p, h.ws)
		}
		if rel == h.deny {
			return errors.New("refused by the test")
		}
		if _, ok := h.seen[rel]; !ok {
			h.seen[rel] = describe(p)
			h.order = append(h.order, rel)
		}
	}
	return nil
}

func (h *preImages) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen, h.order = map[string]string{}, nil
}

func capturing(p *Policy) { p.CaptureChanges = true }

func TestCaptureSeesEveryKindOfChangeBeforeItHappens(t *testing.T) {
	sb, ws := newTestSandbox(t, capturing)
	h := newPreImages(ws)
	write := func(name, data string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	for _, tc := range []struct {
		name   string
		setup  func()
		script string
		want   map[string]string // path -> pre-image; every one must be seen
		none   bool              // nothing may be reported
	}{
		{name: "redirect truncates", setup: func() { write("f", "old", 0o644) },
			script: "echo new > f", want: map[string]string{"f": `file:"old":644`}},
		{name: "append", setup: func() { write("f", "old", 0o644) },
			script: "echo more >> f", want: map[string]string{"f": `file:"old":644`}},
		{name: "sed -i", setup: func() { write("s.txt", "alpha\n", 0o640) },
			script: "sed -i s/alpha/beta/ s.txt", want: map[string]string{"s.txt": `file:"alpha\n":640`}},
		{name: "mv", setup: func() { write("a", "A", 0o644); write("b", "B", 0o644) },
			script: "mv a b", want: map[string]string{"a": `file:"A":644`, "b": `file:"B":644`}},
		{name: "rm", setup: func() { write("c", "C", 0o600) },
			script: "rm c", want: map[string]string{"c": `file:"C":600`}},
		{name: "chmod +x", setup: func() { write("run.sh", "#!/bin/sh\n", 0o644) },
			script: "chmod +x run.sh", want: map[string]string{"run.sh": `file:"#!/bin/sh\n":644`}},
		{name: "ln -s", script: "ln -s target l", want: map[string]string{"l": "absent"}},
		{name: "mkdir -p", script: "mkdir -p x/y/z", want: map[string]string{"x": "absent", "x/y": "absent", "x/y/z": "absent"}},
		{name: "rm -r", setup: func() { write("tree/one", "1", 0o644); write("tree/sub/two", "2", 0o644) },
			script: "rm -r tree", want: map[string]string{"tree/one": `file:"1":644`, "tree/sub/two": `file:"2":644`}},
		{name: "mv dir", setup: func() { write("d1/f", "F", 0o644) },
			script: "mv d1 d2", want: map[string]string{"d1": "dir", "d2": "absent"}},
		{name: "cp creates", setup: func() { write("src", "S", 0o644) },
			script: "cp src dst", want: map[string]string{"dst": "absent"}},
		{name: "python open w", setup: func() { write("py.txt", "P", 0o644) },
			script: `python3 -c 'open("py.txt","w").write("Q")'`, want: map[string]string{"py.txt": `file:"P":644`}},
		{name: "through /proc/self/cwd", setup: func() { write("q", "Q0", 0o644) },
			script: "echo x > /proc/self/cwd/q", want: map[string]string{"q": `file:"Q0":644`}},
		{name: "through a symlink", setup: func() {
			write("real", "R", 0o644)
			os.Remove(filepath.Join(ws, "link"))
			os.Symlink("real", filepath.Join(ws, "link"))
		}, script: "echo x > link", want: map[string]string{"real": `file:"R":644`, "link": "symlink:real"}},
		{name: "relative to another directory", setup: func() { write("deep/er/g", "G", 0o644) },
			script: "cd deep && echo x > er/g && cd er && echo y > ../h", want: map[string]string{"deep/er/g": `file:"G":644`, "deep/h": "absent"}},
		{name: "reads only", setup: func() { write("r", "R", 0o644) },
			script: "cat r > /dev/null; ls -la > /dev/null; wc -c < r", none: true},
		{name: "outside the workspace", script: "echo x > $TMPDIR/t; echo y > /dev/null; mkdir $TMPDIR/d", none: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.script, "python3") {
				if _, err := exec.LookPath("python3"); err != nil {
					t.Skip("python3 not installed; would check a Python open(..., 'w')")
				}
			}
			if tc.setup != nil {
				tc.setup()
			}
			h.reset()
			r := sh(t, sb, tc.script, func(c *Command) { c.BeforeChange = h.hook })
			if r.st.Code != 0 {
				t.Fatalf("script failed: %v", r)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if tc.none && len(h.seen) > 0 {
				t.Errorf("reported %v for a command that changed nothing in the workspace", h.order)
			}
			for p, want := range tc.want {
				got, ok := h.seen[p]
				if !ok {
					t.Errorf("%s: never reported (reported: %v)", p, h.order)
				} else if got != want {
					t.Errorf("%s: pre-image %s, want %s", p, got, want)
				}
			}
		})
	}
}

func TestCaptureHookErrorRefusesTheChange(t *testing.T) {
	sb, ws := newTestSandbox(t, capturing)
	h := newPreImages(ws)
	h.deny = "locked"
	os.WriteFile(filepath.Join(ws, "locked"), []byte("keep"), 0o644)
	r := sh(t, sb, "echo x > locked; echo code=$?; echo y > free", func(c *Command) { c.BeforeChange = h.hook })
	if !strings.Contains(r.out, "code=1") || !strings.Contains(r.err, "Operation not permitted") {
		t.Errorf("a change the hook refused did not fail with EPERM: %v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "locked")); string(b) != "keep" {
		t.Errorf("refused change happened anyway: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "free")); string(b) != "y\n" {
		t.Errorf("the next change did not go through: %q", b)
	}
}

func TestCaptureNeedsThePolicy(t *testing.T) {
	sb, _ := newTestSandbox(t, nil)
	_, err := sb.Run(context.Background(), &Command{Path: "/bin/true", BeforeChange: func([]string) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "CaptureChanges") {
		t.Errorf("BeforeChange without Policy.CaptureChanges: %v, want an error naming CaptureChanges", err)
	}
}

// TestCaptureKeepsConfinement: with capture the connect rule moves from
// the spawner thread into each child's program; unix sockets outside the
// workspace must stay unreachable, in every supervisor's mode, with and
// without a hook — and capture must work under each supervisor.
func TestCaptureKeepsConfinement(t *testing.T) {
	modes := []NetworkMode{NetworkNone, NetworkUnrestricted}
	if netSupervisor != nil {
		modes = append(modes, NetworkLoopback)
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := newEscapeEnv(t, func(p *Policy) { p.Network = mode; p.CaptureChanges = true })
			outside := filepath.Join(e.secretDir, "docker.sock")
			unixServer(t, outside)
			inside := filepath.Join(e.ws, "app.sock")
			unixServer(t, inside)
			h := newPreImages(e.ws)
			for _, hook := range []ChangeFunc{nil, h.hook} {
				run := func(args ...string) string {
					var out bytes.Buffer
					_, err := e.sb.Run(context.Background(), &Command{Path: e.bin, Args: append([]string{"escape"}, args...),
						Stdout: &out, Stderr: &out, BeforeChange: hook})
					if err != nil {
						t.Fatal(err)
					}
					return strings.TrimSpace(out.String())
				}
				if got := run("unix-connect", outside); got == "ok" {
					t.Errorf("hook %v: connect to a unix socket outside the workspace succeeded", hook != nil)
				}
				if got := run("unix-connect", inside); got != "ok" {
					t.Errorf("hook %v: connect to the workspace's socket: %q", hook != nil, got)
				}
			}
			r := sh(t, e.sb, "echo x > made-under-"+string(mode), func(c *Command) { c.BeforeChange = h.hook })
			if r.st.Code != 0 {
				t.Fatal(r)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.seen["made-under-"+string(mode)] != "absent" {
				t.Errorf("capture under network %s: saw %v", mode, h.order)
			}
		})
	}
}

// TestCaptureManyFiles: a generator writing 100 files reports each once,
// and costs about one round trip per file.
func TestCaptureManyFiles(t *testing.T) {
	sb, ws := newTestSandbox(t, capturing)
	h := newPreImages(ws)
	start := time.Now()
	r := sh(t, sb, "mkdir gen && for i in $(seq 1 100); do echo $i > gen/f$i.txt; done", func(c *Command) { c.BeforeChange = h.hook })
	if r.st.Code != 0 {
		t.Fatal(r)
	}
	elapsed := time.Since(start)
	h.mu.Lock()
	defer h.mu.Unlock()
	var files []string
	for _, p := range h.order {
		if strings.HasPrefix(p, "gen/f") {
			files = append(files, p)
		}
	}
	if len(files) != 100 || !slices.Contains(h.order, "gen") {
		t.Errorf("reported %d generated files (want 100) and gen=%v", len(files), slices.Contains(h.order, "gen"))
	}
	t.Logf("100 files created under capture in %v", elapsed)
}

// TestCaptureStartErrors: a captured command that cannot start (no such
// program; one Landlock does not let run) fails with the usual error
// rather than hanging. The child fails after loading the capture program,
// which notifies exit_group, and its listener reaches the parent only
// once the child has gone: a child leaving by exit_group waited for ever,
// holding the spawn (`lite-agent sandbox run -- ./no-such-program` hung).
func TestCaptureStartErrors(t *testing.T) {
	sb, ws := newTestSandbox(t, capturing)
	other := t.TempDir()
	denied := filepath.Join(other, "prog")
	if err := os.WriteFile(denied, []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"./no-such-program", denied} {
		done := make(chan error, 1)
		go func() {
			st, err := sb.Run(context.Background(), &Command{Path: path, Dir: ws, BeforeChange: func([]string) error { return nil }})
			if err == nil && st.Code == 0 {
				err = errors.New("it ran")
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil && err.Error() == "it ran" {
				t.Errorf("%s ran in the sandbox", path)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s under change capture: Run did not return in a minute (the child waits on its exit_group)", path)
		}
	}
}
