package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStaleCgroupsRemoved: a lite-agent cgroup directory whose owner is
// gone (killed before Close) is removed by the next Manager — by the time
// that Manager is closed, as the sweep runs beside its commands — with the
// orphaned command still running in it killed first, and a live owner's
// directory (this process's) is left alone.
func TestStaleCgroupsRemoved(t *testing.T) {
	info := Detect()
	base, ok := info.V1["pids"]
	if !ok || unix.Faccessat(unix.AT_FDCWD, base, unix.W_OK|unix.X_OK, unix.AT_EACCESS) != nil {
		t.Skip("no writable v1 pids hierarchy: this would have checked that a dead owner's lite-agent cgroup is removed by the next NewManager")
	}
	// A pid that is certainly gone: a child that has been waited for.
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, "lite-agent."+strconv.Itoa(c.Process.Pid)+".1")
	live := filepath.Join(base, "lite-agent."+strconv.Itoa(os.Getpid())+".999")
	// The stale directory is made under a name no sweep looks at, and
	// renamed once it is complete: any lite-agent process's New (another
	// package's tests, running beside these) sweeps a dead owner's
	// directory, which must not vanish half made. A sweep other than ours
	// passes the test as well.
	prep := filepath.Join(base, "lite-agent-test."+strconv.Itoa(os.Getpid()))
	for _, d := range []string{prep, filepath.Join(prep, "c1"), live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { // children first: a failed sweep leaves them
		for _, d := range []string{filepath.Join(prep, "c1"), prep, filepath.Join(stale, "c1"), stale, live} {
			os.Remove(d)
		}
	}()
	// The orphan: a command of the dead owner's, still running in its
	// directory.
	orphan := exec.Command("sleep", "60")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer orphan.Process.Kill()
	if err := writeFile(filepath.Join(prep, "c1", "cgroup.procs"), strconv.Itoa(orphan.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(prep, stale); err != nil {
		t.Fatal(err)
	}

	m, err := NewManager(info, Plan{V1Pids: true, V1Track: true}, Limits{Processes: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waited for the sweep, which killed the orphan before removing
	// its directory: it has exited (or is about to: Wait blocks until it
	// has), by SIGKILL.
	err = orphan.Wait()
	if ws, ok := orphan.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the dead owner's orphaned command was not killed by the sweep: %v", err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("the dead owner's cgroup %s is still there after the next Manager closed", stale)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live owner's cgroup was removed: %v", err)
	}
}

// TestStaleCgroupsOfOtherPIDNamespacesKept: a directory is named by its
// maker's pid and PID namespace. The sweep removes one of this namespace
// whose pid is gone, and leaves one of another namespace, whose pid
// means nothing here (a lite-agent nested in another sandbox is PID 2
// there, and so is every other: before the namespace was in the name,
// they took each other's names). A directory with this process's own
// name, left by a dead process that had its pid in its namespace, is
// taken over instead of failing New with "file exists".
func TestStaleCgroupsOfOtherPIDNamespacesKept(t *testing.T) {
	info := Detect()
	base, ok := info.V1["pids"]
	if !ok || unix.Faccessat(unix.AT_FDCWD, base, unix.W_OK|unix.X_OK, unix.AT_EACCESS) != nil {
		t.Skip("no writable v1 pids hierarchy: this would have checked which lite-agent cgroups the sweep removes")
	}
	ns := pidNamespace()
	if ns == 0 {
		t.Skip("this process's PID namespace cannot be named here")
	}
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(c.Process.Pid)
	ours := filepath.Join(base, "lite-agent."+dead+".1."+strconv.FormatUint(ns, 10))
	other := filepath.Join(base, "lite-agent."+dead+".1."+strconv.FormatUint(ns+1, 10))
	// This process's next name, made stale before it is taken.
	mine := filepath.Join(base, fmt.Sprintf("lite-agent.%d.%d.%d", os.Getpid(), sandboxSeq.Load()+1, ns))
	for _, d := range []string{ours, other, mine} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(d)
	}
	m, err := NewManager(info, Plan{V1Pids: true, V1Track: true}, Limits{Processes: 64})
	if err != nil {
		t.Fatalf("a stale directory with this process's name failed New: %v", err)
	}
	if m.v1PidsDir != mine {
		t.Errorf("the set is %s, want %s", m.v1PidsDir, mine)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ours); err == nil {
		t.Errorf("this namespace's dead maker's cgroup %s is still there", ours)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another PID namespace's cgroup was removed: %v", err)
	}
}
