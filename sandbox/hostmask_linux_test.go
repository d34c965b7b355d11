package sandbox

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// maskedHost is this host with facts taken away by edit: newOnHost then
// builds, for real, what a host without them gets (a PID namespace where
// no cgroup tracks the tree, no mount namespace, no notification server).
// A fact can only be taken away, never added: what the copy claims, the
// real host has.
func maskedHost(edit func(h *hostInfo)) *hostInfo {
	h := *host()
	h.cgWritable = maps.Clone(h.cgWritable)
	h.v2Subtree = slices.Clone(h.v2Subtree)
	edit(&h)
	return &h
}

// Ways of tracking a process tree this machine can be made to use.
var (
	// withoutCgroupTracking: no cgroup finds the tree (v1 memory stays,
	// for the limit), so a PID namespace does.
	withoutCgroupTracking = func(h *hostInfo) {
		mem := h.cgWritable["memory"]
		h.cgWritable = map[string]bool{"memory": mem}
		h.v2Subtree = nil
	}
	// withV2Tracking: only a cgroup v2 directory without controllers
	// finds the tree (no v1 pids, no PID namespace); v1 memory stays.
	withV2Tracking = func(h *hostInfo) {
		h.cgWritable = map[string]bool{"v2": h.cgWritable["v2"], "memory": h.cgWritable["memory"]}
		h.v2Subtree = nil
		h.pidns = errors.New("test: no PID namespace")
	}
	// withoutCgroups: no cgroup at all.
	withoutCgroups = func(h *hostInfo) {
		h.cgWritable = map[string]bool{}
		h.v2Subtree = nil
	}
	// withoutMountNS: no private mount namespace.
	withoutMountNS = func(h *hostInfo) {
		err := errors.New("test: no mount namespace")
		h.mountNS, h.devpts, h.proc = err, err, err
	}
)

// newMaskedSandbox is newTestSandbox on maskedHost(edit).
func newMaskedSandbox(t testing.TB, edit func(*hostInfo), mut func(*Policy)) (*Sandbox, string) {
	t.Helper()
	ws := t.TempDir()
	p := Policy{Workspace: ws}
	if mut != nil {
		mut(&p)
	}
	sb, err := newOnHost(p, maskedHost(edit))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb, ws
}

// skipIfLost skips a test of a guarantee sb lists in Enforcement.Lost
// (its level, or this host, gives it up, and says so): what stands in
// Lost is not enforced, and a fork bomb without a process limit must not
// be run to show it. what says what the test would have checked.
func skipIfLost(t testing.TB, sb *Sandbox, prefix, what string) {
	t.Helper()
	for _, l := range sb.Enforcement().Lost {
		if strings.HasPrefix(l, prefix) {
			t.Skipf("%s is not checked: this sandbox lists it lost (%s)", what, l)
		}
	}
}
