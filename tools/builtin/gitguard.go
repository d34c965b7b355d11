package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// The .git rule of the file tools: write_file and edit_file refuse a path
// with a .git component, or whose last component is HEAD (the file that,
// beside objects/ and refs/, makes its directory a bare repository git
// finds without a .git): sandbox.RefusedGitPath, the sandbox's own rule,
// as the sandbox refuses it to commands (sandbox.Policy.GitWritable: git
// runs code named in .git — hooks, core.fsmonitor — outside the sandbox).
// The tools run in-process, outside the command's mount namespace where
// the sandbox binds .git read-only, so they check names themselves: the
// path as given, the real path of what already exists of it (a symlink
// inside the workspace may lead into .git), and the real path of the file
// actually opened, before a byte is written (a directory swapped for a
// symlink meanwhile, by a background task).

// errGitPath is the refusal, with what to do instead.
func errGitPath(given string) error {
	return fmt.Errorf("%s is in or names a .git directory, or is named HEAD (which makes its directory a git repository), and these are read-only to the agent: git runs code named there (hooks, config) outside the sandbox. "+
		"Edit the working files instead; git status, git diff and git log work, and committing is left to the user "+
		"(who can allow it with git = \"writable\" in the [sandbox] table of their policy file)", given)
}

// gitGuarded reports whether the rule applies: unless the sandbox the
// call's commands run in lets them write .git.
func gitGuarded(ctx *tools.Context) bool {
	return ctx.Sandbox == nil || !ctx.Sandbox.Policy().GitWritable
}

// hasGitComponent reports whether a relative path is one the rule
// refuses: a .git component, or a last component HEAD.
func hasGitComponent(rel string) bool {
	return sandbox.RefusedGitPath(filepath.ToSlash(rel))
}

// refuseGitPath refuses rel (relative to the workspace, as resolvePath
// gives it) when it, or the real path of its deepest existing ancestor
// followed by the rest, has a .git component or ends in HEAD.
func refuseGitPath(ctx *tools.Context, given, rel string) error {
	if !gitGuarded(ctx) {
		return nil
	}
	if hasGitComponent(rel) {
		return errGitPath(given)
	}
	// The deepest part of rel that exists, opened (symlinks followed
	// inside the workspace, as the write will follow them).
	have, rest := rel, ""
	for {
		if _, err := ctx.Root.Stat(have); err == nil || have == "." {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil // the write reports it
		}
		rest = filepath.Join(filepath.Base(have), rest)
		have = filepath.Dir(have)
	}
	// The first missing component is made in have: objects, refs or
	// commondir beside a HEAD already there would complete a repository.
	if first, _, _ := strings.Cut(filepath.ToSlash(rest), "/"); first != "" && sandbox.CompletesGitDir(first, func() bool {
		_, err := ctx.Root.Lstat(filepath.Join(have, "HEAD"))
		return err == nil
	}) {
		return errGitPath(given)
	}
	f, err := ctx.Root.Open(have)
	if err != nil {
		return nil // the write reports it
	}
	defer f.Close()
	if real, ok := realRel(ctx, f); !ok || hasGitComponent(filepath.Join(real, rest)) {
		return errGitPath(given)
	}
	return nil
}

// checkOpenedNotGit is the check on the file a write opened: its real
// path has no .git component and is not named HEAD.
func checkOpenedNotGit(ctx *tools.Context, given string, f *os.File) error {
	if !gitGuarded(ctx) {
		return nil
	}
	if real, ok := realRel(ctx, f); !ok || hasGitComponent(real) {
		return errGitPath(given)
	}
	return nil
}

// realRel is the real path of the open file f relative to the
// workspace's real path (what the kernel says f is: /proc/self/fd).
// ok false when it cannot be told, which the callers refuse.
func realRel(ctx *tools.Context, f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return "", false
	}
	ws, err := filepath.EvalSymlinks(ctx.Workspace)
	if err != nil {
		return "", false
	}
	return paths.Rel(ws, p)
}
