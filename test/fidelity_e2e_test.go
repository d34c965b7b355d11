package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Programs behave inside `lite-agent run` as outside (issues 23 and 28):
// test suites that make repositories in their temporary directories,
// cargo with Debian's crates offline, and refusals that explain
// themselves — all with no flags.

// TestGoTestMakesRepositoryInTempDir: a Go test that runs `git init` and
// commits in t.TempDir() (as go-git-style and VCS tests do) passes under
// the agent's bash with the .git rule on; the same module's test is run
// unconfined first, so the test proves something.
func TestGoTestMakesRepositoryInTempDir(t *testing.T) {
	need(t, "Go and git", "go", "git")
	u := newFakeUser(t)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/repotest\n\ngo 1.22\n")
	writeFile(t, filepath.Join(ws, "repo_test.go"), `package repotest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

func TestInit(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", dir},
		{"-C", dir, "-c", "user.email=u@x", "-c", "user.name=u", "commit", "-q", "--allow-empty", "-m", "one"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if _, err := filepath.Glob(filepath.Join(dir, ".git", "HEAD")); err != nil {
		t.Fatal(err)
	}
}
`)
	free := exec.Command("go", "test", "-count=1", "./...")
	free.Dir = ws
	free.Env = u.env
	if out, err := free.CombinedOutput(); err != nil {
		t.Fatalf("unconfined, the module's test fails, so this test proves nothing: %v\n%s", err, out)
	}
	res, _ := u.bashSession(t, ws, nil, "go test -count=1 ./... 2>&1")
	if res[0].isError || !strings.Contains(res[0].text, "ok  \texample.com/repotest") {
		t.Fatalf("go test of a module whose test runs git init in t.TempDir():\n%s", res[0].text)
	}
}

// TestCargoOfflineWithDebianCrates: a crate whose dependencies come from
// Debian's librust-*-dev packages (/usr/share/cargo/registry, the
// directory source Debian's own builds use) builds and passes its tests
// offline with no flags.
func TestCargoOfflineWithDebianCrates(t *testing.T) {
	need(t, "Rust", "cargo", "rustc")
	for _, c := range []string{"libc-0.2.139", "cfg-if-1.0.0"} {
		if _, err := os.Stat(filepath.Join("/usr/share/cargo/registry", c)); err != nil {
			t.Skipf("Debian's crate %s is not installed (apt-get install librust-libc-dev librust-cfg-if-dev): would check cargo test --offline with Debian's crates", c)
		}
	}
	// rustup's toolchains live in the real HOME (as in
	// TestRustCargoBuildVendoredCrateOffline).
	home, _ := os.UserHomeDir()
	u := newFakeUser(t, "HOME="+home)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "Cargo.toml"), "[package]\nname = \"deb\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nlibc = \"0.2\"\ncfg-if = \"1\"\n")
	writeFile(t, filepath.Join(ws, "src", "lib.rs"), "pub fn pid() -> i32 { unsafe { libc::getpid() } }\ncfg_if::cfg_if! { if #[cfg(unix)] { pub fn unix() -> bool { true } } else { pub fn unix() -> bool { false } } }\n#[cfg(test)]\nmod t { #[test] fn p() { assert!(super::pid() > 0 && super::unix()); } }\n")
	writeFile(t, filepath.Join(ws, ".cargo", "config.toml"), "[source.crates-io]\nreplace-with = \"debian\"\n\n[source.debian]\ndirectory = \"/usr/share/cargo/registry\"\n")
	res, _ := u.bashSession(t, ws, nil, "cargo test --offline -q 2>&1 | grep \"test result\"")
	if !strings.Contains(res[0].text, "test result: ok. 1 passed") {
		t.Fatalf("cargo test --offline with Debian's crates in the sandbox:\n%s", res[0].text)
	}
}

// TestRefusalExplainedToTheModel: a refused `git init` in the workspace
// comes back to the model with the command's own output untouched and one
// line after it, marked as lite-agent's, naming the path, the rule and
// the flag.
func TestRefusalExplainedToTheModel(t *testing.T) {
	need(t, "git", "git")
	u := newFakeUser(t)
	ws := t.TempDir()
	res, _ := u.bashSession(t, ws, nil, "git init newrepo")
	own, note, ok := strings.Cut(res[0].text, "\n\n[lite-agent] ")
	if !ok {
		t.Fatalf("no lite-agent note after the output:\n%s", res[0].text)
	}
	if !strings.Contains(own, "newrepo/.git: Operation not permitted") {
		t.Errorf("git's own message is not there as git wrote it:\n%s", own)
	}
	if !strings.Contains(note, "newrepo/.git") || !strings.Contains(note, ".git rule") || !strings.Contains(note, "--git writable") {
		t.Errorf("the note does not name the path, the rule and the flag: %q", note)
	}
}

// TestReadRefusalExplainedToTheModel: a file of the person's that the
// sandbox does not show (cat says "No such file or directory", or
// "Permission denied") comes back to the model with cat's words untouched
// and a line of lite-agent's naming the read and --allow-read; a
// credential file is named as one (and its bytes are nowhere); with
// --allow-read the same command reads the file and nothing is noted.
func TestReadRefusalExplainedToTheModel(t *testing.T) {
	u := newFakeUser(t)
	home, err := filepath.EvalSymlinks(u.home)
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(home, ".ssh", "id_ed25519")
	notes := filepath.Join(home, "notes.txt")
	writeFile(t, key, "SECRET-KEY\n")
	writeFile(t, notes, "mine\n")
	ws := t.TempDir()
	res, errOut := u.bashSession(t, ws, nil, "cat "+key, "cat "+notes)
	for i, want := range []struct{ path, why string }{{key, "a credential path, hidden from commands"}, {notes, ""}} {
		own, note, ok := strings.Cut(res[i].text, "\n\n[lite-agent] ")
		if !ok || !res[i].isError {
			t.Fatalf("cat %s: no lite-agent note after the output (error %v):\n%s", want.path, res[i].isError, res[i].text)
		}
		if !strings.HasPrefix(own, "cat: "+want.path+": ") {
			t.Errorf("cat's own message is not there as cat wrote it:\n%s", own)
		}
		if !strings.HasPrefix(note, "the sandbox refused read "+want.path+": "+want.why) || !strings.Contains(note, "--allow-read "+want.path+" ") {
			t.Errorf("the note does not name the read of %s and --allow-read: %q", want.path, note)
		}
		if strings.Contains(res[i].text, "SECRET") {
			t.Errorf("the credential's bytes reached the model: %q", res[i].text)
		}
	}
	// `cat ~/.gitconfig` names the command's own HOME (its temporary
	// directory): the note says which file of the person's it is not.
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Me\n")
	res2, _ := u.bashSession(t, ws, nil, "cat ~/.gitconfig")
	if _, note, ok := strings.Cut(res2[0].text, "\n\n[lite-agent] "); !ok || !res2[0].isError ||
		!strings.Contains(note, "HOME is this command's own temporary directory") || !strings.Contains(note, "/.gitconfig, which commands cannot read") ||
		!strings.Contains(note, "--allow-read ") || strings.Contains(res2[0].text, "name = Me") {
		t.Errorf("cat ~/.gitconfig with HOME the command's own:\n%s", res2[0].text)
	}
	// The person learns it too, at the end of the run, each refusal once.
	summary := "note: the sandbox refused the agent's commands, during this run:\n  - read " + key + ": a credential path"
	if !strings.Contains(errOut, summary) || !strings.Contains(errOut, "\n  - read "+notes+": ") {
		t.Errorf("the run's stderr does not sum up the refusals:\n%s", errOut)
	}
	res, errOut = u.bashSession(t, ws, []string{"--allow-read", notes}, "cat "+notes)
	if res[0].isError || res[0].text != "mine\n" {
		t.Errorf("with --allow-read %s: %q", notes, res[0].text)
	}
	if strings.Contains(errOut, "the sandbox refused") {
		t.Errorf("a run refused nothing, yet its stderr says so:\n%s", errOut)
	}
}
