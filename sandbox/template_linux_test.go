package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/sandbox/internal/spawn"
	"golang.org/x/sys/unix"
)

// tmplCommand is a command started to print a line and wait for stdin.
type tmplCommand struct {
	p     *Process
	in    *os.File
	first string
}

// startInTemplate starts script (which must print a line, then read one) and
// waits until it has printed.
func startInTemplate(t *testing.T, sb *Sandbox, script string) *tmplCommand {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW := io.Pipe()
	p, err := sb.Start(context.Background(), &Command{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Stdin: inR, Stdout: outW})
	inR.Close()
	if err != nil {
		t.Fatalf("Start(%q): %v", script, err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("%q printed nothing: %v", script, err)
	}
	go io.Copy(io.Discard, outR)
	return &tmplCommand{p: p, in: inW, first: strings.TrimSpace(line)}
}

// release lets the command read its line and end, and returns its status.
func (h *tmplCommand) release(t *testing.T) *ExitStatus {
	t.Helper()
	h.in.WriteString("go\n")
	h.in.Close()
	st, err := h.p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// userNSParent is the inode of the parent of pid's user namespace.
func userNSParent(t *testing.T, pid int) uint64 {
	t.Helper()
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	parent, err := unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
	if err != nil {
		t.Fatalf("NS_GET_PARENT of %d's user namespace: %v", pid, err)
	}
	defer unix.Close(parent)
	var st unix.Stat_t
	if err := unix.Fstat(parent, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestCommandsStartInNamespaceTemplate: an unprivileged user's commands
// after a Sandbox's first start inside its namespace template — their
// user namespaces nested in one the Sandbox made once — and share no more
// through it than commands made their namespaces themselves: a command
// running beside another sees a /proc of its own (its PID namespace's),
// a daemon a command leaves dies with it, and the process limit counts
// each command's processes, not the Sandbox's. (Mounts stay read-only and
// every mount call, namespace flag and setns stays refused: the escape
// tables run through the template too, TestEscapeSeccomp among them.)
func TestCommandsStartInNamespaceTemplate(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root's commands share their spawner thread's namespace and need no template: TestAsUnprivilegedUser runs this as uid 65534, where it checks that commands after the first start in the sandbox's namespace template, each with its own /proc, PID namespace and process count")
	}
	sb, _ := newTestSandbox(t, func(p *Policy) { p.Limits.Processes = 12 })
	if sb.mountNS != spawn.MountChild || !sb.newUser {
		t.Skipf("no namespace template here (plan: mount namespace %v, user namespace %v): would check that commands share one", sb.mountNS, sb.newUser)
	}
	var host unix.Stat_t
	if err := unix.Stat("/proc/self/ns/user", &host); err != nil {
		t.Fatal(err)
	}

	// The first command makes its own namespaces (a Sandbox that runs
	// one command never makes a template); the next ones start in it.
	first := startInTemplate(t, sb, "echo up; read x")
	if got := userNSParent(t, first.p.Pid()); got != host.Ino {
		t.Errorf("the first command's user namespace is nested in %d, want this process's (%d)", got, host.Ino)
	}
	first.release(t)

	// Two commands at once in the template: one holds 8 processes (its
	// shell, 7 sleeps) while the other starts 8 more under a limit of 12.
	a := startInTemplate(t, sb, "for i in 1 2 3 4 5 6 7; do sleep 60 & done; echo up; read x")
	b := startInTemplate(t, sb, `for i in 1 2 3 4 5 6 7; do sleep 60 & done; n=0; for p in /proc/pid/[0-9]*; do n=$((n+1)); done; echo "up $n $(cat /proc/self/status | grep -c ^Pid)"`+"; read x")
	// The holder keeps the release pipe and nothing else of this
	// process's: not its standard descriptors (a program closing its
	// stdout to say it is done must not find the holder keeping it).
	sb.tmplMu.Lock()
	holder := sb.tmpl.Pid()
	sb.tmplMu.Unlock()
	if fds, err := os.ReadDir("/proc/" + strconv.Itoa(holder) + "/fd"); err != nil || len(fds) != 1 {
		var open []string
		for _, f := range fds {
			target, _ := os.Readlink("/proc/" + strconv.Itoa(holder) + "/fd/" + f.Name())
			open = append(open, f.Name()+"->"+target)
		}
		t.Errorf("the template's holder keeps %v open (%v), want only its release pipe", open, err)
	}
	ta, tb := userNSParent(t, a.p.Pid()), userNSParent(t, b.p.Pid())
	if ta == host.Ino || ta != tb {
		t.Errorf("commands after the first: user namespaces nested in %d and %d, want one template's, not this process's (%d)", ta, tb, host.Ino)
	}
	// b's /proc lists its own processes only: its shell, 7 sleeps and the
	// subshell counting (its init is not dumpable, so not listed); a's
	// 8 are in another PID namespace.
	fields := strings.Fields(b.first)
	if len(fields) != 3 || fields[2] != "1" {
		t.Fatalf("b printed %q", b.first)
	}
	if n, _ := strconv.Atoi(fields[1]); n < 8 || n > 10 {
		t.Errorf("b's /proc lists %d processes, want its own 8 to 10 (a's 8 are not its to see)", n)
	}
	for _, h := range []*tmplCommand{a, b} {
		if st := h.release(t); st.Code != 0 || st.ProcessLimitHit {
			t.Errorf("a command in the template: %+v (the process limit must count per command)", st)
		}
	}

	// A daemon left by a command in the template dies with it.
	marker := fmt.Sprintf("la-template-daemon-%d", os.Getpid())
	r := sh(t, sb, "(exec -a "+marker+" sleep 60 &) ; echo left")
	if r.st.Code != 0 || r.out != "left\n" {
		t.Fatalf("daemon command: %v", r)
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.HasPrefix(string(b), marker) {
			t.Errorf("the daemon %s outlived its command (pid %s)", marker, e.Name())
		}
	}

	// A holder killed from outside (a pkill of the user's processes; the
	// holder is this test's own) is replaced: the next command runs, in
	// a template made again, not in the dead one's namespace (ESRCH).
	if err := unix.Kill(holder, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	sb.tmplMu.Lock()
	killed := sb.tmpl
	sb.tmplMu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for killed.Alive() { // its pidfd polls readable once it exited
		if time.Now().After(deadline) {
			t.Fatalf("the holder %d outlived SIGKILL", holder)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := sh(t, sb, "echo after"); r.st.Code != 0 || r.out != "after\n" {
		t.Fatalf("a command after the template's holder was killed: %v", r)
	}
	sb.tmplMu.Lock()
	again := sb.tmpl
	sb.tmplMu.Unlock()
	if again == nil || again.Pid() == holder || !again.Alive() {
		t.Errorf("no new template after the holder was killed")
	}
}
