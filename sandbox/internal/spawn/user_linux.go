package spawn

import "sync"

// User is who the sandbox's commands run as: the process's own user, as
// package sandbox probed it (root: euid 0). Unprivileged users make their
// instances (devpts, /proc and root skeletons) in a throwaway user
// namespace mapping only UID and GID.
type User struct {
	Root     bool
	UID, GID int
}

// probeOnce caches one probe's answer for the process: the user is the
// process's, the same on every call, so the first answer holds.
type probeOnce struct {
	once sync.Once
	err  error
}

func (p *probeOnce) do(f func() error) error {
	p.once.Do(func() { p.err = f() })
	return p.err
}
