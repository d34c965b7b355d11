package spawn

// ProbeNamespaces answers ProbePIDNS, ProbeMountNS, ProbeDevpts, ProbeProc
// and, for an unprivileged user, ProbeUserNS, with one child instead of
// four: a child in every namespace a command may get (user, unprivileged;
// PID; mount) that mounts the sandbox's own devpts and /proc there as a
// command's namespace does (la_mount_setup). Each probe on its own is a
// clone with a copy of the host's mount table, every mount of it made
// read-only, and its teardown: ~0.3 ms, and a `sandbox run` made four.
//
// ok says the child worked: then every namespace works, and devpts and
// proc are nil unless their instance could not even be made (the error
// then). When it did not, nothing is known (ok false) and the caller asks
// each probe on its own, which says which one is missing. The answers
// for devpts and proc are kept for AddDevpts and AddProc, which probe
// once per process.
func ProbeNamespaces(u User) (devpts, proc error, ok bool) {
	own, _ := newMounts(nil)
	defer own.Free() // closes the instances
	fd, derr := makeDevpts(u)
	if derr == nil {
		own.setDevpts(fd)
	}
	files := []string{"cpuinfo"}
	skel, procFD, perr := makeProc(u, u.Root, files)
	if perr == nil {
		own.setProc(skel, procFD, files)
	}
	// An unprivileged user's /proc is made in the child, for its PID
	// namespace (makeProc made only the skeleton): the namespace of a
	// command that gets a /proc. Root's PID namespace is tried too, as
	// ProbePIDNS does.
	if err := probeMountNS(!u.Root, true, u.UID, u.GID, own); err != nil {
		return nil, nil, false
	}
	devptsProbe.do(func() error { return derr })
	procProbe.do(func() error { return perr })
	return derr, perr, true
}
