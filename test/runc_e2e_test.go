package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// The OCI runtime row: lite-agent in a container runc starts as Docker
// would, with its default capabilities, a seccomp profile that refuses
// what Docker's default profile refuses (for a container without
// CAP_SYS_ADMIN and CAP_SYS_PTRACE), its PID, mount, IPC and UTS
// namespaces, runc's default masked and read-only paths and a read-only
// cgroupfs — over the host's own files (/usr and /etc read-only, the
// row's directory read-write at the same path) and the host's network
// (the loopback listener the session must not reach is the test's).

// dockerCaps are Docker's default capabilities (moby oci/caps).
var dockerCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// dockerSeccomp is the part of Docker's default seccomp profile that
// lite-agent meets, as a deny list: what the profile allows only with
// CAP_SYS_ADMIN or CAP_SYS_PTRACE fails EPERM, clone3 ENOSYS, clone with
// a namespace flag EPERM.
func dockerSeccomp() map[string]any {
	eperm := []string{"unshare", "setns", "mount", "umount2", "pivot_root", "mount_setattr", "open_tree",
		"move_mount", "fsopen", "fsmount", "fsconfig", "fspick", "pidfd_getfd", "kcmp", "process_madvise",
		"fanotify_init", "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "quotactl", "syslog",
		"acct", "reboot", "init_module", "finit_module", "delete_module"}
	rules := []map[string]any{
		{"names": eperm, "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
		{"names": []string{"clone3"}, "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
	}
	for _, fl := range []uint64{0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000} {
		rules = append(rules, map[string]any{"names": []string{"clone"}, "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
			"args": []map[string]any{{"index": 0, "value": fl, "valueTwo": fl, "op": "SCMP_CMP_MASKED_EQ"}}})
	}
	return map[string]any{"defaultAction": "SCMP_ACT_ALLOW", "architectures": []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}, "syscalls": rules}
}

var runcSeq atomic.Int64

// runcLauncher runs lite-agent in a fresh runc container per call, as
// root or as uid 65534 in it.
func runcLauncher(unprivileged bool) func(*testing.T, *restrictedEnv) launcher {
	return func(t *testing.T, e *restrictedEnv) launcher {
		runc, err := exec.LookPath("runc")
		if err != nil {
			t.Skip("runc is not installed (apt-get install runc): the OCI runtime row is not reproduced")
		}
		spec := t.TempDir()
		if out, err := exec.Command(runc, "spec", "--bundle", spec).CombinedOutput(); err != nil {
			t.Skipf("runc spec: %v %s", err, out)
		}
		// The root: mount points for the host's files, and the symlinks
		// of a merged-/usr system.
		rootfs := filepath.Join(spec, "rootfs")
		for _, d := range []string{"usr", "etc", "tmp", "proc", "dev", "sys", e.base[1:]} {
			if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		os.Chmod(filepath.Join(rootfs, "tmp"), 0o1777)
		for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
			if target, err := os.Readlink("/" + l); err == nil {
				os.Symlink(target, filepath.Join(rootfs, l))
			}
		}
		b, err := os.ReadFile(filepath.Join(spec, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["root"] = map[string]any{"path": rootfs, "readonly": false}
		mounts := cfg["mounts"].([]any)
		for _, m := range []struct{ dst, opt string }{{"/usr", "ro"}, {"/etc", "ro"}, {e.base, "rw"}} {
			mounts = append(mounts, map[string]any{"destination": m.dst, "type": "bind", "source": m.dst, "options": []string{"rbind", m.opt}})
		}
		cfg["mounts"] = mounts
		linux := cfg["linux"].(map[string]any)
		var ns []any
		for _, n := range linux["namespaces"].([]any) {
			if n.(map[string]any)["type"] != "network" { // the host's network
				ns = append(ns, n)
			}
		}
		linux["namespaces"] = ns
		linux["seccomp"] = dockerSeccomp()
		proc := cfg["process"].(map[string]any)
		proc["terminal"] = false
		proc["noNewPrivileges"] = false
		proc["capabilities"] = map[string]any{"bounding": dockerCaps, "effective": dockerCaps, "permitted": dockerCaps}
		if unprivileged {
			proc["user"] = map[string]any{"uid": 65534, "gid": 65534}
			proc["capabilities"] = map[string]any{"bounding": dockerCaps}
		}
		proc["cwd"] = e.ws
		proc["env"] = e.environ()
		return func(args []string) *exec.Cmd {
			proc["args"] = append([]string{e.bin}, args...)
			b, err := json.MarshalIndent(cfg, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(spec, "config.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			id := fmt.Sprintf("lite-agent-test-%d-%d", os.Getpid(), runcSeq.Add(1))
			return exec.Command(runc, "run", "--bundle", spec, id)
		}
	}
}
