package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The escape suite (issue #3, "Tests"): every attack runs through
// `lite-agent sandbox run` and through the bash tool of `lite-agent run`,
// and must be blocked there; where it means something, the same attack
// also runs unconfined and must succeed, so that the test proves it would
// notice. Functionality scenarios check that confinement leaves normal work
// alone. TestEscapeUnprivileged runs a representative subset as nobody.
//
// Every attack is harmless if the sandbox fails: it writes only files the
// test made, opens system files for writing but writes nothing, signals and
// traces only processes the test started, and sends packets only to the
// test's own listeners on loopback or in a network namespace it made.

// escapeScenarios is the suite. Placeholders: {{WS}} the workspace (also
// the working directory), {{HOME}} the fake home, {{KEY}} the fake SSH key
// in it, {{OUT}} a directory of the test's outside the workspace, {{ESC}}
// the C attack program, {{NET}} the Python network client, {{PID}} a
// victim process (after startVictim), {{TOKEN}} what network attempts
// send, {{LOPORT}} the loopback listener, {{NSPRIV}}/{{NSPUB}}(6) and
// {{NSPORT}} the test host in a network namespace, {{UNIXOUT}} and
// {{ABSTRACT}} the test's unix sockets.
func escapeScenarios() []scenario {
	victim := func(t *testing.T, fx *fixture) { fx.startVictim(t) }
	sc := []scenario{
		// --- Files outside the workspace.
		{name: "read-ssh-key", script: `cat {{KEY}} && ok read the fake SSH key`, via: viaBoth, base: baseAny, unpriv: true},
		{name: "list-home", script: `ls -la {{HOME}}/.ssh && ok listed the home directory`, via: viaBoth, base: baseAny},
		{name: "relative-traversal", script: `cat ../home/.ssh/id_rsa && ok read the key through ..`, via: viaBoth, base: baseAny, unpriv: true},
		{name: "etc-shadow", script: `cat /etc/shadow > /dev/null && ok read /etc/shadow`, via: viaBoth, base: baseRoot, unpriv: true},
		{name: "system-files-open-for-write", script: `python3 - <<'EOF'
import os
for p in ["/etc/passwd", "/etc/hosts", "/usr/bin/env", "/proc/sys/kernel/hostname"]:
    try:
        # O_WRONLY without O_CREAT or O_TRUNC: opens, writes nothing.
        os.close(os.open(p, os.O_WRONLY | os.O_APPEND))
        print("SUCC" + "EEDED: opened", p, "for writing")
    except OSError as e:
        print("blocked:", p, e)
EOF`, via: viaBoth, base: baseRoot},
		{name: "write-outside", script: `echo pwned > {{OUT}}/victim.txt && ok overwrote a file outside
echo new > {{OUT}}/created.txt && ok created a file outside
echo '# evil' >> {{HOME}}/.bashrc && ok appended to .bashrc
mkdir {{OUT}}/dir && ok made a directory outside
echo moved > moved.txt && mv moved.txt {{OUT}}/ && ok moved a file out
rm {{OUT}}/secret.txt && ok deleted a file outside`,
			via: viaBoth, base: baseAny, escaped: outsideChanged, unpriv: true},
		{name: "symlink-planted", script: `cat evil-link && ok read the key through a symlink in the workspace`, via: viaBoth, base: baseAny, unpriv: true},
		{name: "symlink-made", script: `ln -s {{KEY}} my-link && cat my-link && ok read the key through a new symlink`, via: viaBoth, base: baseAny},
		{name: "symlink-to-dir", script: `cat home-link/.ssh/id_rsa && ok read the key through a directory symlink`, via: viaBoth, base: baseAny},
		{name: "symlink-write", script: `echo pwned > victim-link && ok wrote through a symlink`, via: viaBoth, base: baseAny, escaped: outsideChanged},
		{name: "hardlink", script: `ln {{KEY}} hard-key && cat hard-key && ok read the key through a hardlink
ln {{OUT}}/victim.txt hard-victim && echo pwned >> hard-victim && ok wrote through a hardlink`,
			via: viaBoth, base: baseAny, escaped: outsideChanged, unpriv: true},
		{name: "rename-into-workspace", script: `mv {{KEY}} stolen-key && ok moved the key into the workspace`, via: viaBoth, base: baseAny, escaped: outsideChanged},
		{name: "proc-self-root", script: `cat /proc/self/root{{KEY}} && ok read the key through /proc/self/root`, via: viaBoth, base: baseAny, unpriv: true},
		{name: "proc-self-cwd-dotdot", script: `cat /proc/self/cwd/../home/.ssh/id_rsa && ok read the key through /proc/self/cwd/..`, via: viaBoth, base: baseAny},

		// --- Privilege planting: a set-id binary or a device node left in
		// the workspace for whoever runs it next (root's cron, the user).
		// Unconfined these work on the test's own files, as root and as
		// nobody (device nodes only as root); confined every way is
		// refused, and a plain chmod +x keeps working.
		{name: "setid-planting", script: setidScript, via: viaBoth, base: baseAny, unpriv: true, escaped: setidPlanted,
			check: func(t *testing.T, fx *fixture, r *result) {
				if !strings.Contains(r.out, "plain chmod works") {
					t.Errorf("%s: a plain chmod +x did not work:\n%s", r.mode, r)
				}
			}},

		// --- Other processes: a sleep the test started.
		{name: "proc-pid-cwd", setup: victim, script: `cat /proc/{{PID}}/cwd/secret.txt && ok read through /proc/PID/cwd`, via: viaBoth, base: baseAny, unpriv: true},
		{name: "proc-pid-root", setup: victim, script: `cat /proc/{{PID}}/root{{KEY}} && ok read through /proc/PID/root`, via: viaBoth, base: baseAny},
		{name: "proc-pid-environ", setup: victim, script: `tr '\0' '\n' < /proc/{{PID}}/environ && ok read the environment of a process outside`, via: viaBoth, base: baseAny, unpriv: true},
		// The sandbox's own /proc keeps processes under /proc/pid.
		{name: "proc-pid-dir-environ", setup: victim, script: `tr '\0' '\n' < /proc/pid/{{PID}}/environ || tr '\0' '\n' < /proc/{{PID}}/environ && ok read the environment of a process outside`, via: viaBoth, base: baseAny, unpriv: true},
		{name: "proc-pid-fd", setup: victim, script: `cat /proc/{{PID}}/fd/0 && ok read a file a process outside has open`, via: viaBoth, base: baseAny},
		{name: "pidfd-getfd", setup: victim, script: `{{ESC}} pidfd_getfd {{PID}} 0`, needs: needEscapeTool, via: viaBoth, base: baseAny},
		{name: "process-vm-readv", setup: victim, script: `{{ESC}} process_vm_readv {{PID}}`, needs: needEscapeTool, via: viaBoth, base: baseAny},
		{name: "ptrace", setup: victim, script: `{{ESC}} ptrace {{PID}}`, needs: needEscapeTool, via: viaBoth, base: baseAny, unpriv: true},
		{name: "kill", setup: victim, script: `kill -TERM {{PID}} && ok signalled a process outside`, via: viaBoth, base: baseAny, unpriv: true,
			escaped: func(fx *fixture) string {
				// No sleep: a SIGTERM that got through is pending or
				// has killed the victim by the time the run has ended.
				if fx.victim.terminated() {
					return "the victim process outside the sandbox was killed"
				}
				return ""
			}},

		// --- Namespaces, mounts and kernel interfaces seccomp must close.
		{name: "mount", script: `mkdir -p mnt && {{ESC}} mount {{WS}}/mnt`, baseScript: `mkdir -p mnt && unshare -m --propagation private {{ESC}} mount {{WS}}/mnt`, needs: needEscapeTool, via: viaBoth, base: baseRoot},
		{name: "unshare-user", script: `{{ESC}} unshare-user`, needs: needEscapeTool, via: viaBoth, base: baseAny, unpriv: true},
		{name: "unshare-mount", script: `{{ESC}} unshare-mount`, needs: needEscapeTool, via: viaBoth, base: baseRoot},
		{name: "unshare-net", script: `{{ESC}} unshare-net`, needs: needEscapeTool, via: viaBoth, base: baseRoot},
		{name: "unshare-command", script: `unshare -Ur true && ok unshare -Ur`, via: viaBoth, base: baseAny},
		{name: "clone-newuser", script: `{{ESC}} clone-newuser`, needs: needEscapeTool, via: viaBoth, base: baseAny},
		{name: "clone3-newuser", script: `{{ESC}} clone3-newuser`, needs: needEscapeTool, via: viaBoth, base: baseAny},
		{name: "chroot", script: `{{ESC}} chroot`, needs: needEscapeTool, via: viaBoth, base: baseRoot},
		{name: "setns", script: `{{ESC}} setns`, needs: needEscapeTool, via: viaBoth, base: baseRoot},
		{name: "io-uring", script: `{{ESC}} io_uring`, needs: needEscapeTool, via: viaBoth, base: baseAny, unpriv: true},
		{name: "bpf", script: `{{ESC}} bpf`, needs: needEscapeTool, via: viaBoth, base: baseRoot},
		{name: "perf-event-open", script: `{{ESC}} perf_event_open`, needs: needEscapeTool, via: viaBoth, base: baseAny},
		{name: "add-key", script: `{{ESC}} add_key`, needs: needEscapeTool, via: viaBoth, base: baseAny, unpriv: true},
		{name: "keyctl", script: `{{ESC}} keyctl`, needs: needEscapeTool, via: viaBoth, base: baseAny},
		{name: "userfaultfd", script: `{{ESC}} userfaultfd`, needs: needEscapeTool, via: viaBoth, base: baseAny, unpriv: true},
		{name: "af-packet", script: `{{ESC}} af_packet`, needs: needEscapeTool, via: viaBoth, base: baseRoot},
		{name: "raw-socket", script: `{{ESC}} raw`, needs: needEscapeTool, via: viaBoth, base: baseRoot},
		{name: "netlink-socket", script: `{{ESC}} netlink`, needs: needEscapeTool, via: viaBoth, base: baseAny},
		{name: "i386-syscall-table", script: `{{ESC}} i386`, needs: needEscapeTool, via: viaBoth, base: baseAny, unpriv: true},
		{name: "x32-syscall-table", script: `{{ESC}} x32`, needs: needEscapeTool, via: viaBoth, base: baseOptional},
		// The sandbox-run and unconfined runs get a pty as stdin (made the
		// controlling terminal if the kernel lets them); the bash tool's
		// stdin is /dev/null, so there the program opens a pty itself.
		{name: "tiocsti", script: `{{ESC}} tiocsti`, pty: true, needs: needEscapeTool, via: viaBoth, base: baseAny, unpriv: true},

		// --- Unix sockets the test listens on.
		{name: "unix-socket-outside", script: `{{NET}} unix {{UNIXOUT}} 0 {{TOKEN}}`, via: viaBoth, base: baseAny, escaped: sawOn("unix"), unpriv: true},
		{name: "abstract-unix-socket", script: `{{NET}} abstract {{ABSTRACT}} 0 {{TOKEN}}`, via: viaBoth, base: baseAny, escaped: sawOn("abstract"), unpriv: true},
		{name: "unix-socket-in-workspace", works: true, want: []string{successMarker},
			setup: func(t *testing.T, fx *fixture) {
				l := listenTokens(t, "unix", filepath.Join(fx.ws, "in.sock"))
				fx.vars["UNIXIN"] = l.addr
			},
			script: `{{NET}} unix {{UNIXIN}} 0 {{TOKEN}}`, via: viaBoth},

		// --- Secrets in the environment (the parent's has five).
		{name: "env-secrets", script: `env
for f in /proc/$PPID/environ /proc/1/environ; do tr '\0' '\n' < $f; done
env | grep -E '^(FOO_API_KEY|GITHUB_TOKEN|AWS_SECRET_ACCESS_KEY|DB_PASSWORD|ANTHROPIC_API_KEY)=' && ok secrets are in the environment`,
			via: viaBoth, base: baseAny, unpriv: true},
		{name: "env-secret-by-name", flags: []string{"--env", "FOO_API_KEY", "--env", "GITHUB_TOKEN"},
			script: `env | grep -E '^(FOO_API_KEY|GITHUB_TOKEN)=' && ok a secret-looking name passed without a value`, via: viaSandboxRun, base: baseAny,
			check: func(t *testing.T, fx *fixture, r *result) {
				if r.mode.viaCLI() && !strings.Contains(r.stderr, "--env FOO_API_KEY looks like a secret") {
					t.Errorf("no warning that --env FOO_API_KEY was not passed: stderr %q", r.stderr)
				}
			}},

		// --- Resources.
		{name: "fork-bomb", via: viaBoth, unpriv: true, flags: []string{"--max-procs", "32", "--timeout", "3s"}, timeoutMS: 3000,
			// Bounded even unconfined: a binary tree of {{DEPTH}} levels
			// whose every node sleeps; 2^(DEPTH+1) processes at most.
			script: `b() { if [ $1 -lt {{DEPTH}} ]; then b $(($1+1)) & b $(($1+1)) & fi; sleep 3.{{NUM}}; wait; }; b 0`,
			setup: func(t *testing.T, fx *fixture) {
				// The bash tool has the default process limit (512):
				// its bomb must outgrow that.
				fx.vars["DEPTH"] = map[mode]string{sandboxRun: "7", bashTool: "9"}[fx.mode]
				fx.sampler = startSampler(t, "3."+fx.vars["NUM"], fx.s.bin)
			},
			escaped: func(fx *fixture) string {
				most := fx.sampler.finish()
				// No sleep: what the sandbox killed as the run ended has
				// SIGKILL pending or is gone (ending).
				left := len(survivors("3." + fx.vars["NUM"]))
				switch {
				case left > 0:
					return fmt.Sprintf("%d processes of the bomb outlived the sandbox", left)
				case fx.mode.viaCLI() && most > 32+4:
					return fmt.Sprintf("%d processes at once with --max-procs 32", most)
				case fx.mode == bashTool && most > 512+16:
					return fmt.Sprintf("%d processes at once under the default limit of 512", most)
				}
				return ""
			},
			check: func(t *testing.T, fx *fixture, r *result) {
				if r.dur > 30*time.Second {
					t.Errorf("%s: the fork bomb ran for %v", r.mode, r.dur)
				}
				if fx.sampler.max < 2 {
					t.Errorf("%s: the sampler never saw the bomb, so its bound proves nothing", r.mode)
				}
				t.Logf("%s: at most %d bomb processes at once; exit %d after %v", r.mode, fx.sampler.max, r.code, r.dur.Round(time.Millisecond))
			}},
		{name: "memory-bomb", via: viaBoth, flags: []string{"--max-memory", "256M", "--timeout", "60s"}, timeoutMS: 60000,
			// Bounded even unconfined: 2 GiB (sandbox run, limit 256M) or
			// 5 GiB (bash tool, default limit 4 GiB), touched page by page.
			script: `python3 -c '
a = []
for i in range({{CHUNKS}}):
    a.append(b"x" * (16 << 20))
print("SUCC" + "EEDED: allocated", len(a) * 16, "MiB")'`,
			setup: func(t *testing.T, fx *fixture) {
				fx.vars["CHUNKS"] = map[mode]string{sandboxRun: "128", bashTool: "320"}[fx.mode]
			},
			check: func(t *testing.T, fx *fixture, r *result) {
				if r.code == 0 {
					t.Errorf("%s: the memory bomb exited 0", r.mode)
				}
			}},
		{name: "file-size-bomb", via: viaSandboxRun, flags: []string{"--max-file-size", "1M"}, base: baseAny,
			script: `head -c 10M /dev/zero > big; ls -l big`,
			escaped: func(fx *fixture) string {
				if n := fileSize(filepath.Join(fx.ws, "big")); n > 1<<20 {
					return fmt.Sprintf("wrote a %d-byte file with --max-file-size 1M", n)
				}
				return ""
			}},
		{name: "daemon", via: viaBoth, base: baseAny, unpriv: true,
			// setsid, double fork, ignore the usual signals, and write a
			// heartbeat every 100 ms into a file the test owns.
			script: `(setsid bash -c 'trap "" HUP TERM INT; while :; do echo beat >> {{WS}}/heartbeat; sleep 0.1; done' </dev/null >/dev/null 2>&1 &)
for i in $(seq 100); do [ -s {{WS}}/heartbeat ] && break; sleep 0.05; done
echo leaving`,
			escaped: func(fx *fixture) string {
				// No sleep: the daemon (its command line names the
				// heartbeat file) alive, and not killed, after the run.
				if left := survivors(filepath.Join(fx.ws, "heartbeat")); len(left) > 0 {
					return fmt.Sprintf("the daemon outlived the run (pids %v, still writing its heartbeat)", left)
				}
				return ""
			},
			check: func(t *testing.T, fx *fixture, r *result) {
				if fileSize(filepath.Join(fx.ws, "heartbeat")) <= 0 {
					t.Errorf("%s: the daemon never wrote its heartbeat, so its end proves nothing:\n%s", r.mode, r)
				}
			}},
		{name: "timeout", works: true, wantCode: 124, via: viaBoth, unpriv: true, flags: []string{"--timeout", "500ms"}, timeoutMS: 500,
			script: `sleep 3{{NUM}} & sleep 3{{NUM}}; ok not stopped`,
			check: func(t *testing.T, fx *fixture, r *result) {
				if r.dur > 10*time.Second {
					t.Errorf("%s: a 500ms timeout took %v", r.mode, r.dur)
				}
				if left := len(processesMatching(func(c, _ string) bool { return strings.Contains(c, "3"+fx.vars["NUM"]) })); left > 0 {
					t.Errorf("%s: %d sleeps outlived the timeout", r.mode, left)
				}
			}},
		{name: "output-limit", works: true, via: viaSandboxRun, flags: []string{"--max-output", "1K"},
			script: `head -c 100000 /dev/zero | tr '\0' x`,
			check: func(t *testing.T, fx *fixture, r *result) {
				if n := strings.Count(r.stdout, "x"); n > 1024 || n == 0 {
					t.Errorf("with --max-output 1K, %d bytes of output came through", n)
				}
				if !strings.Contains(r.stderr, "dropped") {
					t.Errorf("the truncation is not reported on stderr: %q", r.stderr)
				}
			}},

		// --- Functionality.
		{name: "shell-pipeline", works: true, via: viaBoth, unpriv: true,
			script: `echo hello world | tr a-z A-Z | sed s/WORLD/SANDBOX/; echo $(( 6 * 7 )); for i in 1 2 3; do printf $i; done; echo; cat <<EOF
here-doc
EOF`,
			want: []string{"HELLO SANDBOX", "42", "123", "here-doc"}},
		{name: "python3", works: true, via: viaBoth, unpriv: true,
			script: `python3 -c 'import json, tempfile; print(json.dumps({"n": 6 * 7})); tempfile.NamedTemporaryFile(); print("tmp ok")'`,
			want:   []string{`{"n": 42}`, "tmp ok"}},
		{name: "git", works: true, via: viaSandboxRun, unpriv: true,
			flags:  []string{"--git", "writable", "--env", "GIT_AUTHOR_NAME=Sandbox Test", "--env", "GIT_AUTHOR_EMAIL=test@example.com", "--env", "GIT_COMMITTER_NAME=Sandbox Test", "--env", "GIT_COMMITTER_EMAIL=test@example.com"},
			script: `git init -q repo && cd repo && echo a > a.txt && git add a.txt && git commit -q -m "first commit" && git log --format='%s by %an'`,
			want:   []string{"first commit by Sandbox Test"}},
		// Committing needs a writable .git, which the agent's commands
		// get only when the user says so (TestAgentCannotPlantGitHooks
		// shows what the default refuses).
		{name: "git-in-bash-tool", works: true, via: viaBashTool, runFlags: []string{"--git", "writable"},
			script: `export GIT_AUTHOR_NAME="Sandbox Test" GIT_AUTHOR_EMAIL=test@example.com GIT_COMMITTER_NAME="Sandbox Test" GIT_COMMITTER_EMAIL=test@example.com
git init -q repo && cd repo && echo a > a.txt && git add a.txt && git commit -q -m "first commit" && git log --format='%s by %an'`,
			want: []string{"first commit by Sandbox Test"}},
		{name: "cc", works: true, via: viaBoth, unpriv: true,
			script: `printf '#include <stdio.h>\nint main(void) { puts("hello from cc"); return 0; }\n' > hello.c && cc -o hello hello.c && ./hello`,
			want:   []string{"hello from cc"}},
		{name: "exit-code", works: true, via: viaBoth, unpriv: true, script: `exit 7`, wantCode: 7},
		{name: "killed-by-signal", works: true, via: viaBoth, script: `kill -KILL $$`, wantCode: 128 + 9},
		{name: "stdin", works: true, via: viaSandboxRun, unpriv: true, stdin: "line one\nline two\n",
			script: `read first; echo "got $first"; tr a-z A-Z`, want: []string{"got line one", "LINE TWO"}},
		{name: "stdout-and-stderr", works: true, via: viaSandboxRun, script: `echo to-stdout; echo to-stderr >&2`,
			check: func(t *testing.T, fx *fixture, r *result) {
				if !strings.Contains(r.stdout, "to-stdout") || strings.Contains(r.stdout, "to-stderr") || !strings.Contains(r.stderr, "to-stderr") {
					t.Errorf("stdout %q, stderr %q: the streams are not passed through apart", r.stdout, r.stderr)
				}
			}},
		{name: "workspace-write", works: true, via: viaBoth, unpriv: true,
			script: `mkdir -p d/e && echo data > d/e/f && cp d/e/f g && mv g h && rm d/e/f && ln -s h link && ln h hard && cat link hard`,
			want:   []string{"data"},
			check: func(t *testing.T, fx *fixture, r *result) {
				if b, err := os.ReadFile(filepath.Join(fx.ws, "h")); err != nil || string(b) != "data\n" {
					t.Errorf("%s: the file written in the workspace: %q, %v", r.mode, b, err)
				}
			}},
		{name: "tmpdir", works: true, via: viaBoth, script: `f=$(mktemp) && echo in-tmp > "$f" && cat "$f" && rm "$f"`, want: []string{"in-tmp"}},
		{name: "env-allowlist-and-explicit", works: true, via: viaSandboxRun,
			flags:  []string{"--env", "GREETING=hi", "--env", "FOO_API_KEY=explicitly-given"},
			script: `echo "lang=$LANG home=$HOME greeting=$GREETING key=$FOO_API_KEY"`,
			want:   []string{"lang=C.UTF-8", "greeting=hi", "key=explicitly-given"}},
		{name: "allow-read", works: true, via: viaSandboxRun,
			setup: func(t *testing.T, fx *fixture) {
				fx.vars["EXTRA"] = filepath.Join(fx.root, "extra")
				os.Mkdir(fx.vars["EXTRA"], 0o755)
				writeMode(t, filepath.Join(fx.vars["EXTRA"], "notes.txt"), "readable extra\n", 0o644)
			},
			flags: []string{"--allow-read", "{{EXTRA}}"}, script: `cat {{EXTRA}}/notes.txt`, want: []string{"readable extra"}},
		{name: "allow-read-is-read-only", via: viaSandboxRun, base: baseAny,
			setup: func(t *testing.T, fx *fixture) {
				fx.vars["EXTRA"] = filepath.Join(fx.root, "extra")
				os.Mkdir(fx.vars["EXTRA"], 0o755)
			},
			flags: []string{"--allow-read", "{{EXTRA}}"}, script: `echo x > {{EXTRA}}/new.txt && ok wrote into an --allow-read directory`,
			escaped: func(fx *fixture) string {
				if fileSize(filepath.Join(fx.vars["EXTRA"], "new.txt")) >= 0 {
					return "a file was created in an --allow-read directory"
				}
				return ""
			}},
		{name: "allow-write", works: true, via: viaSandboxRun,
			setup: func(t *testing.T, fx *fixture) {
				fx.vars["EXTRA"] = filepath.Join(fx.root, "extra")
				os.Mkdir(fx.vars["EXTRA"], 0o755)
			},
			flags: []string{"--allow-write", "{{EXTRA}}"}, script: `echo written > {{EXTRA}}/new.txt && cat {{EXTRA}}/new.txt`, want: []string{"written"}},
		{name: "best-effort", works: true, via: viaSandboxRun, flags: []string{"--best-effort"}, script: `echo still confined`, want: []string{"still confined"}},
	}
	return append(sc, networkScenarios()...)
}

// networkScenarios: each network mode against the test's loopback
// listener and its host in a network namespace (a private and a
// public-range address).
func networkScenarios() []scenario {
	lo, ns := sawOn("loopback"), sawOn("netns")
	loopback, private := []string{"--network", "loopback"}, []string{"--network", "private"}
	var sc []scenario
	// none (the default): IP sockets exist (a command's own loopback
	// servers work: sandbox.TestOwnListenersEveryMode), but nothing they
	// connect or send to is reached but the sandbox's own listeners —
	// not the user's loopback services, by a C caller's sendmmsg(2)
	// either, through both paths.
	sc = append(sc,
		scenario{name: "net-none/raw-sendmmsg-loopback", script: `{{ESC}} sendmmsg 127.0.0.1 {{LOPORT}} {{TOKEN}}`, needs: needEscapeTool, via: viaBoth, base: baseAny, escaped: lo, unpriv: true},
		scenario{name: "net-none/loopback-tcp", script: `{{NET}} tcp 127.0.0.1 {{LOPORT}} {{TOKEN}}`, via: viaBoth, base: baseAny, escaped: lo, unpriv: true},
		scenario{name: "net-none/loopback-udp", script: `{{NET}} udp 127.0.0.1 {{LOPORT}} {{TOKEN}}`, via: viaBoth, base: baseAny, escaped: lo},
		scenario{name: "net-none/loopback6-tcp", script: `{{NET}} tcp ::1 {{LOPORT}} {{TOKEN}}`, needs: needLoopback6, via: viaBoth, base: baseAny, escaped: lo},
		scenario{name: "net-none/netns-tcp", script: `{{NET}} tcp {{NSPRIV}} {{NSPORT}} {{TOKEN}}`, needs: needNetns, via: viaBoth, base: baseAny, escaped: ns},
		scenario{name: "net-none/netns-udp", script: `{{NET}} udp {{NSPRIV}} {{NSPORT}} {{TOKEN}}`, needs: needNetns, via: viaBoth, base: baseAny, escaped: ns},
	)
	// loopback: the loopback listener works, the namespace host does not,
	// by any protocol or system call.
	sc = append(sc,
		scenario{name: "net-loopback/loopback-tcp-works", flags: loopback, script: `{{NET}} tcp 127.0.0.1 {{LOPORT}} {{TOKEN}}`, works: true, want: []string{successMarker}, check: received(lo), via: viaSandboxRun, unpriv: true},
		scenario{name: "net-loopback/loopback-udp-works", flags: loopback, script: `{{NET}} udp 127.0.0.1 {{LOPORT}} {{TOKEN}}`, works: true, want: []string{successMarker}, check: received(lo), via: viaSandboxRun},
		scenario{name: "net-loopback/loopback6-tcp-works", flags: loopback, script: `{{NET}} tcp ::1 {{LOPORT}} {{TOKEN}}`, works: true, want: []string{successMarker}, check: received(lo), needs: needLoopback6, via: viaSandboxRun},
	)
	for _, a := range netAttacks("{{NSPRIV}}", "{{NSPRIV6}}") {
		a.name = "net-loopback/netns-" + a.name
		a.flags = loopback
		sc = append(sc, a)
	}
	// private: the namespace host's private address works, its public-range
	// address does not.
	sc = append(sc,
		scenario{name: "net-private/netns-tcp-works", flags: private, script: `{{NET}} tcp {{NSPRIV}} {{NSPORT}} {{TOKEN}}`, works: true, want: []string{successMarker}, check: received(ns), needs: needNetns, via: viaSandboxRun},
		scenario{name: "net-private/netns-udp-works", flags: private, script: `{{NET}} udp {{NSPRIV}} {{NSPORT}} {{TOKEN}}`, works: true, want: []string{successMarker}, check: received(ns), needs: needNetns, via: viaSandboxRun},
		scenario{name: "net-private/netns6-tcp-works", flags: private, script: `{{NET}} tcp {{NSPRIV6}} {{NSPORT}} {{TOKEN}}`, works: true, want: []string{successMarker}, check: received(ns), needs: needIPv6Netns, via: viaSandboxRun},
		scenario{name: "net-private/loopback-tcp-works", flags: private, script: `{{NET}} tcp 127.0.0.1 {{LOPORT}} {{TOKEN}}`, works: true, want: []string{successMarker}, check: received(lo), via: viaSandboxRun},
	)
	for _, a := range netAttacks("{{NSPUB}}", "{{NSPUB6}}") {
		a.name = "net-private/public-" + a.name
		a.flags = private
		sc = append(sc, a)
	}
	// unrestricted: anything by TCP/UDP, but still no packet, raw or
	// netlink sockets.
	unrestricted := []string{"--network", "unrestricted"}
	sc = append(sc,
		scenario{name: "net-unrestricted/public-tcp-works", flags: unrestricted, script: `{{NET}} tcp {{NSPUB}} {{NSPORT}} {{TOKEN}}`, works: true, want: []string{successMarker}, check: received(ns), needs: needNetns, via: viaSandboxRun},
		scenario{name: "net-unrestricted/preset-permissive-works", flags: []string{"--preset", "permissive"}, script: `{{NET}} tcp {{NSPUB}} {{NSPORT}} {{TOKEN}}`, works: true, want: []string{successMarker}, check: received(ns), needs: needNetns, via: viaSandboxRun},
		scenario{name: "net-unrestricted/af-packet", flags: unrestricted, script: `{{ESC}} af_packet`, needs: needEscapeTool, via: viaSandboxRun, base: baseRoot},
		scenario{name: "net-unrestricted/raw-socket", flags: unrestricted, script: `{{ESC}} raw`, needs: needEscapeTool, via: viaSandboxRun, base: baseRoot},
		scenario{name: "net-unrestricted/netlink-socket", flags: unrestricted, script: `{{ESC}} netlink`, needs: needEscapeTool, via: viaSandboxRun, base: baseAny},
		scenario{name: "net-standard-preset/loopback-tcp", flags: []string{"--preset", "standard"}, script: `{{NET}} tcp 127.0.0.1 {{LOPORT}} {{TOKEN}}`, via: viaSandboxRun, base: baseAny, escaped: lo},
	)
	return sc
}

// netAttacks are the ways to reach host (and host6) that a mode must
// refuse: TCP, UDP by sendto, sendmsg, connect+send and sendmmsg, MPTCP,
// TCP Fast Open (sendto connects), and IPv4-mapped IPv6.
func netAttacks(host, host6 string) []scenario {
	ns := sawOn("netns")
	a := func(name, script string, n needs) scenario {
		return scenario{name: name, script: script, needs: needNetns | n, via: viaSandboxRun, base: baseAny, escaped: ns}
	}
	return []scenario{
		a("tcp", `{{NET}} tcp `+host+` {{NSPORT}} {{TOKEN}}`, 0),
		a("udp", `{{NET}} udp `+host+` {{NSPORT}} {{TOKEN}}`, 0),
		a("udp-sendmsg", `{{NET}} udp-sendmsg `+host+` {{NSPORT}} {{TOKEN}}`, 0),
		a("udp-connect", `{{NET}} udp-connect `+host+` {{NSPORT}} {{TOKEN}}`, 0),
		a("udp-sendmmsg", `{{ESC}} sendmmsg `+host+` {{NSPORT}} {{TOKEN}}`, needEscapeTool),
		a("mptcp", `{{NET}} mptcp `+host+` {{NSPORT}} {{TOKEN}}`, 0),
		a("tcp-fastopen", `{{NET}} fastopen `+host+` {{NSPORT}} {{TOKEN}}`, 0),
		a("ipv4-mapped-ipv6", `{{NET}} tcp ::ffff:`+host+` {{NSPORT}} {{TOKEN}}`, 0),
		a("ipv6-tcp", `{{NET}} tcp `+host6+` {{NSPORT}} {{TOKEN}}`, needIPv6Netns),
		a("ipv6-udp", `{{NET}} udp `+host6+` {{NSPORT}} {{TOKEN}}`, needIPv6Netns),
	}
}

// sawOn returns evidence that one of the test's listeners received this
// run's token: the loopback listener, the namespace host, or the unix
// sockets.
func sawOn(where string) func(fx *fixture) string {
	return func(fx *fixture) string {
		// A sentinel after the attack on each path, not a sleep.
		if err := flush(where, fx); err != nil {
			return "cannot tell: " + err.Error()
		}
		var got string
		switch where {
		case "loopback":
			got = fx.s.lo.saw(fx.token)
		case "netns":
			got = fx.s.net.saw(fx.token)
		case "unix":
			got = fx.s.unixOut.saw(fx.token)
		case "abstract":
			got = fx.s.abstract.saw(fx.token)
		}
		if got != "" {
			return fmt.Sprintf("the %s listener received %q", where, got)
		}
		return ""
	}
}

// received checks that a connection that should work did reach the
// listener.
func received(evidence func(fx *fixture) string) func(t *testing.T, fx *fixture, r *result) {
	return func(t *testing.T, fx *fixture, r *result) {
		if evidence(fx) == "" {
			t.Errorf("%s: the listener never received the token:\n%s", r.mode, r)
		}
	}
}

// outsideChanged reports any change the test can see outside the
// workspace.
func outsideChanged(fx *fixture) string {
	var changes []string
	if b, _ := os.ReadFile(filepath.Join(fx.out, "victim.txt")); string(b) != "original\n" {
		changes = append(changes, fmt.Sprintf("out/victim.txt is now %q", b))
	}
	if b, _ := os.ReadFile(filepath.Join(fx.home, ".bashrc")); string(b) != "# original bashrc\n" {
		changes = append(changes, fmt.Sprintf(".bashrc is now %q", b))
	}
	if _, err := os.Stat(fx.keyFile); err != nil {
		changes = append(changes, "the key was moved away")
	}
	if _, err := os.Stat(filepath.Join(fx.out, "secret.txt")); err != nil {
		changes = append(changes, "out/secret.txt was deleted")
	}
	entries, _ := os.ReadDir(fx.out)
	for _, e := range entries {
		if e.Name() != "victim.txt" && e.Name() != "secret.txt" {
			changes = append(changes, "out/"+e.Name()+" was created")
		}
	}
	return strings.Join(changes, "; ")
}

// setidScript tries each way a file gets a mode: chmod (coreutils),
// fchmod, fchmodat (Python's chmod with dir_fd), open and creat with
// O_CREAT, O_TMPFILE, openat2 through syscall(2), mknod with set-id bits
// or a device type.
const setidScript = `cp /bin/true tool && chmod +x tool && chmod 0755 tool && ./tool && echo plain chmod works
chmod 4755 tool && ok chmod 4755
chmod g+s tool && ok chmod g+s
python3 - <<'EOF'
import ctypes, os, stat
libc = ctypes.CDLL(None, use_errno=True)
def check(r):
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    os.close(r)
class OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]
def openat2(path, mode):
    how = OpenHow(os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode, 0)
    # syscall() reads every argument as a long: the size goes as one (a C int's upper half is undefined)
    check(libc.syscall(ctypes.c_long(437), ctypes.c_long(-100), path.encode(), ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how))))
def fchmod(path, mode):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
open("f", "w").close()
ways = [
    ("fchmod", lambda: fchmod("f", 0o4755)),
    ("fchmodat", lambda: os.chmod("f", 0o2755, dir_fd=os.open(".", os.O_RDONLY))),
    ("open O_CREAT 04755", lambda: os.close(os.open("o", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o4755))),
    ("creat 02755", lambda: check(libc.creat(b"c", 0o2755))),
    ("O_TMPFILE 04755", lambda: os.close(os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755))),
    ("openat2 04755", lambda: openat2("o2", 0o4755)),
    ("mknod S_ISUID", lambda: os.mknod("n", stat.S_IFREG | 0o4755)),
    ("mknod S_IFCHR", lambda: os.mknod("null", stat.S_IFCHR | 0o600, os.makedev(1, 3))),
]
for name, way in ways:
    try:
        way()
        print("SUCC" + "EEDED:", name)
    except OSError as e:
        print("blocked:", name, e)
EOF
ls -l`

// setidPlanted reports the set-id files and device nodes in the workspace.
func setidPlanted(fx *fixture) string {
	var found []string
	filepath.Walk(fx.ws, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeDevice|os.ModeCharDevice) != 0 {
			found = append(found, fmt.Sprintf("%s is %v", filepath.Base(p), fi.Mode()))
		}
		return nil
	})
	return strings.Join(found, "; ")
}

var ranLine = regexp.MustCompile(`(?m)^` + ranMarker + `\b`)

// runScenario runs sc unconfined (when it has a baseline) and through
// each confined path, concurrently, each against a fresh fixture.
func (s *suite) runScenario(t *testing.T, sc scenario) {
	if why := s.missing(sc.needs); why != "" {
		t.Skipf("skipped: %s; this would have checked %q", why, sc.name)
	}
	type job struct {
		fx *fixture
		r  *result
	}
	var modes []mode
	switch {
	case sc.base == baseRoot && (s.unpriv || os.Geteuid() != 0):
		t.Logf("no unconfined baseline: unprivileged, the attack fails anyway (it needs root)")
	case sc.base != noBaseline:
		modes = append(modes, unconfined)
	}
	modes = append(modes, sc.via.modes()...)
	jobs := make([]*job, len(modes))
	for i, m := range modes {
		fx := s.newFixture(t)
		fx.mode = m
		if sc.pty {
			_, fx.stdin = openPTY(t)
		}
		if sc.setup != nil {
			sc.setup(t, fx)
		}
		fx.chown(t)
		jobs[i] = &job{fx: fx}
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.r = s.run(t, j.fx, &sc, modes[i])
		}()
	}
	wg.Wait()
	for _, j := range jobs {
		if j.r.mode == unconfined {
			s.checkBaseline(t, &sc, j.fx, j.r)
			continue
		}
		if s.checkConfined(t, &sc, j.fx, j.r) && sc.check != nil {
			sc.check(t, j.fx, j.r)
		}
	}
}

func (s *suite) checkBaseline(t *testing.T, sc *scenario, fx *fixture, r *result) {
	if sc.works {
		return
	}
	evidence := ""
	if strings.Contains(r.out, successMarker) {
		evidence = "it said so"
	}
	if sc.escaped != nil {
		if e := sc.escaped(fx); e != "" {
			evidence = e
		}
	}
	if sc.check != nil {
		sc.check(t, fx, r)
	}
	switch {
	case evidence != "":
		return
	case sc.base == baseOptional:
		t.Logf("unconfined, the attack does not work on this machine either (the confined runs are still checked):\n%s", r)
	case os.Geteuid() != 0:
		// A distribution may deny an ordinary user what this machine's
		// kernel allows (unprivileged user namespaces, perf events): the
		// root CI run holds the baselines to account.
		t.Logf("unconfined, the attack does not work for this user here either (the confined runs are still checked):\n%s", r)
	default:
		t.Errorf("unconfined, the attack does not work, so the confined runs would prove nothing:\n%s", r)
	}
}

// checkConfined asserts on one confined run; it returns false when the
// command did not run (a refusal), so that no further check applies.
func (s *suite) checkConfined(t *testing.T, sc *scenario, fx *fixture, r *result) bool {
	for _, secret := range fx.secrets {
		if strings.Contains(r.all, secret) {
			t.Errorf("ESCAPE through %s: a secret (%s...) is in the output:\n%s", r.mode, secret[:8], r)
		}
	}
	if r.failedClosed() {
		// Unprivileged, the kernel may give less (no writable cgroup, no
		// user namespaces): refusing with the reason is then correct. As
		// root, on the CI machine, the sandbox must run.
		if (s.unpriv || os.Geteuid() != 0) && r.saysUnsupported() {
			t.Logf("%s failed closed unprivileged, saying what is missing: %s", r.mode, firstLine(strings.TrimSpace(r.stderr+r.out)))
			return false
		}
		t.Errorf("%s: the sandbox did not run the command:\n%s", r.mode, r)
		return false
	}
	if !ranLine.MatchString(r.out) {
		t.Errorf("%s: the command did not run:\n%s", r.mode, r)
		return false
	}
	if sc.works {
		for _, w := range sc.want {
			if !strings.Contains(r.out, w) {
				t.Errorf("%s: the output lacks %q:\n%s", r.mode, w, r)
			}
		}
		if r.code != sc.wantCode {
			t.Errorf("%s: exit %d, want %d:\n%s", r.mode, r.code, sc.wantCode, r)
		}
		return true
	}
	if strings.Contains(r.out, successMarker) {
		t.Errorf("ESCAPE through %s:\n%s", r.mode, r)
	}
	if sc.escaped != nil {
		if e := sc.escaped(fx); e != "" {
			t.Errorf("ESCAPE through %s: %s\n%s", r.mode, e, r)
		}
	}
	return true
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestEscape is the escape suite as the current user (root in CI).
func TestEscape(t *testing.T) {
	s := newSuite(t, false)
	if s.net == nil {
		t.Logf("network namespace cases skipped: %s", s.netErr)
	}
	for _, sc := range escapeScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s.runScenario(t, sc)
		})
	}
}

// TestEscapeUnprivileged runs a representative subset of the suite as
// nobody (uid 65534) with a workspace nobody owns, as real users run it:
// everything must work there too, or fail closed saying what is missing.
func TestEscapeUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: running the suite as uid 65534 needs root to switch users (setpriv); this would have checked that the sandbox confines, or fails closed with a clear message, for an unprivileged user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed: this would have run the escape suite as uid 65534")
	}
	s := newSuite(t, true)

	// What does the sandbox say it can do for nobody here?
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", s.bin, "sandbox", "check", "--json")
	cmd.Dir, cmd.Env = os.TempDir(), []string{"PATH=" + sysPATH}
	out, err := cmd.Output()
	var rep struct {
		Capabilities struct {
			Root bool `json:"root"`
		} `json:"capabilities"`
		Presets []struct {
			Name     string `json:"name"`
			Enforced bool   `json:"enforced"`
			Refused  string `json:"refused"`
		} `json:"presets"`
	}
	if err != nil || json.Unmarshal(out, &rep) != nil || len(rep.Presets) == 0 {
		t.Errorf("sandbox check as nobody: %v\n%s", err, out)
	} else {
		if rep.Capabilities.Root {
			t.Errorf("sandbox check as nobody reports root")
		}
		for _, p := range rep.Presets {
			t.Logf("as nobody, preset %s: enforced=%v %s", p.Name, p.Enforced, p.Refused)
		}
	}

	for _, sc := range escapeScenarios() {
		if !sc.unpriv {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s.runScenario(t, sc)
		})
	}
}

// TestSandboxRunFailsClosed: a policy the sandbox cannot honour (an
// --allow-read path that does not exist) stops it before anything runs,
// with exit 125 and the reason.
func TestSandboxRunFailsClosed(t *testing.T) {
	ws := t.TempDir()
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	marker := filepath.Join(ws, "ran")
	cmd := exec.Command(binary, "sandbox", "run", "--workspace", ws, "--allow-read", missing, "--", "touch", marker)
	out, err := cmd.CombinedOutput()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 125 || !strings.Contains(string(out), missing) {
		t.Errorf("exit %v, output %q; want 125 naming %s", err, out, missing)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the sandbox refused the policy")
	}
	// A usage error is 2, and runs nothing either.
	cmd = exec.Command(binary, "sandbox", "run", "--workspace", ws, "--network", "everywhere", "--", "touch", marker)
	out, err = cmd.CombinedOutput()
	if ee, _ := err.(*exec.ExitError); ee == nil || ee.ExitCode() != 2 {
		t.Errorf("bad --network: exit %v, output %q; want 2", err, out)
	}
}

// TestSandboxCheck: the report is there, human and JSON.
func TestSandboxCheck(t *testing.T) {
	out, err := exec.Command(binary, "sandbox", "check").CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox check: %v\n%s", err, out)
	}
	for _, want := range []string{"Landlock", "seccomp", "user namespaces", "cgroups", "strict", "standard", "permissive"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sandbox check lacks %q:\n%s", want, out)
		}
	}
	t.Logf("sandbox check here:\n%s", out)
	out, err = exec.Command(binary, "sandbox", "check", "--json").Output()
	var rep map[string]any
	if err != nil || json.Unmarshal(out, &rep) != nil || rep["capabilities"] == nil || rep["presets"] == nil {
		t.Errorf("sandbox check --json: %v\n%s", err, out)
	}
}
