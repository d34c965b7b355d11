package sandbox

/*
#include "fastpath.h"
*/
import "C"

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// One-shot plans: the Go half of the fast path of `lite-agent sandbox run`
// (fastpath_linux.c has the C half and says why it exists).
//
// The CLI computes PlanKey before it prepares the sandbox, runs the
// command the usual way, and stores OneShotPlan under that key. The next
// invocation with the same key runs the plan in C without starting Go.
//
// A plan is stored only for the shapes the C runner executes exactly as
// Start does: network "none" (its connect supervisor); a per-command v1
// pids cgroup (and memory, when writable), or no cgroup and a PID
// namespace (in a user namespace, unprivileged) under our init; no change
// capture, the sandbox's own temp dirs, everything enforced. Other shapes
// always take the Go path.

// PlanKey returns the keyring description under which the plan for this
// process's invocation is stored: a SHA-256 of everything the CLI and New
// read to compute it but the environment (see fastpath_linux.c,
// la_plan_key, which builds the same bytes; the plan itself lists the
// variables it depends on). flagArgs are the arguments of `sandbox run` before the
// command, as given. Call it before New: New moves threads between
// cgroups, and the key includes the process's cgroups.
func PlanKey(flagArgs []string) (string, error) {
	m, err := planKeyMaterial(flagArgs)
	if err != nil {
		return "", err
	}
	sum := sha256Sum(m)
	return C.LA_PLAN_KEY_PREFIX + hex.EncodeToString(sum[:]), nil
}

func planKeyMaterial(flagArgs []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(C.LA_PLAN_KEY_VERSION)
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, "exe %d %d %d %d %d\n", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
	ru, eu, su := unix.Getresuid()
	rg, eg, sg := unix.Getresgid()
	fmt.Fprintf(&b, "ids %d %d %d %d %d %d\n", ru, eu, su, rg, eg, sg)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, "caps %d %d\n", data[0].Effective, data[1].Effective)
	cwd, err := unix.Getwd()
	if err != nil {
		return nil, err
	}
	b.WriteString("cwd " + cwd + "\ncgroup\n")
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	b.Write(cg)
	fmt.Fprintf(&b, "args %d\n", len(flagArgs))
	for _, a := range flagArgs {
		b.WriteString(a)
		b.WriteByte(0)
	}
	return b.Bytes(), nil
}

// sha256Sum is the C runner's SHA-256, so that the key is computed by the
// same code on both sides (the test compares it with crypto/sha256).
func sha256Sum(p []byte) [32]byte {
	var out [32]byte
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	C.la_sha256(ptr, C.ulong(len(p)), (*C.uchar)(unsafe.Pointer(&out[0])))
	return out
}

// planWriter encodes the records of a plan (fastpath.h).
type planWriter struct{ b bytes.Buffer }

func (w *planWriter) rec(tag int, data []byte) {
	var h [6]byte
	binary.LittleEndian.PutUint16(h[:], uint16(tag))
	binary.LittleEndian.PutUint32(h[2:], uint32(len(data)))
	w.b.Write(h[:])
	w.b.Write(data)
}

func (w *planWriter) u64(tag int, v uint64) {
	w.rec(tag, binary.LittleEndian.AppendUint64(nil, v))
}

func (w *planWriter) u32(tag int, v uint32) {
	w.rec(tag, binary.LittleEndian.AppendUint32(nil, v))
}

func (w *planWriter) str(tag int, s string) { w.rec(tag, []byte(s)) }

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// errNoPlan: this sandbox's shape is one the C runner does not execute.
var errNoPlan = errors.New("sandbox: no one-shot plan for this sandbox")

// OneShotPlan encodes what Start would do for a command run in dir, for
// the C runner. It fails with a reason when the sandbox's shape is not one
// the runner executes.
func (s *Sandbox) OneShotPlan(dir string, msgs PlanMessages) ([]byte, error) {
	h := s.h
	switch {
	case !h.seccomp || h.abi == 0 || s.rawPieces.RulesetFD < 0:
		return nil, fmt.Errorf("%w: no Landlock or seccomp", errNoPlan)
	case len(s.enf.Missing) > 0:
		return nil, fmt.Errorf("%w: best effort", errNoPlan)
	case s.notify == notifyNet || s.pol.Network != NetworkNone || s.spec.denyConnect:
		return nil, fmt.Errorf("%w: network %s", errNoPlan, s.pol.Network)
	case s.pol.CaptureChanges || s.pol.TempDir != "" || s.tmpRoot == "":
		return nil, fmt.Errorf("%w: change capture or a caller's temp dir", errNoPlan)
	case !s.cgroupShape() && !s.initShape():
		return nil, fmt.Errorf("%w: the process tree is neither a v1 pids cgroup nor a PID namespace under our init", errNoPlan)
	case !filepath.IsAbs(dir):
		return nil, fmt.Errorf("%w: working directory %q", errNoPlan, dir)
	}
	// The seccomp programs. In the cgroup shape, the one the Go path's
	// spawner threads carry and its children inherit: every rule and the
	// connect notification in one, which the runner's child loads as its
	// only program (with the listener) — one action cache for the kernel
	// to build, ~0.15 ms less per run. Otherwise the pair a self-confining
	// child loads (confinement, which compiles them).
	var mainBPF, childBPF []byte
	if s.cgroupShape() && s.sealed && s.threadNotifies && len(s.threadBPF) > 0 {
		childBPF = s.threadBPF
	} else {
		pieces, err := s.confinement()
		if err != nil {
			return nil, err
		}
		if len(pieces.MainBPF) == 0 || len(pieces.ChildBPF) == 0 || !pieces.ChildNotifies {
			return nil, fmt.Errorf("%w: no connect supervision", errNoPlan)
		}
		mainBPF, childBPF = pieces.MainBPF, pieces.ChildBPF
	}
	tmpBase, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return nil, fmt.Errorf("%w: temp dir: %v", errNoPlan, err)
	}

	var w planWriter
	w.b.WriteString(C.LA_PLAN_MAGIC)
	attr := landlockHandled(h.abi, s.spec.network)
	w.u64(C.LA_T_LL_FS, attr.Access_fs)
	w.u64(C.LA_T_LL_NET, attr.Access_net)
	w.u64(C.LA_T_LL_SCOPED, attr.Scoped)
	w.u64(C.LA_T_LL_FILE_ONLY, llFileOnly)
	rules := landlockRules(&s.pol, "")
	if s.initShape() {
		rules = append(rules, llRule{s.initExe, llRO}) // as New does
	}
	for _, r := range rules {
		w.rec(C.LA_T_LL_RULE, append(binary.LittleEndian.AppendUint64(nil, r.access), r.path...))
	}
	w.u64(C.LA_T_LL_TMP, llRW)
	if len(mainBPF) > 0 {
		w.rec(C.LA_T_MAIN_BPF, mainBPF)
	}
	w.rec(C.LA_T_CHILD_BPF, childBPF)
	w.u32(C.LA_T_CHILD_NOTIFIES, 1)
	rp := s.rawPieces
	w.u32(C.LA_T_LAST_CAP, uint32(rp.LastCap))
	w.u32(C.LA_T_DROP_BOUNDING, b2u(rp.DropBounding))
	w.u32(C.LA_T_LOCK_SECUREBITS, b2u(rp.LockSecurebits))

	// The environment as Start builds it, with the temp dir's values
	// (TMPDIR, and HOME when the caller's cannot be read) left to the
	// runner, which makes a fresh temp dir per run.
	const tmpMark = "\x00lite-agent-tmp\x00"
	env := s.commandEnv(nil, tmpMark)
	for _, e := range env {
		if name, value, _ := strings.Cut(e, "="); value == tmpMark {
			w.str(C.LA_T_ENV_TMP, name)
		} else {
			w.str(C.LA_T_ENV, e)
		}
	}
	for _, name := range s.planEnvDeps() {
		if v, ok := os.LookupEnv(name); ok {
			w.str(C.LA_T_ENV_DEP, name+"="+v)
		} else {
			w.str(C.LA_T_ENV_DEP, name)
		}
	}
	w.str(C.LA_T_DIR, dir)
	w.str(C.LA_T_TMP_BASE, tmpBase)
	rlimits := s.rlimits
	if s.initShape() {
		rlimits = s.initRlimits
	}
	for _, rl := range rlimits {
		b := binary.LittleEndian.AppendUint32(nil, uint32(rl.resource))
		b = binary.LittleEndian.AppendUint64(b, rl.cur)
		w.rec(C.LA_T_RLIMIT, binary.LittleEndian.AppendUint64(b, rl.max))
	}
	if s.initShape() {
		// A PID namespace (and a user namespace) under our init, as
		// Start makes them.
		w.u32(C.LA_T_INIT, 1)
		w.u32(C.LA_T_NEW_USER, b2u(s.newUser))
		w.str(C.LA_T_UID_MAP, s.uidMap)
		w.str(C.LA_T_GID_MAP, s.gidMap)
		if s.pidMax != "" {
			w.str(C.LA_T_PID_MAX, s.pidMax)
		}
		w.str(C.LA_T_INIT_AS, s.initAS)
	} else {
		// The command's cgroups, made by the runner per run. No
		// spawner thread sits in them, so pids.max is the limit itself
		// (the Go path adds one for its thread).
		w.str(C.LA_T_CG_PIDS, h.cg.v1["pids"])
		w.str(C.LA_T_CG_PIDS_MAX, strconv.Itoa(s.pol.Limits.Processes))
		if s.plan.v1Mem {
			w.str(C.LA_T_CG_MEM, h.cg.v1["memory"])
			w.str(C.LA_T_CG_MEM_LIMIT, strconv.FormatInt(s.pol.Limits.MemoryBytes, 10))
		}
	}
	// The unix-socket roots as the policy names them (the runner
	// resolves them per run, as it opens the Landlock rules); the temp
	// dir it adds itself.
	// (/proc/self/... paths name the supervisor, not the command:
	// canonical skips them, and so does the plan.)
	var roots []string
	for _, r := range append([]string{s.pol.Workspace}, s.pol.ReadWritePaths...) {
		if r != "" && !procSelfLike(r) {
			roots = append(roots, r)
			w.str(C.LA_T_UNIX_ROOT, r)
		}
	}
	if s.mountNS != mountNone {
		w.u32(C.LA_T_MOUNT_NS, 1)
	}
	w.u64(C.LA_T_OUTPUT_BYTES, uint64(s.pol.Limits.OutputBytes))
	w.u64(C.LA_T_WALL_NS, uint64(s.pol.Limits.WallTime))
	w.u64(C.LA_T_CREATED, uint64(time.Now().Unix()))
	for _, m := range []struct {
		tag int
		s   string
	}{
		{C.LA_T_MSG_PREAMBLE, msgs.Preamble}, {C.LA_T_MSG_TIMEOUT, msgs.Timeout},
		{C.LA_T_MSG_OOM, msgs.MemoryExceeded}, {C.LA_T_MSG_PIDS, msgs.ProcessLimit},
		{C.LA_T_MSG_TRUNC_A, msgs.TruncatedA}, {C.LA_T_MSG_TRUNC_B, msgs.TruncatedB},
		{C.LA_T_MSG_SIGINT, msgs.Interrupt}, {C.LA_T_MSG_SIGTERM, msgs.Terminate},
		{C.LA_T_MSG_SIGHUP, msgs.Hangup},
	} {
		w.str(m.tag, m.s)
	}
	switch {
	case len(rules) > C.LA_MAX_RULES, len(env) > C.LA_MAX_ENV, len(roots) > C.LA_MAX_ROOTS-1, len(rlimits) > C.LA_MAX_RLIMITS:
		return nil, fmt.Errorf("%w: the policy is larger than the runner takes", errNoPlan)
	}
	if w.b.Len()+sha256.Size > maxPlanBytes {
		return nil, fmt.Errorf("%w: the plan is %d bytes (at most %d)", errNoPlan, w.b.Len(), maxPlanBytes)
	}
	return w.b.Bytes(), nil
}

// maxPlanBytes: a "user" key holds at most 32767 bytes, and the runner
// reads into a 32 KiB buffer.
const maxPlanBytes = 32767

// planLifetime bounds how long a stored plan is used: the Go path rereads
// the system (paths that appeared, kernel features) at least this often.
// The runner checks it against the plan's signed creation time.
const planLifetime = C.LA_PLAN_LIFETIME_S * time.Second

// StorePlan stores plan under key in the user's keyring, replacing an
// older one, for planLifetime, followed by its HMAC under the user's plan
// secret (planSecret). When the user's key quota is full, the plans stored
// before are dropped first.
func StorePlan(key string, plan []byte) error {
	secret, err := planSecret()
	if err != nil {
		return err
	}
	// Signed with the key's description: valid for this invocation only.
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(key))
	mac.Write([]byte{0})
	mac.Write(plan)
	plan = mac.Sum(append([]byte(nil), plan...))
	id, err := unix.AddKey("user", key, plan, unix.KEY_SPEC_USER_KEYRING)
	if errors.Is(err, unix.EDQUOT) {
		dropPlans()
		id, err = unix.AddKey("user", key, plan, unix.KEY_SPEC_USER_KEYRING)
	}
	if err != nil {
		return fmt.Errorf("sandbox: storing the plan in the user keyring: %w", err)
	}
	_, err = unix.KeyctlInt(unix.KEYCTL_SET_TIMEOUT, id, int(planLifetime/time.Second), 0, 0)
	return err
}

// dropPlans unlinks every plan from the user keyring.
func dropPlans() {
	ring, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_USER_KEYRING, 0, 0, 0)
	if err != nil {
		return
	}
	buf := make([]byte, 4*4096)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, ring, buf, 0)
	if err != nil || n > len(buf) {
		return
	}
	for i := 0; i+4 <= n; i += 4 {
		id := int(int32(binary.NativeEndian.Uint32(buf[i:])))
		desc, err := unix.KeyctlString(unix.KEYCTL_DESCRIBE, id)
		// "type;uid;gid;perm;description"
		if err == nil && strings.HasPrefix(desc, "user;") && strings.Contains(desc, ";"+C.LA_PLAN_KEY_PREFIX) {
			unix.KeyctlInt(unix.KEYCTL_UNLINK, id, ring, 0, 0)
		}
	}
}

// planEnvDeps are the variables a plan is computed from: those the policy
// copies by name into the command's environment (never one that looks
// like a secret: those are not copied, and their values must not be
// stored), the ones that decide paths (PWD for the working directory, HOME,
// TMPDIR, XDG_CONFIG_HOME) and the switch of the plans themselves.
func (s *Sandbox) planEnvDeps() []string {
	names := []string{"PATH", "HOME", "TMPDIR", "PWD", "XDG_CONFIG_HOME", "LITE_AGENT_SANDBOX_PLANS"}
	for _, e := range s.pol.Env {
		if k, _, explicit := strings.Cut(e, "="); !explicit && k != "" && !LooksSecret(k) && !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	return names
}

// planSecret returns the per-user secret that authenticates plans
// (fastpath.h: LA_SECRET_DIR_FMT), making it on first use. The keyring
// keeps plans out of every lite-agent sandbox's reach (seccomp refuses
// keyctl); the secret means that a process that can write the keyring but
// not the user's files — a container sharing the host's keyring, another
// sandbox that lets keyctl through — cannot plant a plan either.
func planSecret() ([]byte, error) {
	uid := os.Geteuid()
	// LA_SECRET_DIR_FMT has a C %u.
	dir := strings.Replace(C.LA_SECRET_DIR_FMT, "%u", strconv.Itoa(uid), 1)
	if x := os.Getenv("XDG_RUNTIME_DIR"); strings.HasPrefix(x, "/") && len(x) < 4000 {
		dir = x + "/" + C.LA_SECRET_XDG_SUBDIR
	}
	fail := func(err error) ([]byte, error) { return nil, fmt.Errorf("sandbox: plan secret in %s: %w", dir, err) }
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fail(err)
	}
	// Checked on the open directory, the file opened beneath it: what is
	// checked is what is read (as the runner does).
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return fail(err)
	}
	if int(st.Uid) != uid || st.Mode&0o7777 != 0o700 {
		return fail(fmt.Errorf("not a directory of uid %d with mode 0700", uid))
	}
	for range 2 {
		fd, err := unix.Openat(dfd, C.LA_SECRET_FILE, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			secret := make([]byte, 32)
			rand.Read(secret)
			fd, err := unix.Openat(dfd, C.LA_SECRET_FILE, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
			if errors.Is(err, unix.EEXIST) {
				continue // made by a run at the same time: read theirs
			}
			if err != nil {
				return fail(err)
			}
			n, werr := unix.Write(fd, secret)
			unix.Close(fd)
			if werr != nil || n != len(secret) {
				unix.Unlinkat(dfd, C.LA_SECRET_FILE, 0)
				return fail(fmt.Errorf("writing the secret: %v", werr))
			}
			return secret, nil
		}
		if err != nil {
			return fail(err)
		}
		secret := make([]byte, 32)
		n, rerr := unix.Read(fd, secret)
		var fst unix.Stat_t
		serr := unix.Fstat(fd, &fst)
		unix.Close(fd)
		if rerr != nil || serr != nil || n != 32 || fst.Size != 32 || fst.Mode&unix.S_IFMT != unix.S_IFREG || int(fst.Uid) != uid || fst.Mode&0o077 != 0 {
			return fail(fmt.Errorf("%s is not 32 bytes of uid %d with mode 0600", C.LA_SECRET_FILE, uid))
		}
		return secret, nil
	}
	return fail(errors.New("could not be read or made"))
}

// cgroupShape: the process tree is a per-command v1 pids cgroup (root
// here), which the runner makes itself.
func (s *Sandbox) cgroupShape() bool {
	return s.plan.v1Pids && !s.plan.v2 && !s.newPID && !s.newUser && !s.withInit
}

// initShape: no cgroup, a PID namespace (in a user namespace for an
// unprivileged user) under this program as its init.
func (s *Sandbox) initShape() bool {
	return s.newPID && s.withInit && s.initExe != "" && !s.plan.any()
}
