package mcp

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// TestWorkspaceEntryLinksGrantNothing: an agent-writable entry (a
// workspace .mcp.json not trusted) gets read grants only for its program
// files inside the workspace. A symlink the agent planted there, named
// as an argument — to a file (ws/k -> ~/.ssh/id_rsa) or through a linked
// directory (ws/d/id_rsa, d -> ~/.ssh) — must not carry the grant to the
// file it leads to. The same entry from the user's own file (not
// FromWorkspace) reads the key: the grant is real, and only the
// workspace's entries are held back.
func TestWorkspaceEntryLinksGrantNothing(t *testing.T) {
	requireSandbox(t, "a workspace entry's symlinked argument grants nothing")
	ws, home := t.TempDir(), t.TempDir()
	sshDir := filepath.Join(home, ".ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(sshDir, "id_rsa")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The server's program, in the workspace (the agent could write it).
	srv := filepath.Join(ws, "srv")
	copyFile(t, mustExecutable(t), srv)
	if err := os.Symlink(secret, filepath.Join(ws, "k")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sshDir, filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{filepath.Join(ws, "k"), filepath.Join(ws, "d", "id_rsa")} {
		for _, fromWorkspace := range []bool{false, true} {
			for _, fsys := range []tools.Filesystem{tools.FilesystemNone, tools.FilesystemWorkspace} {
				sc := ServerConfig{Command: srv, Args: []string{arg}, Env: map[string]string{testServerEnv: "stdio"},
					Filesystem: fsys, FromWorkspace: fromWorkspace}
				m := newManager(t, &Options{
					Servers: map[string]ServerConfig{"w": sc},
					Sandbox: &sandbox.Policy{Workspace: ws, Network: sandbox.NetworkNone},
				})
				for _, st := range m.Connect(context.Background()) {
					if st.State != StateConnected {
						t.Fatalf("%s: %+v", arg, st)
					}
				}
				got := call(t, m, "mcp__w__read_file", fmt.Sprintf(`{"path": %q}`, arg)).TextOf()
				read := strings.Contains(got, "PRIVATE KEY")
				switch {
				case !fromWorkspace && !read:
					t.Fatalf("the user's own entry naming %s (filesystem %s) could not read it, so this test proves nothing: %q", arg, fsys, got)
				case fromWorkspace && read:
					t.Errorf("a workspace entry naming %s (filesystem %s) read the key it links to: %q", arg, fsys, got)
				}
			}
		}
	}
}

func mustExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestServerHeldToGitNameRule: a stdio server that may write the
// workspace, in a session without checkpoints (no BeforeChange), may not
// make a .git — the rule the agent's own commands are held to — unless
// the session's sandbox lets .git be written (Policy.GitWritable), where
// the same write goes through (so the refusal is the rule's).
func TestServerHeldToGitNameRule(t *testing.T) {
	requireSandbox(t, "a server may not make a .git")
	for _, writable := range []bool{true, false} {
		ws := t.TempDir()
		if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		ts, err := NewToolset(&Options{Servers: map[string]ServerConfig{"w": func() ServerConfig {
			c := goServer("stdio")
			c.Filesystem = tools.FilesystemWorkspace
			return c
		}()}})
		if err != nil {
			t.Fatal(err)
		}
		pol := sandbox.Policy{Workspace: ws, Network: sandbox.NetworkNone, CaptureChanges: true, GitWritable: writable}
		open, err := ts.Open(context.Background(), &tools.ToolsetEnv{Workspace: ws, Sandbox: pol})
		if err != nil {
			t.Fatal(err)
		}
		m := open.(*Manager)
		planted := filepath.Join(ws, "sub", ".git")
		r := call(t, m, "mcp__w__write_file", fmt.Sprintf(`{"path": %q, "data": "gitdir: ../evil\n"}`, planted))
		m.Close()
		_, err = os.Lstat(planted)
		switch {
		case writable && err != nil:
			t.Fatalf("with .git writable the server could not write %s, so this test proves nothing: %q", planted, r.TextOf())
		case !writable && err == nil:
			t.Errorf("a server made %s while .git is protected: %q", planted, r.TextOf())
		}
	}
}

// TestNoSideEffectsServerWritesNoGrant: a server declaring filesystem
// "workspace" with side effects "none" gets the session's write grants
// read-only, like the workspace. Kept writable (the sandbox then had no
// workspace, so no change capture), such a server — one a workspace
// .mcp.json may start — made a .git in an --allow-write directory. With
// side effects "workspace" the same write goes through (and the .git is
// refused by capture there: TestServerHeldToGitNameRule).
func TestNoSideEffectsServerWritesNoGrant(t *testing.T) {
	requireSandbox(t, "a no-side-effects server writes no grant")
	for _, se := range []tools.SideEffects{tools.SideEffectsWorkspace, tools.SideEffectsNone} {
		ws, grant := t.TempDir(), t.TempDir()
		ts, err := NewToolset(&Options{Servers: map[string]ServerConfig{"w": func() ServerConfig {
			c := goServer("stdio")
			c.Filesystem, c.SideEffects = tools.FilesystemWorkspace, se
			return c
		}()}})
		if err != nil {
			t.Fatal(err)
		}
		pol := sandbox.Policy{Workspace: ws, ReadWritePaths: []string{grant}, Network: sandbox.NetworkNone, CaptureChanges: true}
		open, err := ts.Open(context.Background(), &tools.ToolsetEnv{Workspace: ws, Sandbox: pol})
		if err != nil {
			t.Fatal(err)
		}
		m := open.(*Manager)
		plain := filepath.Join(grant, "x")
		rPlain := call(t, m, "mcp__w__write_file", fmt.Sprintf(`{"path": %q, "data": "x"}`, plain))
		planted := filepath.Join(grant, ".git")
		rGit := call(t, m, "mcp__w__write_file", fmt.Sprintf(`{"path": %q, "data": "gitdir: ../evil\n"}`, planted))
		m.Close()
		_, errPlain := os.Lstat(plain)
		_, errGit := os.Lstat(planted)
		switch se {
		case tools.SideEffectsWorkspace:
			if errPlain != nil {
				t.Fatalf("side effects workspace: the grant was not writable, so this test proves nothing: %q", rPlain.TextOf())
			}
			if errGit == nil {
				t.Errorf("side effects workspace: a .git was made in the write grant: %q", rGit.TextOf())
			}
		case tools.SideEffectsNone:
			if errPlain == nil || errGit == nil {
				t.Errorf("side effects none: the write grant was written (x: %v %q; .git: %v %q)", errPlain, rPlain.TextOf(), errGit, rGit.TextOf())
			}
		}
	}
}
