package cgroup

import "testing"

// TestJoinCgroup: a cgroup path maps under a mount only when it lies in
// the mount's root (a sibling whose name starts the same does not).
func TestJoinCgroup(t *testing.T) {
	for _, c := range []struct {
		root, p, want string
		ok            bool
	}{
		{"/", "/user.slice/x", "/sys/fs/cgroup/user.slice/x", true},
		{"/", "/", "/sys/fs/cgroup", true},
		{"/docker/abc", "/docker/abc", "/sys/fs/cgroup", true},
		{"/docker/abc", "/docker/abc/sub", "/sys/fs/cgroup/sub", true},
		{"/docker/abc", "/docker/abcdef", "", false},
		{"/docker/abc", "/docker", "", false},
	} {
		got, ok := joinCgroup("/sys/fs/cgroup", c.root, c.p)
		if got != c.want || ok != c.ok {
			t.Errorf("joinCgroup(%q, %q) = %q, %v; want %q, %v", c.root, c.p, got, ok, c.want, c.ok)
		}
	}
}
