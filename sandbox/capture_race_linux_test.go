package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestCaptureRace plays a hostile command against change capture: one
// thread makes a write-side call on a harmless path outside the workspace
// while a second thread makes the same call name a workspace file — by
// rewriting the path in memory, by moving the process's working
// directory, or by swapping a symlinked directory on the path — between the supervisor's look and the kernel's execution
// (testdata/capture_race.c). A run that changed the workspace file
// without the hook having heard of it is an unrecorded change: a rewind
// could not bring the file back. Each call class, each attack.
//
// The attack works on a capture that checks a path and then lets the
// process's own call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the kernel
// reads the path again. It cannot work when the supervisor performs the
// call itself on what it resolved.
func TestCaptureRace(t *testing.T) {
	bin := testProgram(t, "capture_race", "would race every capture call class against a thread that swaps its path", "-O1", "-pthread")
	harmless := t.TempDir()
	sb, ws := newTestSandbox(t, func(p *Policy) {
		p.CaptureChanges = true
		p.ReadWritePaths = append(p.ReadWritePaths, harmless)
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, filepath.Dir(bin))
	})
	wsReal, _ := filepath.EvalSymlinks(ws)
	harmless, _ = filepath.EvalSymlinks(harmless)
	runs, tries := 8, 3000
	if testing.Short() {
		runs, tries = 3, 1000
	}
	classes := []struct {
		name   string
		exists bool // the workspace victim exists before (else: created)
	}{
		{"open", true}, {"truncate", true}, {"chmod", true}, {"unlink", true}, {"rename", true},
		{"mkdir", false}, {"symlink", false}, {"creat", false}, {"link", false},
	}
	for _, cl := range classes {
		for _, attack := range []string{"buf", "cwd", "link"} {
			t.Run(cl.name+"/"+attack, func(t *testing.T) {
				hits, unrecorded := 0, 0
				for range runs {
					victim := filepath.Join(wsReal, "victim")
					os.RemoveAll(victim)
					os.RemoveAll(filepath.Join(harmless, "victim"))
					os.RemoveAll(filepath.Join(harmless, "moved"))
					if cl.exists {
						raceFile(t, victim, "DATA")
						raceFile(t, filepath.Join(harmless, "victim"), "HARMLESS")
					}
					raceFile(t, filepath.Join(harmless, "src"), "SRC")
					var mu sync.Mutex
					seen := false
					hook := func(paths []string) error {
						mu.Lock()
						defer mu.Unlock()
						for _, p := range paths {
							if p == victim {
								seen = true
							}
						}
						return nil
					}
					var out, errb bytes.Buffer
					st, err := sb.Run(context.Background(), &Command{Path: bin,
						Args:   []string{"capture_race", cl.name, attack, wsReal, harmless, strconv.Itoa(tries)},
						Stdout: &out, Stderr: &errb, BeforeChange: hook})
					if err != nil {
						t.Fatal(err)
					}
					if st.Code != 0 {
						t.Fatalf("capture_race: %v: %s %s", st, out.String(), errb.String())
					}
					if strings.HasPrefix(out.String(), "hit") {
						hits++
						mu.Lock()
						if !seen {
							unrecorded++
						}
						mu.Unlock()
					}
				}
				t.Logf("%s/%s: %d runs of %d tries: %d changed the workspace file, %d of them unrecorded", cl.name, attack, runs, tries, hits, unrecorded)
				if unrecorded > 0 {
					t.Errorf("%d of %d runs made a workspace change the capture hook never heard of", unrecorded, runs)
				}
			})
		}
	}
}

func raceFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
}
