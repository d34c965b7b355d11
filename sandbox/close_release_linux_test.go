package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCloseReleasesEverything: after a sandbox made as `sandbox run`
// makes it (its own temporary directory, change capture, the default
// limits) has run a command and been closed, nothing of it is left —
// no descriptor (the mounts' detached trees, the ruleset, the cgroup
// files), no cgroup directory of this process, no temporary directory —
// however Close orders the release (the cgroups' removal runs beside the
// mounts' unmounting).
func TestCloseReleasesEverything(t *testing.T) {
	fds := func() map[string]bool {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, e := range ents {
			if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
				m[e.Name()+" "+target] = true
			}
		}
		return m
	}
	h := host()
	var bases []string
	if h.cg.V2Base != "" {
		bases = append(bases, h.cg.V2Base)
	}
	for _, b := range h.cg.V1 {
		bases = append(bases, b)
	}
	ours := func() []string {
		var out []string
		for _, b := range bases {
			ents, _ := os.ReadDir(b)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "lite-agent."+strconv.Itoa(os.Getpid())+".") {
					out = append(out, filepath.Join(b, e.Name()))
				}
			}
		}
		return out
	}
	// Warm what lives for the process (the host probe, the runtime's
	// poller) so that it is in the "before" picture.
	if sb, err := New(Policy{Workspace: t.TempDir()}); err == nil {
		sb.Close()
	}
	before, cgBefore := fds(), ours()
	sb, err := New(Policy{Workspace: t.TempDir(), CaptureChanges: true})
	if err != nil {
		t.Fatal(err)
	}
	tmp := sb.tmpRoot
	if len(ours()) <= len(cgBefore) && sb.cg != nil {
		t.Errorf("the sandbox's cgroup directories are not where this test looks (%v)", bases)
	}
	st, err := sb.Run(context.Background(), &Command{Path: "/bin/true"})
	if err != nil || st.Code != 0 {
		t.Fatalf("run: %v %+v", err, st)
	}
	if err := sb.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for fd := range fds() {
		if !before[fd] {
			t.Errorf("descriptor left open after Close: %s", fd)
		}
	}
	if got := ours(); len(got) > len(cgBefore) {
		t.Errorf("cgroup directories left after Close: %v (before: %v)", got, cgBefore)
	}
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary directory %s left after Close (%v)", tmp, err)
	}
}
