package test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSandboxRunHandsOverToEntryPoint: `lite-agent sandbox run` runs in
// lite-agent-sandbox when that is installed beside it from the same build
// (the process that supervises the command is that program), and in
// lite-agent itself otherwise: with no lite-agent-sandbox beside it, with
// one from another build (sent back, so the code that runs is always the
// called lite-agent's), and when LITE_AGENT_SANDBOX_ENTRY asks for
// in-process. In every case the command runs, and never sees the
// variable that carried the hand-over, even when named with --env. A
// lite-agent-sandbox the person could not have installed (others may
// write it, another user owns it, or it is a link) is not run.
func TestSandboxRunHandsOverToEntryPoint(t *testing.T) {
	dir := filepath.Dir(binary)
	entry := filepath.Join(dir, "lite-agent-sandbox")

	alone := t.TempDir()
	copyFile(t, binary, filepath.Join(alone, "lite-agent"), 0o755)

	// A lite-agent-sandbox of another build: the same sources, another
	// version stamp.
	other := t.TempDir()
	copyFile(t, binary, filepath.Join(other, "lite-agent"), 0o755)
	build := exec.Command("go", "build", "-o", filepath.Join(other, "lite-agent-sandbox"), "-ldflags", "-X main.version="+entryVersion+"-other", "github.com/lite-agent/lite-agent/cmd/lite-agent-sandbox")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building another lite-agent-sandbox: %v\n%s", err, out)
	}

	// Entry points the person could not have installed: one that others
	// may write, one owned by another user, and a link to the real one.
	// Each is the real program, so that only the check can keep it from
	// being run.
	untrusted := func(t *testing.T, prepare func(entry string)) string {
		d := t.TempDir()
		copyFile(t, binary, filepath.Join(d, "lite-agent"), 0o755)
		prepare(filepath.Join(d, "lite-agent-sandbox"))
		return filepath.Join(d, "lite-agent")
	}
	writable := untrusted(t, func(e string) { copyFile(t, entry, e, 0o755); os.Chmod(e, 0o757) })
	linked := untrusted(t, func(e string) {
		if err := os.Symlink(entry, e); err != nil {
			t.Fatal(err)
		}
	})
	var foreign string
	if os.Geteuid() == 0 {
		foreign = untrusted(t, func(e string) {
			copyFile(t, entry, e, 0o755)
			if err := os.Chown(e, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		})
	}

	for _, c := range []struct {
		name, lite string
		env        []string
		want       string // the program supervising the command
	}{
		{"installed together", binary, nil, entry},
		{"no entry point beside it", filepath.Join(alone, "lite-agent"), nil, filepath.Join(alone, "lite-agent")},
		{"an entry point of another build", filepath.Join(other, "lite-agent"), nil, filepath.Join(other, "lite-agent")},
		{"in-process asked for", binary, []string{"LITE_AGENT_SANDBOX_ENTRY=in-process"}, binary},
		{"an entry point others may write", writable, nil, writable},
		{"an entry point that is a link", linked, nil, linked},
		{"an entry point of another user", foreign, nil, foreign},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.lite == "" {
				t.Skip("not root: would check that a lite-agent-sandbox owned by another user is not run")
			}
			ws := t.TempDir()
			cmd := exec.Command(c.lite, "sandbox", "run", "--workspace", ws, "--env", "LITE_AGENT_SANDBOX_ENTRY", "--",
				"/bin/sh", "-c", `echo "ready ${LITE_AGENT_SANDBOX_ENTRY:-unset}"; read line; echo "got $line"`)
			cmd.Env = append(os.Environ(), c.env...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			out := bufio.NewReader(stdout)
			// The command is running once it printed: the supervising
			// process (lite-agent's pid, exec'd or not) is what it is now.
			ready, err := out.ReadString('\n')
			if err != nil {
				cmd.Wait()
				t.Fatalf("no output: %v; stderr %q", err, stderr.String())
			}
			exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe")
			if err != nil {
				t.Fatal(err)
			}
			if exe != c.want {
				t.Errorf("the command is supervised by %s, want %s", exe, c.want)
			}
			if ready != "ready unset\n" {
				t.Errorf("the command saw %q, want the hand-over variable unset", ready)
			}
			io.WriteString(stdin, "line\n")
			stdin.Close()
			rest, _ := io.ReadAll(out)
			if err := cmd.Wait(); err != nil || string(rest) != "got line\n" {
				t.Errorf("exit %v, output %q, stderr %q", err, rest, stderr.String())
			}
		})
	}
}
