package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
	"golang.org/x/sys/unix"
)

// TestConfineThreadInSubprocess checks la_confine on its own — the function
// a re-executed Go child calls to confine itself — in a subprocess, since
// confinement is irreversible (CONVENTIONS 8).
func TestConfineThreadInSubprocess(t *testing.T) {
	if env := os.Getenv("LITE_AGENT_CONFINE_CHILD"); env != "" {
		confineChild(env)
		return
	}
	ws := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	cmd := exec.Command(os.Args[0], "-test.run=^TestConfineThreadInSubprocess$", "-test.v")
	cmd.Env = append(os.Environ(), "LITE_AGENT_CONFINE_CHILD="+ws+"|"+secret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{
		"before read-secret=ok", "read-secret=EACCES", "write-workspace=ok",
		"unshare=EPERM", "socket-raw=EPERM", "ptrace=EPERM", "listener=yes",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("confined thread: missing %q in\n%s", want, out)
		}
	}
}

func confineChild(env string) {
	ws, secret, _ := strings.Cut(env, "|")
	res := func(name string, err error) {
		v := "ok"
		if err != nil {
			v = unix.ErrnoName(err.(unix.Errno))
		}
		fmt.Printf("%s=%s\n", name, v)
	}
	openRead := func(p string) error {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	fmt.Print("before ")
	res("read-secret", openRead(secret))
	sb, err := New(Policy{Workspace: ws})
	if err != nil {
		fmt.Println("New:", err)
		os.Exit(1)
	}
	pieces, err := sb.confinement()
	if err != nil {
		fmt.Println("confinement:", err)
		os.Exit(1)
	}
	runtime.LockOSThread() // never unlocked: this thread is confined
	listener, err := spawn.ConfineThread(pieces)
	if err != nil {
		fmt.Println("confineThread:", err)
		os.Exit(1)
	}
	fmt.Printf("listener=%s\n", map[bool]string{true: "yes", false: "no"}[listener >= 0])
	res("read-secret", openRead(secret))
	fd, err := unix.Open(filepath.Join(ws, "f"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	res("write-workspace", err)
	res("unshare", unix.Unshare(unix.CLONE_NEWUSER))
	// Raw sockets are refused in every mode (root could make one
	// unconfined; TestEscapeSeccomp proves it).
	_, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	res("socket-raw", err)
	res("ptrace", unix.PtraceAttach(os.Getppid()))
	os.Exit(0)
}

// TestChildHoldsOnlyStdio checks that nothing but stdin/stdout/stderr
// crosses into the sandbox: not the seccomp listener (the command could
// answer its own notifications), not the ruleset, not the cgroup files, not
// a descriptor the test process opened without O_CLOEXEC.
func TestChildHoldsOnlyStdio(t *testing.T) {
	leakPath := filepath.Join(t.TempDir(), "leak")
	if err := os.WriteFile(leakPath, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	leak, err := unix.Open(leakPath, unix.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	e := newEscapeEnv(t, nil)
	if got, _ := e.probe(t, "fds"); got != "0 1 2" {
		t.Errorf("the command holds fds %q, want 0 1 2", got)
	}
	if free := e.free(t, "fds"); !strings.Contains(free, " "+strconv.Itoa(leak)+" ") && !strings.HasSuffix(free, " "+strconv.Itoa(leak)) {
		t.Errorf("unconfined child fds: %q: the fd %d opened without O_CLOEXEC is not there, so the test proves nothing", free, leak)
	}
}
