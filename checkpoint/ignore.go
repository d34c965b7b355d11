package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/lite-agent/lite-agent/internal/gitignore"
	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/internal/safefile"
)

// Ignore rules: which paths may go unrecorded.
//
// The rules are gitignore's (internal/gitignore, the engine the grep tool
// uses too, tested against git itself): the per-directory ignore files
// named in Options.IgnoreFiles (by default .gitignore and
// .lite-agent-ignore, deeper files overriding shallower ones, a later name
// overriding an earlier one in the same directory), then Options.Ignore
// (patterns relative to the workspace root, which win over the files).
// Paths inside a .git directory are never recorded.
//
// The agent can write ignore files, so they must not let it opt out of
// rewind. Three rules make sure of that:
//
//  1. Only what the session created may be skipped. A path that existed
//     when the session started is recorded whatever any ignore file says
//     (within the size cap; above it the checkpoint and the rewind name it
//     as not covered). How the recorder knows, without scanning the
//     workspace at the start: every path it is asked about either existed
//     at the start or was created since, and the recorder sees every
//     creation, because whatever creates a path asks it first, while the
//     path is still absent. So the first record of a path in the session
//     says where it comes from (origin): pre-image "absent" = created by
//     the session; anything else = existed at its start. A path with no
//     record that is absent now is being created by the session; a path
//     with no record that exists now existed at the start (or was made by
//     someone else, outside the agent): it is recorded. Everything below a
//     path the session created was created by the session too.
//  2. The rules in force are those at the session's start. Ignore files
//     are read lazily, once per directory, and never re-read: a change to
//     an ignore file applies from the next session on. An ignore file the
//     session has changed before its directory's rules were first needed
//     is not read from disk: its first record in the session (the
//     pre-image the recorder took before the change) is its content at the
//     start. One the session created had no rules at the start.
//  3. Ignore files are read with internal/safefile: a FIFO, a device or a
//     symlink there is treated as an empty file (no rule: record more, not
//     less), and so is one above safefile's 1 MiB cap.
//
// The same rules hold for every route a change takes — the edit tools,
// bash and other confined commands (the sandbox's change capture), MCP
// servers and custom handlers — because all of them reach the recorder
// through RecordSnapshot, where the decision is made.

// createdReason prefixes the reason of a path skipped by an ignore rule:
// only paths the session created are skipped, and the session log keeps
// it, so that a resumed session still knows it created them.
const createdReason = "created in this session, ignored by "

type ignorer struct {
	workspace string
	files     []string
	tree      *gitignore.Tree
	// object returns the content of a stored pre-image.
	object func(pstate) ([]byte, error)

	mu sync.Mutex
	// origin: for each path the session has recorded (or skipped as new),
	// whether the session created it (true) or it existed at the start.
	origin map[string]bool
	// start: the first recorded state of each ignore file, its state at
	// the session's start.
	start map[string]pstate
}

func newIgnorer(workspace string, files, extra []string, object func(pstate) ([]byte, error)) *ignorer {
	ig := &ignorer{workspace: workspace, files: files, object: object, origin: map[string]bool{}, start: map[string]pstate{}}
	var high []*gitignore.List
	if len(extra) > 0 {
		high = append(high, gitignore.ParseLines(extra, ""))
	}
	ig.tree = gitignore.NewTree(ig.load, high, nil)
	return ig
}

// load returns the rules of the ignore files of directory dir as they were
// at the session's start. The Tree calls it once per directory.
func (ig *ignorer) load(dir string) []*gitignore.List {
	// Held while reading from disk: a capture of an ignore file (record)
	// waits, and the change it precedes only happens after that, so what
	// is read here is still the content at the start.
	ig.mu.Lock()
	defer ig.mu.Unlock()
	var lists []*gitignore.List
	for _, name := range ig.files {
		p := path.Join(dir, name)
		var data []byte
		if st, ok := ig.start[p]; ok {
			// Recorded before it was changed: the pre-image is the
			// content at the start. An unrecorded one (above the size
			// cap) has no rules: the recorder then records more.
			if st.Kind != KindFile || st.Unrecorded || st.Size > safefile.DefaultLimit {
				continue
			}
			var err error
			if data, err = ig.object(st); err != nil {
				continue
			}
		} else if ig.createdLocked(p) {
			continue // absent at the start
		} else {
			var err error
			data, err = safefile.ReadFileBeneath(ig.workspace, filepath.FromSlash(p), safefile.DefaultLimit)
			if err != nil {
				continue
			}
		}
		lists = append(lists, gitignore.Parse(data, dir, p))
	}
	return lists
}

// record notes the state a capture recorded for rel (the recorder calls it
// for every pre record, in order). Only the first record of a path in the
// session counts: it is the path's state at the start.
func (ig *ignorer) record(rel string, st pstate) {
	ig.mu.Lock()
	defer ig.mu.Unlock()
	if _, ok := ig.origin[rel]; !ok {
		ig.origin[rel] = st.Kind == KindAbsent
	}
	if ig.isIgnoreFile(rel) {
		if _, ok := ig.start[rel]; !ok {
			ig.start[rel] = st
		}
	}
}

// replay feeds the records of a continued session (oldest first) to
// record, and remembers what it skipped as created.
func (ig *ignorer) replay(h *history) {
	for n := 0; n < len(h.seals); n++ {
		s := h.seals[n]
		if s == nil {
			continue
		}
		for _, e := range s.Entries {
			ig.record(string(e.Path), e.Pre)
		}
		for _, x := range s.Ignored {
			if strings.HasPrefix(x.Reason, createdReason) {
				ig.mu.Lock()
				ig.origin[strings.TrimSuffix(x.Path, "/")] = true
				ig.mu.Unlock()
			}
		}
	}
	for _, pr := range h.tail {
		if pr.State != nil {
			ig.record(string(pr.Path), *pr.State)
		}
	}
}

func (ig *ignorer) isIgnoreFile(rel string) bool {
	base := path.Base(rel)
	for _, f := range ig.files {
		if base == f {
			return true
		}
	}
	return false
}

// createdLocked returns whether rel or a directory above it was created
// by the session. Callers hold ig.mu.
func (ig *ignorer) createdLocked(rel string) bool {
	return ig.createdAncestorLocked(rel) != ""
}

// createdAncestorLocked returns the highest of rel and its parents that the
// session created, "" when none.
func (ig *ignorer) createdAncestorLocked(rel string) string {
	for i := 0; i <= len(rel); i++ {
		if i == len(rel) || rel[i] == '/' {
			if ig.origin[rel[:i]] {
				return rel[:i]
			}
		}
	}
	return ""
}

// ignored reports what the rules in force say about rel (a slash path
// relative to the workspace), whoever created it. name is the highest
// ignored path among rel and its parents, with a trailing "/" for a
// directory, and why names the rule. The recorder decides with skip; the
// watcher uses this to leave ignored directories unwatched.
func (ig *ignorer) ignored(rel string, isDir bool) (name, why string, ok bool) {
	if isGitPath(rel) {
		// Named as the .git directory (the highest one on the path).
		parts := strings.Split(rel, "/")
		i := slices.IndexFunc(parts, paths.IsGitName)
		return strings.Join(parts[:i+1], "/") + "/", "git metadata", true
	}
	name, p := ig.tree.Ignored(rel, isDir)
	if p == nil {
		return "", "", false
	}
	if p.File == "" {
		return name, "ignore option " + p.Text, true
	}
	return name, fmt.Sprintf("%s:%d", p.File, p.Line), true
}

// skip decides whether rel may go unrecorded: it is inside .git, or an
// ignore rule in force at the session's start matches it and the session
// created it. isNew says the caller knows rel was not there before (it is
// absent now, or it appeared below a recorded directory); a path whose
// first record shows it existed at the start is never new. name is what to
// report as not covered, with a trailing "/" for a directory.
func (ig *ignorer) skip(rel string, isDir, isNew bool) (name, why string, ok bool) {
	ig.mu.Lock()
	if _, known := ig.origin[rel]; isNew && !known {
		// Absent and never recorded: the session is creating it now.
		ig.origin[rel] = true
	}
	created := ig.createdAncestorLocked(rel)
	ig.mu.Unlock()

	name, why, ok = ig.ignored(rel, isDir)
	if !ok || why == "git metadata" {
		return name, why, ok
	}
	if created == "" {
		// It existed when the session started: always recorded.
		return "", "", false
	}
	// Everything below both the ignored path and the created one is
	// skipped: report the deeper of the two.
	if n := strings.TrimSuffix(name, "/"); len(n) > len(created) {
		created = n
	}
	name = created
	if name != rel || isDir {
		name += "/"
	}
	return name, createdReason + why, true
}

// absent reports whether an lstat error says nothing is at the path.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// storeObject reads the content of a recorded pre-image from st.
func storeObject(st *store) func(pstate) ([]byte, error) {
	return func(ps pstate) ([]byte, error) {
		h, err := parseHash(ps.Hash)
		if err != nil {
			return nil, err
		}
		return st.get(h)
	}
}

// isGitPath reports whether rel is inside (or is) a .git directory, in
// any case (paths.IsGitName: the sandbox's rule).
func isGitPath(rel string) bool { return paths.HasGitComponent(rel) }
