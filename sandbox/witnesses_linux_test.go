package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/witness"
)

// witnessCache lays out a checked cache as the go profile's is: dir (the
// witness's, never granted) holding the granted cache, whose mod/ is
// checked.
type witnessCache struct {
	dir, cache, mod string
}

func newWitnessCache(t *testing.T) witnessCache {
	t.Helper()
	// A lock of the test's own: other packages' tests run sandboxes,
	// which hold the user's.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	base := t.TempDir()
	c := witnessCache{dir: filepath.Join(base, "ws-1")}
	c.cache = filepath.Join(c.dir, "go")
	c.mod = filepath.Join(c.cache, "mod")
	for _, d := range []string{filepath.Join(c.mod, "m@v1"), filepath.Join(c.cache, "build")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(c.mod, "m@v1", "m.go"), []byte("package m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

var witnessKey = []byte("test key\n")

// leave makes a clean check leave the witness, as a session's start does.
func (c witnessCache) leave(t *testing.T) {
	t.Helper()
	if _, skipped := witness.Check(c.dir, "go", witnessKey, func() ([]string, bool) { return nil, true }); !skipped && !c.present() {
		t.Fatal("a clean check with no writer left no witness")
	}
}

func (c witnessCache) present() bool {
	_, err := os.Lstat(witness.Path(c.dir, "go"))
	return err == nil
}

// checkRuns reports whether a session starting now would check the cache
// in full (and leaves the witness if it could).
func (c witnessCache) checkRuns() bool {
	_, skipped := witness.Check(c.dir, "go", witnessKey, func() ([]string, bool) { return nil, true })
	return !skipped
}

func (c witnessCache) policy(ws string) Policy {
	return Policy{Workspace: ws, Level: testLevel(), ReadWritePaths: []string{c.cache},
		CacheWitnesses: []CacheWitness{{Root: c.mod, Dir: c.dir, Name: "go"}}}
}

// A cache a session's start skips checking while its witness stands
// (internal/witness) must never hold a change made since: every sandbox
// whose processes can change it withdraws the witness first. With change
// capture of every command (the process's own Landlock domain cannot
// write the cache; the supervisor makes each change), the first change
// beneath the checked directory withdraws it — each kind of change, by
// each name that reaches it — and the sandbox holds the cache's lock
// until it is closed, so that no check made meanwhile leaves a witness.
// Reads, and changes elsewhere in the granted cache, leave it.
func TestCacheWitnessWithdrawnBeforeTheFirstChange(t *testing.T) {
	for _, tc := range []struct {
		name, script string
	}{
		{"a new file", `echo x > "$MOD/new.go"`},
		{"a write into a file", `chmod u+w "$MOD/m@v1/m.go" && echo x >> "$MOD/m@v1/m.go"`},
		{"chmod", `chmod u+w "$MOD/m@v1/m.go"`},
		{"truncate", `truncate -s 0 "$MOD/m@v1/m.go"`},
		{"unlink", `rm "$MOD/m@v1/m.go"`},
		{"mkdir", `mkdir "$MOD/d"`},
		{"a symlink", `ln -s /etc "$MOD/l"`},
		{"a rename within", `mv "$MOD/m@v1" "$MOD/m@v2"`},
		{"a rename of the checked directory", `mv "$MOD" "$MOD.old"`},
		{"a rename into it", `echo x > "$CACHE/build/f" && mv "$CACHE/build/f" "$MOD/f"`},
		{"a hard link out of it", `ln "$MOD/m@v1/m.go" "$CACHE/build/m.go"`},
		{"through a symlink in the workspace", `ln -s "$MOD/m@v1" link && echo x > link/new.go`},
		{"a unix socket", `python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$MOD/s"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.script, "python3") {
				if _, err := os.Stat("/usr/bin/python3"); err != nil {
					t.Skip("no python3 to bind a unix socket with")
				}
			}
			c := newWitnessCache(t)
			c.leave(t)
			sb, _ := newTestSandbox(t, func(p *Policy) {
				*p = c.policy(p.Workspace)
				p.CaptureChanges = true
			})
			if !sb.ownWrites || !sb.capture {
				t.Skip("commands here are not all captured with the cache read-only to them: the witness is withdrawn at New (TestCacheWitnessWithdrawnAtNew)")
			}
			env := func(cmd *Command) { cmd.Env = append(cmd.Env, "MOD="+c.mod, "CACHE="+c.cache) }
			if r := sh(t, sb, `cat "$MOD/m@v1/m.go" && echo x > "$CACHE/build/out" && ls "$MOD"`, env); r.st.Code != 0 {
				t.Fatalf("reading the cache: %v", r)
			}
			if !c.present() || c.checkRuns() {
				t.Fatal("reads and a write outside the checked directory withdrew the witness")
			}
			if r := sh(t, sb, tc.script, env); r.st.Code != 0 {
				t.Fatalf("%s: %v", tc.script, r)
			}
			if c.present() {
				t.Fatalf("%s: the witness outlived the change", tc.script)
			}
			if !c.checkRuns() || c.present() {
				t.Fatal("a check while the sandbox may still change the cache was skipped, or left a witness")
			}
			sb.Close()
			if !c.checkRuns() || !c.present() {
				t.Fatal("after Close, a clean check left no witness")
			}
		})
	}
}

// Without change capture of every command — here a TMPDIR of the
// caller's, which the process writes itself, so the roots stay writable
// to its own domain — the sandbox cannot see its processes' changes:
// it withdraws the witness at New, before any process exists.
func TestCacheWitnessWithdrawnAtNew(t *testing.T) {
	c := newWitnessCache(t)
	c.leave(t)
	sb, _ := newTestSandbox(t, func(p *Policy) {
		*p = c.policy(p.Workspace)
		p.TempDir = t.TempDir()
	})
	if sb.ownWrites {
		t.Fatal("a caller's TMPDIR left the roots read-only to the process")
	}
	if c.present() {
		t.Fatal("the witness outlived New of a sandbox whose processes write the cache themselves")
	}
	env := func(cmd *Command) { cmd.Env = append(cmd.Env, "MOD="+c.mod) }
	if r := sh(t, sb, `echo x > "$MOD/new.go"`, env); r.st.Code != 0 {
		t.Fatalf("%v", r)
	}
	if !c.checkRuns() || c.present() {
		t.Fatal("a check while the sandbox lives was skipped, or left a witness")
	}
	sb.Close()
	if !c.checkRuns() || !c.present() {
		t.Fatal("after Close, a clean check left no witness")
	}
}

// What the withdrawal is for: a sandbox that is not told of the cache's
// witness changes the cache and leaves the witness standing, and the
// next session's check would be skipped over the change
// (internal/machine's TestVerifyWorkspaceCacheSkipsUnderTheWitness) —
// though while it lives, no check leaves a witness (it holds the lock,
// as every sandbox does).
func TestCacheWitnessUntold(t *testing.T) {
	c := newWitnessCache(t)
	c.leave(t)
	sb, _ := newTestSandbox(t, func(p *Policy) {
		*p = c.policy(p.Workspace)
		p.CacheWitnesses = nil
	})
	if r := sh(t, sb, `echo x > "$MOD/new.go"`, func(cmd *Command) { cmd.Env = append(cmd.Env, "MOD="+c.mod) }); r.st.Code != 0 {
		t.Fatalf("%v", r)
	}
	if _, err := os.Stat(filepath.Join(c.mod, "new.go")); err != nil || !c.present() || c.checkRuns() {
		t.Fatalf("the change was not made (%v), or the witness did not stand over it", err)
	}
	os.Remove(witness.Path(c.dir, "go"))
	if !c.checkRuns() || c.present() {
		t.Fatal("a check left a witness while a sandbox lived")
	}
}

// A sandbox whose processes could write the witness's directory (a
// read-write grant above the cache) withdraws the witness at New, even
// where change capture would see every change: its processes could leave
// a witness of their own, as they could write the check's record beside
// it.
func TestCacheWitnessDirWritable(t *testing.T) {
	c := newWitnessCache(t)
	c.leave(t)
	sb, _ := newTestSandbox(t, func(p *Policy) {
		*p = c.policy(p.Workspace)
		p.CaptureChanges = true
		p.ReadWritePaths = []string{c.dir}
	})
	if c.present() {
		t.Fatal("the witness outlived New of a sandbox that can write its directory")
	}
	sb.Close()
	if !c.checkRuns() || !c.present() {
		t.Fatal("after Close, a clean check left no witness")
	}
}

// A sandbox whose processes can outlive it (no cgroup finds the tree, no
// PID namespace: one that calls setsid escapes the end of its command)
// marks the caches: no witness is left after it, though it has ended,
// until the caches are removed.
func TestCacheWitnessAfterProcessesCanOutliveASandbox(t *testing.T) {
	c := newWitnessCache(t)
	sb, _ := newMaskedSandbox(t, func(h *hostInfo) {
		withoutCgroups(h)
		h.pidns = errors.New("test: no PID namespace")
	}, func(p *Policy) {
		*p = c.policy(p.Workspace)
		p.Level = LevelContainer
		p.BestEffort = true
	})
	if sb.cgroups.Tracks() || sb.newPID {
		t.Fatal("the masked host still finds the whole tree")
	}
	sb.Close()
	if !c.checkRuns() || c.present() {
		t.Fatal("a witness was left after a sandbox whose processes could outlive it")
	}
	witness.ClearOutlived()
	if !c.checkRuns() || !c.present() {
		t.Fatal("no witness left once the mark was cleared")
	}
}
