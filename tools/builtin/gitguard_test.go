package builtin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
)

// TestFileToolsRefuseGit: write_file and edit_file refuse every way into
// .git — the path itself, a new .git, a symlink leading into it — with a
// message that says why and what to do; with the sandbox's GitWritable
// the same calls work (so the test proves the attacks are real), and
// files beside .git are untouched by the rule.
func TestFileToolsRefuseGit(t *testing.T) {
	calls := []struct {
		name string
		tool string
		in   filesObj
		file string // what the call would change, relative to the workspace
	}{
		{"config", "write", filesObj{"path": ".git/config", "content": "[core]\n\tfsmonitor = ./evil\n"}, ".git/config"},
		{"new hook", "write", filesObj{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}, ".git/hooks/pre-commit"},
		{"new .git in a subdirectory", "write", filesObj{"path": "sub/.git", "content": "gitdir: /evil\n"}, "sub/.git"},
		{"through a symlinked directory", "write", filesObj{"path": "hooks/post-checkout", "content": "#!/bin/sh\n"}, ".git/hooks/post-checkout"},
		{"through a symlinked file", "write", filesObj{"path": "cfg", "content": "x"}, ".git/config"},
		{"edit config", "edit", filesObj{"path": ".git/config", "old_string": "bare = false", "new_string": "bare = false\n\tfsmonitor = ./evil"}, ".git/config"},
		{"upper case", "write", filesObj{"path": "sub/.GIT/config", "content": "x"}, "sub/.GIT/config"},
		// HEAD beside objects/ and refs/ makes bare/ a git directory
		// git finds without a .git (bare/config then names hooks).
		{"new HEAD", "write", filesObj{"path": "bare/HEAD", "content": "ref: refs/heads/main\n"}, "bare/HEAD"},
		{"edit HEAD", "edit", filesObj{"path": "old/HEAD", "old_string": "junk", "new_string": "ref: refs/heads/main"}, "old/HEAD"},
		{"HEAD through a symlinked file", "write", filesObj{"path": "h", "content": "ref: refs/heads/main\n"}, "old/HEAD"},
		// objects/ and refs/ beside a HEAD already there (old/) complete
		// the git directory.
		{"objects beside an existing HEAD", "write", filesObj{"path": "old/objects/x", "content": "x"}, "old/objects/x"},
		{"refs beside an existing HEAD", "write", filesObj{"path": "old/refs/heads/main", "content": "x"}, "old/refs/heads/main"},
	}
	setup := func(t *testing.T) *filesTestEnv {
		e := newFilesTestEnv(t)
		e.write(t, ".git/config", "[core]\n\tbare = false\n", 0o644)
		os.Mkdir(filepath.Join(e.ws, ".git/hooks"), 0o755)
		os.Symlink(".git/hooks", filepath.Join(e.ws, "hooks"))
		os.Symlink(".git/config", filepath.Join(e.ws, "cfg"))
		os.MkdirAll(filepath.Join(e.ws, "bare/objects"), 0o755)
		os.MkdirAll(filepath.Join(e.ws, "bare/refs"), 0o755)
		e.write(t, "old/HEAD", "junk\n", 0o644)
		os.Symlink("old/HEAD", filepath.Join(e.ws, "h"))
		return e
	}
	read := func(e *filesTestEnv, rel string) string {
		b, _ := os.ReadFile(filepath.Join(e.ws, rel))
		return string(b)
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			tool := WriteFile()
			if c.tool == "edit" {
				tool = EditFile()
			}
			// Writable: the sandbox's opt-out. The call works.
			e := setup(t)
			sb, err := sandbox.New(sandbox.Policy{Workspace: e.ws, GitWritable: true, BestEffort: true})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			e.ctx.Sandbox = sb
			before := read(e, c.file)
			filesMustOK(t, e.ctx, tool, c.in)
			if read(e, c.file) == before {
				t.Fatalf("with GitWritable %s did not change: the attack is not shown", c.file)
			}
			// Protected (no sandbox, or one with the default): refused,
			// nothing changed, and the message says what to do.
			for _, withSandbox := range []bool{false, true} {
				e := setup(t)
				if withSandbox {
					sb, err := sandbox.New(sandbox.Policy{Workspace: e.ws, BestEffort: true})
					if err != nil {
						t.Fatal(err)
					}
					defer sb.Close()
					e.ctx.Sandbox = sb
				}
				before := read(e, c.file)
				filesMustFail(t, e.ctx, tool, c.in, ".git", "read-only", "git status", `git = "writable"`)
				if read(e, c.file) != before {
					t.Errorf("%s changed although the call was refused", c.file)
				}
				if _, err := os.Lstat(filepath.Join(e.ws, c.file)); before == "" && err == nil {
					t.Errorf("%s was made although the call was refused", c.file)
				}
			}
		})
	}
	// Beside .git, nothing changes: .gitignore and a directory named
	// git are ordinary files.
	e := setup(t)
	filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": ".gitignore", "content": "x\n"})
	filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": "git/.github/x", "content": "x\n"})
	filesMustOK(t, e.ctx, EditFile(), filesObj{"path": ".gitignore", "old_string": "x", "new_string": "y"})
	// Names near HEAD are not HEAD (git looks for "HEAD" exactly),
	// objects/ and refs/ where no HEAD is are ordinary, and reading HEAD, or anything in .git, is never refused.
	for _, p := range []string{"head", "HEADER", "HEAD.md", "src/ORIG_HEAD", "pkg/objects/x", "pkg/refs/y"} {
		filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": p, "content": "x\n"})
	}
	if got := filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": "old/HEAD"}); got != "     1\tjunk" {
		t.Errorf("read_file old/HEAD: %q", got)
	}
	filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": ".git/config"})
}

// TestOpenedFileCheckedForGit: the check on the file a write opened,
// which catches a directory swapped for a symlink into .git after the
// path was checked (a race the name checks cannot see), judges the real
// path.
func TestOpenedFileCheckedForGit(t *testing.T) {
	e := newFilesTestEnv(t)
	e.write(t, ".git/config", "x", 0o644)
	e.write(t, "ok/file", "x", 0o644)
	os.Symlink(".git", filepath.Join(e.ws, "swapped"))
	for rel, refused := range map[string]bool{"swapped/config": true, ".git/config": true, "ok/file": false} {
		f, err := e.ctx.Root.OpenFile(rel, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkOpenedNotGit(e.ctx, rel, f); (err != nil) != refused {
			t.Errorf("%s: checkOpenedNotGit = %v, want refused %v", rel, err, refused)
		}
		f.Close()
	}
}
