package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
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
					hit, heard := raceOnce(t, sb, bin, cl.name, attack, wsReal, harmless, tries)
					if hit {
						hits++
						if !heard {
							unrecorded++
						}
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

// raceOnce runs capture_race once (class, attack, the workspace wsReal,
// harmless: its HARMLESS argument) and reports whether it changed the
// workspace's victim file, and whether the capture hook heard of it.
func raceOnce(t *testing.T, sb *Sandbox, bin, class, attack, wsReal, harmless string, tries int) (hit, heard bool) {
	t.Helper()
	victim := filepath.Join(wsReal, "victim")
	var mu sync.Mutex
	hook := func(paths []string) error {
		mu.Lock()
		defer mu.Unlock()
		heard = heard || slices.Contains(paths, victim)
		return nil
	}
	var out, errb bytes.Buffer
	st, err := sb.Run(context.Background(), &Command{Path: bin,
		Args:   []string{"capture_race", class, attack, wsReal, harmless, strconv.Itoa(tries)},
		Stdout: &out, Stderr: &errb, BeforeChange: hook})
	if err != nil {
		t.Fatal(err)
	}
	if st.Code != 0 {
		t.Fatalf("capture_race %s %s: %v: %s %s", class, attack, st, out.String(), errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return strings.HasPrefix(out.String(), "hit"), heard
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

// TestCaptureRaceOwnTemp is TestCaptureRace with the harmless path in the
// command's own TMPDIR, where change capture lets the process's own calls
// go on (notify's own_linux.go): the attack races the supervisor's look
// against the kernel's, and must find the workspace read-only to the
// process itself. The same attack against a sandbox whose process may
// still write the workspace (testOwnWritesKeepRoots) makes unrecorded
// workspace changes: that is the race the read-only domain closes.
func TestCaptureRaceOwnTemp(t *testing.T) {
	raceOwnPlace(t, "-", func(t *testing.T) string { return t.TempDir() }, func(sb *Sandbox) bool { return sb.ownRoot != "" })
}

// TestCaptureRaceOwnTmpfs is the same race in the private /tmp, which is
// the process's own where no read-write root lies beneath it: the
// workspace is made in $HOME.
func TestCaptureRaceOwnTmpfs(t *testing.T) {
	raceOwnPlace(t, "-/tmp", outsideTmpfs, func(sb *Sandbox) bool { return sb.ownTmp && privateTmp(sb) })
}

// outsideTmpfs makes a directory beneath no path of the private tmpfs
// (/tmp, /var/tmp, /dev/shm, /run): in $HOME.
func outsideTmpfs(t *testing.T) string {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory for a workspace outside /tmp: %v", err)
	}
	d, err := os.MkdirTemp(home, ".lite-agent-test-")
	if err != nil {
		t.Skipf("cannot make a workspace outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// raceOwnPlace races the calls let through in an own place (place: the
// capture_race argument naming it) against a thread that swaps their
// path to the workspace (made by workspace); own says whether the
// sandbox made that place the process's own.
func raceOwnPlace(t *testing.T, place string, workspace func(*testing.T) string, own func(*Sandbox) bool) {
	bin := testProgram(t, "capture_race", "would race the calls let through in an own place against a thread that swaps their path", "-O1", "-pthread")
	run := func(t *testing.T, keepRoots bool, classes []string, runs, tries int) (hits, unrecorded int) {
		testOwnWritesKeepRoots = keepRoots
		ws := workspace(t)
		sb, err := New(Policy{Workspace: ws, Level: testLevel(), CaptureChanges: true, ReadOnlyPaths: []string{filepath.Dir(bin)}})
		testOwnWritesKeepRoots = false
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { sb.Close() })
		if !own(sb) {
			t.Skipf("this host does not make %s the process's own (Landlock ABI < 3, or no private /tmp): nothing is let through there", place)
		}
		wsReal, _ := filepath.EvalSymlinks(ws)
		for _, class := range classes {
			exists := class != "mkdir" && class != "symlink" && class != "creat" && class != "link"
			for _, attack := range []string{"buf", "cwd", "link"} {
				for range runs {
					victim := filepath.Join(wsReal, "victim")
					os.RemoveAll(victim)
					if exists {
						raceFile(t, victim, "DATA")
					}
					hit, heard := raceOnce(t, sb, bin, class, attack, wsReal, place, tries)
					if hit {
						hits++
						if !heard {
							unrecorded++
							t.Logf("%s/%s: an unrecorded workspace change", class, attack)
						}
					}
				}
			}
		}
		return hits, unrecorded
	}
	letThrough := []string{"open", "creat", "unlink", "mkdir", "symlink"}
	t.Run("workspace read-only to the process", func(t *testing.T) {
		runs, tries := 2, 3000
		if testing.Short() {
			runs, tries = 1, 1000
		}
		all := append(letThrough, "truncate", "chmod", "rename", "link")
		hits, unrecorded := run(t, false, all, runs, tries)
		t.Logf("%d runs changed the workspace file, %d of them unrecorded", hits, unrecorded)
		if unrecorded > 0 {
			t.Errorf("%d runs made a workspace change the capture hook never heard of", unrecorded)
		}
	})
	t.Run("without it the race is won", func(t *testing.T) {
		// A round wins about one run in five here: up to 20 rounds,
		// until one does.
		hits, unrecorded := 0, 0
		for round := 0; round < 20 && unrecorded == 0; round++ {
			h, u := run(t, true, letThrough, 1, 3000)
			hits, unrecorded = hits+h, unrecorded+u
		}
		t.Logf("with the workspace writable to the process: %d runs changed the workspace file, %d of them unrecorded", hits, unrecorded)
		if unrecorded == 0 {
			t.Errorf("no unrecorded change: the attack does not reach the window the read-only domain closes, so the first subtest shows nothing")
		}
	})
}
