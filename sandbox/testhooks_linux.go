package sandbox

// testForceMechanism lets tests exercise every way of tracking a process
// tree on one machine: "" (automatic), "v2" (a cgroup v2 directory per
// command, child born in it, plus v1 slots for limits where v2 has no
// controllers), "pidns" (a PID namespace; cgroup slots for limits only),
// "nocgroup" (no cgroups at all). Set only by tests, before New.
var testForceMechanism string

func forcedPlan(forced string, plan cgroupPlan, h *hostInfo) cgroupPlan {
	switch forced {
	case "v2":
		if h.cgWritable["v2"] {
			plan.v2, plan.v1Track = true, false
		}
	case "pidns":
		plan.v2, plan.v2Pids, plan.v2Mem, plan.v1Track = false, false, false, false
		plan.v1Pids = plan.v1Pids || h.cgWritable["pids"]
		plan.v1Mem = plan.v1Mem || h.cgWritable["memory"]
	case "nocgroup":
		plan = cgroupPlan{}
	}
	return plan
}
