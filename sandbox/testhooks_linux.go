package sandbox

import "github.com/lite-agent/lite-agent/sandbox/internal/cgroup"

// testForceMechanism lets tests exercise every way of tracking a process
// tree on one machine: "" (automatic), "v2" (a cgroup v2 directory per
// command, child born in it, plus v1 slots for limits where v2 has no
// controllers), "pidns" (a PID namespace; cgroup slots for limits only),
// "nocgroup" (no cgroups at all). Set only by tests, before New.
var testForceMechanism string

func forcedPlan(forced string, plan cgroup.Plan, h *hostInfo) cgroup.Plan {
	switch forced {
	case "v2":
		if h.cgWritable["v2"] {
			plan.V2, plan.V1Track = true, false
		}
	case "pidns":
		plan.V2, plan.V2Pids, plan.V2Mem, plan.V1Track = false, false, false, false
		plan.V1Pids = plan.V1Pids || h.cgWritable["pids"]
		plan.V1Mem = plan.V1Mem || h.cgWritable["memory"]
	case "nocgroup":
		plan = cgroup.Plan{}
	}
	return plan
}
