package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The agent plants code in the workspace's .git, which the user's git
// (their shell prompt's `git status`) runs outside the sandbox. Through
// the CLI as a user runs it, checkpoints off (the .git rule must not
// depend on them): each attack works with `--git writable` — so the test
// proves it is real — and fails by default, leaving the repository as it
// was; git status, diff and log still work, and commit fails saying why.
func TestAgentCannotPlantGitHooks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: would check that the agent cannot write the workspace's .git")
	}
	attacks := []struct {
		name, command string
		planted       func(ws string) bool
	}{
		{"hook", `printf '#!/bin/sh\necho planted\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo wrote`,
			func(ws string) bool { return exists(ws, ".git/hooks/pre-commit") }},
		{"fsmonitor", `printf '[core]\n\tfsmonitor = ./evil.sh\n' >> .git/config && echo wrote`,
			func(ws string) bool { return fileHas(ws, ".git/config", "fsmonitor") }},
		{"rename and replace", `mv .git x && mkdir .git && echo wrote`, func(ws string) bool { return exists(ws, "x/HEAD") }},
		{"remove", `rm -rf .git && echo wrote`, func(ws string) bool { return !exists(ws, ".git/HEAD") }},
		{"hard link", `echo evil > h && ln h .git/hooks/post-checkout && echo wrote`, func(ws string) bool { return exists(ws, ".git/hooks/post-checkout") }},
		{"symlink replace", `rm -rf sub && mkdir sub && ln -sfn "$PWD/evil" sub/.git && echo wrote`, func(ws string) bool { return exists(ws, "sub/.git") }},
		{"new .git directory", `mkdir -p sub && mkdir sub/.git && echo wrote`, func(ws string) bool { return exists(ws, "sub/.git") }},
		{"new gitdir file", `mkdir -p sub && echo "gitdir: $PWD/evil" > sub/.git && echo wrote`, func(ws string) bool { return exists(ws, "sub/.git") }},
		{"git init", `git init -q sub && echo wrote`, func(ws string) bool { return exists(ws, "sub/.git") }},
	}
	commands := []string{}
	for _, a := range attacks {
		commands = append(commands, a.command)
	}
	reads := []string{
		`echo changed >> f && git status --short && git diff --stat && git log --oneline`,
		`git -c user.email=a@b -c user.name=a commit -qam two && echo committed`,
	}
	for _, writable := range []bool{true, false} {
		for i, a := range attacks {
			u := newFakeUser(t, "GIT_CONFIG_NOSYSTEM=1")
			ws := gitWorkspace(t, u)
			var args []string
			if writable {
				args = []string{"--git", "writable"}
			}
			res, stderr := u.bashSession(t, ws, args, commands[i])
			switch {
			case writable && !a.planted(ws):
				t.Fatalf("%s with --git writable: the attack did not work, so this test proves nothing: %s\n%s", a.name, res[0].text, stderr)
			case !writable && a.planted(ws):
				t.Errorf("%s: planted through the CLI: %s", a.name, res[0].text)
			case !writable && strings.Contains(res[0].text, "wrote"):
				t.Errorf("%s: the command reported success: %s", a.name, res[0].text)
			}
		}
		u := newFakeUser(t, "GIT_CONFIG_NOSYSTEM=1")
		ws := gitWorkspace(t, u)
		var args []string
		if writable {
			args = []string{"--git", "writable"}
		}
		res, _ := u.bashSession(t, ws, args, reads...)
		if !strings.Contains(res[0].text, " M f") || !strings.Contains(res[0].text, "1 file changed") || !strings.Contains(res[0].text, "one") {
			t.Errorf("git status, diff and log (writable %v): %s", writable, res[0].text)
		}
		if committed := strings.Contains(res[1].text, "committed"); committed != writable {
			t.Errorf("git commit (writable %v): %s", writable, res[1].text)
		}
		if !writable && !strings.Contains(res[1].text, "Read-only file system") {
			t.Errorf("git commit does not say why it failed: %s", res[1].text)
		}
	}
}

// TestWriteFileRefusesGitThroughCLI: the built-in write_file (in-process,
// outside the command's mount namespace) refuses to make sub/.git, a
// gitdir file that makes sub/ a repository of the agent's choosing, with
// a message that says why and what to do; with --git writable it writes.
// (.git/** at the workspace's root is also denied by the presets' own
// rules, whatever git says: policies/presets.go protectRules.)
func TestWriteFileRefusesGitThroughCLI(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: would check that write_file cannot write the workspace's .git")
	}
	for _, writable := range []bool{true, false} {
		u := newFakeUser(t, "GIT_CONFIG_NOSYSTEM=1")
		ws := gitWorkspace(t, u)
		in, _ := json.Marshal(map[string]any{"path": "sub/.git", "content": "gitdir: ../evil\n"})
		script := filepath.Join(t.TempDir(), "s.json")
		writeFile(t, script, fmt.Sprintf(`{"turns": [{"tool_calls": [{"id": "w", "name": "write_file", "input": %s}]}, {"text": "done"}]}`, in))
		args := []string{"run", "--workspace", ws, "--state-dir", filepath.Join(u.home, ".state"), "--output-format", "stream-json",
			"--script", script, "--allowed-tools", "write_file", "--no-checkpoints"}
		if writable {
			args = append(args, "--git", "writable")
		}
		cmd := exec.Command(binary, append(args, "work")...)
		cmd.Env = u.env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("lite-agent run: %v\n%s", err, errb.String())
		}
		var text string
		var isErr bool
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			var ev event
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev["type"] == "tool_result" {
				text, isErr = contentText(ev), ev["is_error"] == true
			}
		}
		planted := fileHas(ws, "sub/.git", "gitdir")
		switch {
		case writable && !planted:
			t.Fatalf("with --git writable write_file did not write sub/.git, so this test proves nothing: %s", text)
		case !writable && (planted || !isErr || !strings.Contains(text, "read-only") || !strings.Contains(text, "git status")):
			t.Errorf("write_file sub/.git: planted %v, result %q", planted, text)
		}
	}
}

// gitWorkspace is a workspace the user made a repository of, outside the
// sandbox, with one commit.
func gitWorkspace(t *testing.T, u *fakeUser) string {
	t.Helper()
	ws := t.TempDir()
	cmd := exec.Command("bash", "-c", `set -e; git init -q .; echo one > f; git add f; git -c user.email=u@x -c user.name=u commit -qm one; mkdir evil`)
	cmd.Dir, cmd.Env = ws, u.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git setup: %v\n%s", err, out)
	}
	return ws
}

func exists(ws, rel string) bool {
	_, err := os.Lstat(filepath.Join(ws, rel))
	return err == nil
}

func fileHas(ws, rel, s string) bool {
	b, _ := os.ReadFile(filepath.Join(ws, rel))
	return strings.Contains(string(b), s)
}

// TestGitSettingShown: policy show and sandbox check --workspace print
// the git setting and where it came from; a workspace file that says
// writable, untrusted, is refused naming its line.
func TestGitSettingShown(t *testing.T) {
	u := newFakeUser(t)
	ws := t.TempDir()
	userFile := filepath.Join(u.home, ".config", "lite-agent", "policy.toml")
	show := func(want string) {
		t.Helper()
		for _, args := range [][]string{{"policy", "show", "--workspace", ws}, {"sandbox", "check", "--workspace", ws}} {
			cmd := exec.Command(binary, args...)
			cmd.Env = u.env
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), want) {
				t.Errorf("%v: %v; want %q in:\n%s", args, err, want, out)
			}
		}
	}
	show("git         read-only (.git cannot be written by commands: committing is yours) [default]")
	writeFile(t, userFile, "[sandbox]\ngit = \"writable\"\n")
	show("git         writable (commands may commit, and may plant hooks your git runs) [" + userFile + ":2]")
	os.Remove(userFile)
	wsFile := filepath.Join(ws, ".lite-agent", "policy.toml")
	writeFile(t, wsFile, "[sandbox]\ngit = \"writable\"\n")
	cmd := exec.Command(binary, "policy", "show", "--workspace", ws)
	cmd.Env = u.env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), wsFile+":2: sandbox.git \"writable\"") {
		t.Errorf("an untrusted workspace file saying git = writable: %v\n%s", err, out)
	}
}

// TestSandboxRunProtectsGit: `lite-agent sandbox run` (a user running a
// command they do not trust, `npm install`) keeps .git read-only and
// refuses a new one, in a repository and where there is none, and a
// repository without a .git name (a HEAD beside objects/ and refs/, which
// git takes for a bare repository: the user's `git status` beneath it
// runs its config's core.fsmonitor); each attack works with --git
// writable. The payload only touches a file of the test's.
func TestSandboxRunProtectsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: would check that sandbox run keeps .git read-only")
	}
	u := newFakeUser(t, "GIT_CONFIG_NOSYSTEM=1")
	marker := filepath.Join(t.TempDir(), "ran")
	// userGitStatusRuns: the user's own git status in src/pkg, outside
	// any sandbox, ran the payload.
	userGitStatusRuns := func(ws string) bool {
		cmd := exec.Command("git", "status")
		cmd.Dir, cmd.Env = filepath.Join(ws, "src/pkg"), u.env
		cmd.CombinedOutput()
		_, err := os.Stat(marker)
		return err == nil
	}
	for _, a := range []struct {
		name, script string
		repo         bool
		planted      func(ws string) bool
	}{
		{"bare layout beside the repository", `mkdir -p src/objects src/refs src/pkg && echo "ref: refs/heads/master" > src/HEAD && ` +
			`printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch ` + marker + `; false"\n' > src/config`,
			true, func(ws string) bool { return userGitStatusRuns(ws) || exists(ws, "src/HEAD") }},
		{"fsmonitor", `printf '[core]\n\tfsmonitor = ./evil.sh\n' >> .git/config`, true, func(ws string) bool { return fileHas(ws, ".git/config", "fsmonitor") }},
		{"git init where there is no repository", `git init -q . && git config core.fsmonitor ./evil.sh`, false, func(ws string) bool { return fileHas(ws, ".git/config", "fsmonitor") }},
		{"new .git beside", `mkdir -p sub/.git`, true, func(ws string) bool { return exists(ws, "sub/.git") }},
	} {
		for _, writable := range []bool{true, false} {
			ws := t.TempDir()
			if a.repo {
				ws = gitWorkspace(t, u)
			}
			args := []string{"sandbox", "run", "--workspace", ws}
			if writable {
				args = append(args, "--git", "writable")
			}
			os.Remove(marker)
			cmd := exec.Command(binary, append(args, "--", "bash", "-c", a.script)...)
			cmd.Env = u.env
			out, err := cmd.CombinedOutput()
			if writable && strings.Contains(a.script, marker) && !userGitStatusRuns(ws) {
				t.Fatalf("%s with --git writable: the user's git status did not run the payload, so this test proves nothing\n%s", a.name, out)
			}
			switch {
			case writable && (err != nil || !a.planted(ws)):
				t.Fatalf("%s with --git writable did not work, so this test proves nothing: %v\n%s", a.name, err, out)
			case !writable && (err == nil || a.planted(ws)):
				t.Errorf("%s through sandbox run: exit %v, planted %v\n%s", a.name, err, a.planted(ws), out)
			}
		}
	}
}
