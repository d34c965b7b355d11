package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestStaleCgroupsRemoved: a lite-agent cgroup directory whose owner is
// gone (killed before Close) is removed by the next Sandbox — by the time
// that Sandbox is closed, as the sweep runs beside its commands — and a
// live owner's directory (this process's) is left alone.
func TestStaleCgroupsRemoved(t *testing.T) {
	h := host()
	base, ok := h.cg.v1["pids"]
	if !ok || !h.cgWritable["pids"] {
		t.Skip("no writable v1 pids hierarchy: this would have checked that a dead owner's lite-agent cgroup is removed by the next New")
	}
	// A pid that is certainly gone: a child that has been waited for.
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, "lite-agent."+strconv.Itoa(c.Process.Pid)+".1")
	live := filepath.Join(base, "lite-agent."+strconv.Itoa(os.Getpid())+".999")
	for _, d := range []string{stale, filepath.Join(stale, "c1"), live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer os.Remove(live)
	defer os.Remove(filepath.Join(stale, "c1"))
	defer os.Remove(stale)

	sb, err := New(Policy{Workspace: t.TempDir(), Limits: Limits{Processes: 64}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("the dead owner's cgroup %s is still there after the next Sandbox closed", stale)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live owner's cgroup was removed: %v", err)
	}
}
