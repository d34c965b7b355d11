package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The grants of the table below: a workspace, the system, a read-only
// file, a grant given through a link (/lib, whose real path is /usr/lib).
// The sandbox's own /tmp.
var testScope = readScope{
	home:        "/home/u",
	roots:       []string{"/work/ws", "/usr", "/lib", "/etc/passwd", "/tmp/lite-agent-sandbox-1", "/home/u/.cargo/bin"},
	own:         []string{"/tmp", "/var/tmp", "/run", "/dev/shm"},
	credentials: []string{"/home/u/.ssh", "/home/u/.ssh/**", "/home/u/.npmrc", "/home/u/.npmrc/**", "/etc/wgetrc", "/opt/node/etc/npmrc"},
}

// TestReadRefusalsByToolFormat: each tool's way of saying it could not
// open a file outside the grants gives a "read" refusal of that path
// naming --allow-read; a path the grants cover, a relative path, a
// special file system's, a URL, and a line that reports no file error
// give none.
func TestReadRefusalsByToolFormat(t *testing.T) {
	const outside = "/home/u/notes.txt"
	for _, tc := range []struct {
		name, output string
		want         []string // the paths named, in order
	}{
		{"cat", "cat: /home/u/notes.txt: No such file or directory", []string{outside}},
		{"cat eacces", "cat: /home/u/notes.txt: Permission denied", []string{outside}},
		{"ls", "ls: cannot access '/home/u/notes.txt': No such file or directory", []string{outside}},
		{"ls utf-8 quotes", "ls: cannot access ‘/home/u/notes.txt’: No such file or directory", []string{outside}},
		{"bash", "bash: line 1: /home/u/notes.txt: No such file or directory", []string{outside}},
		{"bash redirect", "bash: /home/u/notes.txt: Operation not permitted", []string{outside}},
		{"python", "FileNotFoundError: [Errno 2] No such file or directory: '/home/u/notes.txt'", []string{outside}},
		{"python eacces", "PermissionError: [Errno 13] Permission denied: '/home/u/notes.txt'", []string{outside}},
		{"python script", "python3: can't open file '/home/u/notes.txt': [Errno 2] No such file or directory", []string{outside}},
		{"node", "Error: ENOENT: no such file or directory, open '/home/u/notes.txt'", []string{outside}},
		{"go", "open /home/u/notes.txt: no such file or directory", []string{outside}},
		{"go stat", "stat /home/u/notes.txt: permission denied", []string{outside}},
		{"java", "java.io.FileNotFoundException: /home/u/notes.txt (No such file or directory)", []string{outside}},
		{"gcc", "main.c:1:10: fatal error: /home/u/inc/x.h: No such file or directory", []string{"/home/u/inc/x.h"}},
		{"git", "fatal: could not open '/home/u/notes.txt' for reading: No such file or directory", []string{outside}},
		{"tail", "tail: cannot open '/home/u/notes.txt' for reading: No such file or directory", []string{outside}},
		{"quoted with a space", `grep: "/home/u/my notes.txt": No such file or directory`, []string{"/home/u/my notes.txt"}},
		{"trailing dot", "Error: file not found: /home/u/notes.txt.", []string{outside}},
		{"uncleaned", "cat: /home/u/x/../notes.txt: No such file or directory", []string{outside}},
		{"two on one line", "cp: cannot stat '/home/u/a' or '/srv/b': No such file or directory", []string{"/home/u/a", "/srv/b"}},
		{"named twice", "cat: /home/u/notes.txt: No such file or directory\ncat: /home/u/notes.txt: No such file or directory", []string{outside}},
		{"case", "CAT: /HOME/U/NOTES: NO SUCH FILE OR DIRECTORY", []string{"/HOME/U/NOTES"}},

		{"workspace", "cat: /work/ws/src/missing.go: No such file or directory", nil},
		{"workspace itself", "ls: cannot access '/work/ws': Permission denied", nil},
		{"system", "ls: cannot access '/usr/lib/nothing': No such file or directory", nil},
		{"a grant given through a link", "bash: /lib/x86_64/nothing.so: No such file or directory", nil},
		{"a granted file", "cat: /etc/passwd: Permission denied", nil},
		{"the temporary root", "cat: /tmp/lite-agent-sandbox-1/x: No such file or directory", nil},
		{"beside a granted file", "cat: /etc/shadow: Permission denied", []string{"/etc/shadow"}},
		{"a grant's parent", "cat: /home/u/.cargo/config.toml: No such file or directory", []string{"/home/u/.cargo/config.toml"}},
		{"a name sharing a grant's prefix", "cat: /work/wsx/f: No such file or directory", []string{"/work/wsx/f"}},
		{"relative", "cat: notes.txt: No such file or directory\ncat: ../notes.txt: No such file or directory", nil},
		{"proc", "cat: /proc/1/environ: Permission denied", nil},
		{"sys", "cat: /sys/kernel/notes: Permission denied", nil},
		{"dev", "cat: /dev/sda: Permission denied", nil},
		{"root", "ls: cannot access '/': Permission denied", nil},
		{"url", "curl: (22) The requested URL returned error: 404 Not Found https://example.com/home/u/x", nil},
		{"file url", "error: file:/home/u/x not found", nil},
		{"no error phrase", "reading /home/u/notes.txt\nwrote /home/u/out.txt", nil},
		{"empty", "", nil},
	} {
		got := readRefusalsOf(tc.output, testScope)
		var targets []string
		for _, r := range got {
			targets = append(targets, r.Target)
			if r.Rule != "read" || r.Op != "read" || !strings.Contains(r.Why, "outside the paths commands may read") ||
				r.Allow != "--allow-read "+r.Target+" (read in a policy file's [sandbox] table) shows it, if it exists; --allow-write "+filepath.Dir(r.Target)+" (write) lets commands write there" {
				t.Errorf("%s: %+v: want rule read, naming the grant of %s", tc.name, r, r.Target)
			}
		}
		if !slices.Equal(targets, tc.want) {
			t.Errorf("%s: %q names %q, want %q", tc.name, tc.output, targets, tc.want)
		}
	}
}

// TestReadRefusalsCredentials: a path a credential pattern matches is
// named as a credential hidden from commands, with the grant that shows
// it; one the grants cover is not named even when a pattern matches.
func TestReadRefusalsCredentials(t *testing.T) {
	for _, tc := range []struct {
		output, target string
		credential     bool
	}{
		{"cat: /home/u/.ssh/id_ed25519: No such file or directory", "/home/u/.ssh/id_ed25519", true},
		{"ls: cannot access '/home/u/.ssh': No such file or directory", "/home/u/.ssh", true},
		{"npm ERR! enoent ENOENT: no such file or directory, open '/home/u/.npmrc'", "/home/u/.npmrc", true},
		{"wget: Cannot read /etc/wgetrc (No such file or directory).", "/etc/wgetrc", true},
		{"Error: EACCES: permission denied, open '/opt/node/etc/npmrc'", "/opt/node/etc/npmrc", true},
		{"cat: /home/u/.sshx: No such file or directory", "/home/u/.sshx", false},
		// As the command names it: ~ is the HOME it saw.
		{"git: could not open '~/.ssh/config': Permission denied", "/home/u/.ssh/config", true},
	} {
		got := readRefusalsOf(tc.output, testScope)
		if len(got) != 1 || got[0].Target != tc.target {
			t.Errorf("%q: %+v, want one refusal of %s", tc.output, got, tc.target)
			continue
		}
		r := got[0]
		if isCred := strings.Contains(r.Why, "credential"); isCred != tc.credential {
			t.Errorf("%q: why %q: want credential wording %v", tc.output, r.Why, tc.credential)
		}
		if !strings.HasPrefix(r.Allow, "--allow-read "+tc.target+" ") {
			t.Errorf("%q: allow %q: want --allow-read %s", tc.output, r.Allow, tc.target)
		}
	}
	// Granted (--allow-read ~/.ssh/config): nothing to say.
	if got := readRefusalsOf("cat: /home/u/.ssh/config: Permission denied", readScope{home: "/home/u", roots: append(slices.Clone(testScope.roots), "/home/u/.ssh/config"), credentials: testScope.credentials}); len(got) != 0 {
		t.Errorf("a granted credential file: %+v", got)
	}
	// ~ when the command's HOME was its TMPDIR (home ""): inside it.
	if got := readRefusalsOf("cat: ~/.ssh/config: No such file or directory", readScope{roots: testScope.roots, credentials: testScope.credentials}); len(got) != 0 {
		t.Errorf("~ in a HOME of the command's own: %+v", got)
	}
}

// TestReadRefusalsPrivateTmp: a path in the sandbox's own /tmp (a tmpfs
// of its own, where the host's files are not shown) is named as such;
// without one, /tmp is outside like any other path.
func TestReadRefusalsPrivateTmp(t *testing.T) {
	const out = "cat: /tmp/build/log.txt: No such file or directory"
	got := readRefusalsOf(out, testScope)
	if len(got) != 1 || !strings.Contains(got[0].Why, "the sandbox's /tmp") || !strings.Contains(got[0].Allow, "--allow-read /tmp/build/log.txt") || !strings.Contains(got[0].Allow, "shows the host's") {
		t.Errorf("with a private /tmp: %+v", got)
	}
	sc := testScope
	sc.own = nil
	got = readRefusalsOf(out, sc)
	if len(got) != 1 || !strings.Contains(got[0].Why, "outside the paths commands may read") {
		t.Errorf("without a private /tmp: %+v", got)
	}
}

// TestReadRefusalsBounded: only the output's tail is read, lines too long
// to be an error message are skipped, and however many paths it names
// the list stays short — in time that does not grow with the output.
func TestReadRefusalsBounded(t *testing.T) {
	line := "cat: /home/u/early.txt: No such file or directory\n"
	filler := strings.Repeat("x", 1<<20) + "\n"
	huge := line + strings.Repeat(filler, 16) + "cat: /home/u/late.txt: No such file or directory\n"
	start := time.Now()
	got := readRefusalsOf(huge, testScope)
	if d := time.Since(start); d > time.Second {
		t.Errorf("16 MiB of output took %v", d)
	}
	if len(got) != 1 || got[0].Target != "/home/u/late.txt" {
		t.Errorf("16 MiB of output, an error line first and last: %+v, want the last only", got)
	}
	var many strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&many, "cat: /home/u/f%d: No such file or directory\n", i)
	}
	got = readRefusalsOf(many.String(), testScope)
	if len(got) != readMaxRefusals {
		t.Errorf("5000 error lines: %d refusals, want %d", len(got), readMaxRefusals)
	}
	if n := len(readCandidates(many.String(), "")); n != readMaxPaths {
		t.Errorf("5000 error lines: %d candidates, want %d", n, readMaxPaths)
	}
	long := "cat: /home/u/x: No such file or directory " + strings.Repeat("y", readLineBytes)
	if got := readRefusalsOf(long, testScope); len(got) != 0 {
		t.Errorf("a line of %d bytes: %+v", len(long), got)
	}
}

// TestRefusalNoteRead: a read is named only when the command failed, and
// a rule the sandbox recorded is named before it.
func TestRefusalNoteRead(t *testing.T) {
	read := explainRead("/home/u/notes.txt", false, false)
	if note := RefusalNote([]Refusal{read}, 0, false); note != "" {
		t.Errorf("a command that succeeded: %q", note)
	}
	note := RefusalNote([]Refusal{read}, 0, true)
	want := "[lite-agent] the sandbox refused read /home/u/notes.txt: outside the paths commands may read (the sandbox shows only the workspace, the system and the toolchains' files); --allow-read /home/u/notes.txt (read in a policy file's [sandbox] table) shows it, if it exists; --allow-write /home/u (write) lets commands write there"
	if note != want {
		t.Errorf("note\n%s\nwant\n%s", note, want)
	}
	write := explain("write", "open", "/etc/x", NetworkNone)
	if note := RefusalNote([]Refusal{read, write}, 0, true); !strings.Contains(note, "open /etc/x") || !strings.HasSuffix(note, "(and 1 other refusal)") {
		t.Errorf("a recorded write and a read: %q", note)
	}
}

// TestCredentialPatternsChecked: a credential pattern that is relative or
// malformed is refused when the policy is checked, not left to match
// nothing.
func TestCredentialPatternsChecked(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		ok      bool
	}{
		{"/home/u/.ssh/**", true},
		{"/opt/node/*/etc/npmrc", true},
		{`/home/u/a\[b\]/x`, true},
		{".ssh/**", false},
		{"/home/u/[.ssh", false},
	} {
		_, err := normalizePolicy(Policy{CredentialPatterns: []string{tc.pattern}})
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok %v", tc.pattern, err, tc.ok)
		}
	}
}

// BenchmarkReadRefusals: the bash tool's whole kept output (30,000 bytes)
// of error lines, each naming a path outside the grants, against 200
// credential patterns — what a failed command's result costs at most.
func BenchmarkReadRefusals(b *testing.B) {
	var out strings.Builder
	for i := 0; out.Len() < 30000; i++ {
		fmt.Fprintf(&out, "cat: /home/u/project-%d/notes.txt: No such file or directory\n", i)
	}
	sc := testScope
	for i := range 200 {
		sc.credentials = append(sc.credentials, fmt.Sprintf("/home/u/.tool%d/*/credentials/**", i))
	}
	for b.Loop() {
		if len(readRefusalsOf(out.String(), sc)) != readMaxRefusals {
			b.Fatal("not every line was named")
		}
	}
}

// TestReadRefusalsTempHome: where a command's HOME was its own temporary
// directory (the person's home not readable), a dotfile it could not
// find there (`cat ~/.gitconfig` names $TMPDIR/.gitconfig) is named with
// the person's file of that name and the --allow-read that shows it — a
// credential as one — while other files of the temporary directory, the
// directory itself and paths elsewhere in the grants are not.
func TestReadRefusalsTempHome(t *testing.T) {
	sc := testScope
	sc.home = "" // the command's HOME was its temporary directory
	sc.roots = append(slices.Clone(sc.roots), "/tmp/la-root")
	sc.personHome, sc.tempHomes = "/home/u", "/tmp/la-root"
	sc.credentials = append(slices.Clone(sc.credentials), "/home/u/.ssh", "/home/u/.ssh/**")
	for _, tc := range []struct {
		output, target, real string
		credential           bool
	}{
		{"cat: /tmp/la-root/.gitconfig: No such file or directory", "/tmp/la-root/.gitconfig", "/home/u/.gitconfig", false},
		{"cat: /tmp/la-root/cmd-1/.gitconfig: No such file or directory", "/tmp/la-root/cmd-1/.gitconfig", "/home/u/.gitconfig", false},
		{"ls: cannot access '/tmp/la-root/cmd-1/.config/app/x.toml': No such file or directory", "/tmp/la-root/cmd-1/.config/app/x.toml", "/home/u/.config/app/x.toml", false},
		{"cat: /tmp/la-root/cmd-1/.ssh/id_ed25519: No such file or directory", "/tmp/la-root/cmd-1/.ssh/id_ed25519", "/home/u/.ssh/id_ed25519", true},
		{"open /tmp/la-root/cmd-1/out/result.json: no such file or directory", "", "", false},
		{"cat: /tmp/la-root/build/.cache/x: No such file or directory", "", "", false},
		{"cat: /work/ws/.gitconfig: No such file or directory", "", "", false},
	} {
		got := readRefusalsOf(tc.output, sc)
		if tc.target == "" {
			if len(got) != 0 {
				t.Errorf("%q: %+v, want nothing", tc.output, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Target != tc.target || !strings.Contains(got[0].Why, "HOME is this command's own temporary directory") ||
			!strings.Contains(got[0].Why, "not "+tc.real) || !strings.HasPrefix(got[0].Allow, "--allow-read "+tc.real+" ") ||
			strings.Contains(got[0].Why, "a credential path") != tc.credential || strings.Contains(got[0].Allow, "--allow-write") {
			t.Errorf("%q: %+v", tc.output, got)
		}
	}
	// A HOME the command could read: nothing of this kind.
	sc.personHome = ""
	if got := readRefusalsOf("cat: /tmp/la-root/cmd-1/.gitconfig: No such file or directory", sc); len(got) != 0 {
		t.Errorf("with the person's home readable: %+v", got)
	}
}
