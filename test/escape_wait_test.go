package test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What the escape suite's checks wait on instead of sleeping: after a run
// ends, whether an attack got through is decided by something the kernel
// already shows, or by a sentinel of the test's own sent after it on the
// same path.

// ending reports whether process pid is gone or on its way out: a zombie
// or dead, PF_EXITING set, or one of sigs (and always SIGKILL) pending.
// It is exact without waiting: kill(2) queues the signal before it
// returns, and a fatal one with its default action sets SIGKILL pending
// on every thread of the target at once (complete_signal in
// kernel/signal.c), so a process that a finished run signalled — or a
// sandbox killed as its run ended — shows it from that moment, even
// before it is scheduled to die.
func ending(pid int, sigs ...syscall.Signal) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone (reaped)
	}
	// After "(comm)": state, ppid, pgrp, session, tty_nr, tpgid, flags.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 7 || f[0] == "Z" || f[0] == "X" || f[0] == "x" {
		return true
	}
	const pfExiting = 0x4
	if flags, _ := strconv.ParseUint(f[6], 10, 64); flags&pfExiting != 0 {
		return true
	}
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true
	}
	defer status.Close()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		name, val, _ := strings.Cut(sc.Text(), ":")
		if name != "SigPnd" && name != "ShdPnd" {
			continue
		}
		mask, _ := strconv.ParseUint(strings.TrimSpace(val), 16, 64)
		for _, s := range append(sigs, syscall.SIGKILL) {
			if mask&(1<<(uint(s)-1)) != 0 {
				return true
			}
		}
	}
	return false
}

// terminated: the victim is dead, or a SIGTERM (the kill scenario's)
// reached it — pending or acted upon.
func (v *victim) terminated() bool {
	return !v.alive() || ending(v.pid, syscall.SIGTERM)
}

// survivors are the processes whose command line carries marker and
// that are not ending: what outlived a run whose sandbox should have
// killed its whole tree.
func survivors(marker string) []int {
	var out []int
	for _, pid := range processesMatching(func(c, _ string) bool { return strings.Contains(c, marker) }) {
		if !ending(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// flush sends one sentinel of the test's own down each path into the
// listener — TCP and UDP, IPv4 and IPv6 where it listens on them, or the
// unix socket — after the run ended, and returns once the listener has
// recorded every one: it reads each socket in order (connections one at
// a time, datagrams as they come), so anything the run got through on
// that path was recorded before its sentinel. (A datagram is handed to
// the receiving socket during the sender's own sendto on loopback and
// veth — the softirq runs as that call leaves — so one sent by the run
// is queued before a sentinel sent after the run ended.) An error means
// the evidence is incomplete.
func flush(where string, fx *fixture) error {
	var paths [][2]string // network, address
	var record func(token string) string
	switch where {
	case "loopback":
		lo := fx.s.lo
		paths = append(paths, [2]string{"tcp", lo.addr}, [2]string{"udp", lo.addr})
		if fx.s.lo6 {
			p := strconv.Itoa(lo.port())
			paths = append(paths, [2]string{"tcp", "[::1]:" + p}, [2]string{"udp", "[::1]:" + p})
		}
		record = lo.saw
	case "netns":
		h := fx.s.net
		for _, a := range []string{h.priv4, h.priv6} {
			if a != "" {
				hp := net.JoinHostPort(a, strconv.Itoa(h.port))
				paths = append(paths, [2]string{"tcp", hp}, [2]string{"udp", hp})
			}
		}
		record = h.saw
	case "unix":
		paths, record = [][2]string{{"unix", fx.s.unixOut.addr}}, fx.s.unixOut.saw
	case "abstract":
		paths, record = [][2]string{{"unix", fx.s.abstract.addr}}, fx.s.abstract.saw
	}
	for _, p := range paths {
		token := "sentinel-" + randHex(8)
		if err := sendToken(p[0], p[1], token); err != nil {
			return fmt.Errorf("the sentinel over %s to %s: %v", p[0], p[1], err)
		}
		// Polled with a deadline: the listener records it moments later.
		deadline := time.Now().Add(10 * time.Second)
		for record(token) == "" {
			if time.Now().After(deadline) {
				return fmt.Errorf("the sentinel over %s to %s never arrived", p[0], p[1])
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// sendToken sends token as one line: over a stream it waits for the
// listener to close the connection (it has read the line by then).
func sendToken(network, addr, token string) error {
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(token + "\n")); err != nil {
		return err
	}
	if network == "udp" {
		return nil
	}
	// The greeting, then EOF when the listener is done with us.
	buf := make([]byte, 64)
	for {
		if _, err := c.Read(buf); err != nil {
			return nil
		}
	}
}

// TestEndingSeesASignalAtOnce: the checks above rely on ending being
// exact the moment kill(2) returns — no wait for the target to die — and
// false for a process nobody signalled.
func TestEndingSeesASignalAtOnce(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		if ending(pid, syscall.SIGTERM) {
			t.Fatalf("a fresh sleep is ending")
		}
		if err := syscall.Kill(pid, sig); err != nil { // ours: the test started it
			t.Fatal(err)
		}
		if !ending(pid, syscall.SIGTERM) {
			t.Errorf("%v: not ending right after kill returned", sig)
		}
		cmd.Wait()
		if !ending(pid) {
			t.Errorf("%v: a reaped process is not ending", sig)
		}
	}
}
