package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
	"golang.org/x/sys/unix"
)

// writableV1Pids is the v1 pids directory of this process, or skips the
// test (saying what it would have checked) when it is absent or not
// writable.
func writableV1Pids(t *testing.T, what string) Info {
	t.Helper()
	info := Detect()
	base, ok := info.V1["pids"]
	if !ok || unix.Faccessat(unix.AT_FDCWD, base, unix.W_OK|unix.X_OK, unix.AT_EACCESS) != nil {
		t.Skip("no writable v1 pids hierarchy: this would have checked " + what)
	}
	return info
}

// TestSlotPool: a slot is made with its limit (the command's processes,
// plus the parked thread) and its thread joined to it; it goes back to the
// pool only once no command process is left, and is then reused without a
// new thread; Kill ends what is left in it, Settle reports the pids.max it
// hit once, and Close stops every thread and removes the directories.
func TestSlotPool(t *testing.T) {
	info := writableV1Pids(t, "a v1 slot's limit, pooling, kill, pids.max report and removal")
	m, err := NewManager(info, Plan{V1Pids: true, V1Track: true}, Limits{Processes: 1})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			m.Close()
		}
	}()
	// The sandbox's spawner thread, without a program: it joins the
	// slot's directories first thing (JoinV1), like New's callback's.
	var threads []*spawn.Spawner
	newThread := func(dirs []string) (Thread, error) {
		th, err := spawn.StartSpawner(spawn.ThreadProgram{}, JoinV1(dirs), nil)
		if err != nil {
			return nil, err
		}
		threads = append(threads, th)
		return th, nil
	}

	sl, err := m.AcquireSlot(newThread)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(sl.pids, "pids.max")); strings.TrimSpace(string(b)) != "2" {
		t.Errorf("pids.max of a slot for 1 process is %q, want 2 (the command and the parked thread)", b)
	}
	// Only the thread joined, not the process (nor the main thread).
	tasks := readPids(filepath.Join(sl.pids, "tasks"))
	if len(threads) != 1 || len(tasks) != 1 || tasks[0] == os.Getpid() || !exists(fmt.Sprintf("/proc/self/task/%d", tasks[0])) {
		t.Fatalf("the slot's directory does not hold one thread of this process but the main one: tasks %v, threads %d", tasks, len(threads))
	}
	slotThread := tasks[0]
	if sl.Thread() != Thread(threads[0]) {
		t.Error("Slot.Thread is not the thread the callback started")
	}
	if !sl.Empty() {
		t.Error("a new slot (only the parked thread in it) is not empty")
	}
	m.ReleaseSlot(sl, false)
	if again, err := m.AcquireSlot(newThread); err != nil || again != sl || len(threads) != 1 {
		t.Fatalf("an empty released slot was not reused as it was: %v, same %v, threads %d", err, again == sl, len(threads))
	}

	// A command in the slot: a process moved in (the test has no spawner
	// thread to start one inside), which fills it (pids.max 2).
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := writeFile(filepath.Join(sl.pids, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	if sl.Empty() {
		t.Error("a slot with a command process in it is empty")
	}
	m.ReleaseSlot(sl, false) // not pooled: the command is still there
	other, err := m.AcquireSlot(newThread)
	if err != nil {
		t.Fatal(err)
	}
	if other == sl || len(threads) != 2 {
		t.Errorf("a slot with a command still in it was pooled: same %v, threads %d", other == sl, len(threads))
	}
	// A second process of the command, moved in too (a migration is not
	// bound by pids.max; a fork is), forks once told to: refused.
	sh := exec.Command("sh", "-c", "read x; /bin/true; echo forked")
	in, _ := sh.StdinPipe()
	var out, errOut strings.Builder
	sh.Stdout, sh.Stderr = &out, &errOut
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer sh.Process.Kill()
	if err := writeFile(filepath.Join(sl.pids, "cgroup.procs"), strconv.Itoa(sh.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	in.Write([]byte("go\n"))
	if err := sh.Wait(); err == nil || out.String() != "" || !strings.Contains(errOut.String(), "fork") {
		t.Fatalf("a fork in a full slot was not refused: %v, stdout %q, stderr %q", err, out.String(), errOut.String())
	}
	sl.Kill()
	if !sl.WaitEmpty(10 * time.Second) {
		t.Fatal("the slot is not empty after Kill")
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("Kill did not kill the slot's command: %v", err)
	}
	if oom, pidsMax := sl.Settle(); oom || !pidsMax {
		t.Errorf("Settle after a fork refused by pids.max: oom %v, pids.max %v; want false, true", oom, pidsMax)
	}
	if oom, pidsMax := sl.Settle(); oom || pidsMax {
		t.Errorf("Settle again, nothing new: oom %v, pids.max %v; want false, false", oom, pidsMax)
	}
	m.ReleaseSlot(sl, true)
	m.ReleaseSlot(other, false)

	dirs := []string{m.v1PidsDir, sl.pids, other.pids}
	closed = true
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(fmt.Sprintf("/proc/self/task/%d", slotThread)) {
		t.Error("Close left a slot's thread running")
	}
	for _, d := range dirs {
		if exists(d) {
			t.Errorf("Close left %s", d)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
