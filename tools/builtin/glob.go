package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/tools"
)

// globMaxResults bounds the paths glob returns.
const globMaxResults = 1000

// Glob finds files by name pattern.
var Glob = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("glob",
		`Find files in the workspace whose paths match a glob pattern.

- pattern: a glob relative to the search directory. "*" matches any characters except "/", "?" one character, "[abc]" one of a set, "{a,b}" either alternative, and "**" any number of directories. Examples: "**/*.go" (every Go file at any depth), "src/**/*_test.ts", "*.{yml,yaml}" (only the top level), "cmd/*/main.go".
- path: the directory to search in, relative to the workspace root or absolute inside it (default: the workspace root).

Returns matching files (not directories), one per line, as paths relative to the workspace root, sorted alphabetically; at most 1000, with a note saying how many more matched. A name that contains a line break or another control character, or bytes that are not UTF-8, is shown as a double-quoted string with Go escapes (src/"a\nb.txt", "\xff.dat"); give such a path to the file tools exactly as shown. ".git" directories are never searched, and symbolic links to directories are not followed. Use this to locate files by name; to search inside files use grep, and to see one directory use list_dir.`,
		unprivileged(runGlob),
		&tools.Options{
			Security:    readOnlySecurity,
			Annotations: &tools.Annotations{Title: "Find files", ReadOnlyHint: true, OpenWorldHint: tools.Bool(false)},
		}))
})

type globInput struct {
	Pattern string `json:"pattern" jsonschema:"the glob pattern to match, relative to path, e.g. '**/*.go'"`
	Path    string `json:"path,omitempty" jsonschema:"the directory to search in, relative to the workspace root or absolute inside it (default: the workspace root)"`
}

func runGlob(ctx *tools.Context, in globInput) (string, error) {
	base, err := resolvePath(ctx, in.Path)
	if err != nil {
		return "", err
	}
	shownBase := in.Path
	if shownBase == "" {
		shownBase = "."
	}
	pattern, err := globRelativePattern(ctx, in.Pattern, base)
	if err != nil {
		return "", err
	}
	if !doublestar.ValidatePattern(pattern) {
		return "", fmt.Errorf("invalid glob pattern %q: check for an unclosed '[' or '{' or a trailing '\\'", in.Pattern)
	}

	// Search through a Root opened on the base directory, so that the base
	// itself is resolved by the kernel and the walk cannot leave it.
	info, err := ctx.Root.Stat(base)
	if err != nil {
		return "", rootErr(ctx, shownBase, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("path %s is a file, not a directory; give the directory to search in", shownBase)
	}
	root := ctx.Root
	if base != "." {
		sub, err := ctx.Root.OpenRoot(base)
		if err != nil {
			return "", rootErr(ctx, shownBase, err)
		}
		defer sub.Close()
		root = sub
	}
	fsys := &globNoGitFS{fsys: root.FS(), ctx: ctx}

	var matches []string
	err = doublestar.GlobWalk(fsys, pattern, func(p string, d fs.DirEntry) error {
		if err := ctx.Context().Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// List a link only if it leads to a file inside the workspace.
			fi, err := fs.Stat(fsys, p)
			if err != nil || fi.IsDir() {
				return nil
			}
		}
		matches = append(matches, p)
		return nil
	}, doublestar.WithNoFollow())
	if err == nil {
		err = ctx.Context().Err()
	}
	if err != nil {
		if errors.Is(err, doublestar.ErrBadPattern) {
			return "", fmt.Errorf("invalid glob pattern %q", in.Pattern)
		}
		return "", err
	}

	if len(matches) == 0 {
		if base == "." {
			return fmt.Sprintf("No files match %q in the workspace.", in.Pattern), nil
		}
		return fmt.Sprintf("No files match %q under %s.", in.Pattern, shownBase), nil
	}
	prefix := filepath.ToSlash(base)
	for i, m := range matches {
		if prefix != "." {
			matches[i] = path.Join(prefix, m)
		}
	}
	sort.Strings(matches)
	var b strings.Builder
	for i, m := range matches[:min(len(matches), globMaxResults)] {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(quotePath(m))
	}
	if len(matches) > globMaxResults {
		fmt.Fprintf(&b, "\n\n(Showing the first %d of %d matching files; %d more matched. Use a more specific pattern or path to narrow the search.)", globMaxResults, len(matches), len(matches)-globMaxResults)
	}
	return b.String(), nil
}

// globRelativePattern turns the model's pattern into one relative to base
// (root-relative, cleaned). An absolute pattern is accepted when it lies under
// the search directory, since models often send one.
func globRelativePattern(ctx *tools.Context, pattern, base string) (string, error) {
	if pattern == "" {
		return "", errors.New("pattern is empty; give a glob such as \"**/*.go\"")
	}
	p := filepath.ToSlash(pattern)
	if strings.HasPrefix(p, "/") {
		dir := filepath.ToSlash(filepath.Join(ctx.Workspace, base))
		rest, ok := paths.Rel(dir, p)
		if !ok || rest == "." {
			return "", fmt.Errorf("pattern %q is absolute and not inside the search directory %s; give a pattern relative to it, such as \"**/*.go\"", pattern, dir)
		}
		p = rest
	}
	p = strings.TrimPrefix(p, "./")
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", errors.New("pattern must not contain \"..\"; to search elsewhere in the workspace, set path to that directory")
		}
	}
	return p, nil
}

// globNoGitFS hides every entry named ".git" (in any case:
// paths.IsGitName), so that no pattern (not even "**") descends into a
// repository's object store, and it stops the walk
// quickly once the call is cancelled. GlobWalk only reads directories through
// fs.ReadDir and checks paths through fs.Stat, both of which it implements.
type globNoGitFS struct {
	fsys fs.FS
	ctx  *tools.Context
}

func (g *globNoGitFS) Open(name string) (fs.File, error) {
	if paths.HasGitComponent(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return g.fsys.Open(name)
}

func (g *globNoGitFS) Stat(name string) (fs.FileInfo, error) {
	if paths.HasGitComponent(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fs.Stat(g.fsys, name)
}

func (g *globNoGitFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := g.ctx.Context().Err(); err != nil {
		return nil, err
	}
	if paths.HasGitComponent(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	entries, err := fs.ReadDir(g.fsys, name)
	kept := entries[:0]
	for _, e := range entries {
		if !paths.IsGitName(e.Name()) {
			kept = append(kept, e)
		}
	}
	return kept, err
}

var (
	_ fs.StatFS    = (*globNoGitFS)(nil)
	_ fs.ReadDirFS = (*globNoGitFS)(nil)
)
