package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// What a program that attacks nothing sees inside the sandbox, against
// what it sees outside (issue 23). Each row is a small probe, run
// unconfined and then confined with the same environment; its output must
// be equal, or differ exactly as a kept difference says (docs/sandbox.md,
// "What differs inside the sandbox", lists each with its reason).

// fidelityRow is one probe.
type fidelityRow struct {
	name   string
	script string // bash, run in the workspace
	// needs are programs the probe runs (skipped when one is missing).
	needs []string
	// inside, when set, is a kept difference: the confined output must
	// equal it while the unconfined one differs (why says why it stays),
	// unless hostMay (a setting the host may share: then it differs only
	// on hosts that do not); root limits it to a run as root (where the
	// host grants what the sandbox drops).
	inside, why   string
	root, hostMay bool
}

const probePython = "/usr/bin/python3"

var fidelityRows = []fidelityRow{
	{name: "/proc/self/fd", needs: []string{probePython}, script: probePython + ` -c 'import os; print(sorted(int(f) for f in os.listdir("/proc/self/fd"))[:3])'`},
	{name: "/proc/self/exe", script: `readlink /proc/self/exe`},
	{name: "/proc/self/status", script: `grep -E '^(Name|Umask|Threads):' /proc/self/status`},
	{name: "/proc/self/mountinfo readable", script: `test -r /proc/self/mountinfo && wc -l < /proc/self/mountinfo | tr -d ' ' | sed 's/[0-9]*/lines/'`},
	{name: "the root's file system", script: `awk '$5=="/"{for(i=7;i<NF;i++)if($i=="-"){print $(i+1);break}}' /proc/self/mountinfo | tail -1`,
		inside: "tmpfs", why: "/ is a read-only skeleton of the granted paths, so that the workspace's parents list only granted names"},
	{name: "confinement in /proc/self/status", script: `grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr '\t' ' '`,
		inside: "NoNewPrivs: 1\nSeccomp: 2", why: "no_new_privs and seccomp are the confinement itself"},
	{name: "other processes", script: `ls /proc | grep -c '^[0-9]' | sed 's/^[1-9][0-9]*$/some/; s/^0$/none/'`,
		inside: "none", why: "/proc lists no process by number, the command's own included (they are under /proc/pid): another process's argv and environment are secrets, and a procfs of the sandbox's own at /proc would bring the host's global entries to mask one by one"},
	{name: "POSIX shared memory and semaphores", needs: []string{probePython}, script: probePython + ` -c '
import multiprocessing as mp, multiprocessing.shared_memory as sm
l = mp.Lock(); l.acquire(); l.release()
s = mp.Semaphore(2); s.acquire(); s.release()
m = sm.SharedMemory(create=True, size=64); m.buf[0] = 7; m.close(); m.unlink()
with mp.Pool(2) as p: print(p.map(abs, [-1, -2]))'`},
	{name: "/dev/shm", script: `test -d /dev/shm -a -w /dev/shm && stat -c %a /dev/shm`},
	{name: "/var/tmp", script: `d=$(mktemp -d -p /var/tmp) && echo made && rmdir "$d"`},
	{name: "getpwuid of the running user", needs: []string{probePython}, script: probePython + ` -c 'import os, pwd, grp; u = pwd.getpwuid(os.getuid()); print(u.pw_name, u.pw_dir, u.pw_shell, grp.getgrgid(os.getgid()).gr_name)'; id -un; whoami`},
	{name: "locale", needs: []string{probePython}, script: `locale 2>&1 | head -3; ` + probePython + ` -c 'import locale; print(locale.setlocale(locale.LC_ALL, ""), locale.getpreferredencoding())'`},
	{name: "locales installed", script: `locale -a 2>&1 | head -5`},
	{name: "timezone files", needs: []string{probePython}, script: `date +%Z; cat /etc/timezone; readlink -f /etc/localtime | sed 's|.*zoneinfo/||'; ` + probePython + ` -c 'import time; print(time.tzname)'`},
	{name: "/etc/hosts and localhost", script: `getent hosts localhost | sort; getent ahostsv4 localhost | head -1; getent ahostsv6 localhost | head -1`},
	{name: "services and protocols", script: `getent services http; getent protocols tcp`},
	{name: "inotify", needs: []string{probePython}, script: probePython + ` -c '
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0: raise SystemExit("inotify_init1: errno %d" % ctypes.get_errno())
if libc.inotify_add_watch(fd, b".", 0x100) < 0: raise SystemExit("add_watch: errno %d" % ctypes.get_errno())
open("watched", "w").close()
wd, mask, cookie, n = struct.unpack("iIII", os.read(fd, 4096)[:16])
print("event", hex(mask))'`},
	{name: "flock", needs: []string{"flock"}, script: `touch lk && flock -x lk -c 'echo locked' && flock -n -s lk -c 'echo shared'`},
	{name: "SQLite WAL", needs: []string{probePython}, script: probePython + ` -c '
import sqlite3
c = sqlite3.connect("db.sqlite"); print(c.execute("pragma journal_mode=wal").fetchone()[0])
c.execute("create table t(x)"); c.execute("insert into t values (1)"); c.commit()
d = sqlite3.connect("db.sqlite"); print(d.execute("select count(*) from t").fetchone()[0])'`},
	{name: "ulimit -n and -s", script: `ulimit -n; ulimit -s`},
	{name: "core dumps", script: `ulimit -c`, inside: "0", hostMay: true,
		why: "a core dump of a process that read a secret would be a file outside every rule"},
	{name: "many threads", needs: []string{probePython}, script: probePython + ` -c '
import threading
ev = threading.Event(); ts = [threading.Thread(target=ev.wait) for _ in range(200)]
[t.start() for t in ts]; ev.set(); [t.join() for t in ts]; print(len(ts), "threads")'`},
	{name: "the user's cache directory", needs: []string{probePython}, script: `echo "${XDG_CACHE_HOME:-$HOME/.cache}" | sed "s|^$HOME|~|"`},
	{name: "HOME", script: `test "$HOME" = "$TMPDIR" && echo TMPDIR || echo "$HOME"`,
		inside: "TMPDIR", why: "the person's home holds credentials and dotfiles a command could rewrite (~/.bashrc): an unreadable HOME is the command's TMPDIR"},
	{name: "TMPDIR semantics", needs: []string{probePython}, script: `f=$(mktemp); case "$f" in "$TMPDIR"/*) echo mktemp-in-TMPDIR;; esac; rm -f "$f"; ` +
		probePython + ` -c 'import tempfile, os; print(tempfile.gettempdir() == os.environ["TMPDIR"])'; env -u TMPDIR ` + probePython + ` -c 'import tempfile; print(tempfile.gettempdir())'`},
	{name: "/tmp is writable", script: `f=$(mktemp -p /tmp) && echo made && rm -f "$f"`},
	{name: "/tmp's file system", script: `stat -f -c %T /tmp`,
		inside: "tmpfs", why: "/tmp is a tmpfs of the sandbox's own, invisible to the host, bounded by the memory limit and gone with the sandbox"},
	{name: "signals to the process group", script: `trap 'echo got TERM' TERM; kill -TERM 0; wait; echo after`},
	{name: "a pseudo-terminal", needs: []string{"script"}, script: `script -qec tty /dev/null | tr -d '\r' | sed 's|[0-9][0-9]*$|N|'`},
	{name: "wildcard listener", needs: []string{probePython}, script: probePython + ` -c '
import socket
s = socket.socket(socket.AF_INET6); s.bind(("::", 0)); s.listen(4); port = s.getsockname()[1]
out = [s.getsockname()[0]]
for host in ("127.0.0.1", "::1"):
    c = socket.create_connection((host, port)); a, peer = s.accept(); out.append(peer[0]); a.close(); c.close()
print(out)'`},
	{name: "root by uid", script: `id -u | sed 's/^0$/root/; s/^[1-9][0-9]*$/user/'`},
	{name: "root's chown (apt, tar -x as root)", script: `touch own && chown 1:1 own 2>/dev/null && echo chown-ok || echo chown-refused`,
		root: true, inside: "chown-refused", why: "every capability is dropped, also for root: a command cannot give files away, chown set-id files into place or bypass permissions (tar -x as root: --no-same-owner)"},
	{name: "/run", script: `test -d /run && echo run-dir`},
	{name: "/sys/fs/cgroup", script: `test -r /sys/fs/cgroup && echo readable || echo absent`,
		inside: "absent", why: "it lists every service and container of the machine; a JVM then sees no container limit, as on a machine without one"},
	{name: "/proc/sys", script: `cat /proc/sys/kernel/pid_max >/dev/null 2>&1 && echo readable || echo absent`,
		inside: "absent", why: "the sandbox's /proc holds the command's own processes and a few global files; the kernel's tunables (/proc/sys) are the host's and some are writable by root"},
	{name: "installed packages (dpkg's database)", needs: []string{"dpkg-query"}, script: `dpkg-query -W -f='${Package} ${Status}\n' dpkg coreutils 2>&1; dpkg-query -S /bin/sh 2>&1 | head -1`},
	{name: "CPUs", script: `nproc; grep -c ^processor /proc/cpuinfo`},
	{name: "CPU topology (glibc's configured CPUs, lscpu, runtimes)", script: `cat /sys/devices/system/cpu/online /sys/devices/system/cpu/possible /sys/devices/system/cpu/present; getconf _NPROCESSORS_CONF`},
	{name: "uptime, load and kernel version (uptime, top, w)", script: `wc -w < /proc/uptime; wc -w < /proc/loadavg; cut -d' ' -f1-3 /proc/version; uptime | grep -o 'load average'`},
	{name: "hostname", script: `hostname; uname -sr`},
}

// TestFidelityProbeTable runs every row outside, then inside, and compares.
func TestFidelityProbeTable(t *testing.T) {
	sb, ws := newTestSandbox(t, func(p *Policy) { p.CaptureChanges = true })
	home, _ := os.UserHomeDir()
	for _, row := range fidelityRows {
		t.Run(row.name, func(t *testing.T) {
			for _, n := range row.needs {
				if _, err := exec.LookPath(n); err != nil {
					t.Skipf("%s is not installed: would compare %q inside and outside", n, row.script)
				}
			}
			if row.root && os.Geteuid() != 0 {
				t.Skipf("not root: %q differs only for root", row.name)
			}
			// The same environment both sides: what the sandbox passes
			// (PATH of the system, the locale, HOME), and a TMPDIR of
			// the run's own.
			env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + home}
			outDir := t.TempDir()
			freeWS := t.TempDir()
			cmd := exec.Command("/bin/bash", "-c", row.script)
			cmd.Dir = freeWS
			cmd.Env = append(env, "TMPDIR="+outDir)
			// Its own process group, as the sandbox's command has: a
			// probe that signals its group must not reach the test.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var fo bytes.Buffer
			cmd.Stdout, cmd.Stderr = &fo, &fo
			cmd.Run()
			free := normalizeProbe(fo.String(), freeWS, outDir)

			var io bytes.Buffer
			st, err := sb.Run(t.Context(), &Command{Path: "/bin/bash", Args: []string{"bash", "-c", row.script + `; echo "TMPDIR=$TMPDIR"`},
				Env: env, Stdout: &io, Stderr: &io})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			text, tmp := splitTMPDIR(io.String())
			in := normalizeProbe(text, ws, tmp)
			switch {
			case row.inside == "" && in != free:
				t.Errorf("differs (exit %d):\noutside: %q\ninside:  %q", st.Code, free, in)
			case row.inside != "" && in != row.inside:
				t.Errorf("inside: %q, want the kept difference %q (outside: %q)", in, row.inside, free)
			case row.inside != "" && free == row.inside && !row.hostMay:
				t.Errorf("outside also %q: the difference listed (%s) is not one here", free, row.why)
			}
			if strings.TrimSpace(free) == "" {
				t.Errorf("the probe printed nothing outside: it compares nothing")
			}
		})
	}
}

// splitTMPDIR takes the TMPDIR line the confined run ends with.
func splitTMPDIR(s string) (rest, tmp string) {
	i := strings.LastIndex(s, "TMPDIR=")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i+len("TMPDIR="):])
}

var ptyNumber = regexp.MustCompile(`/dev/pts/[0-9]+`)

// normalizeProbe replaces what is the run's own (its workspace, its
// TMPDIR) with names, and trims.
func normalizeProbe(s, ws, tmp string) string {
	for _, p := range []struct{ path, name string }{{ws, "<ws>"}, {tmp, "<tmp>"}} {
		if p.path == "" {
			continue
		}
		if real, err := filepath.EvalSymlinks(p.path); err == nil {
			s = strings.ReplaceAll(s, real, p.name)
		}
		s = strings.ReplaceAll(s, p.path, p.name)
	}
	return strings.TrimSpace(ptyNumber.ReplaceAllString(s, "/dev/pts/N"))
}
