package policies

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// How TestBashRunsCodeFrom decides each case.
const (
	// denied: the rules find the marker in what bash will run.
	denied = "deny"
	// unproven: the command asks, marked Unproven with the deny rule —
	// so bypassPermissions denies it (kernel TestBypassDeniesWhatRulesCannotProve).
	unproven = "unproven"
	// notCode: bash does not run the string; the rules need not see it
	// (and do not stand in the way).
	notCode = "not code"
)

// markerEnv makes a directory with a program "marker" on PATH that, when
// run, appends its arguments to the file it returns. Nothing else is
// written outside the directory.
func markerEnv(t *testing.T) (dir, ran string, env []string) {
	dir = t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	ran = filepath.Join(dir, "ran")
	if err := os.WriteFile(filepath.Join(bin, "marker"), []byte("#!/bin/sh\necho \"$@\" >> \"$MARKER_OUT\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "MARKER_OUT=" + ran, "TERM=dumb", "LC_ALL=C"}
	return dir, ran, env
}

// runUnconfined runs cmd with /bin/bash -c in dir, unconfined and
// unchecked, and reports whether marker ran. The wait is bounded: every
// case ends on its own (watch runs under timeout).
func runUnconfined(t *testing.T, cmd string) bool {
	t.Helper()
	dir, ran, env := markerEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/bash", "-c", cmd)
	c.Dir, c.Env = dir, env
	out, _ := c.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%q did not end within 20s; output: %s", cmd, out)
	}
	_, err := os.Stat(ran)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err != nil {
		t.Logf("%q output: %s", cmd, out)
	}
	return err == nil
}

// TestBashRunsCodeFrom is the table over the survey in shellcode.go:
// every construct through which bash (or a program the command starts)
// runs a string as code. Each row first runs the command unconfined with
// /bin/bash and shows that it really runs the denied program marker
// (the attack works unchecked), then asks the rules with a deny rule
// bash(marker:*) — alone, and under allow rules that would otherwise let
// everything through ("allow bash", as in bypassPermissions or a trusting
// user file) — and wants a denial, or, where what runs is beyond the
// parser, an ask marked Unproven (which bypassPermissions turns into a
// denial). Rows marked notCode show the opposite: bash does not run the
// string, and the rules do not stand in the way.
func TestBashRunsCodeFrom(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash: would have shown each construct running the denied program, then the rules denying it")
	}
	have := func(prog string) bool { _, err := exec.LookPath(prog); return err == nil }
	cases := []struct {
		section, cmd, want string
		needs              string // a program the row needs
		root               bool   // the row needs root (su)
	}{
		// Builtins.
		{"eval", `eval marker`, denied, "", false},
		{"eval", `builtin eval marker`, denied, "", false},
		{"eval", `command eval 'marker x'`, denied, "", false},
		{"trap", `trap marker EXIT`, denied, "", false},
		{"trap", `trap 'marker debug' DEBUG; :`, denied, "", false},
		{"trap", `trap -- marker ERR; false`, denied, "", false},
		{"trap", `trap marker RETURN; . /dev/null`, denied, "", false},
		{"trap", `X=marker; trap "$X" EXIT`, unproven, "", false},
		{"functions", `f() { marker; }; f`, denied, "", false},
		{"functions", `ls() { marker; }; ls`, denied, "", false},
		{"functions", `function cd { marker; }; cd /`, denied, "", false},
		{"functions", `command_not_found_handle() { marker; }; no-such-command-here`, denied, "", false},
		{"functions", `f() { marker; }; export -f f; bash -c f`, denied, "", false},
		{"alias", "shopt -s expand_aliases; alias ls=marker\nls", denied, "", false},
		{"alias", "shopt -s expand_aliases; alias e='eval '\ne marker", unproven, "", false},
		{"source", `echo marker > x.sh; source x.sh`, unproven, "", false},
		{"source", `echo marker > x.sh; . ./x.sh`, unproven, "", false},
		{"complete", `compgen -C marker x`, denied, "", false},
		{"complete", `compgen -W '$(marker)' x`, denied, "", false},
		{"complete", `f() { marker; }; compgen -F f x`, denied, "", false},
		{"complete", `X=marker; compgen -C "$X" x`, unproven, "", false},
		{"mapfile", `mapfile -C marker -c 1 a <<< x`, denied, "", false},
		{"mapfile", `readarray -c 1 -C 'marker cb' a <<< x`, denied, "", false},
		{"history", `echo marker > h; set -o history; history -r h; fc -s`, unproven, "", false},
		{"hash", `hash -p "$PWD/bin/marker" ls; ls`, unproven, "", false},
		{"jobs", `jobs -x marker`, denied, "", false},
		{"exec", `exec marker`, denied, "", false},
		{"coproc", `coproc marker; wait`, denied, "", false},
		{"time", `time marker`, denied, "", false},
		// Arithmetic and names with subscripts.
		{"arithmetic", `a=(1); echo $(( a[$(marker)] ))`, denied, "", false},
		{"arithmetic", `x='a[$(marker)]'; echo $(( x ))`, unproven, "", false},
		{"arithmetic", `x='a[$(marker)]'; (( x ))`, unproven, "", false},
		{"arithmetic", `x='a[$(marker)]'; [[ $x -eq 1 ]]`, unproven, "", false},
		{"arithmetic", `let 'a[$(marker)]=1'`, unproven, "", false},
		{"arithmetic", `declare -i n; n='a[$(marker)]'`, unproven, "", false},
		{"arithmetic", `declare -n r='a[$(marker)]'; r=1`, unproven, "", false},
		{"arithmetic", `x='a[$(marker)]'; echo ${!x}`, unproven, "", false},
		{"names", `test -v 'a[$(marker)]'`, unproven, "", false},
		{"names", `[ -v 'a[$(marker)]' ]`, unproven, "", false},
		{"names", `printf -v 'a[$(marker)]' x`, unproven, "", false},
		{"names", `read 'a[$(marker)]' <<< x`, unproven, "", false},
		{"names", `a=(1); unset 'a[$(marker)]'`, unproven, "", false},
		{"names", `[ 'a[$(marker)]' -eq 1 ]`, notCode, "", false},
		{"names", `getopts x 'a[$(marker)]' -x`, notCode, "", false},
		// Expansions.
		{"expansion", `echo $(marker)`, denied, "", false},
		{"expansion", "echo `marker`", denied, "", false},
		{"expansion", `cat <(marker)`, denied, "", false},
		{"expansion", `x='$(marker)'; echo "${x@P}"`, unproven, "", false},
		{"expansion", `CMD=marker; $CMD`, unproven, "", false},
		// Shell variables.
		{"variables", `PS4='$(marker)'; set -x; :`, denied, "", false},
		{"variables", `PS0='$(marker)' bash -i <<< :`, denied, "", false},
		{"variables", `PS1='$(marker)' bash --norc -i`, denied, "", false},
		{"variables", `PROMPT_COMMAND=marker bash -i`, denied, "", false},
		{"variables", `BASH_ENV='$(marker)' bash -c :`, denied, "", false},
		{"variables", `echo marker > e.sh; BASH_ENV=./e.sh bash -c :`, unproven, "", false},
		{"variables", `echo marker > p.sh; ENV=./p.sh sh -i`, unproven, "", false},
		{"variables", `set -k; bash -c : BASH_ENV='$(marker)'`, unproven, "", false},
		{"variables", `env 'BASH_FUNC_ls%%=() { marker; }' bash -c ls`, unproven, "", false},
		{"variables", `echo 1 > a; echo 2 > b; GIT_EXTERNAL_DIFF=marker git diff --no-index a b`, denied, "git", false},
		{"variables", `env GIT_SSH_COMMAND=marker git ls-remote ssh://example.invalid/x`, denied, "git", false},
		// Startup files and shells reading files.
		{"startup", `echo marker > rc; bash --rcfile rc -i`, unproven, "", false},
		{"startup", `echo marker > .bashrc; bash -i`, unproven, "", false},
		{"startup", `echo 'PATH=$HOME/bin:$PATH; marker' > .profile; bash -l -c :`, unproven, "", false}, // /etc/profile resets PATH
		{"startup", `echo marker > x.sh; bash x.sh`, unproven, "", false},
		{"stdin", `printf marker | bash`, unproven, "", false},
		{"stdin", `bash <<< marker`, unproven, "", false},
		{"stdin", `bash -c 'marker'`, denied, "", false},
		// Programs that run a command line or a command.
		{"wrappers", `timeout 5 marker`, denied, "", false},
		{"wrappers", `nohup marker`, denied, "", false},
		{"wrappers", `nice -n 1 marker`, denied, "", false},
		{"wrappers", `setsid -w marker`, denied, "", false},
		{"wrappers", `stdbuf -o0 marker`, denied, "", false},
		{"wrappers", `env A=1 marker`, denied, "", false},
		{"wrappers", `xargs marker <<< x`, denied, "", false},
		{"wrappers", `find . -maxdepth 0 -exec marker {} \;`, denied, "", false},
		{"wrappers", `find . -maxdepth 0 -execdir marker {} +`, denied, "", false},
		{"wrappers", `flock ./lock marker`, denied, "flock", false},
		{"wrappers", `"$PWD/bin/marker"`, unproven, "", false},
		{"wrappers", `./bin/marker`, denied, "", false},
		{"strings", `env -S 'marker x'`, denied, "", false},
		{"strings", `flock ./lock -c marker`, denied, "flock", false},
		{"strings", `script -qc marker /dev/null`, denied, "script", false},
		{"strings", `su -c marker root`, denied, "su", true},
		{"strings", `timeout 2 watch -n 0.1 marker`, denied, "watch", false},
		{"strings", `echo x > f; tar cf a.tar f; tar xf a.tar --to-command=marker`, denied, "tar", false},
		{"strings", `echo x > f; tar cf a.tar --checkpoint=1 --checkpoint-action=exec=marker f`, denied, "tar", false},
		{"strings", `mkdir d; rsync -e marker d host:d`, denied, "rsync", false},
		{"strings", `ssh -o ProxyCommand=marker host`, unproven, "ssh", false},
		{"git", `git -c alias.x='!marker' x`, unproven, "git", false},
		{"git", `git init -q r && cd r && git config alias.x '!marker' && git x`, unproven, "git", false},
		// Other languages.
		{"interpreters", `python3 -c 'import os; os.system("marker")'`, unproven, "python3", false},
		{"interpreters", `perl -e 'system("marker")'`, unproven, "perl", false},
		{"interpreters", `awk 'BEGIN { system("marker") }'`, unproven, "awk", false},
		{"interpreters", `echo x | sed 's/x/marker/e'`, unproven, "sed", false},
		{"interpreters", `vim -es -c '!marker' -c q`, unproven, "vim", false},
		{"interpreters", `echo x | sed --sandbox 's/x/marker/e'`, notCode, "sed", false},
	}
	sets := map[string]*Ruleset{
		"deny only":      rs(t, t.TempDir(), "deny bash(marker:*)"),
		"allow bash":     rs(t, t.TempDir(), "allow bash", "deny bash(marker:*)"),
		"allow by words": rs(t, t.TempDir(), "allow bash(echo:*)", "allow bash(python3 -c:*)", "deny bash(marker:*)"),
	}
	for _, c := range cases {
		t.Run(c.section+"/"+c.cmd, func(t *testing.T) {
			if c.needs != "" && !have(c.needs) {
				t.Skipf("%s is not installed: would have shown %q running marker, then the rules deciding %s", c.needs, c.cmd, c.want)
			}
			if c.root && os.Geteuid() != 0 {
				t.Skipf("not root: would have shown %q running marker, then the rules deciding %s", c.cmd, c.want)
			}
			ran := runUnconfined(t, c.cmd)
			if c.want == notCode {
				if ran {
					t.Fatalf("%q ran marker: the survey calls it not code", c.cmd)
				}
			} else if !ran {
				t.Fatalf("%q did not run marker unconfined: the row proves nothing", c.cmd)
			}
			for name, set := range sets {
				d := set.Decide("bash", bashInput(c.cmd))
				switch c.want {
				case denied:
					if d.Behavior != Deny || d.Rule == nil || d.Rule.Text != "bash(marker:*)" {
						t.Errorf("%s: %q: %q (%s), want denied by bash(marker:*)", name, c.cmd, d.Behavior, d.Reason)
					}
				case unproven:
					if d.Behavior == Deny {
						break // stricter than needed is fine
					}
					if d.Behavior != Ask || !d.Unproven || d.CouldMatch == nil || d.CouldMatch.Text != "bash(marker:*)" {
						t.Errorf("%s: %q: %q unproven=%v (%s), want an ask marked Unproven for bash(marker:*)", name, c.cmd, d.Behavior, d.Unproven, d.Reason)
					}
				case notCode:
					if d.Behavior == Deny || d.Unproven {
						t.Errorf("%s: %q: %q unproven=%v (%s): not code, want no denial", name, c.cmd, d.Behavior, d.Unproven, d.Reason)
					}
				}
			}
		})
	}
}

// TestBashCodeNotShownRunning lists the survey's rows that cannot be run
// here, with the reason, and checks the rules' decision on each all the
// same.
func TestBashCodeNotShownRunning(t *testing.T) {
	set := rs(t, t.TempDir(), "allow bash", "deny bash(marker:*)")
	for _, c := range []struct{ cmd, why, want string }{
		{`enable -f ./marker.so marker`, "loading a builtin needs a shared object built for this bash", unproven},
		{`bind -x '"\C-t": marker'`, "readline runs it on a key press, which needs a terminal", unproven},
		{`ssh host marker`, "the remote shell runs it: it needs a host", denied},
		{`ssh -p 22 host 'marker x'`, "the remote shell runs it: it needs a host", denied},
		{`LD_PRELOAD=./marker.so ls`, "native code loaded into ls: it needs a shared object", unproven},
		{`parallel ::: marker`, "GNU parallel is not installed here", denied},
		{`sudo marker`, "sudo is not installed here", denied},
		{`SHELLOPTS=xtrace PS4='$(marker)' bash -c :`, "bash ignores PS4 from the environment when run as root", denied},
		{`PS4='$(marker)' bash -xc :`, "bash ignores PS4 from the environment when run as root", denied},
		{`SHELLOPTS=xtrace bash -c :`, "options for child shells", unproven},
		{`MAILPATH='/tmp?$(marker)' bash -i`, "mail checks need time to pass; interactive only", unproven},
	} {
		d := set.Decide("bash", bashInput(c.cmd))
		ok := c.want == denied && d.Behavior == Deny || c.want == unproven && (d.Behavior == Deny || d.Behavior == Ask && d.Unproven)
		if !ok {
			t.Errorf("%q (not run here: %s): %q unproven=%v (%s), want %s", c.cmd, c.why, d.Behavior, d.Unproven, d.Reason, c.want)
		}
	}
}
