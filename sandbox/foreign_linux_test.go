package sandbox

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// foreignLog is a ForeignChange hook that keeps what it was told.
type foreignLog struct {
	mu  sync.Mutex
	got map[string]string
}

func (l *foreignLog) hook(p, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.got == nil {
		l.got = map[string]string{}
	}
	l.got[p] = why
}

func (l *foreignLog) snapshot() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for k, v := range l.got {
		out[k] = v
	}
	return out
}

func requireForeign(t *testing.T, what string) {
	t.Helper()
	if !foreignAvailable() {
		t.Skipf("fanotify cannot report writers here (needs CAP_SYS_ADMIN); would have checked: %s", what)
	}
}

// heldCommand starts script confined with capture and ForeignChange, and
// returns once the script has said "ready" on ready.fifo; the script then
// waits for a line on go.fifo, which release sends. Both are FIFOs in the
// workspace: the test waits on them, never on time.
func heldCommand(t *testing.T, sb *Sandbox, ws, script string, log *foreignLog) (release func() *ExitStatus) {
	t.Helper()
	for _, n := range []string{"ready.fifo", "go.fifo"} {
		if err := syscall.Mkfifo(filepath.Join(ws, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The hook records nothing (preImages would read the FIFOs): what is
	// under test is that the paths were announced to the listener first.
	announce := func([]string) error { return nil }
	p, err := sb.Start(context.Background(), &Command{Path: "/bin/bash",
		Args:          []string{"bash", "-c", script},
		BeforeChange:  announce,
		ForeignChange: log.hook,
	})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := os.Open(filepath.Join(ws, "ready.fifo"))
	if err != nil {
		p.Kill()
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(ready).ReadString('\n')
	ready.Close()
	if line != "ready\n" {
		p.Kill()
		st, _ := p.Wait()
		t.Fatalf("the command did not get ready (%q): %+v", line, st)
	}
	return func() *ExitStatus {
		g, err := os.OpenFile(filepath.Join(ws, "go.fifo"), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		g.WriteString("go\n")
		g.Close()
		st, err := p.Wait()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

// The command changes f the ways commands do — a redirection of bash
// itself, `sed -i` (a process that exits at once), children writing
// through a descriptor they inherited and never opened (make > log) — and
// a third party (the test: "the user") writes f while the command runs.
// The listener must name f with the test's pid, and nothing else: none of
// the command's own writes, and not the file h the command never
// announced (the checkpoint watcher's business). With the listener off
// (the code before it), nobody is told: the seal would take the user's
// bytes for the command's (checkpoint.TestForeignWriteDuringBash shows
// the rewind that follows).
func TestForeignWriterOfAnnouncedFileIsReported(t *testing.T) {
	requireForeign(t, "a write by another process to a file a confined command is changing is reported, and the command's own writes are not")
	const script = `echo cmd > f; sed -i s/cmd/cmd2/ f; { /bin/echo a; /bin/echo b; } >> f
echo ready > ready.fifo; read line < go.fifo
sed -i s/a/A/ f; { /bin/echo c; (echo d); } >> f; echo done`
	for _, mech := range []string{"", "pidns"} {
		for _, third := range []bool{true, false} {
			for _, off := range []bool{false, true} {
				if off && (!third || mech != "") {
					continue
				}
				name := map[bool]string{true: "user writes f", false: "only the command writes"}[third]
				if off {
					name += ", listener off"
				}
				if mech != "" {
					name += ", tree tracked by " + mech
				}
				t.Run(name, func(t *testing.T) {
					testNoForeignWatch = off
					defer func() { testNoForeignWatch = false }()
					edit := func(*hostInfo) {}
					if mech == "pidns" {
						edit = withoutCgroupTracking
					}
					sb, ws := newMaskedSandbox(t, edit, capturing)
					ws, _ = filepath.EvalSymlinks(ws)
					log := &foreignLog{}
					release := heldCommand(t, sb, ws, script, log)
					if third {
						if err := os.WriteFile(filepath.Join(ws, "f"), []byte("the user's edit\n"), 0o644); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(filepath.Join(ws, "h"), []byte("not announced\n"), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					if st := release(); st.Code != 0 {
						t.Fatalf("command: %+v", st)
					}
					got := log.snapshot()
					f := filepath.Join(ws, "f")
					switch {
					case off:
						if len(got) != 0 {
							t.Fatalf("listener off, yet told %v", got)
						}
						t.Logf("with the listener off, the user's write to f during the command is told to nobody")
					case third:
						if len(got) != 1 || !strings.Contains(got[f], "process "+strconv.Itoa(os.Getpid())+" ") {
							t.Fatalf("want f reported as written by the test (pid %d), got %v", os.Getpid(), got)
						}
					default:
						if len(got) != 0 {
							t.Fatalf("the command's own writes were reported as someone else's: %v", got)
						}
					}
				})
			}
		}
	}
}
