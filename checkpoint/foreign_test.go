package checkpoint

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
)

// TestForeignWriteDuringBash: a confined command (bash, as the bash tool
// runs it: change capture on, BeforeChange recording pre-images) writes f
// and then waits, inside the call, on a FIFO the test holds; meanwhile
// the user — the test, unconfined — writes f. The sandbox's fanotify
// listener tells the recorder (Command.ForeignChange →
// RecordForeignChange), so the seal cannot take the user's bytes for the
// command's: rewinding the call reports a conflict naming f and keeps the
// user's edit; --force brings the pre-image back, and undoing that forced
// rewind gives the user's version back (it was kept). Without the hook —
// the wiring before it, and what an unprivileged run still gets — the
// rewind succeeds and silently discards the user's edit. A file the
// command never touches (g), edited by the user during the command, is an
// external change either way (the watcher's rule): rewinding it conflicts.
func TestForeignWriteDuringBash(t *testing.T) {
	if c := sandbox.Probe(); c.LandlockABI == 0 || !c.SeccompUserNotify {
		t.Skip("no Landlock or seccomp user notification: would have checked that a user's write during a bash call is not taken for the call's")
	}
	for _, detect := range []bool{true, false} {
		name := map[bool]string{true: "detected", false: "no ForeignChange (the old behaviour)"}[detect]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.plain("f", "v0\n")
			// g: a file the agent changed before; the command never
			// touches it. A user's edit of it during the command is the
			// watcher's to notice (an external change), fanotify or not.
			e.plain("g", "g0\n")
			e.write("g", "g1\n")
			e.seal("write_file")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e.must(e.rec.Watch(ctx))
			sb, err := sandbox.New(sandbox.Policy{Workspace: e.ws, CaptureChanges: true})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			if detect && !strings.Contains(strings.Join(sb.Enforcement().Notes, "\n"), "are told apart (fanotify)") {
				t.Skip("fanotify cannot report writers here (needs CAP_SYS_ADMIN): would have checked that rewinding a bash call over a user's concurrent edit of the same file reports a conflict")
			}
			for _, n := range []string{"ready.fifo", "go.fifo"} {
				e.must(syscall.Mkfifo(e.abs(n), 0o600))
			}
			cmd := &sandbox.Command{Path: "/bin/bash",
				Args: []string{"bash", "-c", `echo agent > f; echo ready > ready.fifo; read line < go.fifo`},
				BeforeChange: func(paths []string) error {
					for _, p := range paths {
						if err := e.rec.RecordSnapshot(p); err != nil {
							return err
						}
					}
					return nil
				},
			}
			if detect {
				cmd.ForeignChange = e.rec.RecordForeignChange
			}
			p, err := sb.Start(context.Background(), cmd)
			if err != nil {
				t.Fatal(err)
			}
			ready, err := os.Open(e.abs("ready.fifo"))
			if err != nil {
				p.Kill()
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(ready).ReadString('\n')
			ready.Close()
			if line != "ready\n" {
				p.Kill()
				t.Fatalf("the command did not get ready: %q", line)
			}
			e.plain("f", "the user's edit\n") // while the call runs
			e.plain("g", "the user's g\n")
			g, err := os.OpenFile(e.abs("go.fifo"), os.O_WRONLY, 0)
			e.must(err)
			g.WriteString("go\n")
			g.Close()
			if st, err := p.Wait(); err != nil || st.Code != 0 {
				t.Fatalf("command: %v %+v", err, st)
			}
			cp := e.seal("bash")
			e.must(e.rec.Close())

			grep, err := Rewind(e.state, "s1", 0, RewindOptions{Paths: []string{"g"}})
			if !errors.Is(err, ErrConflict) || !conflictNames(grep, "g") || readString(t, e.abs("g")) != "the user's g\n" {
				t.Fatalf("rewinding g over the user's edit made during the command: %v, %+v", err, grep)
			}
			rep, err := Rewind(e.state, "s1", cp.Number-1, RewindOptions{Paths: []string{"f"}})
			if !detect {
				if err != nil || readString(t, e.abs("f")) != "v0\n" {
					t.Fatalf("without detection: %v, f = %q", err, readString(t, e.abs("f")))
				}
				t.Logf("without ForeignChange the rewind discarded the user's edit of f (%d conflicts)", len(rep.Conflicts))
				return
			}
			if !errors.Is(err, ErrConflict) || !conflictNames(rep, "f") {
				t.Fatalf("rewind over the user's edit: %v, %+v", err, rep)
			}
			if got := readString(t, e.abs("f")); got != "the user's edit\n" {
				t.Fatalf("the refused rewind changed f: %q", got)
			}
			for _, c := range rep.Conflicts {
				if c.Path == "f" && !strings.Contains(c.Reason, "not the command's") {
					t.Errorf("conflict reason does not name the writer: %q", c.Reason)
				}
			}
			frep, err := Rewind(e.state, "s1", cp.Number-1, RewindOptions{Paths: []string{"f"}, Force: true})
			if err != nil || readString(t, e.abs("f")) != "v0\n" {
				t.Fatalf("forced rewind: %v, f = %q", err, readString(t, e.abs("f")))
			}
			if _, err := Rewind(e.state, "s1", frep.Checkpoint-1, RewindOptions{Paths: []string{"f"}}); err != nil || readString(t, e.abs("f")) != "the user's edit\n" {
				t.Fatalf("undoing the forced rewind: %v, f = %q", err, readString(t, e.abs("f")))
			}
		})
	}
}
